"""The reproductions' plots in the papers' figure styles (issue 18 item 5: "the plots of
the reproductions follow the papers' figure styles: the same axes and series").

Every reproduction plot is saved with :func:`save_figure`, which writes the PNG and,
beside it, ``<name>.axes.json``: what the drawn matplotlib Figure shows, read back from
it by :func:`describe` -- its title and, per panel, the title, the x and y labels and the
legend's series -- and ``<name>.csv``, the points of every line it draws.
tests/test_reproduction_plots.py compares these with the seed papers'
figures (seed 003 Figures 2-8, seed 002 Figures 3-6: their captions and text).

:func:`rate_over_time` draws seed 003 Figures 2 and 3 (and each panel of Figure 4):
"the traffic rate on the root link and on the inter-switch link, as well as the rate of
local flows (aggregate rate), remote flow, and victim flow ... in a sliding time window of
duration 2ms" (seed 003 §3), normalized to the link rate, over time in ms.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..results.metrics import Metrics

__all__ = ["describe", "plotted_rows", "save_figure", "rate_series", "draw_rates", "rate_over_time", "plot_rate_figure",
           "SEED003_RATE_SERIES", "SEED003_TIME", "SEED003_RATE"]

SEED003_TIME = "time (ms)"
SEED003_RATE = "normalized rate (fraction of link rate)"
SEED003_RATE_SERIES = ("root link", "inter-switch link", "local flows (aggregate)", "remote flows (aggregate)",
                       "victim flow")
"""The series of seed 003 Figures 2-4, in the order §3 names them."""


def describe(fig: Figure) -> dict[str, Any]:
    """What *fig* shows: ``{"title", "panels": [{"title", "xlabel", "ylabel", "series"}]}``
    (a twin axis, ``twinx``, is a panel of its own; ``series``: its legend's labels)."""
    sup = fig.get_suptitle()
    panels = []
    for ax in fig.axes:
        leg = ax.get_legend()
        panels.append({"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                       "series": [t.get_text() for t in leg.get_texts()] if leg is not None else []})
    return {"title": sup or (panels[0]["title"] if panels else ""), "panels": panels}


def plotted_rows(fig: Figure) -> list[tuple[int, str, str, float, float]]:
    """Every point of every labelled line *fig* draws: ``(panel, panel title, series, x,
    y)``, panels numbered from 1 in :func:`describe`'s order (lines whose label starts
    with ``_``, matplotlib's unlabelled ones such as reference lines, are left out)."""
    import numpy as np
    rows: list[tuple[int, str, str, float, float]] = []
    for i, ax in enumerate(fig.axes, 1):
        title = ax.get_title()
        for line in ax.get_lines():
            label = str(line.get_label())
            if label.startswith("_"):
                continue
            xs = np.asarray(line.get_xdata(), dtype=np.float64).tolist()
            ys = np.asarray(line.get_ydata(), dtype=np.float64).tolist()
            rows.extend((i, title, label, x, y) for x, y in zip(xs, ys))
    return rows


def save_figure(fig: Figure, path: str | Path, **savefig: Any) -> None:
    """*fig* as the PNG *path*, :func:`describe` of it as ``<path stem>.axes.json`` and,
    when it draws lines, their points as ``<path stem>.csv`` (:func:`plotted_rows`: a row
    per point with its panel, series, x and y; the data behind the picture, for users
    who would rather replot or compare numbers)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, **savefig)
    path.with_suffix(".axes.json").write_text(json.dumps(describe(fig), indent=1, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
    rows = plotted_rows(fig)
    if rows:
        with path.with_suffix(".csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(("panel", "panel_title", "series", "x", "y"))
            w.writerows(rows)


def rate_series(metrics: Metrics, window_ps: int | None = None) -> dict[str, np.ndarray]:
    """The series of seed 003 Figures 2-4 from a run of the Figure 1 scenario (links
    ``root`` and ``inter``, groups ``local``, ``remote``, ``victim``): ``{"t_ms": bin
    centres}`` and, per name of :data:`SEED003_RATE_SERIES`, a fraction of the link rate
    over the sliding window (the run's own, 2 ms in the paper).  Plain arrays, so a run
    on a Dask worker can hand them back (:func:`ibemu.studies.hp.figures.run_fig4`)."""
    out = {"t_ms": metrics.times_ms(),
           SEED003_RATE_SERIES[0]: metrics.link_utilization_series("root", True, window_ps),
           SEED003_RATE_SERIES[1]: metrics.link_utilization_series("inter", True, window_ps)}
    for name, group in zip(SEED003_RATE_SERIES[2:], ("local", "remote", "victim")):
        out[name] = metrics.group_rate_series(group, window_ps)
    return out


def draw_rates(ax: Axes, series: dict[str, Any], legend_size: float = 7) -> None:
    """One panel of seed 003 Figures 2-4 on *ax* from :func:`rate_series`'s arrays:
    each series against time in ms, normalized to the link rate."""
    for name in SEED003_RATE_SERIES:
        ax.plot(series["t_ms"], series[name], label=name, linewidth=1.2)
    ax.set_xlabel(SEED003_TIME)
    ax.set_ylabel(SEED003_RATE)
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=legend_size)


def rate_over_time(ax: Axes, metrics: Metrics, window_ps: int | None = None) -> None:
    """:func:`draw_rates` of :func:`rate_series` of *metrics*."""
    draw_rates(ax, rate_series(metrics, window_ps))


def plot_rate_figure(title: str, metrics: Metrics, path: str | Path) -> None:
    """A seed 003 Figure 2 or 3 panel (:func:`rate_over_time`) titled *title* (the
    figure's number and caption), saved with :func:`save_figure`."""
    from matplotlib.figure import Figure     # only when plotting: matplotlib is slow to import
    fig = Figure(figsize=(7.5, 4.2), tight_layout=True)
    rate_over_time(fig.add_subplot(), metrics)
    fig.suptitle(title, fontsize=9)
    save_figure(fig, path, dpi=110)
