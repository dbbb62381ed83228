"""The outputs of the HP reproductions (:mod:`.figures`, :mod:`.comparison`): a
figure, a grouped bar chart, and the PNG and JSON files written into the output folder."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..figure_axes import save_figure
from .figure_runs import Values

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["new_figure", "save_outputs", "bar_chart"]


def new_figure(w: float = 6.4, h: float = 4.0) -> Figure:
    from matplotlib.figure import Figure  # only when plotting: matplotlib is slow to import
    return Figure(figsize=(w, h), tight_layout=True)


def save_outputs(out_dir: Path | None, name: str, fig: Figure | None = None, data: Values | None = None) -> None:
    if out_dir is None:
        return
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fig is not None:
        save_figure(fig, out / (name + ".png"), dpi=110)
    if data is not None:
        (out / (name + ".json")).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def bar_chart(out_dir: Path | None, name: str, title: str, rows: dict[str, dict[str, float]],
              keys: list[str], paper_note: str = "", names: dict[str, str] | None = None) -> None:
    """A grouped bar chart: one group per row label, one bar per key (named *names*[key])."""
    if out_dir is None:
        return
    labels = list(rows)
    fig = new_figure(max(7.5, 1.0 * len(labels)), 4.6)
    ax = fig.add_subplot()
    width = 0.8 / len(keys)
    for j, k in enumerate(keys):
        ax.bar([i + j * width for i in range(len(labels))], [rows[l].get(k, 0) for l in labels], width,
               label=(names or {}).get(k, k))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], labels, fontsize=8,
                  rotation=25 if len(labels) > 5 else 0, ha="right" if len(labels) > 5 else "center")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of link rate (Jain: index)")
    ax.set_title(title + ("\n" + paper_note if paper_note else ""), fontsize=9)
    ax.legend(fontsize=7, ncol=len(keys))
    save_outputs(out_dir, name, fig)
