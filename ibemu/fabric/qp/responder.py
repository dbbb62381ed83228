"""The responder of an RC flow (IBA 9.7): the PSN check, ACKs and NAKs with an AETH, the
MSN, and for RDMA READ the responses it sends.

- The expected PSN is taken; a duplicate (behind the expected PSN) is dropped and
  acknowledged again (a duplicate RDMA READ request is executed again from its PSN, reads
  being idempotent); an out-of-sequence packet is dropped and NAKed with "PSN sequence
  error" (syndrome 0x60) -- once per sequence error: further out-of-sequence packets are
  dropped silently until the expected PSN arrives.
- ACKs: one per packet or one per ``ack_every`` (flushed when the stream pauses); always
  when AckReq is set.  An ACK carries BECN equal to the FECN of the packet it
  acknowledges, and a FECN-marked packet is acknowledged at once (seed 000 §3).
- A packet is delivered to the application (``recorder.flow_rx``) only when it is taken
  in order, so every message is delivered exactly once and in order; its last packet
  completes it (``recorder.message_done``, numbered as the requester numbered it).
- With a reorder window (``reorder_window`` > 0, issue 31: adaptive routing sends the
  packets of one flow over different paths) a packet up to ``reorder_window - 1`` PSNs
  ahead of the expected one is not a sequence error: it is kept (placed) and taken when
  the packets before it have come, so a message completes when all its packets are in,
  and a packet that is merely late causes no NAK.  A packet at or beyond the window
  means a packet before it was lost: the usual NAK (once per sequence error); a lost
  packet with fewer than a window of packets behind it is recovered by the requester's
  local ACK timeout.  The held packets are acknowledged, cumulatively, when taken; a
  FECN-marked one is answered at once by a repeated ACK carrying its BECN.
  ``out_of_order`` counts the packets kept, ``reorder_depth`` is the farthest ahead of
  the expected PSN any came (in PSNs).

READ responses go out through the rate limiter and the congestion-control hook of
:class:`~.sender.SenderBase`; the responder has no window and no generator.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...wire import opcodes as OP
from ...wire.fields import get_ackreq, get_fecn_local, get_opcode, get_psn, get_reth_dma_len, payload_len, payload_of
from ...wire.layout import AETH_LEN, Buf, packet_size as wire_size
from .psn import ACK_SYNDROME, LAST_OPCODES, NAK_PSN_SEQ, PSN_HALF, PSN_MOD, RC_REQUESTS
from .sender import SenderBase

if TYPE_CHECKING:
    from ..hooks import MessageSink
    from ..params import FlowSpec
    from ..hca import HCA


def reorder_counters(qps: Iterable[object]) -> dict[str, dict[str, int]]:
    """``{"flow:<name>": {"out_of_order": n, "reorder_depth": d}}`` for every RC responder
    of *qps* with a reorder window (results.json reports them per flow, issue 31)."""
    out: dict[str, dict[str, int]] = {}
    for q in qps:
        if isinstance(q, RCResponder) and q.reorder_window:
            out["flow:" + q.name] = {"out_of_order": q.out_of_order, "reorder_depth": q.reorder_depth}
    return out


class RCResponder(SenderBase):
    """The destination of an RC flow; for RDMA READ also the sender of the responses."""

    READ_LOG = 256                          # READ requests remembered for duplicates

    def __init__(self, hca: HCA, flow: FlowSpec, qpn: int, remote_qpn: int, dlid: int, vl: int,
                 ack_every: int = 1, reorder_window: int = 0):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl)
        self.epsn = 0
        self.msn = 0
        self.messages_done = 0              # SEND / WRITE messages delivered whole
        self.ack_every = ack_every
        self.since_ack = 0
        self.reads: list[list[Any]] = []    # pending read responses: [psn, left, first, msg, offset]
        # (first PSN, PSNs, bytes, message) of past READ requests
        self.read_log: deque[tuple[int, int, int, int]] = deque()
        self.read_no = -1
        self._resp_hi = 0                   # next READ response PSN never sent before
        self.duplicates = 0
        self.out_of_sequence = 0
        self.nak_sent = False               # a PSN sequence error NAK is outstanding
        self._flush_armed = False           # a delayed-ACK flush timer is pending
        self.sink: MessageSink | None = None    # told of each message delivered (a job's rank)
        self.reorder_window = reorder_window    # packets taken ahead of epsn (0: in order only)
        self.held: dict[int, bytes] = {}        # PSN -> packet kept until the ones before it come
        self.out_of_order = 0                   # packets kept (arrived ahead of epsn)
        self.reorder_depth = 0                  # farthest ahead of epsn a packet arrived (PSNs)

    def _ack(self, psn: int, syndrome: int = ACK_SYNDROME, becn: int = 0) -> bytearray:
        return self._build(OP.RC_ACKNOWLEDGE, psn, becn=becn,
                           ext={"AETH": {"syndrome": syndrome, "msn": self.msn}})

    def on_packet(self, now: int, frame: Buf) -> bytearray | None:
        """Returns an ACK/NAK frame (or a CNP, for a CNP-worthy packet) to send, or None.
        The ACK's BECN is the FECN of the packet it acknowledges; a marked packet is
        acknowledged at once (seed 000 §3)."""
        op = get_opcode(frame)
        if op == OP.CNP:                    # about our READ responses
            self.on_cnp(now, frame)
            return None
        if op not in RC_REQUESTS:
            self.hca.count("dropped_bad_opcode")
            return None
        if not self._from_peer(frame):
            return None
        psn = get_psn(frame)
        fecn = get_fecn_local(frame)
        if psn != self.epsn:
            behind = (self.epsn - psn) % PSN_MOD
            if 0 < behind < PSN_HALF:             # duplicate: acknowledge again, drop
                self.duplicates += 1
                self.hca.count("duplicates")
                if op == OP.RC_RDMA_READ_REQUEST:
                    self._duplicate_read(psn, frame)
                    return self.cnp_for(frame) if fecn else None
                return self._ack((self.epsn - 1) % PSN_MOD, becn=fecn)
            ahead = (psn - self.epsn) % PSN_MOD
            if ahead < self.reorder_window:
                return self._hold(psn, ahead, frame, fecn)
            self.out_of_sequence += 1
            self.hca.count("out_of_sequence")
            if self.nak_sent:                     # one NAK per sequence error
                return self.cnp_for(frame) if fecn else None
            self.nak_sent = True
            self.hca.count("naks_sent")
            return self._ack(self.epsn, NAK_PSN_SEQ, becn=fecn)
        reply = self._take(now, frame, op, psn, fecn)
        held = self.held
        while held and self.epsn in held:                 # the packets kept behind it, in order
            f = held.pop(self.epsn)
            r = self._take(now, f, get_opcode(f), self.epsn, get_fecn_local(f))
            if r is not None and (reply is None or get_opcode(r) == OP.RC_ACKNOWLEDGE):
                reply = r
        return reply

    def _hold(self, psn: int, ahead: int, frame: Buf, fecn: int) -> bytearray | None:
        """Keep a packet *ahead* PSNs beyond the expected one (inside the reorder window)."""
        if psn in self.held:                              # a duplicate of one kept
            self.duplicates += 1
            self.hca.count("duplicates")
            return None
        self.held[psn] = bytes(frame)
        self.out_of_order += 1
        self.hca.count("out_of_order")
        if ahead > self.reorder_depth:
            self.reorder_depth = ahead
        return self._ack((self.epsn - 1) % PSN_MOD, becn=fecn) if fecn else None

    def _take(self, now: int, frame: Buf, op: int, psn: int, fecn: int) -> bytearray | None:
        """Take the expected packet *frame* (PSN *psn* == epsn)."""
        self.nak_sent = False
        if op == OP.RC_RDMA_READ_REQUEST:
            n = get_reth_dma_len(frame)
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
            if self.held:                       # kept packets the READ's PSNs cover: none valid
                for k in [k for k in self.held if (self.epsn - 1 - k) % PSN_MOD < PSN_HALF]:
                    del self.held[k]
            return self.cnp_for(frame) if fecn else None
        self.epsn = (psn + 1) % PSN_MOD
        last = op in LAST_OPCODES
        if last:
            self.msn += 1
        if self.integrity is not None:
            self.integrity.rx(self.name, payload_of(frame), last)
        sink = self.flow_sink()
        sink.rx(now, payload_len(frame), len(frame), last)
        if last:
            sink.done(self.messages_done, now)
            self.messages_done += 1
            if self.sink is not None:
                self.sink.delivered(now)
        self.since_ack += 1
        if self.since_ack >= self.ack_every or get_ackreq(frame) or fecn:
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
            self.hca.send_control(self._ack((self.epsn - 1) % PSN_MOD), self.vl)
            self.hca.kick(now)

    def _duplicate_read(self, psn: int, frame: Buf) -> None:
        """A duplicate RDMA READ request: execute it again from *psn* (IBA 9.7).
        Pending responses from *psn* on are dropped first: the requester resends every
        request after this one too (go-back-N)."""
        for first, npk, n, msg in reversed(self.read_log):  # noqa: B007 (n, msg: the match, after break)
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
    def ready(self, now: int) -> tuple[bool, int | None]:
        if not self.reads:
            return False, None
        return self._paced(now)

    def next_size(self) -> int:
        _psn, left, first = self.reads[0][:3]
        n = min(left, self.hca.mtu)
        return wire_size(n, AETH_LEN if (first or n == left) else 0)

    def next_packet(self, now: int) -> bytearray:
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
            self.flow_sink().tx(now, n)
        else:
            self.hca.count("retransmitted_packets")
        if last:
            self.reads.pop(0)
        else:
            r[0], r[1], r[2], r[4] = (psn + 1) % PSN_MOD, left - n, False, offset + n
        self._sent(now, frame)
        return frame
