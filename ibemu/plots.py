"""Plots of a run in the style of seed 003 Figure 2: rates over time (sliding window)
as fractions of link bandwidth, for the chosen links and flow groups; cc.png, the
congestion-control variables over time; and latency.png, the CDFs of message latency
and flow completion time.  matplotlib is imported only here, and only
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


PLOT_MAX_CDFS = 10          # curves per panel of latency.png


def _cdf_curves(metrics: Metrics, scenario: Scenario, which: int) -> list[tuple[str, np.ndarray]]:
    """(label, sorted samples in µs) per group (the chosen plot_groups, else all), else
    per flow for latencies and one curve for completion times; the first PLOT_MAX_CDFS
    with samples.  *which*: 0 message latencies, 1 the finite flows' completion times."""
    from .units import PS_PER_US

    def samples(names: list[str]) -> np.ndarray:
        if which == 0:
            parts = [metrics.latencies(n)[0] for n in names]
            x = np.concatenate(parts) if parts else np.zeros(0)
        else:
            x = np.array([c for c in (metrics.completion(n) for n in names) if c is not None], dtype=np.int64)
        return np.sort(x) / PS_PER_US

    groups = metrics.groups()
    wanted = [g for g in scenario.output.plot_groups if g in groups] or list(groups)
    if wanted:
        sets = [(g, groups[g]) for g in wanted]
    elif which == 0:
        sets = [(n, [n]) for n in metrics.flow_names()]
    else:
        sets = [("finite flows", metrics.flow_names())]
    curves = [(label, samples(names)) for label, names in sets]
    return [(label, x) for label, x in curves if len(x)][:PLOT_MAX_CDFS]


def plot_latency(metrics: Metrics, scenario: Scenario, out: Path) -> None:
    """latency.png: the empirical CDF of message latency (first byte sent to last byte
    delivered) per group, else per flow; and, with two or more finished finite flows,
    the CDF of their completion times.  Log-scaled time axis when the samples span more
    than a factor 20.  Nothing is written when no message was delivered whole."""
    from matplotlib.figure import Figure

    panels = [("message latency (µs)", _cdf_curves(metrics, scenario, 0))]
    fct = _cdf_curves(metrics, scenario, 1)
    if sum(len(x) for _, x in fct) >= 2:
        panels.append(("flow completion time (µs)", fct))
    if not panels[0][1]:
        return
    fig = Figure(figsize=(8, 3.6 * len(panels) + 0.4), dpi=110)
    for k, (xlabel, curves) in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, k + 1)
        lo = min(float(x[0]) for _, x in curves)
        hi = max(float(x[-1]) for _, x in curves)
        for j, (label, x) in enumerate(curves):
            y = np.arange(1, len(x) + 1) / len(x)
            ax.step(np.concatenate(([x[0]], x)), np.concatenate(([0.0], y)), where="post",
                    color="C%d" % (j % 10), label="%s (%d)" % (label, len(x)), linewidth=1.3)
        if lo > 0 and hi / lo > 20:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    fig.suptitle(scenario.name + " - latency CDF")
    fig.tight_layout()
    fig.savefig(out / "latency.png", metadata={"Software": None})
