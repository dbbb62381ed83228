"""What every sending queue pair shares: the connection, the rate limit and the
congestion-control hook (:class:`SenderBase`); and what the source of a flow adds, the
window and the traffic generator (:class:`FlowSource`).

Rate limit: a static IPD (rate R/(IPD+1): after a packet of transmission time T the next
may start (IPD+1)·T later) or an explicit rate in bytes/s, lengthened by the
congestion-control response's ``gap``.  Window: at most CWND packets sent and not yet
acknowledged (OUTS; seed 000 §3 / §5.1).  A congestion-control response changes them
only through :meth:`FlowSource.set_window`, :meth:`SenderBase.reschedule` and
:meth:`SenderBase.set_ipd` (issue 12).

The source-side response (a :class:`~ibemu.fabric.hooks.SourceResponse`, attached with
:meth:`SenderBase.attach_response`; see :mod:`ibemu.cc`): ``on_sent(qp, now, frame)``
after every data packet (retransmissions included),
``on_ack(qp, now, psn, n, becn)`` for every ACK or READ response that acknowledges *n*
new packets, ``on_cnp(qp, now)`` for every CNP, and ``gap(qp, nbytes, t)`` which may
lengthen the rate limiter's gap.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...units import PS_PER_S
from ...wire.codec import build
from ...wire.fields import get_slid
from ...wire.layout import Buf
from ..recorder import FlowSink, Recorder
from .cnp import answer_cnp

if TYPE_CHECKING:
    from ..hooks import SourceResponse
    from ..params import FlowSpec
    from ..hca import HCA
    from ..integrity import PayloadCheck
    from ..traffic import Generator


class SenderBase:
    """A QP that sends packets of one connection: the RC requester, the RC responder
    (RDMA READ responses) and the UD sender.  Addresses, the rate limiter, the
    congestion-control hook (``cc``) and the payload pattern."""

    def __init__(self, hca: HCA, flow: FlowSpec, qpn: int, remote_qpn: int, dlid: int, vl: int):
        self.hca = hca
        self.flow = flow
        self.name = flow.name
        self.qpn = qpn
        self.remote_qpn = remote_qpn
        self.dlid = dlid
        self.slid = hca.lid                 # base LID + path bits (LMC > 0, IBA 7.11.1); set by build
        self.vl = vl
        self.sl = flow.sl
        self.pkey = flow.pkey
        self.ipd = flow.ipd
        self.rate = flow.rate               # bytes/s or None
        self.next_allowed = 0
        self.sent_packets = 0
        self.cc: SourceResponse | None = None   # congestion-control response (ibemu.fabric.hooks)
        self.cnps_received = 0
        self.integrity: PayloadCheck | None = None
        self._sink: FlowSink | None = None      # where this flow's packets are reported (flow_sink)
        self._sink_rec: Recorder | None = None  # ... the recorder that made it

    def flow_sink(self) -> FlowSink:
        """The sink of this flow's packets (:meth:`Recorder.flow_sink`), made again when
        the HCA's recorder changed."""
        rec = self.hca.recorder
        sink = self._sink
        if sink is None or self._sink_rec is not rec:
            sink = self._sink = rec.flow_sink(self.name)
            self._sink_rec = rec
        return sink

    # -- operations for a congestion-control scheme (ibemu.fabric.hooks)
    def attach_response(self, response: SourceResponse) -> None:
        """The source response that paces this QP (a scheme's :class:`SourceResponse`)."""
        self.cc = response

    def reschedule(self, t: int) -> None:
        """The next packet may start at *t* (the rate limiter's release time)."""
        self.next_allowed = t

    def set_ipd(self, ipd: int) -> None:
        """A new static inter-packet delay (a subnet manager pacing a source, seed 000 §6.2)."""
        self.ipd = ipd

    # The sending side the HCA's transmit arbitration calls (``HCA.senders``); every
    # subclass defines it (plain methods, not a TYPE_CHECKING block: mypyc compiles
    # no statements in a class body).
    def on_packet(self, now: int, frame: Buf) -> bytearray | None:
        """The receive side (:class:`~ibemu.fabric.hooks.PacketHandler`): a reply frame to
        send ahead of data, or None.  Declared here so that the HCA calls it natively."""
        raise NotImplementedError

    def ready(self, now: int) -> tuple[bool, int | None]:
        """``(True, None)`` when a packet may start at *now*; else ``(False, t)``:
        ask again at *t* (None: only when something else changes)."""
        raise NotImplementedError

    def next_size(self) -> int:
        """The wire size in bytes of the packet :meth:`next_packet` would build."""
        raise NotImplementedError

    def next_packet(self, now: int) -> bytes | bytearray:
        """Build the next packet, which starts on the link at *now*."""
        raise NotImplementedError

    def next_psn(self) -> int:
        """The PSN the next new packet gets (0 for a QP that numbers no packets of its own)."""
        return 0

    def on_period(self) -> int | None:
        """The end of the traffic generator's current ON period (None: not an ON/OFF source)."""
        return None

    def gap_after(self, nbytes: int) -> int:
        """Rate limit: minimum time from this packet's start to the next one's."""
        t = self.hca.port.tx_time(nbytes)
        if self.rate:
            t = max(t, -(-nbytes * PS_PER_S // int(self.rate)))
        if self.ipd:
            t = max(t, (self.ipd + 1) * self.hca.port.tx_time(nbytes))
        if self.cc is not None:
            t = self.cc.gap(self, nbytes, t)
        return t

    def _sent(self, now: int, frame: bytes | bytearray) -> None:
        """Bookkeeping after a data packet: the rate limiter and the CC hook."""
        self.sent_packets += 1
        self.next_allowed = now + self.gap_after(len(frame))
        if self.cc is not None:
            self.cc.on_sent(self, now, frame)

    def _paced(self, now: int) -> tuple[bool, int | None]:
        """The rate limiter's verdict: (True, None) or (False, the time it allows)."""
        if self.next_allowed > now:
            return False, self.next_allowed
        return True, None

    def on_cnp(self, now: int, frame: Buf) -> None:
        """A CNP for this QP (IBA A10): hand it to the congestion-control response."""
        self.cnps_received += 1
        self.hca.count("cnp_received")
        if self.cc is not None:
            self.cc.on_cnp(self, now)

    def cnp_for(self, frame: Buf) -> bytearray:
        """The CNP answering FECN-marked *frame* (:func:`.cnp.answer_cnp`)."""
        return answer_cnp(self.hca, frame, self.remote_qpn, self.vl)

    def _build(self, opcode: int, psn: int, ackreq: int = 0, becn: int = 0, payload: bytes = b"",
               ext: dict[str, dict[str, Any]] | None = None) -> bytearray:
        """A packet of this QP's connection (addresses, QPN, VL, SL, P_Key filled in).
        (Named parameters, not ``**fields``: the compiled core then calls build natively.)"""
        return build(dlid=self.dlid, slid=self.slid, opcode=opcode, psn=psn,
                     destqp=self.remote_qpn, vl=self.vl, sl=self.sl, pkey=self.pkey,
                     ackreq=ackreq, becn=becn, payload=payload, ext=ext)

    def _payload(self, n: int, msg: int, offset: int) -> bytes:
        if self.integrity is None:
            return self.hca.payload(n)
        return self.integrity.payload(self.name, msg, offset, n)

    def _from_peer(self, frame: Buf) -> bool:
        """An RC QP takes packets only from its connected peer (SLID check; IBA 9.7)."""
        if get_slid(frame) != self.dlid:
            self.hca.count("dropped_bad_source")
            return False
        return True


class FlowSource(SenderBase):
    """The source of a flow (RC requester, UD sender): its traffic generator and its
    window of CWND packets (None: no window)."""

    def __init__(self, hca: HCA, flow: FlowSpec, qpn: int, remote_qpn: int, dlid: int, vl: int,
                 generator: Generator):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.gen = generator
        self.cwnd: int | None = flow.window
        self.outs = 0                       # packets sent and not yet acknowledged
        self.psn = 0                        # the next new packet's PSN

    def set_window(self, cwnd: int | None) -> None:
        """A new CWND, in packets (None: no window) -- the window half of a response."""
        self.cwnd = cwnd

    def next_psn(self) -> int:
        return self.psn

    def on_period(self) -> int | None:
        return self.gen.on_until

    def window_open(self) -> bool:
        return self.cwnd is None or self.outs < self.cwnd
