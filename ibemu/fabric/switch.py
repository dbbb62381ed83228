"""The input-buffered crossbar switch of seed 003 §3 and Table 1.

- Input buffers per port per VL (credit capacity in 64-byte blocks).
- A crossbar: an input sends one packet at a time, an output one at a time -- but a store-and-forward
  input faster than its outputs feeds several slower ones at once while their rates add up to no more
  than its own (seed 002's testbed: S2 port 20 into 23, 24), and with an internal speedup s
  (``crossbar_speedup``, default 1: none) an input reads its buffer at s times its link rate and feeds
  several outputs at once while their rates add up to no more than that (the read rules: :mod:`.xport`).
- Per output port and VL a FIFO of the packets waiting for it, in arrival order; the head may be
  bypassed by a newer packet when the head's input is busy sending to another output, at most
  ``bypass_limit`` times (default 4) to prevent starvation.
- Cut-through: a packet may leave ``forwarding_delay`` (40 ns) after its first byte arrived, but its
  last byte no earlier than its last byte arrived plus the delay (a slower input feeding a faster
  output starts late).  Store-and-forward: after the last byte plus the delay.  A transmission
  occupies the output link for exactly its length.
- Routing by a linear forwarding table on the DLID (or adaptively, :mod:`.adaptive`); the output VL
  from the SL-to-VL table (seed 004 "Virtual Lanes and Service Levels"); VL arbitration by the IBA
  dual-priority WRR (:mod:`ibemu.fabric.vlarb`).
- A packet's input buffer space is freed, and a flow-control packet returns the credit upstream,
  when its last byte has left the switch.
Marking policies (issues 5 and 6) hook in through :meth:`Switch.attach_marker` (a
:class:`~ibemu.fabric.hooks.Marker`).  Per-port state and packets: :mod:`.xport`.
"""
from __future__ import annotations

from typing import Any, Final, TYPE_CHECKING

from .params import SwitchParams
from ..wire.fields import get_destqp, get_dlid, get_lnh, get_opcode_any, get_pkey_any, get_sl, get_vl, icrc_ok
from ..wire.fields import set_vl
from ..wire.layout import GRH_PACKET_MIN, Buf
from ..wire.mad import GSI_QP
from ..wire.opcodes import LNH_IBA_GLOBAL, LNH_IBA_LOCAL, is_data
from .credits import blocks_of
from .lft import ForwardingTable
from .mad_agent import MADAgent
from .node import T_OWN, VL15, Node, Port, frame_intact
from .pkey import PKeyTable
from .xport import SLOWER, SPEEDUP, WHOLE, Entry, XPort

if TYPE_CHECKING:
    from .arn import Notifier
    from .adaptive import AdaptiveRouting
    from .hooks import Marker
    from .recorder import Recorder

_DATA_OPCODE: Final = [is_data(op) for op in range(256)]
T_COMPLETE: Final = T_OWN    # the switch's own deadlines (node.Timer)
T_ELIGIBLE: Final = T_OWN + 1


class Switch(Node):
    def __init__(self, name: str, params: SwitchParams, lft: dict[int, int], recorder: Recorder | None = None):
        super().__init__(name, recorder)
        self.params = params
        self.fwd = ForwardingTable(lft)             # the LFT: replaced whole (a new table), never changed in place
        self.bypass_limit = params.bypass_limit
        self.fwd_delay = params.forwarding_delay
        self.cut_through = params.cut_through
        nvl = params.data_vls
        self.sl2vl = list(params.sl2vl) if params.sl2vl else [sl % nvl for sl in range(16)]
        self.port_sl2vl = dict(params.port_sl2vl)   # (in or None, out) -> table (seed 004 Fig. 5)
        port0 = XPort(-1, None, 0, None)
        self.xports: dict[int, XPort] = {-1: port0}  # port (-1: port 0) -> its state
        # by port + 1 (a native list index, issue 28); numbers without a port hold port 0's (no link)
        self.xat: list[XPort] = [port0]
        self._xlist: list[XPort] = []               # the ports' XPorts, in the order of ``ports``
        self.qmask = 0      # bit s: _xlist[s] has packets (XPort.bit); a completion visits those (issue 28)
        self.queues: dict[int, list[list[Entry]]] = {}  # out port -> its XPort's FIFOs (the same lists)
        self.vl15: dict[int, list[Entry]] = {}      # out port -> its XPort's VL15 queue (the same list)
        self.marker: Marker | None = None           # congestion marking (ibemu.fabric.hooks)
        self.agent: MADAgent | None = None          # MADAgent of port 0, made on first use
        self.enforce_pkeys = params.enforce_pkeys
        self.pkey_tables: dict[int, PKeyTable] = {}  # in port -> P_Key table (enforcement on)
        self.adaptive: AdaptiveRouting | None = None  # adaptive routing (ibemu.fabric.adaptive); None: the LFT
        self.notifier: Notifier | None = None       # adaptive routing notifications it sends (.arn)

    def attach_marker(self, marker: Marker) -> None:
        """Congestion marking at this switch's output ports (a scheme's :class:`Marker`)."""
        self.marker = marker

    def add_port(self, port: Port) -> None:
        self.register_port(port)
        nvl = len(port.tx)                          # operational VLs of this link
        p = self.params
        rule = SPEEDUP if p.crossbar_speedup > 1 else WHOLE if p.cut_through else SLOWER
        x = XPort(port.index, port, nvl, p.port_vlarb.get(port.index, p.vlarb).arbiter(nvl), rule, p.crossbar_speedup)
        self.xports[port.index] = x
        xat = self.xat
        if len(xat) <= port.index + 1:
            xat.extend([xat[0]] * (port.index + 2 - len(xat)))
        xat[port.index + 1] = x
        self._xlist = [self.xports[i] for i in self.ports]
        for slot, xp in enumerate(self._xlist):
            xp.bit = 1 << slot
        self.qmask = sum(xp.bit for xp in self._xlist if xp.queued)
        self.queues[port.index] = x.queues
        self.vl15[port.index] = x.vl15

    @property
    def queued(self) -> dict[int, int]:
        """Out port -> packets waiting for it (cnt1 of seed 003 §5); a copy."""
        return {x.index: x.queued for x in self._xlist}

    def queued_at(self, o: int) -> int:
        return self.xports[o].queued        # packets waiting for output *o*

    def clear_queues(self) -> None:
        """Forget every packet waiting for an output (tests: a switch fed by hand)."""
        for x in self._xlist:
            for q in x.queues:
                q.clear()
            x.vl15.clear()
            x.queued = 0
        self.qmask = 0

    # ---------------------------------------------------------------- receive
    def receive(self, pidx: int, buf: Buf, link: bool, now: int) -> None:
        self._receive(pidx, buf, link, now, True)

    def receive_intact(self, pidx: int, buf: Buf, link: bool, now: int) -> None:
        self._receive(pidx, buf, link, now, False)

    def _receive(self, pidx: int, buf: Buf, link: bool, now: int, check: bool) -> None:
        """A frame arrives on *pidx*; *check*: verify its length, PktLen and CRCs (False: intact)."""
        port = self.port_of(pidx)
        if port is None:
            self.count("dropped_no_port")
            return
        if link:
            vl = self.receive_link(port, buf, now, check)
            if vl is not None:
                self._try_out(self.xat[pidx + 1], now)
            return
        frame = buf if isinstance(buf, (bytes, bytearray)) else bytes(buf)  # as it came: Entry.pkt
        n = len(frame)
        port.pc.received(frame)
        # IBA ch. 7 checks on arrival (issue 8): a bad VCRC or PktLen, or a VL the link does not run:
        # dropped, counted in PortRcvErrors, not credited (the next FCTBS resynchronises ABR, credits.py)
        if check and not frame_intact(frame):
            self.port_error(port, "PortRcvErrors")
            return
        vl_in = get_vl(frame)
        lnh = get_lnh(frame)
        if (vl_in != VL15 and vl_in >= len(port.rx)) or (lnh == LNH_IBA_GLOBAL and n < GRH_PACKET_MIN):
            self.port_error(port, "PortRcvErrors")      # (a GRH packet holds LRH+GRH+BTH)
            return
        blocks = blocks_of(n)
        dlid = get_dlid(frame)
        if dlid == self.lid and self.lid:
            self._to_agent(port, frame, vl_in, blocks, now)      # management port 0
            return
        out = self.fwd.out(dlid)
        if self.adaptive is not None and vl_in != VL15:
            out = self.adaptive.out_port(self, dlid, get_sl(frame), pidx, out, now)
        xat = self.xat
        xo = xat[out + 1] if out is not None and -1 <= out < len(xat) - 1 else None
        if xo is None or xo.port is None or xo.index == pidx:   # (no port: -1, the switch's own)
            self._drop_received(port, vl_in, blocks, now, "PortRcvSwitchRelayErrors")
            return
        oport = xo.port
        out = xo.index
        if self.enforce_pkeys and lnh >= LNH_IBA_LOCAL and vl_in != VL15:      # (VL15: QP0, exempt)
            ptable = self.pkey_tables.get(pidx)
            if ptable is not None:
                if not ptable.allows(get_pkey_any(frame)):
                    self._drop_received(port, vl_in, blocks, now, "PortRcvConstraintErrors")
                    return
        if vl_in == VL15:                           # management: not flow controlled
            vl = VL15
        else:
            if not port.rx[vl_in].received(blocks):
                self.port_error(port, "ExcessiveBufferOverrunErrors")
                return
            table = self.sl2vl
            if self.port_sl2vl:
                table = self.port_sl2vl.get((pidx, out)) or self.port_sl2vl.get((None, out)) or table
            vl = table[get_sl(frame)]
            if vl >= len(xo.queues):
                vl = len(xo.queues) - 1
        tail = now + port.tx_time(n)
        if self.cut_through:
            # no underrun: from a slower input into a faster output the packet starts late enough
            # to end when its last byte is in, plus the forwarding delay (issue 13, defect 1)
            lag = tail - now - oport.tx_time(n)
            eligible = (now + lag if lag > 0 else now) + self.fwd_delay
        else:
            eligible = tail + self.fwd_delay
        data = _DATA_OPCODE[get_opcode_any(frame)] if lnh >= LNH_IBA_LOCAL else False
        e = Entry(frame, pidx, vl_in, out, vl, blocks, eligible, tail, data)
        (xo.vl15 if vl == VL15 else xo.queues[vl]).append(e)
        xo.queued += 1
        self.qmask |= xo.bit
        if self.notifier is not None and vl != VL15 and self.notifier.due(pidx, dlid, xo.waiting_bytes() - n, now):
            self.send_arn(port, dlid, now)
        if self.marker is not None:
            self.marker.on_arrival(self, e, now)
        self._try_out(xo, now)

    def _to_agent(self, port: Port, frame: Buf, vl_in: int, blocks: int, now: int) -> None:
        """A packet for the switch's own LID (management port 0, IBA 14.2.5): a MAD on VL15 to
        QP1 goes to the management agent (:mod:`.mad_agent`) once its last byte is in, the
        response injected on VL15 (no processing delay, docs/dcms.md); anything else is
        dropped and counted (port 0 consumes at link speed: no buffer)."""
        if vl_in != VL15 or get_destqp(frame) != GSI_QP or get_lnh(frame) != LNH_IBA_LOCAL:
            self._drop_received(port, vl_in, blocks, now, "PortRcvErrors")
            return
        self.at(now + port.tx_time(len(frame)), self._agent_rx, port, frame)

    def _agent_rx(self, now: int, port: Port, frame: Buf) -> None:
        if not icrc_ok(frame):
            self.port_error(port, "PortRcvErrors")
            return
        agent = self.agent
        if agent is None:
            agent = self.agent = MADAgent(self)
        reply = agent.handle(frame, now)
        if reply is not None and not self.inject(reply, now):
            self.count("MADs_unroutable")

    def inject(self, frame: bytearray, now: int) -> bool:
        """Send a management packet this switch originates (e.g. a CN to the subnet
        manager, seed 000 §6.2, or a MAD response) on VL15, routed by its DLID; False
        when unroutable.  It enters the crossbar from port 0 (input index -1)."""
        out = self.fwd.out(get_dlid(frame))
        xo = self.xports.get(out) if out is not None else None
        if xo is None or xo.port is None:
            return False
        e = Entry(frame, -1, VL15, xo.index, VL15, blocks_of(len(frame)), now, now, False)
        xo.vl15.append(e)
        xo.queued += 1
        self.qmask |= xo.bit
        self._try_out(xo, now)
        return True

    # ---------------------------------------------------------------- scheduling
    def _pick(self, q: list[Entry], now: int, rate: int) -> int | None:
        """Index of the packet of FIFO *q* to send now on an output of *rate*, or None
        (seed 003 Table 1: FIFO with bypass of the head when its input is busy, at most
        bypass_limit)."""
        head = q[0]
        if head.eligible > now:
            return None
        xat = self.xat
        if xat[head.inp + 1].can_feed(now, rate):
            return 0
        if head.bypassed >= self.bypass_limit:
            return None
        for i in range(1, len(q)):
            e = q[i]
            if e.eligible > now:
                return None
            if xat[e.inp + 1].can_feed(now, rate):
                return i
        return None

    def _try_out(self, x: XPort, now: int) -> None:
        """Start the next packet on output *x* if its link, the credits, the FIFOs and
        the VL arbitration allow (seed 003 Table 1)."""
        port = x.port
        if port is None:
            return
        queued = x.queued
        if (port.busy_until > now or port.fcp_pending) and self.link_blocked(port, now, queued > 0):
            return
        if not queued:
            return
        q15 = x.vl15
        if q15:                                     # VL15 has priority and needs no credit
            i = self._pick(q15, now, port.rate)
            if i is not None:
                if i:
                    q15[0].bypassed += 1
                self._transmit(x, port, q15.pop(i), now)
                return
            self._arm_eligibility(x, q15, now)
        queues = x.queues
        arb = x.arb
        if arb is None:
            return
        vl: int | None                              # the VL to send from (None: none can)
        if arb.single is not None:
            vl = arb.single
            q = queues[vl]
            if not q:
                return
            i = self._pick(q, now, port.rate)
            if i is None or not port.tx[vl].can_send(q[i].blocks):
                port.pc.waiting(now, i is not None)     # PortXmitWait: blocked for credits
                self._arm_eligibility(x, q, now)
                return
        else:
            picks: dict[int, int] = {}              # VL -> index of its pick
            starved = False
            for vl, q in enumerate(queues):
                if q:
                    i = self._pick(q, now, port.rate)
                    if i is not None:
                        if port.tx[vl].can_send(q[i].blocks):
                            picks[vl] = i
                        else:
                            starved = True
            vl = arb.choose(picks)
            if vl is None:
                port.pc.waiting(now, starved)
                for q in queues:
                    if q:
                        self._arm_eligibility(x, q, now)
                return
            i = picks[vl]
            arb.sent(vl, len(queues[vl][i].pkt), picks)
            q = queues[vl]
        if i:
            q[0].bypassed += 1
        e = q.pop(i)
        self._transmit(x, port, e, now)

    def _arm_eligibility(self, x: XPort, q: list[Entry], now: int) -> None:
        """Wake when the FIFO's pick can change with time alone: at the head's eligibility; or, when
        the head is eligible but its input is busy and it may still be bypassed, at the eligibility of
        the first newer packet not yet eligible (where :meth:`_pick` stopped; inputs freeing: ``_complete``)."""
        head = q[0]
        t = head.eligible
        if t <= now:
            if self.xat[head.inp + 1].in_busy <= now or head.bypassed >= self.bypass_limit:
                return
            for e in q:
                if e.eligible > now:
                    t = e.eligible
                    break
            else:
                return
        if x.wake_at != t:
            x.wake_at = t
            self.at_kind(t, T_ELIGIBLE, x)

    def on_timer(self, kind: int, now: int, arg: Any) -> None:
        if kind == T_COMPLETE:
            self._complete(now, arg)
        elif kind == T_ELIGIBLE:
            x: XPort = arg
            if x.wake_at == now:
                x.wake_at = -1
            self._try_out(x, now)
        else:
            super().on_timer(kind, now, arg)

    def _transmit(self, x: XPort, port: Port, e: Entry, now: int) -> None:
        o = port.index
        frame = e.pkt
        n = len(frame)
        end = now + port.tx_time(n)        # >= e.tail + forwarding delay (receive)
        port.busy_until = port.data_end = end
        self.xat[e.inp + 1].feed(e, port.rate, end)     # the crossbar input's read rate (.xport)
        x.queued -= 1
        if not x.queued:
            self.qmask &= ~x.bit
        port.pc.transmitted(n, now)
        if e.vl != VL15:
            port.tx[e.vl].sent(e.blocks)
        if e.vl != e.vl_in:
            frame = e.frame                 # (writable: a bytearray)
            set_vl(frame, e.vl)
        if self.marker is not None:
            self.marker.on_transmit(self, e, now)
            frame = e.pkt                   # (a marker may have made it writable: Entry.frame)
        self.outbox.append((o, frame, False, now))
        self.record_tx(port, now, n, e.data)
        self.at_kind(end, T_COMPLETE, e)

    def link_free(self, port: Port, now: int) -> None:
        self._try_out(self.xat[port.index + 1], now)

    def _complete(self, now: int, e: Entry) -> None:
        """The packet's last byte left: free its input buffer space, return the credit
        upstream, and let every output that may have waited on that input try again."""
        xat = self.xat
        xi = xat[e.inp + 1]
        xi.fed(e)
        if e.vl_in != VL15:
            inport = xi.port
            if inport is not None:
                inport.rx[e.vl_in].freed(e.blocks)
                self._send_fcp(inport, e.vl_in, now)
        if self.marker is not None:
            self.marker.on_departure(self, e, now)
        xo = xat[e.out + 1]
        self._try_out(xo, now)
        m, xl = self.qmask & ~xo.bit, self._xlist      # the other outputs with packets, in _xlist order
        while m:
            low = m & -m
            m ^= low
            x = xl[low.bit_length() - 1]
            # skip an output whose link is taken and its wake-up armed: _try_out would stop at link_blocked
            p = x.port
            if p is not None:
                b = p.busy_until
                if b > now and (b == p.data_end or p.wake_at == b):
                    continue
            self._try_out(x, now)
