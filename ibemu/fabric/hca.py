"""The host channel adapter: one port, queue pairs, and its transmit arbitration.

Received packets occupy the port's receive buffer until their last byte has arrived,
then go to their QP (the HCA consumes at link speed: a sink never blocks the fabric).
Transmission: ACKs and other responses first, then data: among the VLs that have a
sendable QP the IBA VL arbitration picks one (:mod:`ibemu.fabric.vlarb`), and within a
VL the QPs take turns (round robin), each subject to its window, its rate limit, its
generator and the link credits of its VL.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Final, TYPE_CHECKING

from .params import HCAParams
from .credits import blocks_of
from .mad_agent import MADAgent
from .node import T_OWN, VL15, Node, Port, frame_intact
from .pkey import PKeyTable
from .qp.sender import SenderBase
from ..wire.codec import zero_payload
from ..wire.fields import get_destqp, get_dlid, get_lnh, get_opcode, get_padcnt, get_pkey, get_vl, icrc_ok
from ..wire.layout import PACKET_OVERHEAD, Buf
from ..wire.opcodes import EXT_LEN, LNH_IBA_LOCAL
from .traffic import INF

T_RX_DONE: Final = T_OWN    # the HCA's own deadlines (node.Timer)
T_TX_DONE: Final = T_OWN + 1
T_KICK: Final = T_OWN + 2
T_RX_DONE_INTACT: Final = T_OWN + 3     # T_RX_DONE of a frame delivered intact (no ICRC check)

if TYPE_CHECKING:
    from .hooks import Notifier, PacketHandler
    from .recorder import Recorder
    from .vlarb import VLArbiter


class GSIAgent:
    """QP1 (the GSI) of an HCA: hands a received MAD to the node's management agent
    (:mod:`ibemu.fabric.mad_agent`) and returns its response, which the HCA sends ahead
    of data on the VL the request came on (VL15).  A manager may replace it."""
    name = "qp1"

    def __init__(self, hca: HCA) -> None:
        self.agent = MADAgent(hca)

    def on_packet(self, now: int, frame: Buf) -> bytearray | None:
        return self.agent.handle(frame, now)


class HCA(Node):
    def __init__(self, name: str, lid: int, params: HCAParams, recorder: Recorder | None = None):
        super().__init__(name, recorder)
        self.lid = lid
        self.lmc = 0                        # 2^LMC LIDs lid .. lid + 2^LMC - 1 (base aligned; IBA 7.11.1)
        self.params = params
        self.mtu = params.mtu
        # the HCA's one port, set by add_port (``ports`` stays empty for an HCA left
        # without a link, which build.py reports); everything that sends or receives
        # runs after it, so it is declared a Port, not Optional (no None under mypyc)
        self.port: Port
        self.arb: VLArbiter                 # the port's VL arbitration, made by add_port
        self.qps: dict[int, PacketHandler] = {}     # qpn -> receiving QP object
        self.senders: list[SenderBase] = []         # QPs that may send data, round robin
        self.rr = 0
        self.ctrl: deque[tuple[bytearray, int]] = deque()   # (frame, vl) responses waiting to go out
        self._kick_at = INF
        self._next_qpn = 0x100
        self.pkey_table = PKeyTable(params.pkeys)
        self.notifiers: dict[int, Notifier] = {}   # qpn -> congestion notifier (ibemu.fabric.hooks)
        self.qps[1] = GSIAgent(self)        # QP1: PerfMgt / CC MADs answered in band

    # ---------------------------------------------------------------- for schemes
    def attach_qp(self, qpn: int, handler: PacketHandler) -> None:
        """Receive the packets for QP *qpn* with *handler* (a management QP)."""
        self.qps[qpn] = handler

    def attach_notifier(self, qpn: int, notifier: Notifier) -> None:
        """Congestion notification at the destination QP *qpn* (a scheme's :class:`Notifier`)."""
        self.notifiers[qpn] = notifier

    def send_control(self, frame: bytearray, vl: int) -> None:
        """Queue a control packet (an ACK, a CNP, a management datagram) to go out ahead
        of data on *vl*; it leaves at the next transmission opportunity (:meth:`kick`)."""
        self.ctrl.append((frame, vl))

    def add_port(self, port: Port) -> None:
        self.port = port
        self.register_port(port)
        self.arb = self.params.vlarb.arbiter(len(port.tx))

    def new_qpn(self) -> int:
        self._next_qpn += 1
        return self._next_qpn

    def payload(self, n: int) -> bytes:
        """*n* bytes of a message: zeros, the codec's shared zero payload, which its CRCs
        need not read (:func:`ibemu.wire.codec.zero_payload`)."""
        return zero_payload(n)

    # ---------------------------------------------------------------- receive
    def receive(self, pidx: int, buf: Buf, link: bool, now: int) -> None:
        self._receive(pidx, buf, link, now, True)

    def receive_intact(self, pidx: int, buf: Buf, link: bool, now: int) -> None:
        self._receive(pidx, buf, link, now, False)

    def _receive(self, pidx: int, buf: Buf, link: bool, now: int, check: bool) -> None:
        """A frame arrives on *pidx*; *check*: verify its length, PktLen and CRCs, VCRC
        now and ICRC when it is in (False only for a frame delivered intact,
        SimNode.receive_intact)."""
        port = self.port_of(pidx)
        if port is None:
            self.count("dropped_no_port")
            return
        if link:
            if self.receive_link(port, buf, now, check) is not None:
                self._try_send(now)
            return
        # held as bytes once it is in: the HCA and its QPs only read a packet they take in,
        # and the compiled core reads bytes natively, a bytearray generically (wire/fields.py;
        # issue 28: one copy, about as dear as eight reads, against twenty-odd reads)
        frame = buf if isinstance(buf, bytes) else bytes(buf)
        n = len(frame)
        port.pc.received(frame)
        if check and not frame_intact(frame):   # length, PktLen, VCRC (node.py)
            self.port_error(port, "PortRcvErrors")
            return
        vl = get_vl(frame)
        if vl >= len(port.rx) and vl != VL15:
            self.port_error(port, "PortRcvErrors")
            return
        if vl != VL15 and not port.rx[vl].received(blocks_of(n)):
            self.port_error(port, "ExcessiveBufferOverrunErrors")
            return
        self.at_kind(now + port.tx_time(n), T_RX_DONE if check else T_RX_DONE_INTACT, frame)  # (VL read then)

    def _rx_done(self, now: int, frame: bytes, vl: int, check: bool = True) -> None:
        port = self.port
        if vl != VL15:
            port.rx[vl].freed(blocks_of(len(frame)))
            self._send_fcp(port, vl, now)
        if not self._acceptable(port, frame, vl, check):
            self._try_send(now)
            return
        qpn = get_destqp(frame)
        qp = self.qps.get(qpn)
        if qp is None:
            self.count("dropped_unknown_qp")
            return
        if isinstance(qp, SenderBase):             # a native call in the compiled core (issue 28)
            reply = qp.on_packet(now, frame)
        else:
            reply = qp.on_packet(now, frame)
        if self.notifiers:
            notifier = self.notifiers.get(qpn)
            if notifier is not None:
                reply = notifier.on_packet(self, now, frame, reply)
        if reply is not None:
            self.ctrl.append((reply, vl))
        self._try_send(now)

    def _acceptable(self, port: Port, frame: Buf, vl: int, check: bool = True) -> bool:
        """End-node checks once the whole packet is in (issue 8): an IBA local packet
        (LNH 2: ibemu's HCAs take no GRH) for one of this port's 2^LMC LIDs, a known OpCode whose headers fit,
        a good ICRC (IBA 7.8, data integrity) -- else PortRcvErrors; a P_Key the port's table holds
        (IBA 10.9, always checked at an HCA; not on VL15, the subnet management lane,
        whose QP0 packets are exempt) -- else PortRcvConstraintErrors.  Without *check*
        (a frame delivered intact) the ICRC is not computed."""
        n = len(frame)
        ext = EXT_LEN.get(get_opcode(frame))
        if (get_lnh(frame) != LNH_IBA_LOCAL or get_dlid(frame) >> self.lmc != self.lid >> self.lmc or ext is None
                or n < PACKET_OVERHEAD + ext + get_padcnt(frame) or (check and not icrc_ok(frame))):
            self.port_error(port, "PortRcvErrors")
            return False
        if vl != VL15 and not self.pkey_table.allows(get_pkey(frame)):
            self.port_error(port, "PortRcvConstraintErrors")
            return False
        return True

    # ---------------------------------------------------------------- transmit
    def _try_send(self, now: int) -> None:
        port = self.port
        if (port.busy_until > now or port.fcp_pending) and self.link_blocked(port, now,
                                                                              bool(self.ctrl or self.senders)):
            return
        if self.ctrl:
            frame, vl = self.ctrl[0]
            if vl == VL15 or port.tx[vl].can_send(blocks_of(len(frame))):
                self.ctrl.popleft()
                self._transmit(frame, vl, now, False)
                return
        senders = self.senders
        n = len(senders)
        earliest = INF
        single = self.arb.single is not None
        starved = False                     # a QP is ready but its VL has no credits
        # VL -> index of its first sendable QP (one VL: the first sendable QP, none made)
        first: dict[int, int] | None = None if single else {}
        pick = -1
        for k in range(n):
            i = (self.rr + k) % n
            qp = senders[i]
            if first is not None and qp.vl in first:
                continue
            ok, t = qp.ready(now)
            if not ok:
                if t is not None and t < earliest:
                    earliest = t
                continue
            if not port.tx[qp.vl].can_send(blocks_of(qp.next_size())):
                starved = True
                continue
            if first is None:
                pick = i
                break
            first[qp.vl] = i
        if first:
            # choose() returns a VL of the non-empty *first* (None only when the port's VL
            # arbitration table lists none of them: then first[vl] raises, as it always did);
            # narrowing it here would cost a test per packet
            chosen = self.arb.choose(first)
            pick = first[chosen]  # type: ignore[index]
        if pick >= 0:
            qp = senders[pick]
            pkt = qp.next_packet(now)
            if first is not None:
                self.arb.sent(qp.vl, len(pkt), first)
            self.rr = (pick + 1) % n
            self._transmit(pkt, qp.vl, now, True)
            return
        port.pc.waiting(now, starved)
        if earliest < INF and earliest != self._kick_at:
            self._kick_at = earliest
            self.at_kind(earliest, T_KICK)

    def kick(self, now: int) -> None:
        """Try to send now: for a congestion-control response that opened the window
        or raised the rate (call from within a node callback at time *now*)."""
        self._try_send(now)

    def _kick(self, now: int) -> None:
        if self._kick_at == now:
            self._kick_at = INF
        self._try_send(now)

    def _transmit(self, frame: bytes | bytearray, vl: int, now: int, data: bool) -> None:
        if not isinstance(frame, bytes):    # sent as bytes: read natively on the way (switch.py)
            frame = bytes(frame)
        port = self.port
        n = len(frame)
        end = now + port.tx_time(n)
        port.busy_until = port.data_end = end
        port.pc.transmitted(n, now)
        if vl != VL15:
            port.tx[vl].sent(blocks_of(n))
        self.outbox.append((port.index, frame, False, now))
        self.record_tx(port, now, n, data)
        self.at_kind(end, T_TX_DONE)

    def link_free(self, port: Port, now: int) -> None:
        self._try_send(now)

    def _tx_done(self, now: int) -> None:
        self._try_send(now)

    def on_timer(self, kind: int, now: int, arg: Any) -> None:
        if kind == T_TX_DONE:
            self._try_send(now)
        elif kind == T_RX_DONE:
            self._rx_done(now, arg, get_vl(arg))
        elif kind == T_RX_DONE_INTACT:
            self._rx_done(now, arg, get_vl(arg), False)
        elif kind == T_KICK:
            self._kick(now)
        else:
            super().on_timer(kind, now, arg)

    def start(self, now: int) -> None:
        super().start(now)
        self._try_send(now)
