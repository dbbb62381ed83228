"""A run's output folder: results.json (the summary, traces, port totals, events),
config.json (the resolved scenario), flows.csv / links.csv (sliding-window rates as
fractions of the link, seed 003 §3 and Figure 2), flow_table.csv / link_table.csv (one
row per flow / directed link with its group / fabric level: the rows the terminal
summary aggregates at cluster scale, :mod:`.summary`), latency.csv (message latency and
completion time per flow and group, :mod:`.latency`), counters.csv (port counters over
time, IBA 16.1.3.5 PortCounters names), traces.csv (congestion-control variables) and,
when ``output.plots``, the PNG plots (:mod:`ibemu.plots`).

Every file is written atomically (:mod:`ibemu.atomic`), and the folder as a whole too
(:func:`ibemu.atomic.atomic_batch`, issue 14 item 6): an error on the way -- a full disk,
a directory in the way -- leaves the earlier files as they were and no temporary file,
and is one :class:`~ibemu.errors.OutputError` line naming the path and the system's
reason.  Floats are rounded to 9 significant digits in JSON and 6 in CSV, so outputs
compare byte for byte.
"""
from __future__ import annotations

import csv
import dataclasses
import gc
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_batch, atomic_open, atomic_write_text, prepare_dir, replace
from ..errors import OutputError
from ..scenario.model import Scenario
from ..units import PS_PER_MS, PS_PER_US
from .csvtext import fmt, write_header, write_series
from .jsontext import dumps
from .metrics import Metrics
from .plot_data import PlotData, PlotJob, Rows, draw
from .plot_worker import PlotWorker
from .summary import FLOW_TABLE, LINK_TABLE, OTHER_LEVEL, link_levels

PORT_SERIES = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait",
               "PortXmitTimeCong", "PortRcvFECN", "PortRcvBECN")
"""The port counters written to counters.csv, per busy port."""


def _dump_json(obj: Any, path: Path) -> None:
    atomic_write_text(path, dumps(obj) + "\n")


def _write_port_series(metrics: Metrics, path: Path) -> None:
    """counters.csv: the running totals of the busy ports' counters at each sample."""
    names: list[str] = []
    cols: list[list[int]] = []
    for label, series in sorted(metrics.port_samples.items()):
        if any(series.get("PortXmitPkts", _ZERO)) or any(series.get("PortRcvPkts", _ZERO)):
            for name in PORT_SERIES:
                if name in series:
                    names.append("%s:%s" % (label, name))
                    cols.append(series[name])
    times = ["%.9g" % (t / PS_PER_MS) for t in metrics.port_times]
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        write_header(fh, w, ["time_ms", *names])
        if set(map(len, cols)) <= {len(times)}:
            w.writerows(zip(times, *cols, strict=True))
        else:
            w.writerows(zip(times, *[v[:len(times)] for v in cols], strict=True))


_ZERO = (0,)


LATENCY_COLUMNS = ("name", "kind", "group", "messages_started", "messages", "p50_us", "p99_us", "max_us",
                   "mean_us", "finite", "completed", "completion_us")
"""latency.csv's columns (:func:`_write_latency`)."""


def _write_latency(summary: dict[str, Any], path: Path) -> None:
    """latency.csv: one row per flow and per group (``kind`` flow or group): messages
    started and delivered whole (the latency sample count), the latency's p50, p99, max
    and mean (nearest-rank percentiles, :mod:`.latency`), and for finite flows the
    completion time (a group: from its first member's first byte to its last member's
    last byte; ``completed``: how many finite flows finished).  Times in µs to the ps
    (9 significant digits); an empty cell: no sample, or not finished."""
    def us(ps: float | None) -> str:
        return "" if ps is None else "%.9g" % (ps / PS_PER_US)

    rows: list[list[Any]] = []
    for kind, table in (("flow", summary["flows"]), ("group", summary["groups"])):
        for name, d in table.items():
            lat = d.get("latency") or {}
            if kind == "flow":
                finite = int(d["finite"])
                completed = int(d["completion_ps"] is not None)
            else:
                finite = d["finite"]
                completed = (d.get("completion") or {}).get("count", 0)
            rows.append([name, kind, d.get("group") if kind == "flow" else name,
                         d["messages_started"], lat.get("count", 0),
                         us(lat.get("p50_ps")), us(lat.get("p99_ps")), us(lat.get("max_ps")),
                         us(lat.get("mean_ps")), finite, completed, us(d.get("completion_ps"))])
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(LATENCY_COLUMNS)
        for r in rows:
            w.writerow(["" if c is None else c for c in r])


FLOW_TABLE_COLUMNS = ("name", "group", "src", "dst", "start_ms", "stop_ms", "throughput_gbps", "normalized",
                      "rx_bytes", "rx_wire_bytes", "rx_packets", "messages", "messages_started", "tx_bytes",
                      "tx_packets", "p50_us", "p99_us", "max_us", "completion_us")
"""flow_table.csv's columns; a windowed summary adds ``window_throughput_gbps``,
``window_normalized``, ``window_p50_us`` and ``window_p99_us``."""
LINK_TABLE_COLUMNS = ("label", "level", "capacity_gbps", "bytes", "data_bytes", "data_packets", "utilization",
                      "data_utilization")
"""link_table.csv's columns; a windowed summary adds ``window_bytes``,
``window_utilization`` and ``window_data_utilization``."""


def _write_tables(summary: dict[str, Any], scenario: Scenario, levels: dict[str, str], out: Path) -> None:
    """flow_table.csv and link_table.csv: the summary's flows and links, one row each,
    with each flow's group, source and destination and each link's fabric level
    (``other`` without one).  Rates as in results.json (:func:`.summary.summarize`),
    6 significant digits; an empty cell: no value."""
    def num(x: float | None) -> str:
        return "" if x is None else fmt(x)

    def us(ps: float | None) -> str:
        return "" if ps is None else fmt(ps / PS_PER_US)

    windowed = summary.get("window") is not None
    specs = {f.name: f for f in scenario.flows}
    rows: list[list[Any]] = []
    for name, d in summary["flows"].items():
        lat = d.get("latency") or {}
        spec = specs.get(name)
        r = [name, d.get("group") or "", spec.src if spec else "", spec.dst if spec else "",
             fmt(d["start_ps"] / PS_PER_MS), fmt(d["stop_ps"] / PS_PER_MS), fmt(d["throughput_gbps"]),
             num(d["normalized"]), d["rx_bytes"], d["rx_wire_bytes"], d["rx_packets"], d["messages"],
             d["messages_started"], d["tx_bytes"], d["tx_packets"], us(lat.get("p50_ps")), us(lat.get("p99_ps")),
             us(lat.get("max_ps")), us(d.get("completion_ps"))]
        if windowed:
            w = d["window"]
            wl = w.get("latency") or {}
            r += [fmt(w["throughput_gbps"]), num(w["normalized"]), us(wl.get("p50_ps")), us(wl.get("p99_ps"))]
        rows.append(r)
    head = list(FLOW_TABLE_COLUMNS)
    if windowed:
        head += ["window_throughput_gbps", "window_normalized", "window_p50_us", "window_p99_us"]
    _write_rows(out / FLOW_TABLE, head, rows)
    rows = []
    for label, d in summary["links"].items():
        cap = d.get("capacity")
        r = [label, levels.get(label, OTHER_LEVEL), num(cap * 8e-9 if cap else None), d["bytes"], d["data_bytes"],
             d["data_packets"], num(d["utilization"]), num(d["data_utilization"])]
        if windowed:
            w = d["window"]
            r += [w["bytes"], num(w["utilization"]), num(w["data_utilization"])]
        rows.append(r)
    head = list(LINK_TABLE_COLUMNS)
    if windowed:
        head += ["window_bytes", "window_utilization", "window_data_utilization"]
    _write_rows(out / LINK_TABLE, head, rows)


def _write_rows(path: Path, head: Sequence[str], rows: list[list[Any]]) -> None:
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(head)
        for r in rows:
            w.writerow(["%.0f" % c if isinstance(c, float) else c for c in r])


def _write_traces(metrics: Metrics, path: Path) -> None:
    """traces.csv: every change of every traced variable (kind, key, time, value)."""
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["kind", "key", "time_ms", "value"])
        for (kind, key), tr in sorted(metrics.traces.items()):
            for t, v in tr:
                w.writerow([kind, key, "%.9g" % (t / PS_PER_MS), fmt(v)])


def _plots_folder(out: Path) -> Path:
    """The hidden temporary folder inside *out* that the PNGs are drawn into."""
    try:
        return Path(tempfile.mkdtemp(prefix=".plots.", suffix=".tmp", dir=out))
    except OSError as e:
        raise OutputError.from_os(out, e) from None


def _write_plots(job: PlotJob, scenario: Scenario, out: Path, tmp: Path, worker: PlotWorker | None) -> None:
    """The PNG plots, drawn into *tmp* (by *worker*, sent the job before, else here) and
    each renamed into *out* with the other files (:func:`ibemu.atomic.replace`, in the batch)."""
    try:
        if worker is None or not worker.wait():
            for stale in tmp.iterdir():         # what a failed worker left
                stale.unlink()
            draw(job, scenario, tmp)
        for png in sorted(tmp.iterdir()):
            moved = out / (".%s.%d.tmp" % (png.name, os.getpid()))
            os.replace(png, moved)          # out of the temporary folder before it goes
            replace(moved, out / png.name)
    except OSError as e:
        name = Path(os.fsdecode(e.filename)).name if e.filename else ""
        raise OutputError.from_os(out / name if name else out, e) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_outputs(metrics: Metrics, scenario: Scenario, out_dir: str | Path,
                  extra: dict[str, Any] | None = None, *,
                  window: tuple[int, int] | None = None, summary: dict[str, Any] | None = None,
                  plotter: PlotWorker | None = None) -> dict[str, Any]:
    """Write the run's output folder; returns what went into results.json.

    results.json: scenario name/seed/duration, ``summary`` (over [window] too when given),
    ``extra``.  config.json: ``scenario.resolved`` (or the dataclasses).  flows.csv: per
    flow and ``group:<name>`` aggregate, sliding-window delivered rate as a fraction of
    the source link.  links.csv: per link utilization (all frames) and ``<label>:data``.
    ``link_levels`` in results.json: link label -> fabric level (:func:`.summary.link_levels`).
    flow_table.csv / link_table.csv: one row per flow / link (group, level, rates).
    latency.csv: message latency and completion time per flow and group.
    throughput.png / links.png / latency.png when ``scenario.output.plots``.
    *summary*: ``metrics.summary`` over *window* when the caller has it already (else
    computed here, after the plots are sent: results.json's ``summary``).
    *plotter*: a started plot worker (:mod:`.plot_worker`), sent the plots to draw before
    the other files are written.
    """
    out = prepare_dir(out_dir)
    with atomic_batch(), _uncollected():    # all the files, or none (the earlier ones stay)
        results = _write_all(metrics, scenario, out, extra, summary if summary is not None else
                             (lambda: metrics.summary(*window) if window else metrics.summary()), plotter)
    return results


@contextmanager
def _uncollected() -> Iterator[None]:
    """No garbage collection while the block runs (then as before).  Writing the outputs
    allocates millions of objects that live until the files are written (the summary,
    the JSON and CSV text), and every few of them a collection walked them all again:
    at 11,664 hosts 3.4 s of collections, about a third of the phase (issue 28).  What
    they leave in cycles is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


Summary = dict[str, Any] | Callable[[], dict[str, Any]]
"""The run's summary, or the function that computes it (once the plots are sent)."""


def _write_all(metrics: Metrics, scenario: Scenario, out: Path, extra: dict[str, Any] | None,
               summary: Summary, plotter: PlotWorker | None) -> dict[str, Any]:
    times = metrics.times_ms()
    win_ps = scenario.output.window or metrics.window
    flows, links = metrics.flow_names(), metrics.link_names()
    flow_cols = Rows(flows, metrics.flow_rate_rows(flows, win_ps))
    groups = list(metrics.groups())
    group_cols = Rows(groups, np.array([metrics.group_rate_series(g, win_ps) for g in groups]).reshape(len(groups),
                                                                                                     metrics.nbins))
    link_all = Rows(links, metrics.link_utilization_rows(links, False, win_ps))
    link_data = Rows(links, metrics.link_utilization_rows(links, True, win_ps))
    if not scenario.output.plots:
        return _write_files(metrics, scenario, out, extra, summary, times, flow_cols, group_cols, link_all, link_data)
    tmp = _plots_folder(out)
    try:
        if plotter is not None:     # it draws while the other files are written
            if not plotter.submit(tmp, PlotJob(PlotData.of(metrics), times, link_data, link_all, flow_cols,
                                               group_cols)):
                plotter = None
        results = _write_files(metrics, scenario, out, extra, summary, times, flow_cols, group_cols, link_all,
                               link_data)
        _write_plots(PlotJob(metrics, times, link_data, link_all, flow_cols, group_cols), scenario, out, tmp,
                     plotter)
    except BaseException:
        if plotter is not None:     # stopped before its folder goes
            plotter.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return results


def _write_files(metrics: Metrics, scenario: Scenario, out: Path, extra: dict[str, Any] | None,
                 summary: Summary, times: np.ndarray, flow_cols: Rows, group_cols: Rows,
                 link_all: Rows, link_data: Rows) -> dict[str, Any]:
    """Every file of the folder but the plots; returns what went into results.json."""
    if callable(summary):
        summary = summary()
    results: dict[str, Any] = {"scenario": scenario.name, "seed": scenario.seed,
                               "duration_ps": scenario.duration,
                               "duration_ms": scenario.duration / PS_PER_MS, "source": scenario.source,
                               "summary": summary}
    if extra is not None:
        results["extra"] = extra
    if metrics.traces:
        results["traces"] = metrics.trace_summary()
    if metrics.port_samples:
        results["ports"] = metrics.port_totals()
    levels = link_levels(scenario)
    results["link_levels"] = levels
    if metrics.events:
        results["events"] = [{"time_ms": t / PS_PER_MS, "source": src, "text": text}
                             for t, src, text in metrics.events]
    _dump_json(results, out / "results.json")
    if metrics.port_samples:
        _write_port_series(metrics, out / "counters.csv")
    if metrics.traces:
        _write_traces(metrics, out / "traces.csv")
    _dump_json(scenario.resolved or dataclasses.asdict(scenario), out / "config.json")
    write_series(out / "flows.csv", times, flow_cols.labels + ["group:" + g for g in group_cols.labels],
                 np.concatenate((flow_cols.values, group_cols.values)))
    write_series(out / "links.csv", times, [c for lbl in link_all.labels for c in (lbl, lbl + ":data")],
                 np.stack((link_all.values, link_data.values), axis=1).reshape(2 * len(link_all.labels), metrics.nbins))
    _write_latency(summary, out / "latency.csv")
    _write_tables(summary, scenario, levels, out)
    return results
