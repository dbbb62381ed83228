"""The UD transport (IBA 9.8, unreliable datagram): SEND-only datagrams with a DETH, no
ACKs, no window, no PSN check; a FECN-marked datagram is answered with a CNP (IBA A10).

A datagram is a message (one packet of at most the MTU).  For its latency the receiver
names it by its PSN unwrapped (the sender numbers its datagrams 0, 1, 2, ... and their
PSNs are those numbers modulo 2^24), so a lost datagram simply never completes."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...wire import opcodes as OP
from ...wire.fields import get_fecn_local, get_opcode, get_psn, payload_len, payload_of
from ...wire.layout import DETH_LEN, Buf, packet_size as wire_size
from .cnp import answer_cnp
from .psn import PSN_HALF, PSN_MOD, UD_SENDS
from .sender import FlowSource

if TYPE_CHECKING:
    from ..params import FlowSpec
    from ..hca import HCA
    from ..integrity import PayloadCheck
    from ..traffic import Generator


class UDSender(FlowSource):
    """UD source: SEND_ONLY datagrams with a DETH, no ACKs, no window."""

    def __init__(self, hca: HCA, flow: FlowSpec, qpn: int, remote_qpn: int, dlid: int, vl: int,
                 generator: Generator, q_key: int = 0x11111111):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl, generator)
        self.cwnd = None
        self.psn = 0
        self.msg_no = 0                     # the next datagram's number (its PSN unwrapped)
        self.q_key = q_key
        self.ext = {"DETH": {"q_key": q_key, "src_qp": qpn}}

    def ready(self, now: int) -> tuple[bool, int | None]:
        ok, t = self.gen.next_message(now)
        if not ok:
            return False, t
        return self._paced(now)

    def next_size(self) -> int:
        return wire_size(min(self.gen.size(), self.hca.mtu), DETH_LEN)

    def next_packet(self, now: int) -> bytes | bytearray:
        n = min(self.gen.taken(), self.hca.mtu)
        payload = self._payload(n, self.psn, 0)
        if self.integrity is not None:
            self.integrity.tx(self.name, payload, True)
        frame = self._build(OP.UD_SEND_ONLY, self.psn, payload=payload, ext=self.ext)
        self.psn = (self.psn + 1) % PSN_MOD
        sink = self.flow_sink()
        sink.started(self.msg_no, now)
        self.msg_no += 1
        sink.tx(now, n)
        self._sent(now, frame)
        return frame

    def on_packet(self, now: int, frame: Buf) -> None:
        """Only CNPs come back to a UD source."""
        if get_opcode(frame) == OP.CNP:
            self.on_cnp(now, frame)
        else:
            self.hca.count("dropped_bad_opcode")
        return None


class UDReceiver:
    def __init__(self, hca: HCA, flow: FlowSpec, qpn: int, remote_qpn: int = 0, vl: int = 0):
        self.hca = hca
        self.name = flow.name
        self.qpn = qpn
        self.remote_qpn = remote_qpn
        self.vl = vl
        self.integrity: PayloadCheck | None = None
        self.epsn = 0                       # next PSN expected (for counting losses only)
        self.next_seq = 0                   # epsn unwrapped: the datagram number it stands for
        self.lost = 0

    def on_packet(self, now: int, frame: Buf) -> bytearray | None:
        """Count a datagram; answer a FECN-marked one with a CNP (IBA A10).  UD has no
        PSN check (IBA 9.8, unreliable datagram): what the link loses is lost, and the link layer never
        delivers a datagram twice.  Losses are counted from the gaps in the sender's
        PSNs (``ud_datagrams_lost``; a late datagram takes its gap back)."""
        if get_opcode(frame) in UD_SENDS:
            psn = get_psn(frame)
            gap = (psn - self.epsn) % PSN_MOD
            if gap < PSN_HALF:
                self.epsn = (psn + 1) % PSN_MOD
                seq = self.next_seq + gap
                self.next_seq = seq + 1
                if gap:
                    self.lost += gap
                    self.hca.count("ud_datagrams_lost", gap)
            else:
                seq = self.next_seq - (self.epsn - psn) % PSN_MOD
                if self.lost:               # reordered: counted lost when its gap appeared
                    self.lost -= 1
                    self.hca.count("ud_datagrams_lost", -1)
            if self.integrity is not None:
                self.integrity.rx(self.name, payload_of(frame), True, psn=get_psn(frame))
            recorder = self.hca.recorder
            recorder.flow_rx(self.name, now, payload_len(frame), len(frame), True)
            recorder.message_done(self.name, seq, now)
            if get_fecn_local(frame):
                return self.cnp_for(frame)
        else:
            self.hca.count("dropped_bad_opcode")
        return None

    def cnp_for(self, frame: Buf) -> bytearray:
        """The CNP answering FECN-marked *frame* (:func:`.cnp.answer_cnp`)."""
        return answer_cnp(self.hca, frame, self.remote_qpn, self.vl)
