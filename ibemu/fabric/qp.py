"""Queue pairs: the RC transport (SEND, RDMA WRITE, RDMA READ) and UD.

Sender side (``ready``/``next_size``/``next_packet``): PSNs, a window of CWND packets
(OUTS = packets sent and not yet acknowledged), a static rate limit (IPD: rate
R/(IPD+1), i.e. after a packet of transmission time T the next may start (IPD+1)·T
later; or an explicit rate in bytes/s), and the traffic generator.  Receiver side
(``on_packet``): in-order PSN check, ACKs with AETH (one per packet or one per
``ack_every``; always when AckReq is set), MSN, RDMA READ responses.  IBA 9.7; the
window and AckReq rule of seed 000 §3 / §5.1.  CWND, the rate and the IPD are plain
attributes for the congestion-control response of issues 5 and 6 to adjust.

Congestion notification (seed 000 §3; IBA annex A10, REFERENCE.md "CNP"), always on
because nothing is marked unless a congestion-control scheme marks it:
- an RC ACK carries BECN equal to the FECN of the last packet it acknowledges, and a
  FECN-marked data packet is always acknowledged at once (it ends ACK coalescing);
- a FECN-marked UD packet, RDMA READ response or ACK is answered with one CNP (opcode
  0x80, BECN set, no payload) to the QP that sent it.

The source-side response hooks in through ``SenderBase.cc`` (see :mod:`ibemu.cc`):
``on_sent(qp, now, frame)`` after every data packet, ``on_ack(qp, now, psn, n, becn)``
for every ACK or READ response that acknowledges *n* new packets, ``on_cnp(qp, now)``
for every CNP, and ``gap(qp, nbytes, t)`` which may lengthen the rate limiter's gap.
"""
from __future__ import annotations

from ..config import PS_PER_S
from ..wire import opcodes as OP
from ..wire.codec import build
from .traffic import INF

PSN_MOD = 1 << 24
ACK_SYNDROME = 0x1F          # ACK, credit count "invalid" (end-to-end credits not used)
NAK_PSN_SEQ = 0x60           # NAK, PSN sequence error
_HDR = 8 + 12 + 4 + 2        # LRH + BTH + ICRC + VCRC


def wire_size(payload: int, ext: int = 0) -> int:
    return _HDR + ext + payload + ((-payload) & 3)


def payload_len(frame) -> int:
    """Payload bytes of an LNH=2 packet (header, extension headers, pad, CRCs removed)."""
    op = frame[8]
    return len(frame) - _HDR - OP.EXT_LEN.get(op, 0) - ((frame[9] >> 4) & 3)


class SenderBase:
    """Window, rate limit and generator shared by every sending QP."""

    def __init__(self, hca, flow, qpn: int, remote_qpn: int, dlid: int, vl: int):
        self.hca = hca
        self.flow = flow
        self.name = flow.name
        self.qpn = qpn
        self.remote_qpn = remote_qpn
        self.dlid = dlid
        self.vl = vl
        self.sl = flow.sl
        self.cwnd = flow.window             # None: no window
        self.outs = 0
        self.ipd = flow.ipd
        self.rate = flow.rate               # bytes/s or None
        self.next_allowed = 0
        self.sent_packets = 0
        self.cc = None                      # congestion-control response (ibemu.cc)
        self.cnps_received = 0

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

    def _sent(self, now: int, frame) -> None:
        """Bookkeeping after a data packet: the rate limiter and the CC hook."""
        self.sent_packets += 1
        self.next_allowed = now + self.gap_after(len(frame))
        if self.cc is not None:
            self.cc.on_sent(self, now, frame)

    def on_cnp(self, now: int, frame) -> None:
        """A CNP for this QP (IBA A10): hand it to the congestion-control response."""
        self.cnps_received += 1
        self.hca.count("cnp_received")
        if self.cc is not None:
            self.cc.on_cnp(self, now)

    def cnp_for(self, frame):
        """The CNP answering FECN-marked *frame*, sent to the QP that sent it: LRH + BTH,
        BECN set, PSN 0, SL copied (REFERENCE.md, as hfi1 builds it)."""
        self.hca.count("cnp_sent")
        return build(dlid=(frame[6] << 8) | frame[7], slid=self.hca.lid, opcode=OP.CNP, psn=0,
                     destqp=self.remote_qpn, vl=self.vl, sl=frame[1] >> 4, becn=1)

    def _paced(self, now: int):
        """The rate limiter's verdict: (True, None) or (False, the time it allows)."""
        if self.next_allowed > now:
            return False, self.next_allowed
        return True, None

    def window_open(self) -> bool:
        return self.cwnd is None or self.outs < self.cwnd

    def _build(self, opcode: int, psn: int, **fields):
        """A packet of this QP's connection (addresses, QPN, VL and SL filled in)."""
        return build(dlid=self.dlid, slid=self.hca.lid, opcode=opcode, psn=psn,
                     destqp=self.remote_qpn, vl=self.vl, sl=self.sl, **fields)


class RCRequester(SenderBase):
    """The source of an RC flow: SEND / RDMA WRITE data, or RDMA READ requests."""

    def __init__(self, hca, flow, qpn, remote_qpn, dlid, vl, generator, max_reads=16):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.gen = generator
        self.op = flow.op
        self.psn = 0
        self.una = 0                        # oldest unacknowledged PSN
        self.msg_left = 0                   # bytes of the current message not yet sent
        self.max_reads = max_reads
        self.reads_out = 0
        self.naks = 0

    # -- sender
    def ready(self, now: int):
        """(True, None) when a packet may start now, else (False, when-to-retry or None)."""
        if not self.window_open() or (self.op == "read" and self.reads_out >= self.max_reads):
            return False, None
        if self.msg_left == 0:
            ok, t = self.gen.next_message(now)
            if not ok:
                return False, t
        return self._paced(now)

    def next_size(self) -> int:
        if self.op == "read":
            return wire_size(0, 16)
        left = self.msg_left or self.flow.message_size
        first = self.msg_left == 0
        return wire_size(min(left, self.hca.mtu), 16 if (self.op == "write" and first) else 0)

    def next_packet(self, now: int):
        mtu = self.hca.mtu
        if self.msg_left == 0:
            self.gen.taken()
            self.msg_left = self.flow.message_size
            first = True
        else:
            first = False
        ext = None
        if self.op == "read":
            n = self.msg_left
            npk = max(1, -(-n // mtu))
            opcode = OP.RC_RDMA_READ_REQUEST
            ext = {"RETH": {"va": 0, "r_key": 0, "dma_len": n}}
            payload = b""
            psn = self.psn
            self.psn = (self.psn + npk) % PSN_MOD
            self.outs += npk
            self.reads_out += 1
            self.msg_left = 0
            ackreq = 0
        else:
            n = min(self.msg_left, mtu)
            last = n == self.msg_left
            if self.op == "write":
                opcode = (OP.RC_RDMA_WRITE_ONLY if last else OP.RC_RDMA_WRITE_FIRST) if first else \
                         (OP.RC_RDMA_WRITE_LAST if last else OP.RC_RDMA_WRITE_MIDDLE)
                if first:
                    ext = {"RETH": {"va": 0, "r_key": 0, "dma_len": self.flow.message_size}}
            else:
                opcode = (OP.RC_SEND_ONLY if last else OP.RC_SEND_FIRST) if first else \
                         (OP.RC_SEND_LAST if last else OP.RC_SEND_MIDDLE)
            payload = self.hca.payload(n)
            psn = self.psn
            self.psn = (self.psn + 1) % PSN_MOD
            self.outs += 1
            self.msg_left -= n
            ackreq = 1 if (last or (self.cwnd is not None and self.outs >= self.cwnd)) else 0
            self.hca.recorder.flow_tx(self.name, now, n)
        frame = self._build(opcode, psn, ackreq=ackreq, payload=payload, ext=ext)
        self._sent(now, frame)
        return frame

    # -- receiver of ACKs and read responses
    def on_packet(self, now: int, frame):
        """ACKs, NAKs, READ responses and CNPs for this QP; returns a CNP to send back
        when the packet itself was FECN-marked, else None."""
        op = frame[8]
        if op == OP.CNP:
            self.on_cnp(now, frame)
            return None
        psn = (frame[17] << 16) | (frame[18] << 8) | frame[19]
        if op == OP.RC_ACKNOWLEDGE:
            syndrome = frame[20]
            if (syndrome >> 5) & 3 == 3:
                self.naks += 1
                self.hca.count("naks_received")
                return self._echo(frame)
            n = self._acked_through(psn)
            self.on_ack(now, frame, psn, n)
        elif OP.RC_RDMA_READ_RESPONSE_FIRST <= op <= OP.RC_RDMA_READ_RESPONSE_ONLY:
            if psn != self.una:
                self.hca.count("read_response_out_of_order")
                return self._echo(frame)
            n = self._acked_through(psn)
            last = op in (OP.RC_RDMA_READ_RESPONSE_LAST, OP.RC_RDMA_READ_RESPONSE_ONLY)
            if last:
                self.reads_out -= 1
            self.hca.recorder.flow_rx(self.name, now, payload_len(frame), last)
            self.on_ack(now, frame, psn, n)
        return self._echo(frame)

    def _echo(self, frame):
        """A FECN-marked ACK or READ response is answered with a CNP (IBA A10)."""
        return self.cnp_for(frame) if frame[12] & 0x80 else None

    def _acked_through(self, psn: int) -> int:
        """Retire the packets up to *psn*; returns how many were newly acknowledged."""
        n = (psn - self.una + 1) % PSN_MOD
        if 0 < n <= self.outs:
            self.outs -= n
            self.una = (psn + 1) % PSN_MOD
            return n
        return 0

    def on_ack(self, now: int, frame, psn: int, n: int) -> None:
        """Pass an acknowledgement of *n* new packets and its BECN to the CC response."""
        if self.cc is not None:
            self.cc.on_ack(self, now, psn, n, (frame[12] >> 6) & 1)


class RCResponder(SenderBase):
    """The destination of an RC flow; for RDMA READ also the sender of the responses."""

    def __init__(self, hca, flow, qpn, remote_qpn, dlid, vl, ack_every: int = 1):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.cwnd = None
        self.epsn = 0
        self.msn = 0
        self.ack_every = ack_every
        self.since_ack = 0
        self.reads: list = []               # pending read responses: [psn, bytes_left, first]
        self.duplicates = 0
        self.out_of_sequence = 0

    def _ack(self, psn: int, syndrome: int = ACK_SYNDROME, becn: int = 0):
        return self._build(OP.RC_ACKNOWLEDGE, psn, becn=becn,
                           ext={"AETH": {"syndrome": syndrome, "msn": self.msn}})

    def on_packet(self, now: int, frame):
        """Returns an ACK/NAK frame (or a CNP, for a CNP-worthy packet) to send, or None.
        The ACK's BECN is the FECN of the packet it acknowledges; a marked packet is
        acknowledged at once (seed 000 §3)."""
        op = frame[8]
        if op == OP.CNP:                    # about our READ responses
            self.on_cnp(now, frame)
            return None
        psn = (frame[17] << 16) | (frame[18] << 8) | frame[19]
        fecn = frame[12] >> 7
        if psn != self.epsn:
            behind = (self.epsn - psn) % PSN_MOD
            if 0 < behind < PSN_MOD // 2:         # duplicate: acknowledge again, drop
                self.duplicates += 1
                self.hca.count("duplicates")
                return self._ack((self.epsn - 1) % PSN_MOD, becn=fecn)
            self.out_of_sequence += 1
            self.hca.count("out_of_sequence")
            return self._ack(self.epsn, NAK_PSN_SEQ, becn=fecn)
        if op == OP.RC_RDMA_READ_REQUEST:
            n = int.from_bytes(frame[32:36], "big")
            npk = max(1, -(-n // self.hca.mtu))
            self.reads.append([psn, n, True])
            self.epsn = (psn + npk) % PSN_MOD
            self.msn += 1
            return self.cnp_for(frame) if fecn else None
        self.epsn = (psn + 1) % PSN_MOD
        last = op in (OP.RC_SEND_LAST, OP.RC_SEND_ONLY, OP.RC_RDMA_WRITE_LAST, OP.RC_RDMA_WRITE_ONLY,
                      0x03, 0x05, 0x09, 0x0B)
        if last:
            self.msn += 1
        self.hca.recorder.flow_rx(self.name, now, payload_len(frame), last)
        self.since_ack += 1
        if self.since_ack >= self.ack_every or frame[16] & 0x80 or fecn:
            self.since_ack = 0
            return self._ack(psn, becn=fecn)
        return None

    # -- read responses as a sender
    def ready(self, now: int):
        if not self.reads:
            return False, None
        return self._paced(now)

    def next_size(self) -> int:
        psn, left, first = self.reads[0]
        n = min(left, self.hca.mtu)
        return wire_size(n, 4 if (first or n == left) else 0)

    def next_packet(self, now: int):
        r = self.reads[0]
        psn, left, first = r
        n = min(left, self.hca.mtu)
        last = n == left
        if first:
            opcode = OP.RC_RDMA_READ_RESPONSE_ONLY if last else OP.RC_RDMA_READ_RESPONSE_FIRST
        else:
            opcode = OP.RC_RDMA_READ_RESPONSE_LAST if last else OP.RC_RDMA_READ_RESPONSE_MIDDLE
        ext = {"AETH": {"syndrome": ACK_SYNDROME, "msn": self.msn}} if (first or last) else None
        frame = self._build(opcode, psn, payload=self.hca.payload(n), ext=ext)
        self.hca.recorder.flow_tx(self.name, now, n)
        if last:
            self.reads.pop(0)
        else:
            r[0], r[1], r[2] = (psn + 1) % PSN_MOD, left - n, False
        self._sent(now, frame)
        return frame


class UDSender(SenderBase):
    """UD source: SEND_ONLY datagrams with a DETH, no ACKs, no window."""

    def __init__(self, hca, flow, qpn, remote_qpn, dlid, vl, generator, q_key=0x11111111):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.cwnd = None
        self.gen = generator
        self.psn = 0
        self.q_key = q_key
        self.ext = {"DETH": {"q_key": q_key, "src_qp": qpn}}

    def ready(self, now):
        ok, t = self.gen.next_message(now)
        if not ok:
            return False, t
        return self._paced(now)

    def next_size(self):
        return wire_size(min(self.flow.message_size, self.hca.mtu), 8)

    def next_packet(self, now):
        self.gen.taken()
        n = min(self.flow.message_size, self.hca.mtu)
        frame = self._build(OP.UD_SEND_ONLY, self.psn, payload=self.hca.payload(n), ext=self.ext)
        self.psn = (self.psn + 1) % PSN_MOD
        self.hca.recorder.flow_tx(self.name, now, n)
        self._sent(now, frame)
        return frame

    def on_packet(self, now, frame):
        """Only CNPs come back to a UD source."""
        if frame[8] == OP.CNP:
            self.on_cnp(now, frame)
        return None


class UDReceiver:
    def __init__(self, hca, flow, qpn, remote_qpn=0, vl=0):
        self.hca = hca
        self.name = flow.name
        self.qpn = qpn
        self.remote_qpn = remote_qpn
        self.vl = vl

    def on_packet(self, now, frame):
        """Count a datagram; answer a FECN-marked one with a CNP (IBA A10)."""
        if frame[8] in (OP.UD_SEND_ONLY, OP.UD_SEND_ONLY + 1):
            self.hca.recorder.flow_rx(self.name, now, payload_len(frame), True)
            if frame[12] & 0x80:
                return self.cnp_for(frame)
        return None

    cnp_for = SenderBase.cnp_for


__all__ = ["RCRequester", "RCResponder", "UDSender", "UDReceiver", "INF", "wire_size", "payload_len"]
