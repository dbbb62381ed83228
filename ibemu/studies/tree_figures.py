"""The congestion-tree study's figures (:mod:`.congestion_tree`, issue 15): per case, the
links' utilization and the congestion tree (time blocked for credits) by fabric level;
for the study, tree.png, the cases side by side.  A case's figures read a
:class:`CaseFigures`, made by the study from its run, so that a forked child can draw
them while the study goes on (:mod:`ibemu.results.drawer`, issue 28)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..plots import link_heatmap, plot_link_heatmap
from ..results.metrics import Metrics
from ..units import PS_PER_MS


@dataclass
class CaseFigures:
    """What one case's figures read."""
    case: str
    name: str                          # the scenario's name
    metrics: Metrics
    levels: dict[str, str]             # link label -> fabric level
    root: str                          # the hot spot's last hop (a link label)
    duration: int                      # ps
    times_ms: np.ndarray               # the congestion tree's sample intervals (their ends)
    blocked: np.ndarray                # links blocked per sample interval
    fractions: dict[str, np.ndarray]   # each link's share of time blocked per interval


def case_figures(f: CaseFigures, out_dir: Path) -> None:
    """heatmap_<case>.png (link utilization) and blocked_<case>.png (the congestion tree)."""
    link_heatmap(f.metrics, out_dir / ("heatmap_%s.png" % f.case), f.levels,
                 title="%s: link utilization by level" % f.name)
    plot_link_heatmap(f.times_ms, f.fractions, f.levels, out_dir / ("blocked_%s.png" % f.case),
                      title="%s: the congestion tree (time waiting for credits) by level" % f.name,
                      xmax=f.duration / PS_PER_MS,
                      quantity="share of time blocked (PortXmitWait), per sample interval")


def tree_figure(cases: list[CaseFigures], blocked_share: float, path: Path) -> None:
    """tree.png: the victims' throughput, the hot-spot link's utilization and the links
    blocked more than *blocked_share* of the time, over time, one line per case."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for f in cases:
        m = f.metrics
        t = m.times_ms()
        victims = [n for n in m.flow_names() if m.group_of(n) == "victim"]
        if victims:
            axes[0].plot(t, m.group_rate_series("victim") / len(victims), label=f.case)
        axes[1].plot(t, m.link_utilization_series(f.root, True), label=f.case)
        axes[2].step(f.times_ms, f.blocked, where="post", label=f.case)
    axes[0].set_ylabel("victims' mean\nthroughput (of link)")
    axes[1].set_ylabel("hot-spot link\ndata utilization")
    axes[2].set_ylabel("congestion tree\n(links blocked > %d %%)" % (100 * blocked_share))
    axes[2].set_xlabel("time (ms)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    fig.suptitle("%s: hot spot on a fat tree, by congestion-control scheme" % cases[0].name.rsplit("_", 1)[0])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
