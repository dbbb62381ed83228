"""Plots of a run in the style of seed 003 Figure 2: rates over time (sliding window)
as fractions of link bandwidth, for the chosen links and flow groups; cc.png, the
congestion-control variables over time; latency.png, the CDFs of message latency
and flow completion time; and links_heatmap.png, every link's utilization over time,
rows grouped by fabric level (issue 15: the congestion tree forming and shrinking;
:func:`link_heatmap` draws it for any run).  matplotlib is imported only here, and only
through :class:`matplotlib.figure.Figure` (no pyplot, no global backend state)."""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .plot_layout import FRACTION_TICK, LOG_TICK, Margins
from .scenario.model import Scenario
from .units import PS_PER_MS

if TYPE_CHECKING:
    from matplotlib.figure import Figure as FigureType

    from .results import Metrics

PLOT_MAX_LINKS = 6          # links in throughput.png when output.plot_links is empty
PLOT_MAX_LINK_CURVES = 16   # more links: links.png shows the busiest PLOT_TOP_LINKS
PLOT_TOP_LINKS = 10
HEATMAP_ROW_LABELS = 64     # up to this many rows the heatmap names every link
HEATMAP_MIN_LINKS = 12      # more links (or any link level): links_heatmap.png too
HEATMAP_MAX_COLUMNS = 400   # time bins of the heatmap at most (neighbouring bins averaged)
PNG_OPTIONS: dict[str, Any] = {"metadata": {"Software": None},        # the same bytes on every machine
                               "pil_kwargs": {"compress_level": 3}}   # zlib's 6 took twice the time, 15 % smaller


class PlotSource(Protocol):
    """What the plots read of a run: :class:`~ibemu.results.Metrics`, or the copy of
    those parts that a plot worker process is sent (:class:`ibemu.results.plot_data.PlotData`)."""
    window: int
    traces: dict[tuple[str, str], list[tuple[int, float]]]
    events: list[tuple[int, str, str]]

    def link_names(self) -> list[str]: ...

    def has_link(self, label: str) -> bool: ...

    def link_totals(self, label: str) -> tuple[int, int, int]: ...

    def flow_names(self) -> list[str]: ...

    def groups(self) -> dict[str, list[str]]: ...

    def latencies(self, name: str) -> tuple[np.ndarray, np.ndarray]: ...

    def completion(self, name: str) -> int | None: ...


def _pick_links(metrics: PlotSource, wanted: list[str]) -> list[str]:
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


def plot_run(metrics: PlotSource, scenario: Scenario, out: Path, times: np.ndarray,
             link_data: dict[str, np.ndarray], link_all: dict[str, np.ndarray],
             flow_cols: dict[str, np.ndarray], group_cols: dict[str, np.ndarray]) -> None:
    """throughput.png (the chosen links' data utilization and the groups' rates, else
    the first flows') and, when there are more links, links.png (every link);
    links_heatmap.png is :func:`plot_run_heatmap`'s."""
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

    def figure(title: str, lines: Sequence[tuple[str, np.ndarray]], ylabel: str, *,
               mean_in_legend: bool = False) -> FigureType:
        """Curves over time, the legend outside the axes on the right (one entry per
        curve, with its mean over the run when *mean_in_legend*); colours C0..C9 and a
        line style per ten curves, so that equal curves stay told apart."""
        fig = Figure(figsize=(9.6, 4.8), dpi=110)
        ax = fig.add_subplot()
        for k, (label, y) in enumerate(lines):
            if mean_in_legend:
                label = "%s (mean %.2f)" % (label, float(np.nan_to_num(y).mean()) if len(y) else 0.0)
            ax.plot(times, y, styles[(k // 10) % len(styles)], color="C%d" % (k % 10),
                    label=label, linewidth=1.4)
        ax.set_xlim(0, xmax)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        m = Margins(fig)
        right = m.width(["%g" % xmax], m.rc["xtick.labelsize"]) / 2      # the last time label's half
        if lines and len(lines) <= 16:
            legend = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", borderaxespad=0.0)
            right = legend.get_window_extent(m.renderer).width / m.px_per_pt + 0.01 * fig.get_figwidth() * 72
        m.adjust(left=m.tick_space("y", m.width([FRACTION_TICK], m.rc["ytick.labelsize"])) + m.axis_label(),
                 right=right, bottom=m.tick_space("x", m.height(m.rc["xtick.labelsize"])) + m.axis_label(),
                 top=m.title())
        return fig

    win_ms = (scenario.output.window or metrics.window) / PS_PER_MS
    figure(scenario.name, series, "rate (fraction of link bandwidth, %g ms window)" % win_ms) \
        .savefig(out / "throughput.png", **PNG_OPTIONS)
    all_links = metrics.link_names()
    if len(all_links) > PLOT_MAX_LINK_CURVES:
        top = _busiest(all_links, link_all, PLOT_TOP_LINKS)
        figure("%s - busiest %d of %d links (all: links_heatmap.png)" % (scenario.name, len(top), len(all_links)),
               [(lbl, link_all[lbl]) for lbl in top],
               "link utilization (fraction of link bandwidth, %g ms window)" % win_ms, mean_in_legend=True) \
            .savefig(out / "links.png", **PNG_OPTIONS)
    elif len(all_links) > len(links):
        ranked = _busiest(all_links, link_all, len(all_links))
        ranked += [lbl for lbl in all_links if lbl not in ranked]         # the idle ones last
        figure(scenario.name + " - all %d links, busiest first" % len(all_links),
               [(lbl, link_all[lbl]) for lbl in ranked],
               "link utilization (fraction of link bandwidth, %g ms window)" % win_ms, mean_in_legend=True) \
            .savefig(out / "links.png", **PNG_OPTIONS)


def plot_run_heatmap(metrics: PlotSource, scenario: Scenario, out: Path, times: np.ndarray,
                     link_all: dict[str, np.ndarray]) -> None:
    """links_heatmap.png of a run (:func:`plot_link_heatmap`), when its links have
    levels or there are more than :data:`HEATMAP_MIN_LINKS`."""
    levels = _levels_of(scenario)
    if levels or len(metrics.link_names()) > HEATMAP_MIN_LINKS:
        plot_link_heatmap(times, link_all, levels, out / "links_heatmap.png",
                          title="%s - link utilization over time%s" % (scenario.name,
                                                                        " by fabric level" if levels else ""),
                          xmax=scenario.duration / PS_PER_MS,
                          window_ms=(scenario.output.window or metrics.window) / PS_PER_MS)


def _busiest(labels: Sequence[str], series: Mapping[str, np.ndarray], n: int) -> list[str]:
    """The *n* labels with the highest mean of their series (NaN as 0), busiest first
    (ties in label order); only those with any traffic."""
    means = {lbl: float(np.nan_to_num(series[lbl]).mean()) if len(series[lbl]) else 0.0 for lbl in labels}
    ranked = sorted(labels, key=lambda lbl: -means[lbl])
    return [lbl for lbl in ranked[:n] if means[lbl] > 0]


def _levels_of(scenario: Scenario) -> dict[str, str]:
    """Link label -> level (:attr:`~ibemu.scenario.model.LinkSpec.levels`); the same
    map as :func:`ibemu.results.summary.link_levels` (results is not imported here)."""
    out: dict[str, str] = {}
    for link in scenario.links:
        if link.levels:
            out.update(zip(link.labels(), link.levels))
    return out


def _level_key(level: str) -> tuple[int, int, str]:
    """up1, up2, ... then ..., down2, down1, then other names, then ``other`` (the order
    of :func:`ibemu.results.summary.level_order`)."""
    for k, prefix in enumerate(("up", "down")):
        if level.startswith(prefix) and level[len(prefix):].isdigit():
            n = int(level[len(prefix):])
            return (k, n if k == 0 else -n, "")
    return (3 if level == "other" else 2, 0, level)


def heatmap_rows(labels: Sequence[str], levels: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """The heatmap's row blocks: (level, its labels in the given order) for every level
    present, up1, up2, ..., down2, down1, other names, then ``other`` (no level)."""
    by: dict[str, list[str]] = {}
    for lbl in labels:
        by.setdefault(levels.get(lbl, "other"), []).append(lbl)
    return [(lev, by[lev]) for lev in sorted(by, key=_level_key)]


def plot_link_heatmap(times: np.ndarray, series: Mapping[str, np.ndarray], levels: Mapping[str, str],
                      path: str | Path, *, title: str, xmax: float | None = None,
                      window_ms: float | None = None,
                      quantity: str = "utilization (fraction of link bandwidth") -> np.ndarray:
    """Write a heatmap of link utilization over time to *path* (PNG): one row per
    directed link of *series* (label -> utilization per time bin, fraction of the link),
    rows grouped by *levels* (:func:`heatmap_rows`, a separating line and the level's
    name and link count on the left), columns the time bins (*times*, ms; at most
    :data:`HEATMAP_MAX_COLUMNS`, neighbours averaged), colour 0..1.  Returns the matrix
    drawn (rows x columns; NaN, a link without capacity, drawn as 0).  *quantity*: the
    colour bar's label (any per-link fraction of time, e.g. the share blocked for credits)."""
    from matplotlib.figure import Figure

    blocks = heatmap_rows(list(series), levels)
    order = [lbl for _, labels in blocks for lbl in labels]
    grid = np.nan_to_num(np.array([np.asarray(series[lbl], dtype=np.float64) for lbl in order]).reshape(
        len(order), len(times)))
    step = -(-grid.shape[1] // HEATMAP_MAX_COLUMNS) if grid.shape[1] else 1
    if step > 1:                            # groups of *step* bins; the last one may be shorter
        ncols = -(-grid.shape[1] // step)
        padded = np.full((len(order), ncols * step), np.nan)
        padded[:, :grid.shape[1]] = grid
        grid = np.nanmean(padded.reshape(len(order), ncols, step), axis=2)
    t_end = float(xmax) if xmax is not None else (float(times[-1]) if len(times) else 1.0)
    height = 3.0 + (0.16 if len(order) <= HEATMAP_ROW_LABELS else 0.04) * len(order)
    fig = Figure(figsize=(9, min(height, 12.0)), dpi=110)
    ax = fig.add_subplot()
    img = ax.imshow(grid, aspect="auto", interpolation="nearest", vmin=0.0, vmax=1.0, cmap="viridis",
                    extent=(0.0, t_end, len(order), 0))
    ticks, names = [], []
    row = 0
    for k, (lev, labels) in enumerate(blocks):
        if k:
            ax.axhline(row, color="white", linewidth=0.8)
        ticks.append(row + len(labels) / 2)
        names.append("%s (%d)" % (lev, len(labels)))
        row += len(labels)
    m = Margins(fig)
    row_labels, level_labels = names, []        # the levels on the left, else the links
    row_size: int | str = "small"
    if len(order) <= HEATMAP_ROW_LABELS:     # every link named; the levels (if several) on the right
        row_labels, row_size = order, 7 if len(order) > 24 else "small"
        ax.set_yticks([i + 0.5 for i in range(len(order))])
        ax.set_yticklabels(order, fontsize=row_size)
        if len(blocks) > 1:
            side = ax.secondary_yaxis("right")
            side.set_yticks(ticks)
            side.set_yticklabels(names, fontsize="small")
            level_labels = names
        ax.set_ylabel("directed link" + (" (by fabric level)" if len(blocks) > 1 else ""))
    else:
        ax.set_yticks(ticks)
        ax.set_yticklabels(names, fontsize="small")
        ax.set_ylabel("directed links by fabric level (links per level)")
    ax.set_xlabel("time (ms)")
    ax.set_title(title)
    label = quantity
    label += ", %g ms window)" % window_ms if window_ms else ")"
    left = m.tick_space("y", m.width(row_labels, row_size)) + m.axis_label()
    right = m.tick_space("y", m.width([FRACTION_TICK], m.rc["ytick.labelsize"])) + m.axis_label()   # the colour bar's
    # the bar's pad (a fraction of the heatmap's width): 0.05, or more for the levels' names between the two
    between = m.tick_space("y", m.width(level_labels, "small")) + 6.0 if level_labels else 0.0
    pad = max(0.05, between / max(fig.get_figwidth() * 72 - left - right, 1.0))
    fig.colorbar(img, ax=ax, label=label, pad=pad)
    m.adjust(left=left, right=right, bottom=m.tick_space("x", m.height(m.rc["xtick.labelsize"])) + m.axis_label(),
             top=m.title())
    fig.savefig(path, **PNG_OPTIONS)
    return grid


class RunFolder(Protocol):
    """What :func:`link_heatmap` reads of a run read back (:class:`ibemu.results.Results`)."""
    scenario: str

    def links(self) -> dict[str, np.ndarray]: ...


def link_heatmap(run: Metrics | RunFolder, path: str | Path, levels: Mapping[str, str] | None = None, *,
                 title: str | None = None, window_ps: int | None = None) -> np.ndarray:
    """links_heatmap.png for one run, from its :class:`~ibemu.results.Metrics` (the
    utilization over *window_ps*, default the run's window, as links.csv has it) or its
    output folder read back (:func:`ibemu.results.load_results`: links.csv's all-frame
    columns; *levels* default to results.json's ``link_levels``).  *levels*: label ->
    level (:func:`ibemu.results.summary.link_levels` of the scenario).  Returns the
    matrix drawn (:func:`plot_link_heatmap`)."""
    if hasattr(run, "link_utilization_series"):
        m = run
        series = {lbl: m.link_utilization_series(lbl, False, window_ps) for lbl in m.link_names()}
        return plot_link_heatmap(m.times_ms(), series, levels or {}, path,
                                 title=title or "link utilization by level", xmax=m.duration / PS_PER_MS,
                                 window_ms=(window_ps or m.window) / PS_PER_MS)
    cols = run.links()
    times = cols["time_ms"]
    series = {k: v for k, v in cols.items() if k != "time_ms" and not k.endswith(":data")}
    if levels is None:
        data = getattr(run, "data", {})
        levels = dict(data.get("link_levels") or {})
    xmax = getattr(run, "duration_ps", None)
    return plot_link_heatmap(times, series, levels, path,
                             title=title or "%s - link utilization over time%s" % (
                                 run.scenario, " by fabric level" if levels else ""),
                             xmax=xmax / PS_PER_MS if xmax else None)


PLOT_MAX_TRACES = 12        # curves per panel of cc.png


def plot_traces(metrics: PlotSource, scenario: Scenario, out: Path) -> None:
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
    fig.savefig(out / "cc.png", **PNG_OPTIONS)


PLOT_MAX_CDFS = 10          # curves per panel of latency.png


def _cdf_curves(metrics: PlotSource, scenario: Scenario, which: int) -> list[tuple[str, np.ndarray]]:
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


def plot_latency(metrics: PlotSource, scenario: Scenario, out: Path) -> None:
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
    logs = []
    for k, (xlabel, curves) in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, k + 1)
        lo = min(float(x[0]) for _, x in curves)
        hi = max(float(x[-1]) for _, x in curves)
        for j, (label, x) in enumerate(curves):
            y = np.arange(1, len(x) + 1) / len(x)
            ax.step(np.concatenate(([x[0]], x)), np.concatenate(([0.0], y)), where="post",
                    color="C%d" % (j % 10), label="%s (%d)" % (label, len(x)), linewidth=1.3)
        logs.append(lo > 0 and hi / lo > 20)
        if logs[-1]:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
    fig.suptitle(scenario.name + " - latency CDF")
    m = Margins(fig)
    size = m.rc["xtick.labelsize"]
    ticks = max(m.height(size, LOG_TICK if log else "0") for log in logs)
    bottom = m.tick_space("x", ticks) + m.axis_label()
    m.adjust(left=m.tick_space("y", m.width([FRACTION_TICK], m.rc["ytick.labelsize"])) + m.axis_label(),
             right=m.width(["10000.0"], size) / 2, bottom=bottom, top=m.suptitle(), gap=bottom + 8.0,
             rows=len(panels))
    fig.savefig(out / "latency.png", **PNG_OPTIONS)
