"""Queue pairs: the RC transport (SEND, RDMA WRITE, RDMA READ) and UD.

Sender side (``ready``/``next_size``/``next_packet``): PSNs, a window of CWND packets
(OUTS = packets sent and not yet acknowledged), a static rate limit (IPD: rate
R/(IPD+1), i.e. after a packet of transmission time T the next may start (IPD+1)·T
later; or an explicit rate in bytes/s), and the traffic generator.  Receiver side
(``on_packet``): in-order PSN check, ACKs with AETH (one per packet or one per
``ack_every``; always when AckReq is set), MSN, RDMA READ responses.  IBA 9.7; the
window and AckReq rule of seed 000 §3 / §5.1.  CWND, the rate and the IPD are plain
attributes for the congestion-control response of issues 5 and 6 to adjust.

Reliability (IBA 9.7, the reliable service; issue 8 item 4):

- the responder checks the PSN: the expected PSN is taken; a duplicate (behind the
  expected PSN) is dropped and acknowledged again (a duplicate RDMA READ request is
  executed again from its PSN, reads being idempotent); an out-of-sequence packet is
  dropped and NAKed with "PSN sequence error" (syndrome 0x60) -- once per sequence
  error: further out-of-sequence packets are dropped silently until the expected PSN
  arrives (IBA 9.7);
- the requester keeps a copy of every unacknowledged request and goes back N -- resends
  every request from the oldest unacknowledged PSN -- on a PSN sequence error NAK, on a
  READ response that skips a PSN (an implicit NAK, once per hole), and on the expiry of
  the local ACK timeout (:attr:`HCAParams.ack_timeout`, restarted by every request sent
  and every acknowledgement that makes progress).  Each go-back uses one retry; forward
  progress restores the retry count (:attr:`HCAParams.retry_cnt`, IBA's 3-bit Retry
  Count, default 7).  When a retry is needed and none is left the QP enters the error
  state (IBA "Transport Retry Counter Exceeded"): it sends nothing more, counts
  ``qp_retry_exceeded`` and logs a recorder event;
- a packet is delivered to the application (``recorder.flow_rx``) only when it is taken
  in order, so every message is delivered exactly once and in order.

Congestion notification (seed 000 §3; IBA annex A10, REFERENCE.md "CNP"), always on
because nothing is marked unless a congestion-control scheme marks it:
- an RC ACK carries BECN equal to the FECN of the last packet it acknowledges, and a
  FECN-marked data packet is always acknowledged at once (it ends ACK coalescing);
- a FECN-marked UD packet, RDMA READ response or ACK is answered with one CNP (opcode
  0x80, BECN set, no payload) to the QP that sent it.

The source-side response hooks in through ``SenderBase.cc`` (see :mod:`ibemu.cc`):
``on_sent(qp, now, frame)`` after every data packet (retransmissions included),
``on_ack(qp, now, psn, n, becn)`` for every ACK or READ response that acknowledges *n*
new packets, ``on_cnp(qp, now)`` for every CNP, and ``gap(qp, nbytes, t)`` which may
lengthen the rate limiter's gap.

Payload checking: with ``qp.integrity`` set (:mod:`ibemu.fabric.integrity`) payloads
carry a deterministic pattern of (flow, message, offset) and both ends record message
digests, so a test can prove delivery exactly once, intact and in order.
"""
from __future__ import annotations

from collections import deque

from ..config import PS_PER_S
from ..wire import opcodes as OP
from ..wire.codec import build
from ..wire.crc import icrc as _icrc, vcrc as _vcrc
from .traffic import INF

PSN_MOD = 1 << 24
PSN_HALF = 1 << 23
ACK_SYNDROME = 0x1F          # ACK, credit count "invalid" (end-to-end credits not used)
NAK_PSN_SEQ = 0x60           # NAK, PSN sequence error
_HDR = 8 + 12 + 4 + 2        # LRH + BTH + ICRC + VCRC

_LAST = frozenset((OP.RC_SEND_LAST, OP.RC_SEND_ONLY, OP.RC_RDMA_WRITE_LAST, OP.RC_RDMA_WRITE_ONLY,
                   0x03, 0x05, 0x09, 0x0B, 0x16, 0x17))
RC_REQUESTS = frozenset(list(range(0x00, 0x0D)) + [0x16, 0x17])
"""RC request OpCodes a responder takes: SEND, RDMA WRITE, RDMA READ request."""
RC_RESPONSES = frozenset(range(OP.RC_RDMA_READ_RESPONSE_FIRST, OP.RC_ACKNOWLEDGE + 1))
UD_SENDS = frozenset((OP.UD_SEND_ONLY, OP.UD_SEND_ONLY + 1))


def wire_size(payload: int, ext: int = 0) -> int:
    return _HDR + ext + payload + ((-payload) & 3)


def payload_len(frame) -> int:
    """Payload bytes of an LNH=2 packet (header, extension headers, pad, CRCs removed)."""
    op = frame[8]
    return len(frame) - _HDR - OP.EXT_LEN.get(op, 0) - ((frame[9] >> 4) & 3)


def payload_of(frame) -> bytes:
    """The payload bytes of an LNH=2 packet."""
    start = 20 + OP.EXT_LEN.get(frame[8], 0)
    return bytes(frame[start:start + payload_len(frame)])


def get_psn(frame) -> int:
    return (frame[17] << 16) | (frame[18] << 8) | frame[19]


def set_ackreq(frame) -> None:
    """Set the BTH AckReq bit in place; the ICRC and the VCRC are recomputed (AckReq is
    an invariant field)."""
    frame[16] |= 0x80
    end = len(frame) - 6
    c = _icrc(memoryview(frame)[8:end], frame[1] & 3)
    frame[end:end + 4] = c.to_bytes(4, "little")
    frame[end + 4:end + 6] = _vcrc(memoryview(frame)[:end + 4]).to_bytes(2, "little")


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
        self.pkey = getattr(flow, "pkey", 0xFFFF)
        self.cwnd = flow.window             # None: no window
        self.outs = 0
        self.ipd = flow.ipd
        self.rate = flow.rate               # bytes/s or None
        self.next_allowed = 0
        self.sent_packets = 0
        self.cc = None                      # congestion-control response (ibemu.cc)
        self.cnps_received = 0
        self.integrity = None               # ibemu.fabric.integrity.PayloadCheck

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
        BECN set, PSN 0, SL and P_Key copied (REFERENCE.md, as hfi1 builds it)."""
        self.hca.count("cnp_sent")
        return build(dlid=(frame[6] << 8) | frame[7], slid=self.hca.lid, opcode=OP.CNP, psn=0,
                     destqp=self.remote_qpn, vl=self.vl, sl=frame[1] >> 4, becn=1,
                     pkey=(frame[10] << 8) | frame[11])

    def _paced(self, now: int):
        """The rate limiter's verdict: (True, None) or (False, the time it allows)."""
        if self.next_allowed > now:
            return False, self.next_allowed
        return True, None

    def window_open(self) -> bool:
        return self.cwnd is None or self.outs < self.cwnd

    def _build(self, opcode: int, psn: int, **fields):
        """A packet of this QP's connection (addresses, QPN, VL, SL, P_Key filled in)."""
        return build(dlid=self.dlid, slid=self.hca.lid, opcode=opcode, psn=psn,
                     destqp=self.remote_qpn, vl=self.vl, sl=self.sl, pkey=self.pkey, **fields)

    def _payload(self, n: int, msg: int, offset: int) -> bytes:
        if self.integrity is None:
            return self.hca.payload(n)
        return self.integrity.payload(self.name, msg, offset, n)

    def _from_peer(self, frame) -> bool:
        """An RC QP takes packets only from its connected peer (SLID check; IBA 9.7)."""
        if ((frame[6] << 8) | frame[7]) != self.dlid:
            self.hca.count("dropped_bad_source")
            return False
        return True


class RCRequester(SenderBase):
    """The source of an RC flow: SEND / RDMA WRITE data, or RDMA READ requests."""

    def __init__(self, hca, flow, qpn, remote_qpn, dlid, vl, generator, max_reads=16):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.gen = generator
        self.op = flow.op
        self.psn = 0
        self.una = 0                        # oldest unacknowledged PSN
        self.msg_left = 0                   # bytes of the current message not yet sent
        self.msg_no = -1                    # index of the current message
        self.max_reads = max_reads
        self.reads_out = 0
        self.naks = 0
        params = hca.params
        self.timeout = getattr(params, "ack_timeout", 0) or 0     # ps; 0: no timer
        self.retry_cnt = getattr(params, "retry_cnt", 7)
        self.max_outstanding = getattr(params, "max_outstanding", 4096)
        self.retries_left = self.retry_cnt
        self.retransmitted = 0
        self.timeouts = 0
        self.error = False                  # QP in the error state (retries exhausted)
        self._unacked: deque = deque()      # [first PSN, PSNs, frame copy, bytes, message]
        self._redo: deque = deque()         # (first PSN, PSNs, frame) still to resend
        self._deadline = None               # local ACK timeout expiry (None: not running)
        self._timer_at = None               # time of the one pending timer callback
        self._gbn_una = None                # una of the go-back in progress (None: none)

    # -- sender
    def ready(self, now: int):
        """(True, None) when a packet may start now, else (False, when-to-retry or None)."""
        if self.error:
            return False, None
        if self._redo:
            self._prune_redo()
            if self._redo:
                return self._paced(now)
        if (not self.window_open() or self.outs >= self.max_outstanding
                or (self.op == "read" and self.reads_out >= self.max_reads)):
            return False, None
        if self.msg_left == 0:
            ok, t = self.gen.next_message(now)
            if not ok:
                return False, t
        return self._paced(now)

    def next_size(self) -> int:
        if self._redo:
            return len(self._redo[0][2])
        if self.op == "read":
            return wire_size(0, 16)
        left = self.msg_left or self.flow.message_size
        first = self.msg_left == 0
        return wire_size(min(left, self.hca.mtu), 16 if (self.op == "write" and first) else 0)

    def next_packet(self, now: int):
        if self._redo:
            return self._resend(now)
        mtu = self.hca.mtu
        if self.msg_left == 0:
            self.gen.taken()
            self.msg_left = self.flow.message_size
            self.msg_no += 1
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
            npk = 1
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
            offset = self.flow.message_size - self.msg_left
            payload = self._payload(n, self.msg_no, offset)
            if self.integrity is not None:
                self.integrity.tx(self.name, payload, last)
            psn = self.psn
            self.psn = (self.psn + 1) % PSN_MOD
            self.outs += 1
            self.msg_left -= n
            ackreq = 1 if (last or (self.cwnd is not None and self.outs >= self.cwnd)
                           or self.outs >= self.max_outstanding) else 0
            self.hca.recorder.flow_tx(self.name, now, n)
        frame = self._build(opcode, psn, ackreq=ackreq, payload=payload, ext=ext)
        self._unacked.append((psn, npk, bytes(frame), n, self.msg_no))
        self._sent(now, frame)
        self._restart_timer(now)
        return frame

    def _resend(self, now: int):
        """The next request of a go-back-N retransmission (a copy of the original; the
        last one of the burst asks for an ACK)."""
        _, _, stored = self._redo.popleft()
        frame = bytearray(stored)
        if not self._redo and not frame[16] & 0x80:
            set_ackreq(frame)
        self.retransmitted += 1
        self.hca.count("retransmitted_packets")
        self._sent(now, frame)
        self._restart_timer(now)
        return frame

    def _prune_redo(self) -> None:
        """Drop resends that an acknowledgement has made unnecessary."""
        redo, una = self._redo, self.una
        while redo:
            first, npk = redo[0][0], redo[0][1]
            d = (una - first) % PSN_MOD
            if d >= npk and d < PSN_HALF:
                redo.popleft()
            else:
                break

    def _go_back(self, now: int, why: str, nak: bool = False) -> None:
        """Go back N: resend every request from ``una`` on (IBA 9.7).  Uses one
        retry; with none left the QP enters the error state.  A NAK (or READ-response
        hole) does not start another go-back while one from the same PSN is in progress
        (no progress since): it was caused by the requests before the resend, and a
        failed resend is caught by the timeout (as Linux rxe does, ``started_retry``)."""
        if self.error or self.outs == 0:
            return
        if nak and self._gbn_una == self.una:
            self.hca.count("naks_during_retry")
            return
        self._gbn_una = self.una
        if self.retries_left <= 0:
            self._enter_error(now, why)
            return
        self.retries_left -= 1
        self.hca.count("go_back_n")
        redo = deque()
        una = self.una
        for first, npk, stored, n, msg in self._unacked:
            d = (una - first) % PSN_MOD
            if d >= npk and d < PSN_HALF:
                continue                                    # already acknowledged
            if 0 < d < npk:                                 # part of a READ answered already
                mtu = self.hca.mtu
                f = self._build(OP.RC_RDMA_READ_REQUEST, una, ackreq=0,
                                ext={"RETH": {"va": d * mtu, "r_key": 0, "dma_len": max(0, n - d * mtu)}})
                redo.append((una, npk - d, bytes(f)))
            else:
                redo.append((first, npk, stored))
        self._redo = redo
        self._deadline = now + self.timeout if self.timeout else None
        self._arm(now)
        self.hca.kick(now)

    def _enter_error(self, now: int, why: str) -> None:
        self.error = True
        self._redo.clear()
        self._deadline = None
        self.hca.count("qp_retry_exceeded")
        self.hca.recorder.event(now, self.hca.name, "flow %s: QP 0x%06x retry count exceeded (%s); "
                                "QP in error state" % (self.name, self.qpn, why))

    # -- the local ACK timeout (one pending timer callback at most)
    def _restart_timer(self, now: int) -> None:
        if self.timeout:
            self._deadline = now + self.timeout
            self._arm(now)

    def _arm(self, now: int) -> None:
        if self._deadline is not None and self._timer_at is None:
            self._timer_at = self._deadline
            self.hca.at(self._deadline, self._on_timer)

    def _on_timer(self, now: int) -> None:
        self._timer_at = None
        if self.error or self.outs == 0 or self._deadline is None:
            self._deadline = None
            return
        if now < self._deadline:
            self._arm(now)
            return
        self.timeouts += 1
        self.hca.count("local_ack_timeouts")
        self._go_back(now, "local ACK timeout")

    # -- receiver of ACKs and read responses
    def on_packet(self, now: int, frame):
        """ACKs, NAKs, READ responses and CNPs for this QP; returns a CNP to send back
        when the packet itself was FECN-marked, else None."""
        op = frame[8]
        if op == OP.CNP:
            self.on_cnp(now, frame)
            return None
        if op not in RC_RESPONSES:
            self.hca.count("dropped_bad_opcode")
            return None
        if not self._from_peer(frame):
            return None
        psn = get_psn(frame)
        if op == OP.RC_ACKNOWLEDGE:
            syndrome = frame[20]
            if (syndrome >> 5) & 3 == 3:
                self.naks += 1
                self.hca.count("naks_received")
                if syndrome == NAK_PSN_SEQ:
                    self._on_nak_seq(now, frame, psn)
                return self._echo(frame)
            if self.op != "read":       # (IBA 9.7: an ACK never completes a READ)
                n = self._acked_through(psn, now)
                self.on_ack(now, frame, psn, n)
        elif op != OP.RC_ACKNOWLEDGE + 1:                   # READ responses
            if psn != self.una:
                behind = (self.una - psn) % PSN_MOD
                if 0 < behind < PSN_HALF:
                    self.hca.count("duplicate_read_responses")
                else:
                    self.hca.count("read_response_out_of_order")
                    if (psn - self.una) % PSN_MOD < self.outs:  # an implicit NAK
                        self._go_back(now, "READ response sequence error", nak=True)
                return self._echo(frame)
            if self.outs == 0:
                self.hca.count("dropped_unexpected_response")
                return self._echo(frame)
            n = self._acked_through(psn, now)
            last = op in (OP.RC_RDMA_READ_RESPONSE_LAST, OP.RC_RDMA_READ_RESPONSE_ONLY)
            if last:
                self.reads_out -= 1
            if self.integrity is not None:
                self.integrity.rx(self.name, payload_of(frame), last)
            self.hca.recorder.flow_rx(self.name, now, payload_len(frame), last)
            self.on_ack(now, frame, psn, n)
        return self._echo(frame)

    def _on_nak_seq(self, now: int, frame, psn: int) -> None:
        """NAK PSN sequence error at *psn*: everything before it is acknowledged (but for
        RDMA READs, which only their responses complete); resend from the oldest
        unacknowledged PSN (IBA 9.7)."""
        d = (psn - self.una) % PSN_MOD
        if d > self.outs or d >= PSN_HALF:
            self.hca.count("naks_ignored")                  # stale or from the future
            return
        if d and self.op != "read":     # a READ is done only when its responses are in
            n = self._acked_through((psn - 1) % PSN_MOD, now)
            self.on_ack(now, frame, (psn - 1) % PSN_MOD, n)
        self._go_back(now, "PSN sequence error NAK", nak=True)

    def _echo(self, frame):
        """A FECN-marked ACK or READ response is answered with a CNP (IBA A10)."""
        return self.cnp_for(frame) if frame[12] & 0x80 else None

    def _acked_through(self, psn: int, now: int) -> int:
        """Retire the packets up to *psn*; returns how many were newly acknowledged."""
        n = (psn - self.una + 1) % PSN_MOD
        if 0 < n <= self.outs:
            self.outs -= n
            self.una = una = (psn + 1) % PSN_MOD
            unacked = self._unacked
            while unacked:
                first, npk = unacked[0][0], unacked[0][1]
                d = (una - first) % PSN_MOD
                if d >= npk and d < PSN_HALF:
                    unacked.popleft()
                else:
                    break
            self.retries_left = self.retry_cnt              # forward progress
            self._gbn_una = None
            if self.outs:
                self._restart_timer(now)                    # lazy: only the deadline moves
            else:
                self._deadline = None
            return n
        return 0

    def on_ack(self, now: int, frame, psn: int, n: int) -> None:
        """Pass an acknowledgement of *n* new packets and its BECN to the CC response."""
        if self.cc is not None:
            self.cc.on_ack(self, now, psn, n, (frame[12] >> 6) & 1)


class RCResponder(SenderBase):
    """The destination of an RC flow; for RDMA READ also the sender of the responses."""

    READ_LOG = 256                          # READ requests remembered for duplicates

    def __init__(self, hca, flow, qpn, remote_qpn, dlid, vl, ack_every: int = 1):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.cwnd = None
        self.epsn = 0
        self.msn = 0
        self.ack_every = ack_every
        self.since_ack = 0
        self.reads: list = []               # pending read responses: [psn, left, first, msg, offset]
        self.read_log: deque = deque()      # (first PSN, PSNs, bytes, message) of past READ requests
        self.read_no = -1
        self._resp_hi = 0                   # next READ response PSN never sent before
        self.duplicates = 0
        self.out_of_sequence = 0
        self.nak_sent = False               # a PSN sequence error NAK is outstanding
        self._flush_armed = False           # a delayed-ACK flush timer is pending

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
        if op not in RC_REQUESTS:
            self.hca.count("dropped_bad_opcode")
            return None
        if not self._from_peer(frame):
            return None
        psn = get_psn(frame)
        fecn = frame[12] >> 7
        if psn != self.epsn:
            behind = (self.epsn - psn) % PSN_MOD
            if 0 < behind < PSN_HALF:             # duplicate: acknowledge again, drop
                self.duplicates += 1
                self.hca.count("duplicates")
                if op == OP.RC_RDMA_READ_REQUEST:
                    self._duplicate_read(psn, frame)
                    return self.cnp_for(frame) if fecn else None
                return self._ack((self.epsn - 1) % PSN_MOD, becn=fecn)
            self.out_of_sequence += 1
            self.hca.count("out_of_sequence")
            if self.nak_sent:                     # one NAK per sequence error
                return self.cnp_for(frame) if fecn else None
            self.nak_sent = True
            self.hca.count("naks_sent")
            return self._ack(self.epsn, NAK_PSN_SEQ, becn=fecn)
        self.nak_sent = False
        if op == OP.RC_RDMA_READ_REQUEST:
            n = int.from_bytes(frame[32:36], "big")
            npk = max(1, -(-n // self.hca.mtu))
            self.read_no += 1
            self.reads.append([psn, n, True, self.read_no, 0])
            if self.integrity is not None:          # the message as it will be sent
                mtu = self.hca.mtu
                for off in range(0, max(n, 1), mtu):
                    k = min(mtu, n - off)
                    self.integrity.tx(self.name, self._payload(k, self.read_no, off), off + k >= n)
            log = self.read_log
            log.append((psn, npk, n, self.read_no))
            if len(log) > self.READ_LOG:
                log.popleft()
            self.epsn = (psn + npk) % PSN_MOD
            self.msn += 1
            return self.cnp_for(frame) if fecn else None
        self.epsn = (psn + 1) % PSN_MOD
        last = op in _LAST
        if last:
            self.msn += 1
        if self.integrity is not None:
            self.integrity.rx(self.name, payload_of(frame), last)
        self.hca.recorder.flow_rx(self.name, now, payload_len(frame), last)
        self.since_ack += 1
        if self.since_ack >= self.ack_every or frame[16] & 0x80 or fecn:
            self.since_ack = 0
            return self._ack(psn, becn=fecn)
        if not self._flush_armed:           # coalescing: flush if the stream pauses
            self._flush_armed = True
            self.hca.at(now + self.ack_every * self.hca.port.tx_time(self.hca.mtu), self._flush_ack)
        return None

    def _flush_ack(self, now: int) -> None:
        """Delayed-ACK flush: packets left unacknowledged by ACK coalescing (their
        sender did not ask with AckReq, e.g. because its window shrank after they left)
        are acknowledged once no new packet came for ``ack_every`` packet times."""
        self._flush_armed = False
        if self.since_ack:
            self.since_ack = 0
            self.hca.count("acks_flushed")
            self.hca.ctrl.append((self._ack((self.epsn - 1) % PSN_MOD), self.vl))
            self.hca.kick(now)

    def _duplicate_read(self, psn: int, frame) -> None:
        """A duplicate RDMA READ request: execute it again from *psn* (IBA 9.7).
        Pending responses from *psn* on are dropped first: the requester resends every
        request after this one too (go-back-N)."""
        for first, npk, n, msg in reversed(self.read_log):
            d = (psn - first) % PSN_MOD
            if d < npk:
                break
        else:
            self.hca.count("dropped_unknown_read")
            return
        self.reads = [r for r in self.reads if not (0 <= (r[0] - psn) % PSN_MOD < PSN_HALF)]
        offset = d * self.hca.mtu
        self.reads.append([psn, max(0, n - offset), d == 0, msg, offset])
        self.hca.count("read_reexecuted")

    # -- read responses as a sender
    def ready(self, now: int):
        if not self.reads:
            return False, None
        return self._paced(now)

    def next_size(self) -> int:
        psn, left, first = self.reads[0][:3]
        n = min(left, self.hca.mtu)
        return wire_size(n, 4 if (first or n == left) else 0)

    def next_packet(self, now: int):
        r = self.reads[0]
        psn, left, first, msg, offset = r
        n = min(left, self.hca.mtu)
        last = n == left
        if first:
            opcode = OP.RC_RDMA_READ_RESPONSE_ONLY if last else OP.RC_RDMA_READ_RESPONSE_FIRST
        else:
            opcode = OP.RC_RDMA_READ_RESPONSE_LAST if last else OP.RC_RDMA_READ_RESPONSE_MIDDLE
        ext = {"AETH": {"syndrome": ACK_SYNDROME, "msn": self.msn}} if (first or last) else None
        payload = self._payload(n, msg, offset)
        frame = self._build(opcode, psn, payload=payload, ext=ext)
        if (psn - self._resp_hi) % PSN_MOD < PSN_HALF:      # not sent before
            self._resp_hi = (psn + 1) % PSN_MOD
            self.hca.recorder.flow_tx(self.name, now, n)
        else:
            self.hca.count("retransmitted_packets")
        if last:
            self.reads.pop(0)
        else:
            r[0], r[1], r[2], r[4] = (psn + 1) % PSN_MOD, left - n, False, offset + n
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
        payload = self._payload(n, self.psn, 0)
        if self.integrity is not None:
            self.integrity.tx(self.name, payload, True)
        frame = self._build(OP.UD_SEND_ONLY, self.psn, payload=payload, ext=self.ext)
        self.psn = (self.psn + 1) % PSN_MOD
        self.hca.recorder.flow_tx(self.name, now, n)
        self._sent(now, frame)
        return frame

    def on_packet(self, now, frame):
        """Only CNPs come back to a UD source."""
        if frame[8] == OP.CNP:
            self.on_cnp(now, frame)
        else:
            self.hca.count("dropped_bad_opcode")
        return None


class UDReceiver:
    def __init__(self, hca, flow, qpn, remote_qpn=0, vl=0):
        self.hca = hca
        self.name = flow.name
        self.qpn = qpn
        self.remote_qpn = remote_qpn
        self.vl = vl
        self.integrity = None
        self.epsn = 0                       # next PSN expected (for counting losses only)
        self.lost = 0

    def on_packet(self, now, frame):
        """Count a datagram; answer a FECN-marked one with a CNP (IBA A10).  UD has no
        PSN check (IBA 9.8, unreliable datagram): what the link loses is lost, and the link layer never
        delivers a datagram twice.  Losses are counted from the gaps in the sender's
        PSNs (``ud_datagrams_lost``; a late datagram takes its gap back)."""
        if frame[8] in UD_SENDS:
            psn = get_psn(frame)
            gap = (psn - self.epsn) % PSN_MOD
            if gap < PSN_HALF:
                self.epsn = (psn + 1) % PSN_MOD
                if gap:
                    self.lost += gap
                    self.hca.count("ud_datagrams_lost", gap)
            elif self.lost:                 # reordered: counted lost when its gap appeared
                self.lost -= 1
                self.hca.count("ud_datagrams_lost", -1)
            if self.integrity is not None:
                self.integrity.rx(self.name, payload_of(frame), True, psn=get_psn(frame))
            self.hca.recorder.flow_rx(self.name, now, payload_len(frame), True)
            if frame[12] & 0x80:
                return self.cnp_for(frame)
        else:
            self.hca.count("dropped_bad_opcode")
        return None

    cnp_for = SenderBase.cnp_for


__all__ = ["RCRequester", "RCResponder", "UDSender", "UDReceiver", "INF", "wire_size", "payload_len",
           "payload_of", "get_psn", "set_ackreq", "NAK_PSN_SEQ", "ACK_SYNDROME"]
