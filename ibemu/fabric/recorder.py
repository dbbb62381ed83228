"""What the nodes report while they run: the contract between the fabric core and the
metrics (:mod:`ibemu.results`).  Sans-I/O: plain method calls with emulated times (ps).

The core calls these methods; :class:`ibemu.results.Metrics` implements them with
binned time series.  This base class ignores everything (for unit tests of nodes).

Message latency (issue 13, deliverable 2) is reported in two halves, because a flow's
source and its destination may run in different processes (the wall clock's workers):
:meth:`message_start` where the message's first byte goes on the wire and
:meth:`message_done` where its last byte is delivered, both naming the message by its
number in the flow (0, 1, 2, ... in the order the source starts them).  The recorder
joins them (:meth:`ibemu.results.Metrics.latencies`).
"""
from __future__ import annotations

from mypy_extensions import mypyc_attr


class LinkSink:
    """Where a port reports the frames it starts (:meth:`Recorder.link_sink`): the
    per-frame half of :meth:`Recorder.link_tx` for one directed link, resolved once per
    port and recorder rather than once per frame (issue 28: the call by name into an
    interpreted recorder, with a lookup of the link's series, was a sixth of the event
    loop's instructions).  A native class: the node calls :meth:`tx` natively."""

    def tx(self, t: int, nbytes: int, data: bool) -> None:
        """:meth:`Recorder.link_tx` of this sink's link."""


class ForwardSink(LinkSink):
    """The sink of a recorder without a faster one: each frame is its
    :meth:`Recorder.link_tx` with the link's label."""

    def __init__(self, recorder: Recorder, label: str) -> None:
        self.recorder = recorder
        self.label = label

    def tx(self, t: int, nbytes: int, data: bool) -> None:
        self.recorder.link_tx(self.label, t, nbytes, data)


class FlowSink:
    """Where a flow's QP reports its packets and messages (:meth:`Recorder.flow_sink`): the
    per-packet :meth:`Recorder.flow_tx` and :meth:`Recorder.flow_rx`, and the per-message
    :meth:`Recorder.message_start` and :meth:`Recorder.message_done`, of one flow, resolved
    once per QP and recorder (as :class:`LinkSink` is for a link)."""

    def tx(self, t: int, nbytes: int) -> None:
        """:meth:`Recorder.flow_tx` of this sink's flow."""

    def rx(self, t: int, nbytes: int, wire: int, message_done: bool) -> None:
        """:meth:`Recorder.flow_rx` of this sink's flow."""

    def started(self, seq: int, t: int) -> None:
        """:meth:`Recorder.message_start` of this sink's flow."""

    def done(self, seq: int, t: int) -> None:
        """:meth:`Recorder.message_done` of this sink's flow."""


class ForwardFlowSink(FlowSink):
    """The flow sink of a recorder without a faster one: it calls the recorder."""

    def __init__(self, recorder: Recorder, flow: str) -> None:
        self.recorder = recorder
        self.flow = flow

    def tx(self, t: int, nbytes: int) -> None:
        self.recorder.flow_tx(self.flow, t, nbytes)

    def rx(self, t: int, nbytes: int, wire: int, message_done: bool) -> None:
        self.recorder.flow_rx(self.flow, t, nbytes, wire, message_done)

    def started(self, seq: int, t: int) -> None:
        self.recorder.message_start(self.flow, seq, t)

    def done(self, seq: int, t: int) -> None:
        self.recorder.message_done(self.flow, seq, t)


@mypyc_attr(allow_interpreted_subclasses=True)   # Metrics and tests subclass it
class Recorder:
    def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
        """A frame of *nbytes* started on directed link *link* at time *t*;
        *data* is False for ACKs, CNPs and link packets.  Nodes report through
        :meth:`link_sink`, whose sink calls this by default."""

    def link_sink(self, link: str) -> LinkSink:
        """The sink through which a port reports its frames on directed link *link*
        (:class:`LinkSink`): by default one that calls :meth:`link_tx`, so a recorder that
        overrides :meth:`link_tx` alone sees every frame."""
        return ForwardSink(self, link)

    def flow_sink(self, flow: str) -> FlowSink:
        """The sink through which a QP of *flow* reports its packets (:class:`FlowSink`):
        by default one that calls :meth:`flow_tx` and :meth:`flow_rx`."""
        return ForwardFlowSink(self, flow)

    def flow_tx(self, flow: str, t: int, nbytes: int) -> None:
        """The source of *flow* injected a data packet with *nbytes* of payload."""

    def flow_rx(self, flow: str, t: int, nbytes: int, wire: int, message_done: bool) -> None:
        """The destination of *flow* received a data packet in order (its tail at *t*):
        *nbytes* of payload in a frame of *wire* bytes on the link (the frame's length:
        every header present -- LRH, GRH, BTH, DETH, RETH, AETH, ImmDt -- the pad, ICRC
        and VCRC).  *message_done*: the packet was the message's last."""

    def message_start(self, flow: str, seq: int, t: int) -> None:
        """The source of *flow* started message *seq* (its first transmission, never a
        retransmission): the first byte of its first packet went on the source's link at
        *t*.  For an RDMA READ the message starts with its READ request."""

    def message_done(self, flow: str, seq: int, t: int) -> None:
        """Message *seq* of *flow* was delivered whole at *t*: the tail of its last packet
        arrived (at the destination for SEND, RDMA WRITE and UD; at the requester, with
        the last READ response, for an RDMA READ)."""

    def counter(self, node: str, name: str, value: int = 1) -> None:
        """Add *value* to a named per-node counter (e.g. dropped_malformed)."""

    def trace(self, kind: str, key: str, t: int, value: int | float) -> None:
        """State of a congestion-control variable changed: *kind* names it (CCTI, CIPD,
        CWND, Marking_Rate, ...), *key* its owner (a flow, ``switch:port``).  *value* is
        ``int | float``, not ``float``: mypyc would turn an int CCTI into 28.0 on the way."""

    def job_mark(self, job: str, rank: int, op: int, iteration: int, start: int, end: int) -> None:
        """Rank *rank* of job *job* finished iteration *iteration* of its operation *op*
        (issue 29): it posted the iteration's first messages at *start* and received its
        last at *end*."""

    def event(self, t: int, source: str, text: str) -> None:
        """A discrete decision worth logging with its time (a manager's action, a
        Trigger_Threshold crossing)."""
