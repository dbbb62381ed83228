"""Plots of a run in the style of seed 003 Figure 2: rates over time (sliding window)
as fractions of link bandwidth, for the chosen links and flow groups; and cc.png, the
congestion-control variables over time.  matplotlib is imported only here, and only
through :class:`matplotlib.figure.Figure` (no pyplot, no global backend state)."""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .scenario.model import Scenario
from .units import PS_PER_MS

if TYPE_CHECKING:
    from matplotlib.figure import Figure as FigureType

    from .results import Metrics

PLOT_MAX_LINKS = 6          # links in throughput.png when output.plot_links is empty


def _pick_links(metrics: Metrics, wanted: list[str]) -> list[str]:
    """The links of throughput.png: *wanted* (those the fabric has), else the busiest
    PLOT_MAX_LINKS that carried anything, in link order."""
    names = metrics.link_names()
    if wanted:
        missing = [lbl for lbl in wanted if not metrics.has_link(lbl)]
        if missing:
            warnings.warn("plot_links not in the fabric: %s" % ", ".join(missing), stacklevel=2)
        return [lbl for lbl in wanted if metrics.has_link(lbl)]
    sent = [metrics.link_totals(name)[0] for name in names]          # all bytes of each link
    busy = sorted(range(len(names)), key=lambda i: (-sent[i], i))
    return [names[i] for i in sorted(busy[:PLOT_MAX_LINKS]) if sent[i] > 0]


def plot_run(metrics: Metrics, scenario: Scenario, out: Path, times: np.ndarray,
             link_data: dict[str, np.ndarray], link_all: dict[str, np.ndarray],
             flow_cols: dict[str, np.ndarray], group_cols: dict[str, np.ndarray]) -> None:
    """throughput.png (the chosen links' data utilization and the groups' rates, else
    the first flows') and, when there are more links, links.png (every link)."""
    from matplotlib.figure import Figure  # no pyplot: no global backend state

    styles = ["-", "--", "-.", ":"]
    links = _pick_links(metrics, list(scenario.output.plot_links))
    wanted_groups = list(scenario.output.plot_groups)
    if wanted_groups:
        missing = [g for g in wanted_groups if g not in group_cols]
        if missing:
            warnings.warn("plot_groups not among the flow groups: %s" % ", ".join(missing), stacklevel=2)
        curves = [(g, group_cols[g]) for g in wanted_groups if g in group_cols]
    elif group_cols:
        curves = list(group_cols.items())
    else:
        curves = list(flow_cols.items())[:PLOT_MAX_LINKS]
    series = [(lbl, link_data[lbl]) for lbl in links] + curves
    xmax = scenario.duration / PS_PER_MS

    def figure(title: str, lines: Sequence[tuple[str, np.ndarray]], ylabel: str) -> FigureType:
        fig = Figure(figsize=(8, 4.8), dpi=110)
        ax = fig.add_subplot()
        for k, (label, y) in enumerate(lines):
            ax.plot(times, y, styles[(k // 10) % len(styles)], color="C%d" % (k % 10),
                    label=label, linewidth=1.4)
        ax.set_xlim(0, xmax)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        if lines and len(lines) <= 16:
            ax.legend(loc="best", fontsize="small")
        fig.tight_layout()
        return fig

    win_ms = (scenario.output.window or metrics.window) / PS_PER_MS
    figure(scenario.name, series, "rate (fraction of link bandwidth, %g ms window)" % win_ms) \
        .savefig(out / "throughput.png", metadata={"Software": None})
    all_links = metrics.link_names()
    if len(all_links) > len(links):
        figure(scenario.name + " - all links", [(lbl, link_all[lbl]) for lbl in all_links],
               "link utilization (%g ms window)" % win_ms) \
            .savefig(out / "links.png", metadata={"Software": None})


PLOT_MAX_TRACES = 12        # curves per panel of cc.png


def plot_traces(metrics: Metrics, scenario: Scenario, out: Path) -> None:
    """cc.png: one panel per traced congestion-control variable (CCTI, CIPD, CWND,
    Marking_Rate, ...), a step curve per owner, and the logged events as ticks."""
    from matplotlib.figure import Figure

    kinds = sorted({k for k, _ in metrics.traces})
    fig = Figure(figsize=(8, 2.4 * len(kinds) + 0.6), dpi=110)
    xmax = scenario.duration / PS_PER_MS
    for n, kind in enumerate(kinds):
        ax = fig.add_subplot(len(kinds), 1, n + 1)
        keys = sorted(k for kd, k in metrics.traces if kd == kind)
        for j, key in enumerate(keys[:PLOT_MAX_TRACES]):
            tr = metrics.traces[(kind, key)]
            xs = [t / PS_PER_MS for t, _ in tr] + [xmax]
            ys = [v for _, v in tr] + [tr[-1][1]]
            ax.step(xs, ys, where="post", color="C%d" % (j % 10), label=key, linewidth=1.2)
        for t, _, _ in metrics.events:
            ax.axvline(t / PS_PER_MS, color="0.6", linewidth=0.6, linestyle=":")
        ax.set_xlim(0, xmax)
        ax.set_ylabel(kind)
        ax.grid(True, alpha=0.3)
        if len(keys) <= PLOT_MAX_TRACES:
            ax.legend(loc="best", fontsize="x-small")
        else:
            ax.set_title("first %d of %d" % (PLOT_MAX_TRACES, len(keys)), fontsize="small")
    fig.axes[-1].set_xlabel("time (ms)")
    fig.suptitle(scenario.name + " - congestion control state")
    fig.tight_layout()
    fig.savefig(out / "cc.png", metadata={"Software": None})
