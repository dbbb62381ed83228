"""Margins of a run's plots, measured from the text they hold (issue 28: the outputs phase).

matplotlib's layout engines (``layout="constrained"``, :meth:`Figure.tight_layout`) find
a figure's margins by laying out every artist once more before the figure is drawn; on
the plots of a run that pass took a third of the plotting time.  The plots of
:mod:`ibemu.plots` know their text -- the title, the axis labels, the tick labels that
are not numbers, the legend outside the axes -- so :class:`Margins` measures that text
with the Agg renderer that draws the PNG and sets the margins with
:meth:`Figure.subplots_adjust`.  Numeric tick labels are budgeted as the widest label
the plot can have (:data:`FRACTION_TICK` on a 0..1 axis).

Every size is in points (1/72 inch); the pads are matplotlib's own (``rcParams``)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

EDGE = 5.0                  # points of blank paper around everything a figure holds
FRACTION_TICK = "0.0"       # the widest tick label of an axis from 0 to 1 (0.0, 0.2, ..., 1.0)
LOG_TICK = r"$\mathdefault{10^{-1}}$"   # the tallest tick label of a log axis


class Margins:
    """Text of *fig* measured as the Agg renderer draws it, and the margins that hold it.

    Attaching the Agg canvas here is what ``savefig(... .png)`` does anyway; the
    renderer it makes is the one the PNG is drawn with (same size and dpi)."""

    def __init__(self, fig: Figure) -> None:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.font_manager import FontProperties

        self.fig = fig
        self.rc: Any = matplotlib.rcParams          # read by name ("ytick.major.size", ...)
        canvas: Any = FigureCanvasAgg(fig)
        self.renderer = canvas.get_renderer()
        self._font = FontProperties
        self.px_per_pt = fig.dpi / 72.0

    def size(self, size: Any) -> float:
        """A matplotlib font size (points or a name such as "small") in points."""
        return float(self._font(size=size).get_size_in_points())

    def width(self, texts: Iterable[str], size: Any = "medium") -> float:
        """The widest of *texts* at font *size* (points; 0 for none)."""
        prop = self._font(size=size)
        widest = 0.0
        for text in texts:
            w, _, _ = self.renderer.get_text_width_height_descent(text, prop, ismath="$" in text)
            widest = max(widest, w)
        return widest / self.px_per_pt

    def height(self, size: Any = "medium", text: str = "lp") -> float:
        """The height of one line of text at font *size* (points): "lp" has the
        tallest ascender and the deepest descender of plain text."""
        _, h, _ = self.renderer.get_text_width_height_descent(text, self._font(size=size), ismath="$" in text)
        return float(h) / self.px_per_pt

    def tick_space(self, axis: str, label: float) -> float:
        """Points from an axes edge to the outer side of its tick labels, where the
        labels are *label* points wide (y) or high (x): tick length, pad, label."""
        return float(self.rc[axis + "tick.major.size"]) + float(self.rc[axis + "tick.major.pad"]) + label

    def axis_label(self) -> float:
        """Points an axis label takes beyond the tick labels: its pad and one line."""
        return float(self.rc["axes.labelpad"]) + self.height(self.rc["axes.labelsize"])

    def title(self) -> float:
        """Points above an axes for its title: the pad and one line of title text."""
        return float(self.rc["axes.titlepad"]) + self.height(self.rc["axes.titlesize"])

    def suptitle(self) -> float:
        """Points at the top of the figure for a suptitle (drawn from 98 % of the height
        down, ``Figure.suptitle``'s default place) and a gap below it."""
        height_pt = self.fig.get_figheight() * 72.0
        return 0.02 * height_pt + self.height(self.rc["figure.titlesize"]) + 6.0

    def adjust(self, left: float, right: float, bottom: float, top: float, gap: float = 0.0,
               rows: int = 1) -> None:
        """Set the margins, in points from each edge of the figure (:data:`EDGE` added),
        and *gap* points between *rows* stacked axes."""
        w = self.fig.get_figwidth() * 72.0
        h = self.fig.get_figheight() * 72.0
        left, right, bottom, top = (x + EDGE for x in (left, right, bottom, top))
        axes_h = max((h - top - bottom - (rows - 1) * gap) / rows, 1.0)
        self.fig.subplots_adjust(left=left / w, right=1.0 - right / w, bottom=bottom / h, top=1.0 - top / h,
                                 hspace=gap / axes_h)
