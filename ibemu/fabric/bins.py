"""The hot half of the run's recorder, compiled with the core (issue 28: the interpreted
``Metrics.link_tx``, once per frame-hop, took about a sixth of a 648-host run).

:class:`BinnedRecorder` implements the per-frame calls of the
:class:`~ibemu.fabric.recorder.Recorder` contract -- :meth:`link_tx`, :meth:`flow_tx`,
:meth:`flow_rx` -- as counts per time bin of ``output.bin``; :class:`ibemu.results.Metrics`
extends it with everything that is read after the run (rates, summaries, merging the wall
clock's workers).  The series are int64 arrays, one count per bin, allocated up front (a
list would hold a separate int object per bin: issue 8 item 8).

Rules (seed 003 §3 rates are taken over these bins): a frame's bytes are counted over the
time it occupies the link at the link's rate, split between the bins it crosses (whole
bytes, the remainder in the last), so a link's utilization never reads above 1.0 in a
window shorter than a few packets; its packet is counted at its start.  A frame that
starts within the run and ends after it counts only the bytes before the run's end.
Events at or after the run's end are kept: every series grows.
"""
from __future__ import annotations

from array import array
from collections.abc import Mapping

from mypy_extensions import mypyc_attr

from ..units import PS_PER_S
from .recorder import FlowSink, LinkSink, Recorder

__all__ = ["BinnedRecorder", "FlowBins", "LinkBins", "LinkSeries", "FlowTxSeries", "FlowRxSeries", "spread"]

_ZERO = (0,)
LinkSeries = tuple["array[int]", "array[int]", "array[int]"]                   # all bytes, data bytes, data packets
FlowTxSeries = tuple["array[int]", "array[int]"]                               # bytes, packets
FlowRxSeries = tuple["array[int]", "array[int]", "array[int]", "array[int]"]   # payload, packets, messages, wire


def spread(all_bytes: array[int], data_bytes: array[int], b: int, t: int, end: int, nbytes: int,
           data: bool) -> None:
    """Count a frame's *nbytes*, on the link from *t* to *end*, in the bins of *b* ps it
    crosses: each its share of the time in whole bytes, the remainder in the last (the
    module text); in *data_bytes* too for a data packet."""
    last = (end - 1) // b
    span = end - t
    done = 0
    for k in range(t // b, last + 1):
        upto = nbytes if k == last else nbytes * (min(end, (k + 1) * b) - t) // span
        part = upto - done
        done = upto
        all_bytes[k] += part
        if data:
            data_bytes[k] += part


@mypyc_attr(allow_interpreted_subclasses=True)   # ibemu.results.Metrics extends it
class BinnedRecorder(Recorder):
    """Counts per bin of *bin_ps* over a run of *duration_ps*: per directed link (whose
    rate in bytes/s is in :attr:`link_capacity`) and per flow."""

    def __init__(self, duration_ps: int, bin_ps: int, link_capacity: Mapping[str, int]) -> None:
        if duration_ps <= 0 or bin_ps <= 0:
            raise ValueError("duration and bin must be positive (got %r, %r)" % (duration_ps, bin_ps))
        self.duration = int(duration_ps)
        self.bin = int(bin_ps)
        self.link_capacity: dict[str, int] = dict(link_capacity)
        self._n = -(-self.duration // self.bin)
        self._links: dict[str, LinkSeries] = {}
        self._ftx: dict[str, FlowTxSeries] = {}
        self._frx: dict[str, FlowRxSeries] = {}
        self._sinks: list[LinkBins | FlowBins] = []   # sinks (link_sink, flow_sink): they count ahead
        self.pending = False                # some sink holds counts not yet in the series
        # message latency (issue 13): start ps by message number, and (number, done ps) by
        # completion, per flow in the order of their first message; kept here, compiled, so
        # a flow's sink appends to them natively (FlowBins.started, FlowBins.done)
        self.msg_start: dict[str, array[int]] = {}
        self.msg_done: dict[str, tuple[array[int], array[int]]] = {}

    # -- hot path (one call per frame-hop / packet): one dict lookup
    def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
        """A frame of *nbytes* starts on *link* at *t* (module doc)."""
        b = self.bin
        i = t // b
        cap = self.link_capacity.get(link, 0)
        end = t - (-nbytes * PS_PER_S // cap) if cap else t     # its serialization (Port.tx_time)
        if end > (i + 1) * b:
            self._link_split(link, t, end, nbytes, data)
            return
        s = self._links.get(link)
        if s is None or not 0 <= i < self._n:
            if link not in self._links:
                self._new_link(link)
            self._grow_to(i)
            s = self._links[link]
        s[0][i] += nbytes
        if data:
            s[1][i] += nbytes
            s[2][i] += 1

    def message_start(self, flow: str, seq: int, t: int) -> None:
        a = self.msg_start.get(flow)
        if a is None:
            a = self.msg_start[flow] = array("q")
        n = len(a)
        if seq == n:
            a.append(t)
        elif seq > n:                           # (never from the QPs: they number from 0 up)
            a.extend([-1] * (seq - n))
            a.append(t)
        else:
            a[seq] = t

    def message_done(self, flow: str, seq: int, t: int) -> None:
        d = self.msg_done.get(flow)
        if d is None:
            d = self.msg_done[flow] = (array("q"), array("q"))
        d[0].append(seq)
        d[1].append(t)

    def link_sink(self, link: str) -> LinkSink:
        """The link's series as a native sink (:class:`LinkBins`): a port's frames go
        straight into them, with no call by name and no lookup of the link."""
        if link not in self._links:
            self._new_link(link)
        sink = LinkBins(self, link)
        self._sinks.append(sink)
        return sink

    def flow_sink(self, flow: str) -> FlowSink:
        """The flow's series as a native sink (:class:`FlowBins`)."""
        if flow not in self._ftx:
            self._new_flow(flow)
        sink = FlowBins(self, flow)
        self._sinks.append(sink)
        return sink

    def flush(self) -> None:
        """Add the counts the sinks hold to the series: before reading them."""
        if self.pending:
            for sink in self._sinks:
                sink.flush()
            self.pending = False

    def _link_split(self, link: str, t: int, end: int, nbytes: int, data: bool) -> None:
        """:meth:`link_tx` of a frame on the link from *t* to *end*, across bin edges."""
        b = self.bin
        i = t // b
        if t < self.duration < end:
            nbytes = nbytes * (self.duration - t) // (end - t)
            end = self.duration
        if link not in self._links:
            self._new_link(link)
        self._grow_to((end - 1) // b)
        s = self._links[link]
        if data:
            s[2][i] += 1
        spread(s[0], s[1], b, t, end, nbytes, data)

    def flow_tx(self, flow: str, t: int, nbytes: int) -> None:
        i = t // self.bin
        s = self._ftx.get(flow)
        if s is None or not 0 <= i < self._n:
            if flow not in self._ftx:
                self._new_flow(flow)
            self._grow_to(i)
            s = self._ftx[flow]
        s[0][i] += nbytes
        s[1][i] += 1

    def flow_rx(self, flow: str, t: int, nbytes: int, wire: int, message_done: bool) -> None:
        i = t // self.bin
        s = self._frx.get(flow)
        if s is None or not 0 <= i < self._n:
            if flow not in self._frx:
                self._new_flow(flow)
            self._grow_to(i)
            s = self._frx[flow]
        s[0][i] += nbytes
        s[1][i] += 1
        s[3][i] += wire
        if message_done:
            s[2][i] += 1

    # -- growing
    def _zeros(self) -> array[int]:
        # repetition allocates exactly n items (array("q", bytes(8 * n)) over-allocated 1/16
        # and held a temporary copy): the memory ibemu.scenario.output.bins_memory estimates
        return array("q", _ZERO) * self._n

    def _new_link(self, label: str) -> None:
        self._links[label] = (self._zeros(), self._zeros(), self._zeros())

    def _new_flow(self, name: str) -> None:
        self._ftx[name] = (self._zeros(), self._zeros())
        self._frx[name] = (self._zeros(), self._zeros(), self._zeros(), self._zeros())

    def _extend_all(self) -> None:
        """Every series grows to ``self._n`` bins."""
        for links in self._links.values():
            for a in links:
                a.extend([0] * (self._n - len(a)))
        for tx in self._ftx.values():
            for a in tx:
                a.extend([0] * (self._n - len(a)))
        for rx in self._frx.values():
            for a in rx:
                a.extend([0] * (self._n - len(a)))

    def _grow_to(self, i: int) -> None:
        if i < 0:
            raise ValueError("negative time reported to Metrics (bin %d)" % i)
        if i >= self._n:                       # an event after the run's end: all series grow
            self._n = i + 1
            self._extend_all()


class LinkBins(LinkSink):
    """:meth:`BinnedRecorder.link_tx` of one link, for the frames that fall inside one bin
    of the run (nearly all): the same counts, with the link's series, its rate and the
    bin held here, summed in plain ints while the frames stay in one bin and added to
    the series when a frame falls in another or the recorder is read
    (:meth:`BinnedRecorder.flush`: an element of an int64 array costs hundreds of
    instructions to read and write from compiled code, an int field a few).  Any other
    frame -- across a bin edge (split here when it ends within the run), or outside the
    bins this sink knows -- takes :meth:`BinnedRecorder.link_tx` itself (sums commute: the
    order of the two does not matter)."""

    def __init__(self, owner: BinnedRecorder, label: str) -> None:
        self.owner = owner
        self.label = label
        self.bin = owner.bin
        self.n = owner._n                   # the series grow in place; later bins: link_tx
        self.cap = owner.link_capacity.get(label, 0)
        self.ps_per_s = PS_PER_S
        # ps per byte where a byte takes a whole number of ps: then the frame's time is a
        # multiplication, equal to link_tx's rounded-up division
        self.ps_per_byte = PS_PER_S // self.cap if self.cap > 0 and PS_PER_S % self.cap == 0 else 0
        self.all, self.data_bytes, self.data_pkts = owner._links[label]
        self.duration = owner.duration      # a frame across bin edges ending by then: _split
        self.cur = -1                       # the bin the sums below belong to (-1: none)
        self.sum_all = 0
        self.sum_data = 0
        self.sum_pkts = 0

    def tx(self, t: int, nbytes: int, data: bool) -> None:
        b = self.bin
        i = t // b
        k = self.ps_per_byte
        if k:
            end = t + nbytes * k
        elif self.cap:
            end = t - (-nbytes * self.ps_per_s // self.cap)
        else:
            end = t
        if i < 0 or i >= self.n or end > (i + 1) * b:
            if 0 <= i and end <= self.duration:
                self._split(t, end, nbytes, data)
            else:
                self.owner.link_tx(self.label, t, nbytes, data)
            return
        if i != self.cur:
            self.flush()
            self.cur = i
            self.owner.pending = True
        self.sum_all += nbytes
        if data:
            self.sum_data += nbytes
            self.sum_pkts += 1

    def _split(self, t: int, end: int, nbytes: int, data: bool) -> None:
        """:meth:`BinnedRecorder.link_tx` of a frame across bin edges that ends within the
        run, so within the series: its packet counted, its bytes :func:`spread` (here
        without a call by name: the module text)."""
        if data:
            self.data_pkts[t // self.bin] += 1
        spread(self.all, self.data_bytes, self.bin, t, end, nbytes, data)

    def flush(self) -> None:
        """Add the sums to the series."""
        i = self.cur
        if i < 0:
            return
        self.all[i] += self.sum_all
        if self.sum_pkts:
            self.data_bytes[i] += self.sum_data
            self.data_pkts[i] += self.sum_pkts
        self.cur = -1
        self.sum_all = self.sum_data = self.sum_pkts = 0


class FlowBins(FlowSink):
    """:meth:`BinnedRecorder.flow_tx` and :meth:`BinnedRecorder.flow_rx` of one flow,
    summed in plain ints while the packets stay in one bin (as :class:`LinkBins`)."""

    def __init__(self, owner: BinnedRecorder, flow: str) -> None:
        self.owner = owner
        self.flow = flow
        self.bin = owner.bin
        self.n = owner._n
        self.tx_bytes, self.tx_pkts = owner._ftx[flow]
        self.rx_bytes, self.rx_pkts, self.rx_msgs, self.rx_wire = owner._frx[flow]
        self.tx_cur = -1
        self.rx_cur = -1
        self.s_txb = self.s_txp = 0
        self.s_rxb = self.s_rxp = self.s_rxm = self.s_rxw = 0
        self.starts: array[int] | None = None                       # owner.msg_start[flow], once made
        self.dones: tuple[array[int], array[int]] | None = None     # owner.msg_done[flow], once made

    def started(self, seq: int, t: int) -> None:
        a = self.starts
        if a is None or seq != len(a):         # the flow's first message, or out of order
            self.owner.message_start(self.flow, seq, t)
            self.starts = self.owner.msg_start.get(self.flow)
            return
        a.append(t)

    def done(self, seq: int, t: int) -> None:
        d = self.dones
        if d is None:
            self.owner.message_done(self.flow, seq, t)
            self.dones = self.owner.msg_done.get(self.flow)
            return
        d[0].append(seq)
        d[1].append(t)

    def tx(self, t: int, nbytes: int) -> None:
        i = t // self.bin
        if i < 0 or i >= self.n:
            self.owner.flow_tx(self.flow, t, nbytes)
            return
        if i != self.tx_cur:
            self.flush()
            self.tx_cur = i
            self.owner.pending = True
        self.s_txb += nbytes
        self.s_txp += 1

    def rx(self, t: int, nbytes: int, wire: int, message_done: bool) -> None:
        i = t // self.bin
        if i < 0 or i >= self.n:
            self.owner.flow_rx(self.flow, t, nbytes, wire, message_done)
            return
        if i != self.rx_cur:
            self.flush()
            self.rx_cur = i
            self.owner.pending = True
        self.s_rxb += nbytes
        self.s_rxp += 1
        self.s_rxw += wire
        if message_done:
            self.s_rxm += 1

    def flush(self) -> None:
        """Add the sums to the series."""
        i = self.tx_cur
        if i >= 0:
            self.tx_bytes[i] += self.s_txb
            self.tx_pkts[i] += self.s_txp
            self.tx_cur = -1
            self.s_txb = self.s_txp = 0
        i = self.rx_cur
        if i >= 0:
            self.rx_bytes[i] += self.s_rxb
            self.rx_pkts[i] += self.s_rxp
            self.rx_wire[i] += self.s_rxw
            if self.s_rxm:
                self.rx_msgs[i] += self.s_rxm
            self.rx_cur = -1
            self.s_rxb = self.s_rxp = self.s_rxm = self.s_rxw = 0
