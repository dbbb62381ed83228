"""Metrics of a run: binned time series recorded while the fabric runs, the summary
(throughput, utilization, Jain fairness), and the output folder (results.json,
config.json, flows.csv, links.csv, PNG plots in the style of seed 003 Figure 2).

Rates over time follow seed 003 §3: "the number of packets transmitted in a sliding
time window of duration 2ms centered on the corresponding time point" - here bytes
per bin, summed over a centered window (:func:`sliding_rate`) and divided by the link
rate.  All times are emulated picoseconds.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
from array import array
from pathlib import Path

import numpy as np

from .atomic import atomic_open, atomic_write_text
from .config import PS_PER_MS, PS_PER_S
from .fabric.recorder import Recorder



# ---------------------------------------------------------------- pure helpers

def sliding_rate(counts_per_bin, bin_ps: int, window_ps: int, duration_ps: int | None = None) -> np.ndarray:
    """Per-bin rate (units per second) of *counts_per_bin* over a sliding window of
    *window_ps* centred on each bin's centre.

    Counts are taken as spread evenly inside their bin, so a window edge that cuts a bin
    takes that fraction of it.  At the edges only the part of the window inside the run
    ``[0, duration_ps]`` counts, and the sum is divided by that part's length.  The last
    bin may be partial (*duration_ps* not a multiple of *bin_ps*); *duration_ps* None means
    ``len(counts) * bin_ps``.
    """
    if bin_ps <= 0 or window_ps <= 0:
        raise ValueError("bin and window must be positive (got %r, %r)" % (bin_ps, window_ps))
    c = np.asarray(counts_per_bin, dtype=np.float64)
    n = len(c)
    if n == 0:
        return np.zeros(0)
    edges = _bin_edges(n, bin_ps, duration_ps)
    end = edges[-1]
    cum = np.concatenate(([0.0], np.cumsum(c)))
    centres = (edges[:-1] + edges[1:]) / 2
    lo = np.clip(centres - window_ps / 2, 0.0, end)
    hi = np.clip(centres + window_ps / 2, 0.0, end)
    num = np.interp(hi, edges, cum) - np.interp(lo, edges, cum)
    return num / ((hi - lo) / PS_PER_S)


def jain_index(values) -> float:
    """Jain's fairness index (Σx)²/(n·Σx²): 1.0 when all are equal, 1/n when one takes
    everything; 1.0 for an empty list or all zeros."""
    xs = [float(v) for v in values]
    sq = sum(x * x for x in xs)
    if not xs or sq == 0.0:
        return 1.0
    s = sum(xs)
    return s * s / (len(xs) * sq)


def _bin_edges(n: int, bin_ps: int, duration_ps: int | None) -> np.ndarray:
    """Edges (ps, float) of *n* bins; the last edge is the end of the run when it falls
    inside the last bin."""
    edges = np.arange(n + 1, dtype=np.float64) * bin_ps
    if duration_ps is not None and (n - 1) * bin_ps < duration_ps < n * bin_ps:
        edges[-1] = float(duration_ps)
    return edges


def _between(series, edges: np.ndarray, t0: float, t1: float) -> float:
    """Sum of a binned series over [t0, t1] (fractions of cut bins)."""
    if t1 <= t0:
        return 0.0
    cum = np.concatenate(([0.0], np.cumsum(np.asarray(series, dtype=np.float64))))
    return float(np.interp(t1, edges, cum) - np.interp(t0, edges, cum))


# ---------------------------------------------------------------- the recorder

class Metrics(Recorder):
    """Binned counts of everything the fabric reports.

    *link_capacity*: directed link label -> bytes/s.  *flows*: flow name -> spec with
    ``group``, ``start``, ``stop`` (e.g. :class:`ibemu.config.FlowSpec`).
    *flow_capacity*: flow name -> bytes/s of its source link (for normalized rates).
    *packet_overhead*: bytes added per received data packet when a flow's rate is
    expressed as a fraction of the link (flow_rx reports payload; seed 003 counts whole
    2068-byte packets, so 20 there).  0 keeps the goodput (2048/2068 = 0.990 at best).
    *window_ps*: default sliding window of the ``*_series`` accessors.

    Events at or after the run's end are kept (the bins grow).
    """

    def __init__(self, duration_ps: int, bin_ps: int, link_capacity: dict, flows: dict,
                 flow_capacity: dict, *, packet_overhead: int = 0, window_ps: int = 2 * PS_PER_MS):
        if duration_ps <= 0 or bin_ps <= 0:
            raise ValueError("duration and bin must be positive (got %r, %r)" % (duration_ps, bin_ps))
        self.duration = int(duration_ps)
        self.bin = int(bin_ps)
        self.link_capacity = dict(link_capacity)
        self.flows = dict(flows)
        self.flow_capacity = dict(flow_capacity)
        self.packet_overhead = int(packet_overhead)
        self.window = int(window_ps)
        self._n = -(-self.duration // self.bin)
        self._links: dict[str, tuple[list, list, list]] = {}   # all bytes, data bytes, data packets
        self._ftx: dict[str, tuple[list, list]] = {}           # bytes, packets
        self._frx: dict[str, tuple[list, list, list]] = {}     # bytes, packets, messages
        self._counters: dict[str, dict[str, int]] = {}
        self.traces: dict[tuple[str, str], list[tuple[int, float]]] = {}   # (kind, key) -> [(t, value)]
        self.events: list[tuple[int, str, str]] = []                       # (t, source, text)
        self.port_times: list[int] = []                                    # sample times (ps)
        self.port_samples: dict[str, dict[str, list[int]]] = {}            # "node:port" -> counter -> values
        for label in self.link_capacity:
            self._new_link(label)
        for name in self.flows:
            self._new_flow(name)

    # -- hot path (one call per frame-hop / packet): no numpy, one dict lookup
    def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
        i = t // self.bin
        try:
            s = self._links[link]
            s[0][i] += nbytes
            if data:
                s[1][i] += nbytes
                s[2][i] += 1
        except (KeyError, IndexError):
            self._grow(self._links, self._new_link, link, i)
            self.link_tx(link, t, nbytes, data)

    def flow_tx(self, flow: str, t: int, nbytes: int) -> None:
        i = t // self.bin
        try:
            s = self._ftx[flow]
            s[0][i] += nbytes
            s[1][i] += 1
        except (KeyError, IndexError):
            self._grow(self._ftx, self._new_flow, flow, i)
            self.flow_tx(flow, t, nbytes)

    def flow_rx(self, flow: str, t: int, nbytes: int, message_done: bool) -> None:
        i = t // self.bin
        try:
            s = self._frx[flow]
            s[0][i] += nbytes
            s[1][i] += 1
            if message_done:
                s[2][i] += 1
        except (KeyError, IndexError):
            self._grow(self._frx, self._new_flow, flow, i)
            self.flow_rx(flow, t, nbytes, message_done)

    def counter(self, node: str, name: str, value: int = 1) -> None:
        d = self._counters.get(node)
        if d is None:
            d = self._counters[node] = {}
        d[name] = d.get(name, 0) + value

    def trace(self, kind: str, key: str, t: int, value: float) -> None:
        tr = self.traces.get((kind, key))
        if tr is None:
            tr = self.traces[(kind, key)] = []
        if tr and tr[-1][0] == t:
            tr[-1] = (t, value)
        elif not tr or tr[-1][1] != value:
            tr.append((t, value))

    def event(self, t: int, source: str, text: str) -> None:
        self.events.append((t, source, text))

    def sample_ports(self, t: int, totals: dict) -> None:
        """Port counter totals (``{"node:port": {counter: value}}``, IBA units) at *t*."""
        self.port_times.append(t)
        k = len(self.port_times) - 1
        for label, values in totals.items():
            series = self.port_samples.get(label)
            if series is None:
                series = self.port_samples[label] = {name: [0] * k for name in values}
            for name, v in values.items():
                series.setdefault(name, [0] * k).append(v)

    def port_totals(self) -> dict:
        """The last sample of every port counter."""
        return {label: {name: vals[-1] for name, vals in series.items()}
                for label, series in sorted(self.port_samples.items())}

    def trace_summary(self) -> dict:
        """Per kind and key: changes, min, max, last value and the time-weighted mean."""
        out: dict = {}
        for (kind, key), tr in sorted(self.traces.items()):
            ts = [t for t, _ in tr] + [max(self.duration, tr[-1][0])]
            vals = [v for _, v in tr]
            span = ts[-1] - ts[0]
            mean = (sum(v * (ts[i + 1] - ts[i]) for i, v in enumerate(vals)) / span) if span else vals[-1]
            out.setdefault(kind, {})[key] = {"changes": len(tr), "min": min(vals), "max": max(vals),
                                             "last": vals[-1], "mean": mean}
        return out

    def add_links(self, capacity: dict) -> None:
        """Declare directed links (label -> bytes/s), so idle ones appear in results too."""
        for label, cap in capacity.items():
            self.link_capacity[label] = cap
            if label not in self._links:
                self._new_link(label)

    def add_flow_capacity(self, capacity: dict) -> None:
        self.flow_capacity.update(capacity)

    # -- export / merge: the wall-clock runtime's workers each record their own nodes
    def export_bins(self) -> dict:
        """The recorded bins (series with any count) and counters, JSON-ready."""
        def nz(table):
            return {k: [list(x) for x in v] for k, v in table.items() if any(any(x) for x in v)}
        return {"bin_ps": self.bin, "nbins": self._n, "links": nz(self._links),
                "flow_tx": nz(self._ftx), "flow_rx": nz(self._frx),
                "counters": {n: dict(c) for n, c in self._counters.items()},
                "traces": [[kind, key, tr] for (kind, key), tr in self.traces.items()],
                "events": list(self.events), "port_times": list(self.port_times),
                "port_samples": self.port_samples}

    def merge_bins(self, data: dict) -> None:
        """Add bins exported by :meth:`export_bins` of a Metrics with the same bin."""
        if data["bin_ps"] != self.bin:
            raise ValueError("cannot merge bins of %r ps into bins of %r ps" % (data["bin_ps"], self.bin))
        n = int(data["nbins"])
        if n > self._n:                         # the other recorded past the run's end
            self._n = n
            for tbl in (self._links, self._ftx, self._frx):
                for series in tbl.values():
                    for lst in series:
                        lst.extend([0] * (n - len(lst)))
        for table, key, new in ((self._links, "links", self._new_link), (self._ftx, "flow_tx", self._new_flow),
                                (self._frx, "flow_rx", self._new_flow)):
            for name, series in data[key].items():
                if name not in table:
                    new(name)
                for mine, theirs in zip(table[name], series):
                    for i, v in enumerate(theirs):
                        if v:
                            mine[i] += v
        for node, values in data["counters"].items():
            for name, v in values.items():
                self.counter(node, name, v)
        for kind, key, tr in data.get("traces", ()):
            self.traces.setdefault((kind, key), []).extend((t, v) for t, v in tr)
            self.traces[(kind, key)].sort(key=lambda tv: tv[0])
        if data.get("events"):
            self.events = sorted(self.events + [tuple(e) for e in data["events"]], key=lambda e: e[0])
        times = data.get("port_times") or []
        if times:                               # the same sample times everywhere; keep the common part
            if self.port_samples and len(times) < len(self.port_times):
                self.port_times = self.port_times[:len(times)]
                for series in self.port_samples.values():
                    for name in series:
                        del series[name][len(times):]
            elif not self.port_samples:
                self.port_times = list(times)
            k = len(self.port_times)
            for label, series in data["port_samples"].items():
                self.port_samples[label] = {name: list(vals[:k]) for name, vals in series.items()}

    # -- slow path
    # Bins are preallocated int64 arrays, not lists: a list holds a separate int object
    # (32 bytes) for every bin once its count passes 256, so a long run's memory grew as
    # the bins filled (+6 MB per worker in 10 minutes of benchmarks/soak_wall.py); an
    # array takes its 8 bytes per bin up front and stays flat (issue 8 item 8).
    def _zeros(self):
        return array("q", bytes(8 * self._n))

    def _new_link(self, label):
        self._links[label] = (self._zeros(), self._zeros(), self._zeros())

    def _new_flow(self, name):
        self._ftx[name] = (self._zeros(), self._zeros())
        self._frx[name] = (self._zeros(), self._zeros(), self._zeros())

    def _grow(self, table, create, key, i):
        if i < 0:
            raise ValueError("negative time reported to Metrics (bin %d)" % i)
        if key not in table:
            create(key)
        if i >= self._n:                       # an event after the run's end: all series grow
            self._n = i + 1
            for tbl in (self._links, self._ftx, self._frx):
                for series in tbl.values():
                    for lst in series:
                        lst.extend([0] * (self._n - len(lst)))

    # -- series access
    @property
    def nbins(self) -> int:
        return self._n

    def edges(self) -> np.ndarray:
        return _bin_edges(self._n, self.bin, self.duration)

    def times_ms(self) -> np.ndarray:
        """Centre of each bin (of its part inside the run), ms."""
        e = self.edges()
        return (e[:-1] + e[1:]) / 2 / PS_PER_MS

    def link_names(self) -> list[str]:
        known = [k for k in self.link_capacity]
        return known + sorted(k for k in self._links if k not in self.link_capacity)

    def flow_names(self) -> list[str]:
        known = [k for k in self.flows]
        return known + sorted(k for k in self._frx if k not in self.flows)

    def groups(self) -> dict[str, list[str]]:
        """Group -> member flows, in flow order."""
        out: dict[str, list[str]] = {}
        for name in self.flow_names():
            g = self.group_of(name)
            if g is not None:
                out.setdefault(g, []).append(name)
        return out

    def group_of(self, name):
        return getattr(self.flows.get(name), "group", None)

    def link_bins(self, label: str, kind: str = "bytes") -> np.ndarray:
        """kind: bytes (all frames) | data_bytes | data_packets."""
        idx = {"bytes": 0, "data_bytes": 1, "data_packets": 2}[kind]
        return np.asarray(self._links[label][idx], dtype=np.float64)

    def flow_bins(self, name: str, kind: str = "rx_bytes") -> np.ndarray:
        """kind: rx_bytes | rx_packets | messages | tx_bytes | tx_packets."""
        table, idx = {"rx_bytes": (self._frx, 0), "rx_packets": (self._frx, 1),
                      "messages": (self._frx, 2), "tx_bytes": (self._ftx, 0),
                      "tx_packets": (self._ftx, 1)}[kind]
        return np.asarray(table[name][idx], dtype=np.float64)

    def _flow_wire_bins(self, name):
        b = self.flow_bins(name, "rx_bytes")
        if self.packet_overhead:
            b = b + self.packet_overhead * self.flow_bins(name, "rx_packets")
        return b

    def _group_capacity(self, members):
        caps = [self.flow_capacity[m] for m in members if self.flow_capacity.get(m)]
        return max(caps) if caps else None

    def link_utilization_series(self, label: str, data: bool = False, window_ps: int | None = None) -> np.ndarray:
        """Sliding-window utilization of a link (fraction of its capacity); NaN without one."""
        cap = self.link_capacity.get(label)
        bins = self.link_bins(label, "data_bytes" if data else "bytes")
        r = sliding_rate(bins, self.bin, window_ps or self.window, self.duration)
        return r / cap if cap else r * math.nan

    def flow_rate_series(self, name: str, window_ps: int | None = None) -> np.ndarray:
        """Sliding-window delivered rate of a flow as a fraction of its source link."""
        cap = self.flow_capacity.get(name)
        r = sliding_rate(self._flow_wire_bins(name), self.bin, window_ps or self.window, self.duration)
        return r / cap if cap else r * math.nan

    def group_rate_series(self, group: str, window_ps: int | None = None) -> np.ndarray:
        """Aggregate of a group's flows, as a fraction of one member's link (the largest)."""
        members = self.groups().get(group, [])
        total = np.zeros(self._n)
        for m in members:
            total = total + self._flow_wire_bins(m)
        cap = self._group_capacity(members)
        r = sliding_rate(total, self.bin, window_ps or self.window, self.duration)
        return r / cap if cap else r * math.nan

    # -- summary
    def _active(self, name):
        spec = self.flows.get(name)
        start = max(0, int(getattr(spec, "start", 0) or 0))
        stop = getattr(spec, "stop", None)
        stop = self.duration if stop is None else min(int(stop), self.duration)
        return start, max(start, stop)

    def summary(self, t_from: int | None = None, t_to: int | None = None) -> dict:
        """Totals and rates of the run, and over [t_from, t_to] when either is given.

        Flows: rx_bytes/rx_packets/messages/tx_*, throughput (bytes/s) over the active
        interval [start, min(stop, duration)], normalized (fraction of the source link,
        packet_overhead included).  Groups: the same for the members' sum over the union
        span of their active intervals, plus Jain's index among members.  Links: bytes,
        utilization (all frames) and data_utilization over the run.  "window" sub-dicts
        hold the same over [t_from, t_to] (intersected with the active interval).
        """
        edges = self.edges()
        win = None
        if t_from is not None or t_to is not None:
            lo = max(0, int(t_from or 0))
            hi = min(self.duration, int(self.duration if t_to is None else t_to))
            if hi <= lo:
                raise ValueError("empty summary window [%r, %r]" % (t_from, t_to))
            win = (lo, hi)
        ov = self.packet_overhead

        def rates(byt, pkts, t0, t1, cap):
            secs = (t1 - t0) / PS_PER_S
            tput = byt / secs if secs > 0 else 0.0
            norm = None
            if cap:
                norm = (byt + ov * pkts) / secs / cap if secs > 0 else 0.0
            return tput, norm

        flows, run_tputs, win_tputs = {}, {}, {}
        for name in self.flow_names():
            rxb, rxp, msg = (sum(x) for x in self._frx[name])
            txb, txp = (sum(x) for x in self._ftx[name])
            start, stop = self._active(name)
            cap = self.flow_capacity.get(name)
            tput, norm = rates(rxb, rxp, start, stop, cap)
            f = {"group": self.group_of(name), "rx_bytes": rxb, "rx_packets": rxp, "messages": msg,
                 "tx_bytes": txb, "tx_packets": txp, "start_ps": start, "stop_ps": stop,
                 "throughput": tput, "throughput_gbps": tput * 8e-9, "normalized": norm,
                 "capacity": cap}
            if stop > start:
                run_tputs[name] = tput
            if win:
                a, b = max(start, win[0]), min(stop, win[1])
                wb = _between(self._frx[name][0], edges, a, b)
                wp = _between(self._frx[name][1], edges, a, b)
                wt, wn = rates(wb, wp, a, b, cap)
                f["window"] = {"rx_bytes": wb, "rx_packets": wp, "active_ps": max(0, b - a),
                               "messages": _between(self._frx[name][2], edges, a, b),
                               "throughput": wt, "throughput_gbps": wt * 8e-9, "normalized": wn}
                if b > a:
                    win_tputs[name] = wt
            flows[name] = f

        groups = {}
        for g, members in self.groups().items():
            cap = self._group_capacity(members)
            rxb = sum(flows[m]["rx_bytes"] for m in members)
            rxp = sum(flows[m]["rx_packets"] for m in members)
            start = min(flows[m]["start_ps"] for m in members)
            stop = max(flows[m]["stop_ps"] for m in members)
            tput, norm = rates(rxb, rxp, start, stop, cap)
            gd = {"flows": members, "rx_bytes": rxb, "rx_packets": rxp,
                  "messages": sum(flows[m]["messages"] for m in members),
                  "start_ps": start, "stop_ps": stop, "throughput": tput,
                  "throughput_gbps": tput * 8e-9, "normalized": norm, "capacity": cap,
                  "jain": jain_index(run_tputs[m] for m in members if m in run_tputs)}
            if win:
                a, b = max(start, win[0]), min(stop, win[1])
                wb = sum(flows[m]["window"]["rx_bytes"] for m in members)
                wp = sum(flows[m]["window"]["rx_packets"] for m in members)
                wt, wn = rates(wb, wp, a, b, cap)
                gd["window"] = {"rx_bytes": wb, "rx_packets": wp, "throughput": wt,
                                "messages": sum(flows[m]["window"]["messages"] for m in members),
                                "throughput_gbps": wt * 8e-9, "normalized": wn,
                                "jain": jain_index(win_tputs[m] for m in members if m in win_tputs)}
            groups[g] = gd

        links = {}
        for label in self.link_names():
            allb, datab, datap = (sum(x) for x in self._links[label])
            cap = self.link_capacity.get(label)
            secs = self.duration / PS_PER_S
            ld = {"bytes": allb, "data_bytes": datab, "data_packets": datap, "capacity": cap,
                  "utilization": allb / secs / cap if cap else None,
                  "data_utilization": datab / secs / cap if cap else None}
            if win:
                ws = (win[1] - win[0]) / PS_PER_S
                wb = _between(self._links[label][0], edges, *win)
                wd = _between(self._links[label][1], edges, *win)
                ld["window"] = {"bytes": wb, "data_bytes": wd,
                                "data_packets": _between(self._links[label][2], edges, *win),
                                "utilization": wb / ws / cap if cap else None,
                                "data_utilization": wd / ws / cap if cap else None}
            links[label] = ld

        fairness = {"jain": jain_index(run_tputs.values()),
                    "groups": {g: groups[g]["jain"] for g in groups}}
        if win:
            fairness["jain_window"] = jain_index(win_tputs.values())
        return {"duration_ps": self.duration, "bin_ps": self.bin,
                "packet_overhead": self.packet_overhead,
                "window": {"from_ps": win[0], "to_ps": win[1]} if win else None,
                "flows": flows, "groups": groups, "links": links, "fairness": fairness,
                "counters": {n: dict(c) for n, c in self._counters.items()}}


# ---------------------------------------------------------------- output folder

def _clean(obj):
    """JSON-ready copy: str keys, floats rounded to 9 significant digits, NaN/inf -> None."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, (bool, type(None), str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if not math.isfinite(x):
            return None
        x = float("%.9g" % x)
        return 0.0 if x == 0 else x
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _clean(dataclasses.asdict(obj))
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    return str(obj)


def _dump_json(obj, path: Path):
    atomic_write_text(path, json.dumps(_clean(obj), sort_keys=True, indent=2) + "\n")


def _fmt(x) -> str:
    x = float(x)
    return "" if not math.isfinite(x) else "%.6g" % x


def _write_csv(path: Path, times_ms, columns: list[tuple[str, np.ndarray]]):
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["time_ms"] + [name for name, _ in columns])
        for i, t in enumerate(times_ms):
            w.writerow(["%.9g" % t] + [_fmt(col[i]) for _, col in columns])


PORT_SERIES = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait",
               "PortXmitTimeCong", "PortRcvFECN", "PortRcvBECN")


def _write_port_series(metrics: Metrics, path: Path) -> None:
    """counters.csv: the running totals of the busy ports' counters at each sample."""
    cols = []
    for label, series in sorted(metrics.port_samples.items()):
        if not any(series.get("PortXmitPkts", [0])) and not any(series.get("PortRcvPkts", [0])):
            continue
        cols += [("%s:%s" % (label, name), series[name]) for name in PORT_SERIES if name in series]
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["time_ms"] + [c for c, _ in cols])
        for i, t in enumerate(metrics.port_times):
            w.writerow(["%.9g" % (t / PS_PER_MS)] + [v[i] for _, v in cols])


def write_outputs(metrics: Metrics, scenario, out_dir, extra: dict | None = None, *,
                  window: tuple[int, int] | None = None) -> dict:
    """Write the run's output folder; returns what went into results.json.

    results.json: scenario name/seed/duration, ``summary`` (over [window] too when given),
    ``extra``.  config.json: ``scenario.resolved`` (or the dataclasses).  flows.csv: per
    flow and ``group:<name>`` aggregate, sliding-window delivered rate as a fraction of
    the source link.  links.csv: per link utilization (all frames) and ``<label>:data``.
    throughput.png / links.png when ``scenario.output.plots``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    win_ps = getattr(scenario.output, "window", None) or metrics.window
    summary = metrics.summary(*window) if window else metrics.summary()
    results = {"scenario": scenario.name, "seed": scenario.seed, "duration_ps": scenario.duration,
               "duration_ms": scenario.duration / PS_PER_MS, "source": scenario.source,
               "summary": summary}
    if extra is not None:
        results["extra"] = extra
    if metrics.traces:
        results["traces"] = metrics.trace_summary()
    if metrics.port_samples:
        results["ports"] = metrics.port_totals()
    if metrics.events:
        results["events"] = [{"time_ms": t / PS_PER_MS, "source": src, "text": text}
                             for t, src, text in metrics.events]
    _dump_json(results, out / "results.json")
    if metrics.port_samples:
        _write_port_series(metrics, out / "counters.csv")
    if metrics.traces:
        with atomic_open(out / "traces.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["kind", "key", "time_ms", "value"])
            for (kind, key), tr in sorted(metrics.traces.items()):
                for t, v in tr:
                    w.writerow([kind, key, "%.9g" % (t / PS_PER_MS), _fmt(v)])
    _dump_json(scenario.resolved or dataclasses.asdict(scenario), out / "config.json")

    times = metrics.times_ms()
    flow_cols = [(n, metrics.flow_rate_series(n, win_ps)) for n in metrics.flow_names()]
    group_cols = [(g, metrics.group_rate_series(g, win_ps)) for g in metrics.groups()]
    _write_csv(out / "flows.csv", times, flow_cols + [("group:" + g, s) for g, s in group_cols])
    link_all = [(l, metrics.link_utilization_series(l, False, win_ps)) for l in metrics.link_names()]
    link_data = [(l, metrics.link_utilization_series(l, True, win_ps)) for l in metrics.link_names()]
    cols = []
    for (l, a), (_, d) in zip(link_all, link_data):
        cols += [(l, a), (l + ":data", d)]
    _write_csv(out / "links.csv", times, cols)

    if getattr(scenario.output, "plots", False):
        from .plots import plot_run
        plot_run(metrics, scenario, out, times, dict(link_data), dict(link_all), dict(flow_cols), dict(group_cols))
        if metrics.traces:
            from .plots import plot_traces
            plot_traces(metrics, scenario, out)
    return results


# ---------------------------------------------------------------- terminal

def format_summary_table(summary: dict) -> str:
    """Plain-text table of a :meth:`Metrics.summary` (or results.json) dict."""
    s = summary.get("summary", summary)
    win = s.get("window")

    def pick(d):
        return d.get("window", d) if win else d

    def pct(x):
        return "-" if x is None else "%.3f" % x

    def table(head, rows, left):
        """Columns before index *left* are left-aligned (names), the rest right-aligned."""
        widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]

        def line(r):
            return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]

    out = []
    if win:
        out.append("window %.6g .. %.6g ms" % (win["from_ps"] / PS_PER_MS, win["to_ps"] / PS_PER_MS))
    def row(name, group, d):
        d = pick(d)
        return [name, group, "%.3f" % d["throughput_gbps"], pct(d["normalized"]),
                "%.0f" % d["rx_packets"], "%.0f" % d["messages"]]
    rows = [row(name, f.get("group") or "-", f) for name, f in s.get("flows", {}).items()]
    rows += [row("[" + g + "]", g, d) for g, d in s.get("groups", {}).items()]
    if rows:
        out += table(["flow", "group", "Gb/s", "of link", "packets", "messages"], rows, 2)
    lrows = [[l, pct(pick(d)["utilization"]), pct(pick(d)["data_utilization"]), "%.0f" % pick(d)["bytes"]]
             for l, d in s.get("links", {}).items()]
    if lrows:
        out += [""] + table(["link", "util", "data util", "bytes"], lrows, 1)
    fair = s.get("fairness")
    if fair:
        j = fair.get("jain_window", fair["jain"]) if win else fair["jain"]
        out += ["", "Jain fairness (flows): %.4f" % j]
    return "\n".join(out)


class Progress:
    """Emulated ms done / total on stderr (tqdm).  Shown only when *enabled* and the
    stream is a TTY; :meth:`update` is cheap to call often (redraws at most every 0.1 %)."""

    def __init__(self, total_ps: int, enabled: bool = True, file=None):
        self.total_ps = max(0, int(total_ps))
        stream = sys.stderr if file is None else file
        isatty = getattr(stream, "isatty", None)
        self._bar = None
        self._next = math.inf
        if enabled and self.total_ps > 0 and callable(isatty) and isatty():
            from tqdm import tqdm
            self._bar = tqdm(total=self.total_ps / PS_PER_MS, file=stream, unit="ms", leave=False,
                             desc="emulated", dynamic_ncols=True,
                             bar_format="{desc} {n:.2f}/{total:.2f} ms {percentage:3.0f}%|{bar}| "
                                        "[{elapsed}<{remaining}]")
            self._step = max(1, self.total_ps // 1000)
            self._next = 0

    @property
    def enabled(self) -> bool:
        return self._bar is not None

    def update(self, now_ps: int) -> None:
        if now_ps < self._next:
            return
        done = min(now_ps, self.total_ps) / PS_PER_MS
        self._bar.update(done - self._bar.n)
        self._next = now_ps + self._step

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._next = math.inf

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
