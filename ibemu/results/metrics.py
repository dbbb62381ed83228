"""The hot-path recorder of a run: :class:`Metrics` implements the fabric's
:class:`~ibemu.fabric.recorder.Recorder` contract with binned time series (bytes,
packets and messages per bin of ``output.bin``), congestion-control traces, events and
port-counter samples; the wall-clock runtime's workers each record their own nodes and
the controller merges their bins (:meth:`Metrics.export_bins` / :meth:`Metrics.merge_bins`).

Rates over time follow seed 003 §3 (a sliding window centred on each bin,
:func:`~ibemu.results.rates.sliding_rate`); the run's totals, rates and Jain fairness are
:meth:`Metrics.summary` (:func:`ibemu.results.summary.summarize`).  All times are emulated
picoseconds.
"""
from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import numpy as np

from ..fabric.bins import BinnedRecorder
from ..units import PS_PER_MS
from .latency import completion_time, join
from .packing import contains_points, pack_times, unpack_times
from .port_rows import PortRows
from .rates import bin_edges, per_capacity, sliding_rates, stack_bins
from .summary import summarize

Bins: TypeAlias = "array[int]"               # array("q"): one signed 64-bit count per bin


class FlowLike(Protocol):
    """What Metrics reads of a flow's spec (:class:`ibemu.fabric.params.FlowSpec` has it)."""
    group: str | None
    start: int
    stop: int | None
    pattern: str                # "messages": a finite flow of *count* messages
    count: int | None


class Metrics(BinnedRecorder):
    """Binned counts of everything the fabric reports.

    *link_capacity*: directed link label -> bytes/s.  *flows*: flow name -> spec with
    ``group``, ``start``, ``stop`` (e.g. :class:`ibemu.fabric.params.FlowSpec`).
    *flow_capacity*: flow name -> bytes/s of its source link (for normalized rates).
    A flow's normalized rate counts the wire bytes of its delivered data packets (each
    frame's whole length as :meth:`flow_rx` reports it: every header present, pad, ICRC
    and VCRC), so a flow alone at line rate is 1.0 whatever its operation.
    *window_ps*: default sliding window of the ``*_series`` accessors.

    Message latency: the start time of every message (one array("q") per flow, indexed
    by message number) and the number and time of every completion (two arrays), 8 and
    16 bytes per message, recorded by the compiled base (``msg_start``, ``msg_done``);
    joined when asked (:meth:`latencies`).

    Events at or after the run's end are kept (the bins grow).
    """

    def __init__(self, duration_ps: int, bin_ps: int, link_capacity: Mapping[str, int],
                 flows: Mapping[str, FlowLike], flow_capacity: Mapping[str, int], *,
                 window_ps: int = 2 * PS_PER_MS) -> None:
        super().__init__(duration_ps, bin_ps, link_capacity)
        self.flows: dict[str, FlowLike] = dict(flows)
        self.flow_capacity: dict[str, int] = dict(flow_capacity)
        self.window = int(window_ps)
        self._counters: dict[str, dict[str, int]] = {}
        self.traces: dict[tuple[str, str], list[tuple[int, float]]] = {}   # (kind, key) -> [(t, value)]
        self.events: list[tuple[int, str, str]] = []                       # (t, source, text)
        self.port_times: list[int] = []                                    # sample times (ps)
        self._port_samples: dict[str, dict[str, list[int]]] = {}           # "node:port" -> counter -> values
        self._rows = PortRows()                                            # samples not yet in it
        self.job_marks: list[tuple[str, int, int, int, int, int]] = []     # issue 29: ranks' iterations
        self.jobs: dict[str, dict[str, Any]] = {}                          # job name -> .jobs.job_info
        self.job_baselines: dict[str, int] = {}                            # job name -> completion alone (ps)
        for label in self.link_capacity:
            self._new_link(label)
        for name in self.flows:
            self._new_flow(name)

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

    def job_mark(self, job: str, rank: int, op: int, iteration: int, start: int, end: int) -> None:
        self.job_marks.append((job, rank, op, iteration, start, end))

    @property
    def port_samples(self) -> dict[str, dict[str, list[int]]]:
        """``"node:port"`` -> counter -> its value at each of :attr:`port_times` (zeros before a later-seen one)."""
        if self._rows:
            self._rows.flush(self._port_samples, len(self.port_times))
        return self._port_samples

    def sample_rows(self, t: int, labels: Sequence[str], names: Sequence[str], values: Sequence[int]) -> None:
        """The same as ``sample_ports(t, {label: dict(zip(names, row))})``, where the rows
        of the ports *labels* follow one another in *values*: kept as they are until
        :attr:`port_samples` is read (:class:`~.port_rows.PortRows`; issue 28)."""
        if self._rows.add(labels, names, values):
            self.port_times.append(t)
        else:                                   # other ports or names, or a value past 64 bits
            n = len(names)
            self.sample_ports(t, {label: dict(zip(names, values[i * n:(i + 1) * n])) for i, label in enumerate(labels)})

    def sample_ports(self, t: int, totals: Mapping[str, Mapping[str, int]]) -> None:
        """Port counter totals (``{"node:port": {counter: value}}``, IBA units) at *t*."""
        samples = self.port_samples
        self.port_times.append(t)
        k = len(self.port_times) - 1
        for label, values in totals.items():
            series = samples.get(label)
            if series is None:
                series = samples[label] = {name: [0] * k for name in values}
            for name, v in values.items():
                got = series.get(name)
                if got is None:                 # (a counter new since the first sample: zeros before;
                    got = series[name] = [0] * k    # not setdefault's default, made on every call)
                got.append(v)

    def port_totals(self) -> dict[str, dict[str, int]]:
        """The last sample of every port counter."""
        return {label: {name: vals[-1] for name, vals in series.items()}
                for label, series in sorted(self.port_samples.items())}

    def trace_summary(self) -> dict[str, dict[str, dict[str, float]]]:
        """Per kind and key: changes, min, max, last value and the time-weighted mean."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (kind, key), tr in sorted(self.traces.items()):
            ts = [t for t, _ in tr] + [max(self.duration, tr[-1][0])]
            vals = [v for _, v in tr]
            span = ts[-1] - ts[0]
            mean = (sum(v * (ts[i + 1] - ts[i]) for i, v in enumerate(vals)) / span) if span else vals[-1]
            out.setdefault(kind, {})[key] = {"changes": len(tr), "min": min(vals), "max": max(vals),
                                             "last": vals[-1], "mean": mean}
        return out

    def counters(self) -> dict[str, dict[str, int]]:
        """A copy of the per-node counters (:meth:`counter`)."""
        return {n: dict(c) for n, c in self._counters.items()}

    def add_links(self, capacity: Mapping[str, int]) -> None:
        """Declare directed links (label -> bytes/s), so idle ones appear in results too."""
        for label, cap in capacity.items():
            self.link_capacity[label] = cap
            if label not in self._links:
                self._new_link(label)

    def add_flow_capacity(self, capacity: Mapping[str, int]) -> None:
        self.flow_capacity.update(capacity)

    # -- export / merge: the wall-clock runtime's workers each record their own nodes
    def export_bins(self) -> dict[str, Any]:
        """The recorded bins (series with any count) and counters, JSON-ready."""
        def nz(table: Mapping[str, tuple[Bins, ...]]) -> dict[str, list[list[int]]]:
            return {k: [list(x) for x in v] for k, v in table.items() if any(any(x) for x in v)}
        self.flush()
        return {"bin_ps": self.bin, "nbins": self._n, "links": nz(self._links),
                "flow_tx": nz(self._ftx), "flow_rx": nz(self._frx),
                "msg_start": {k: pack_times(v) for k, v in self.msg_start.items()},
                "msg_done": {k: [pack_times(v[0]), pack_times(v[1])] for k, v in self.msg_done.items()},
                "counters": {n: dict(c) for n, c in self._counters.items()},
                "traces": [[kind, key, tr] for (kind, key), tr in self.traces.items()],
                "events": list(self.events), "port_times": list(self.port_times),
                "port_samples": self.port_samples, "job_marks": [list(m) for m in self.job_marks]}

    def merge_bins(self, data: Mapping[str, Any]) -> None:
        """Add bins exported by :meth:`export_bins` of a Metrics with the same bin."""
        if data["bin_ps"] != self.bin:
            raise ValueError("cannot merge bins of %r ps into bins of %r ps" % (data["bin_ps"], self.bin))
        n = int(data["nbins"])
        if n > self._n:                         # the other recorded past the run's end
            self._n = n
            self._extend_all()
        tables: tuple[tuple[dict[str, Any], str, Callable[[str], None]], ...] = (
            (self._links, "links", self._new_link), (self._ftx, "flow_tx", self._new_flow),
            (self._frx, "flow_rx", self._new_flow))
        for table, key, new in tables:
            for name, series in data[key].items():
                if name not in table:
                    new(name)
                for mine, theirs in zip(table[name], series):
                    for i, v in enumerate(theirs):
                        if v:
                            mine[i] += v
        for name, text in data.get("msg_start", {}).items():
            theirs = unpack_times(text)
            mine = self.msg_start.setdefault(name, array("q"))
            if any(x >= 0 for x in mine):       # a flow's messages start at its one source
                raise ValueError("message starts of flow %r recorded twice" % name)
            mine[:] = theirs                    # in place: a flow's sink holds the array
        for name, (seqs, times) in data.get("msg_done", {}).items():
            d = self.msg_done.setdefault(name, (array("q"), array("q")))
            d[0].extend(unpack_times(seqs))
            d[1].extend(unpack_times(times))
        for node, values in data["counters"].items():
            for name, v in values.items():
                self.counter(node, name, v)
        for kind, key, tr in data.get("traces", ()):
            # every worker builds the whole fabric, so each records a trace's build-time
            # points; the worker that runs its node records them and the rest: a part
            # whose points another part already has adds nothing (issue 27: the merged
            # traces are the virtual clock's)
            theirs = [(t, v) for t, v in tr]
            mine = self.traces.get((kind, key))
            if mine is None or contains_points(theirs, mine):
                self.traces[(kind, key)] = theirs
            elif not contains_points(mine, theirs):
                mine.extend(theirs)
                mine.sort(key=lambda tv: tv[0])
        for m in data.get("job_marks", ()):
            self.job_marks.append((str(m[0]), int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5])))
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

    # -- series access
    @property
    def nbins(self) -> int:
        return self._n

    def edges(self) -> np.ndarray:
        return bin_edges(self._n, self.bin, self.duration)

    def times_ms(self) -> np.ndarray:
        """Centre of each bin (of its part inside the run), ms."""
        e = self.edges()
        centres: np.ndarray = (e[:-1] + e[1:]) / 2 / PS_PER_MS
        return centres

    def link_names(self) -> list[str]:
        known = [k for k in self.link_capacity]
        return known + sorted(k for k in self._links if k not in self.link_capacity)

    def has_link(self, label: str) -> bool:
        """Whether directed link *label* was declared or reported."""
        return label in self._links

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

    def group_of(self, name: str) -> str | None:
        spec = self.flows.get(name)
        return None if spec is None else spec.group

    def link_totals(self, label: str) -> tuple[int, int, int]:
        """All bytes, data bytes and data packets sent on *label* over the run (ints)."""
        self.flush()
        allb, datab, datap = (sum(x) for x in self._links[label])
        return allb, datab, datap

    def flow_totals(self, name: str) -> tuple[int, int, int, int, int]:
        """Bytes, packets and messages received, bytes and packets sent, of flow *name*."""
        self.flush()
        rxb, rxp, msg = (sum(x) for x in self._frx[name][:3])
        txb, txp = (sum(x) for x in self._ftx[name])
        return rxb, rxp, msg, txb, txp

    def flow_wire_total(self, name: str) -> int:
        """Wire bytes of the data packets flow *name* delivered (whole frames)."""
        self.flush()
        return sum(self._frx[name][3])

    def latencies(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(latency, completion time) in ps of every message of flow *name* delivered
        whole, in completion order (:func:`ibemu.results.latency.join`)."""
        done = self.msg_done.get(name)
        if done is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return join(self.msg_start.get(name, array("q")), done[0], done[1])

    def messages_started(self, name: str) -> int:
        """Messages of flow *name* whose first byte was sent."""
        return sum(1 for t in self.msg_start.get(name, ()) if t >= 0)

    def completion(self, name: str) -> int | None:
        """Completion time (ps) of finite flow *name* (pattern ``messages``): from its
        first byte sent to the last byte of its last message delivered; None for other
        flows and until every message is delivered."""
        spec = self.flows.get(name)
        if spec is None or spec.pattern != "messages" or not spec.count:
            return None
        done = self.msg_done.get(name)
        if done is None:
            return None
        return completion_time(self.msg_start.get(name, array("q")), done[0], done[1], spec.count)

    def first_start(self, name: str) -> int:
        """When the first byte of flow *name*'s first message was sent (ps); -1: never."""
        a = self.msg_start.get(name)
        return a[0] if a else -1

    def is_finite(self, name: str) -> bool:
        """Whether flow *name* has a fixed number of messages (pattern ``messages``)."""
        spec = self.flows.get(name)
        return spec is not None and spec.pattern == "messages" and bool(spec.count)

    def link_bins(self, label: str, kind: str = "bytes") -> np.ndarray:
        """kind: bytes (all frames) | data_bytes | data_packets."""
        idx = {"bytes": 0, "data_bytes": 1, "data_packets": 2}[kind]
        self.flush()
        return np.asarray(self._links[label][idx], dtype=np.float64)

    def flow_bins(self, name: str, kind: str = "rx_bytes") -> np.ndarray:
        """kind: rx_bytes (payload) | rx_packets | messages | rx_wire_bytes (whole frames)
        | tx_bytes | tx_packets."""
        rx = {"rx_bytes": 0, "rx_packets": 1, "messages": 2, "rx_wire_bytes": 3}
        tx = {"tx_bytes": 0, "tx_packets": 1}
        self.flush()
        bins = self._frx[name][rx[kind]] if kind in rx else self._ftx[name][tx[kind]]
        return np.asarray(bins, dtype=np.float64)

    def _flow_wire_bins(self, name: str) -> np.ndarray:
        return self.flow_bins(name, "rx_wire_bytes")

    def group_capacity(self, members: list[str]) -> int | None:
        """The capacity a group's rate is a fraction of: its members' largest source link."""
        caps = [self.flow_capacity[m] for m in members if self.flow_capacity.get(m)]
        return max(caps) if caps else None

    def active_interval(self, name: str) -> tuple[int, int]:
        """Flow *name*'s active interval [start, min(stop, duration)] (ps)."""
        spec = self.flows.get(name)
        start = max(0, int((spec.start if spec is not None else 0) or 0))
        stop = spec.stop if spec is not None else None
        stop = self.duration if stop is None else min(int(stop), self.duration)
        return start, max(start, stop)

    def link_utilization_series(self, label: str, data: bool = False, window_ps: int | None = None) -> np.ndarray:
        """Sliding-window utilization of a link (fraction of its capacity); NaN without one."""
        return np.asarray(self.link_utilization_rows([label], data, window_ps)[0])

    def link_utilization_rows(self, labels: Sequence[str], data: bool = False,
                              window_ps: int | None = None) -> np.ndarray:
        """:meth:`link_utilization_series` of each of *labels*, a row each, at once."""
        self.flush()
        k = 1 if data else 0
        r = sliding_rates(stack_bins([self._links[lbl][k] for lbl in labels], self._n), self.bin,
                          window_ps or self.window, self.duration)
        return per_capacity(r, [self.link_capacity.get(lbl) for lbl in labels])

    def flow_rate_series(self, name: str, window_ps: int | None = None) -> np.ndarray:
        """Sliding-window delivered rate of a flow as a fraction of its source link."""
        return np.asarray(self.flow_rate_rows([name], window_ps)[0])

    def flow_rate_rows(self, names: Sequence[str], window_ps: int | None = None) -> np.ndarray:
        """:meth:`flow_rate_series` of each of *names*, a row each, at once."""
        self.flush()
        r = sliding_rates(stack_bins([self._frx[x][3] for x in names], self._n), self.bin, window_ps or self.window,
                          self.duration)
        return per_capacity(r, [self.flow_capacity.get(x) for x in names])

    def group_rate_series(self, group: str, window_ps: int | None = None) -> np.ndarray:
        """Aggregate of a group's flows, as a fraction of one member's link (the largest)."""
        members = self.groups().get(group, [])
        total = np.zeros(self._n)
        for m in members:
            total = total + self._flow_wire_bins(m)
        r = sliding_rates(total.reshape(1, self._n), self.bin, window_ps or self.window, self.duration)
        return np.asarray(per_capacity(r, [self.group_capacity(members)])[0])

    # -- summary
    def summary(self, t_from: int | None = None, t_to: int | None = None) -> dict[str, Any]:
        """Totals and rates of the run, and over [t_from, t_to] when either is given
        (:func:`ibemu.results.summary.summarize`)."""
        return summarize(self, t_from, t_to)

