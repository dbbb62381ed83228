"""The sans-I/O node: ports, its private timers (ordered by time), and an outbox of transmissions.

A driver (the virtual-time engine or the trio runtime) feeds a node with
``receive(port, frame, link, now)`` when a frame's first byte arrives and with
``wake(now)`` at its deadline (``next_deadline()``), and after each call takes the
transmissions the node started from ``outbox``: ``(port, frame, link, t_start)``.  The
driver delivers each to the peer port at ``t_start + propagation``.  Nothing here
imports trio, socket or time; ``now`` is emulated time in integer picoseconds.
"""
from __future__ import annotations

from collections.abc import Callable
import heapq
from typing import Any, Final, TYPE_CHECKING, TypeAlias

from ..sim.heap import NATIVE, Ordered, insert_timer
from ..sim.scheduler import NEVER, SimNode
from ..units import PS_PER_S
from ..wire.fields import get_pktlen, vcrc_ok
from ..wire.layout import PACKET_OVERHEAD, VCRC_LEN, Buf
from ..wire.linkpkt import (LINK_LEN, OP_ARN, OP_INIT, OP_NORMAL, build_arn, build_link, get_arn_dlid,
                           get_link_credits, get_link_op, link_crc_ok)
from .counters import PortCounters
from .credits import CreditRx, CreditTx
from .recorder import LinkSink, Recorder

if TYPE_CHECKING:
    from .arn import Marks
    from .hooks import CCAttributes

VL15: Final = 15
# heapq's functions held in C statics by the compiled core (a plain import is a dict lookup per call)
heappush: Final = heapq.heappush
heappop: Final = heapq.heappop
_PORT_ERROR_ATTR: Final = {"PortRcvErrors": "rcv_errors", "PortRcvSwitchRelayErrors": "rcv_switch_relay_errors",
                    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun",
                    "PortRcvConstraintErrors": "rcv_constraint_errors", "PortXmitDiscards": "xmit_discards",
                    "VL15Dropped": "vl15_dropped"}



class Timer(Ordered):
    """A node's deadline ``(t, seq, kind, arg)``: at *t*, ``on_timer(kind, t, arg)``; kind
    :data:`T_CALL` is a general callback, *arg* ``(fn, args)`` for ``fn(t, *args)``
    (:meth:`Node.at`).  The other kinds are the nodes' own frequent deadlines, dispatched
    without a bound method or an argument tuple (issue 16: the compiled core calls them
    natively).  A native object ordered by (t, seq) as the tuple it replaces was (*seq*
    is unique: the same order), compared on its unboxed ints (issue 16); ``timer[i]``
    reads the i-th field, as the tuple's did."""
    __slots__ = ("kind", "arg")

    def __init__(self, time: int, seq: int, kind: int, arg: Any) -> None:
        self.time = time
        self.seq = seq
        self.kind = kind
        self.arg = arg

    def __getitem__(self, i: int) -> Any:
        return (self.time, self.seq, self.kind, self.arg)[i]

    def __len__(self) -> int:
        return 4


T_CALL: Final = 0
T_LINK_WAKE: Final = 1
T_FC_TICK: Final = 2
T_OWN: Final = 3
"""The first kind a subclass may use for its own deadlines."""
Transmission: TypeAlias = "tuple[int, bytes | bytearray, bool, int]"
"""A transmission the node started ``(port, frame, link, t_start)`` (*link*: a link
flow-control packet).  An HCA sends ``bytes``, which the compiled core reads natively; a
switch forwards a packet as it came, and as a ``bytearray`` once it rewrote a field."""


def frame_intact(frame: Buf) -> bool:
    """The link-layer checks every receiver makes on arrival (IBA ch. 7; issue 8): long
    enough for LRH + BTH + CRCs, PktLen agreeing with the length, a good VCRC."""
    n = len(frame)
    return n >= PACKET_OVERHEAD and get_pktlen(frame) * 4 + VCRC_LEN == n and vcrc_ok(frame)


class Port:
    """One end of a link: transmit serializer, per-VL credits in both directions."""
    __slots__ = ("index", "rate", "propagation", "busy_until", "tx", "rx", "label",
                 "connected", "last_fcp", "fc_period", "pc", "data_end", "fcp_pending", "wake_at", "fcp_time",
                 "ps_per_byte", "sink", "sink_rec")

    def __init__(self, index: int, rate: int, propagation: int, data_vls: int,
                 capacity_blocks: int | list[int], label: str, fc_period: int, fcp_on_wire: bool = True):
        self.index = index
        self.rate = rate
        # ps per byte where a byte takes a whole number of ps (4X SDR: 1000, 4X EDR: 80):
        # then a frame's time is one multiplication, equal to tx_time's rounded-up division
        self.ps_per_byte = PS_PER_S // rate if rate > 0 and PS_PER_S % rate == 0 else 0
        self.propagation = propagation
        self.busy_until = 0
        self.tx = [CreditTx() for _ in range(data_vls)]
        caps = capacity_blocks if isinstance(capacity_blocks, list) else [capacity_blocks] * data_vls
        self.rx = [CreditRx(c) for c in caps]
        self.label = label
        self.connected = True
        self.last_fcp = [-(1 << 62)] * data_vls
        self.fc_period = fc_period
        self.pc = PortCounters(rate)        # IBA port counters (counters.py)
        self.data_end = 0                   # end of the last packet sent (its node retries then)
        self.fcp_pending: dict[int, int] = {}   # VL -> op of a flow-control packet waiting for the link
        self.wake_at = -1                   # pending link-free wake (Node.link_blocked)
        self.fcp_time = self.tx_time(LINK_LEN) if fcp_on_wire else 0   # 0: ideal, no link time
        self.sink: LinkSink | None = None   # where its frames are reported (Node.record_tx)
        self.sink_rec: Recorder | None = None   # ... the recorder that made it

    def tx_time(self, nbytes: int) -> int:
        """Serialisation time in ps (rounded up)."""
        k = self.ps_per_byte
        if k:
            return nbytes * k
        return -(-nbytes * PS_PER_S // self.rate)


class Node(SimNode):
    """Base class: timers, outbox, flow-control packet exchange."""

    def __init__(self, name: str, recorder: Recorder | None = None):
        super().__init__(name)              # name, outbox (Transmission), timers (Timer)
        self.recorder = recorder or Recorder()
        self.ports: dict[int, Port] = {}
        # the same ports indexed by number (None: no such port), for the hot path: a list
        # index is native in the compiled core, a dict lookup boxes the key (issue 28)
        self.port_at: list[Port | None] = []
        self._tseq = 0
        self._tfree: list[Timer] = []       # fired timers, reused by at_kind (issue 28: no allocation)
        self.counters: dict[str, int] = {}
        self.arn_marks: Marks | None = None     # adaptive routing notifications it heeds (.arn)
        self._fc_tick_period = 0             # set by start() when it arms the periodic flow-control packets
        self.lid = 0                        # HCAs: their LID; switches: port 0's (build.switch_lids)
        self.cc_settings: CCAttributes | None = None    # CC attributes for CC MADs (IBA annex A10)
        self.cc_key = 0                     # CC_Key a CC Set MAD must carry (0: none)

    def register_port(self, port: Port) -> None:
        """Add *port* to :attr:`ports` and :attr:`port_at` (a subclass's ``add_port``)."""
        self.ports[port.index] = port
        at = self.port_at
        if len(at) <= port.index:
            at.extend([None] * (port.index + 1 - len(at)))
        at[port.index] = port

    def port_of(self, pidx: int) -> Port | None:
        """The port numbered *pidx*, or None."""
        at = self.port_at
        return at[pidx] if 0 <= pidx < len(at) else None

    def attach_cc_agent(self, settings: CCAttributes, cc_key: int) -> None:
        """The congestion-control attributes the management agent serves (a scheme's)."""
        self.cc_settings = settings
        self.cc_key = cc_key

    # ---------------------------------------------------------------- timers
    def at(self, t: int, fn: Callable[..., None], *args: Any) -> None:
        """At *t*, call ``fn(t, *args)``."""
        self.at_kind(t, T_CALL, (fn, args))

    def at_kind(self, t: int, kind: int, arg: Any = None) -> None:
        """At *t*, ``on_timer(kind, t, arg)`` (a node's own deadline; see :data:`Timer`)."""
        self._tseq += 1
        free = self._tfree
        # (Timer.__init__'s assignments: see events.reuse).  Two are always kept: a list
        # popped below half its room is reallocated, and one emptied is freed, to be
        # allocated again by the next append (issue 28: a node's free timers went from one
        # to none and back at every timer)
        if len(free) > 2:
            timer = free.pop()
            timer.time = t
            timer.seq = self._tseq
            timer.kind = kind
            timer.arg = arg
        else:
            timer = Timer(t, self._tseq, kind, arg)
        if NATIVE:                          # the compiled core's timers: sorted, latest first (ibemu.sim.heap)
            insert_timer(self.timers, timer)
        else:
            heappush(self.timers, timer)

    def wake(self, now: int) -> None:
        """Run every timer due at or before *now*, each at its own time."""
        timers: list[Timer] = self.timers
        while timers:
            timer: Timer
            if NATIVE:
                timer = timers[-1]
                if timer.time > now:
                    break
                timers.pop()
            else:
                timer = timers[0]
                if timer.time > now:
                    break
                heappop(timers)
            t = timer.time
            kind = timer.kind
            arg = timer.arg
            timer.arg = None                # fired: kept for at_kind to reuse
            self._tfree.append(timer)
            if kind == T_CALL:
                fn, args = arg
                fn(t, *args)
            else:
                self.on_timer(kind, t, arg)

    def deadline(self) -> int:
        timers: list[Timer] = self.timers
        if not timers:
            return NEVER
        return timers[-1].time if NATIVE else timers[0].time

    def next_deadline(self) -> int | None:
        d = self.deadline()
        return None if d == NEVER else d

    def on_timer(self, kind: int, now: int, arg: Any) -> None:
        """A deadline of *kind* (other than :data:`T_CALL`) is due; subclasses handle
        their own kinds and pass the others here."""
        if kind == T_LINK_WAKE:
            self._link_wake(now, arg)
        elif kind == T_FC_TICK:
            self._fc_tick(now)
        else:
            raise ValueError("unknown timer kind %d" % kind)

    def count(self, name: str, value: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + value

    def port_error(self, port: Port, name: str) -> None:
        """Count an error both per node (results) and in the port's IBA counter."""
        self.counters[name] = self.counters.get(name, 0) + 1
        attr = _PORT_ERROR_ATTR.get(name)
        if attr is not None:
            pc = port.pc
            setattr(pc, attr, getattr(pc, attr) + 1)

    # ---------------------------------------------------------------- link layer
    def start(self, now: int) -> None:
        """Send the flow-control init packets and arm the periodic ones."""
        period = None
        for port in self.ports.values():
            for vl in range(len(port.rx)):
                self._send_fcp(port, vl, now, OP_INIT)
            period = port.fc_period if period is None else min(period, port.fc_period)
        if period:
            self._fc_tick_period = period
            self.at_kind(now + period, T_FC_TICK)

    def _send_fcp(self, port: Port, vl: int, now: int, op: int = OP_NORMAL) -> None:
        """A flow-control packet for *vl*: our FCTBS for what we send, our FCCL for what
        we receive (IBA 7.9.4).  It is a frame of its own on the link: it goes when the
        link is free, between packets and never into one, occupies the link for its six
        bytes, and is built when it goes (so it carries the credits of that moment).  On
        an ideal link (``flow_control = "ideal"``) it goes at once and takes no time."""
        if not port.fcp_time:               # an ideal link: at once, taking no time
            self._emit_fcp(port, vl, op, now)
            return
        pending = port.fcp_pending
        cur = pending.get(vl)
        if cur is None or cur != OP_INIT:
            pending[vl] = op
        self.link_blocked(port, now, False)

    def _fcp_out(self, port: Port, now: int) -> None:
        """Send the first pending flow-control packet now (the link is free)."""
        pending = port.fcp_pending
        vl = -1
        for first in pending:               # the first waiting, in the order they came
            vl = first
            break
        op = pending[vl]
        del pending[vl]                     # (not next(iter()) and pop(): calls by name)
        if vl < 0:                          # an adaptive routing notification (send_arn)
            self.outbox.append((port.index, build_arn(-1 - vl), True, now))
        else:
            self._emit_fcp(port, vl, op, now)
        port.busy_until = now + port.fcp_time
        self.record_tx(port, now, LINK_LEN, False)

    def send_arn(self, port: Port, dlid: int, now: int) -> None:
        """An adaptive routing notification about *dlid* out of *port* (issue 31,
        :mod:`ibemu.fabric.arn`): a link packet that goes like a flow-control packet,
        when the link is free, queued with them under the key ``-1 - dlid``."""
        self.count("arn_sent")
        if not port.fcp_time:
            self.outbox.append((port.index, build_arn(dlid), True, now))
            return
        port.fcp_pending[-1 - dlid] = OP_ARN
        self.link_blocked(port, now, False)

    def on_arn(self, port: Port, dlid: int, now: int) -> None:
        """An adaptive routing notification about *dlid* came in on *port*: marked in
        ``arn_marks`` (a switch routing adaptively with notifications on, :mod:`.arn`);
        a node without counts it and does nothing else."""
        marks = self.arn_marks
        if marks is not None:
            marks.notified(port.index, dlid, now)
            self.count("arn_heeded")
        else:
            self.count("arn_ignored")

    def _emit_fcp(self, port: Port, vl: int, op: int, now: int) -> None:
        port.last_fcp[vl] = now
        self.outbox.append((port.index, build_link(op, port.tx[vl].fctbs, vl, port.rx[vl].fccl()), True, now))

    def record_tx(self, port: Port, now: int, nbytes: int, data: bool) -> None:
        """Report a frame of *nbytes* that starts on *port* at *now* to the recorder
        (:meth:`Recorder.link_tx`), through the port's sink, made again when the node's
        recorder changed (:meth:`ibemu.fabric.network.Network.set_recorder`)."""
        rec = self.recorder
        sink = port.sink
        if sink is None or port.sink_rec is not rec:
            sink = port.sink = rec.link_sink(port.label)
            port.sink_rec = rec
        sink.tx(now, nbytes, data)

    def link_blocked(self, port: Port, now: int, want: bool) -> bool:
        """Whether the link of *port* is taken at *now*, so no packet may start.

        A pending flow-control packet takes a free link first.  While one occupies the
        link and a packet is waiting (*want*) or more flow-control packets are, the node
        is woken at its end (:meth:`link_free`); while a packet occupies it, that
        packet's own completion tries again."""
        if port.busy_until <= now:
            if not port.fcp_pending:
                return False
            self._fcp_out(port, now)
        elif port.busy_until == port.data_end:
            return True
        if (want or port.fcp_pending) and port.wake_at != port.busy_until:
            port.wake_at = port.busy_until
            self.at_kind(port.busy_until, T_LINK_WAKE, port)
        return True

    def _link_wake(self, now: int, port: Port) -> None:
        if port.wake_at == now:
            port.wake_at = -1
        self.link_free(port, now)

    def link_free(self, port: Port, now: int) -> None:
        """The link of *port* became free after a flow-control packet: send what waits
        (subclasses try their packets, which calls :meth:`link_blocked` first)."""
        self.link_blocked(port, now, False)

    def _fc_tick(self, now: int) -> None:
        """Periodic flow-control packets where none went out for a whole period (IBA
        requires one at least every 65,536 symbol times)."""
        for port in self.ports.values():
            if not port.connected:
                continue
            for vl, last in enumerate(port.last_fcp):
                if now - last >= port.fc_period:
                    self._send_fcp(port, vl, now)
        self.at_kind(now + self._fc_tick_period, T_FC_TICK)

    def _drop_received(self, port: Port, vl: int, blocks: int, now: int, counter: str) -> None:
        """Drop a well-formed packet that arrived (a routing or partition violation): it
        is counted, and its blocks are credited at once (ABR advances, no buffer is
        held), so the sender's credit returns with the flow-control packet sent now."""
        self.port_error(port, counter)
        if vl != VL15 and vl < len(port.rx):
            rx = port.rx[vl]
            rx.abr = (rx.abr + blocks) & 0xFFF
            self._send_fcp(port, vl, now)

    def receive_link(self, port: Port, frame: Buf, now: int, check: bool = True) -> int | None:
        """Apply a flow-control packet; return its VL (None when it was dropped).  Without
        *check* its LPCRC is not computed (a frame delivered intact: SimNode.receive_intact)."""
        if check and not link_crc_ok(frame):
            self.port_error(port, "PortRcvErrors")
            return None
        vl, fctbs, fccl = get_link_credits(frame)
        if vl >= len(port.tx):
            if get_link_op(frame) == OP_ARN:    # (VL 15: wire/linkpkt.py) not credits
                self.on_arn(port, get_arn_dlid(frame), now)
            else:
                self.port_error(port, "PortRcvErrors")
            return None
        tx = port.tx[vl]
        if not tx.plausible(fccl):
            # a credit limit beyond the peer's buffer (CreditTx.plausible): ignored whole
            # and counted (issue 14 item 2)
            self.port_error(port, "PortRcvErrors")
            self.counters["FCCLBeyondBuffer"] = self.counters.get("FCCLBeyondBuffer", 0) + 1
            return None
        rx = port.rx[vl]
        abr = rx.abr
        rx.sync(fctbs)
        tx.update(fccl)
        if rx.abr != abr:
            # resynchronised: packets were lost (or dropped unread) on the way here, so
            # the FCCL we last sent was short; send the corrected one at once rather than
            # at the next period (issue 8; never happens on a fault-free link)
            self._send_fcp(port, vl, now)
        return vl
