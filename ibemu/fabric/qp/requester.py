"""The requester of an RC flow (IBA 9.7): SEND / RDMA WRITE data or RDMA READ
requests, the window and AckReq rule of seed 000 §3 / §5.1, and reliability (issue 8
item 4).

- It keeps a copy of every unacknowledged request and goes back N -- resends every
  request from the oldest unacknowledged PSN -- on a PSN sequence error NAK, on a READ
  response that skips a PSN (an implicit NAK, once per hole), and on the expiry of the
  local ACK timeout (:attr:`HCAParams.ack_timeout`, restarted by every request sent and
  every acknowledgement that makes progress).
- Each go-back uses one retry; forward progress restores the retry count
  (:attr:`HCAParams.retry_cnt`, IBA's 3-bit Retry Count, default 7).  When a retry is
  needed and none is left the QP enters the error state (IBA "Transport Retry Counter
  Exceeded"): it sends nothing more, counts ``qp_retry_exceeded`` and logs a recorder
  event.
- READ responses are delivered to the application (``recorder.flow_rx``) only in order;
  a FECN-marked ACK or READ response is answered with a CNP (IBA A10).
- Latency (``recorder.message_start`` / ``message_done``): a message starts when the
  first byte of its first packet -- for a READ, of its request -- goes on the link; a
  READ is done when its last response is in, in order.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ...wire import opcodes as OP
from ...wire.fields import (get_ackreq, get_aeth_syndrome, get_becn_local, get_fecn_local, get_opcode, get_psn,
                           payload_len, payload_of, set_ackreq)
from ...wire.layout import RETH_LEN, Buf, packet_size as wire_size
from .psn import NAK_PSN_SEQ, PSN_HALF, PSN_MOD, RC_RESPONSES
from .sender import FlowSource

if TYPE_CHECKING:
    from ..params import FlowSpec
    from ..hca import HCA
    from ..traffic import Generator


class RCRequester(FlowSource):
    """The source of an RC flow: SEND / RDMA WRITE data, or RDMA READ requests."""

    def __init__(self, hca: HCA, flow: FlowSpec, qpn: int, remote_qpn: int, dlid: int, vl: int,
                 generator: Generator, max_reads: int = 16):
        super().__init__(hca, flow, qpn, remote_qpn, dlid, vl, generator)
        self.op = flow.op
        self.psn = 0
        self.una = 0                        # oldest unacknowledged PSN
        self.msg_left = 0                   # bytes of the current message not yet sent
        self.msg_size = 0                   # bytes of the current message (the generator's size)
        self.msg_no = -1                    # index of the current message
        self.max_reads = max_reads
        self.reads_out = 0
        self.reads_done = 0                 # READ messages delivered whole (their number)
        self.naks = 0
        params = hca.params
        self.timeout = params.ack_timeout or 0                    # ps; 0: no timer
        self.retry_cnt = params.retry_cnt
        self.max_outstanding = params.max_outstanding
        self.retries_left = self.retry_cnt
        self.retransmitted = 0
        self.timeouts = 0
        self.error = False                  # QP in the error state (retries exhausted)
        # (first PSN, PSNs, frame copy, bytes, message) of every unacknowledged request
        self._unacked: deque[tuple[int, int, bytes, int, int]] = deque()
        self._redo: deque[tuple[int, int, bytes]] = deque()     # (first PSN, PSNs, frame) to resend
        self._deadline: int | None = None   # local ACK timeout expiry (None: not running)
        self._timer_at: int | None = None   # time of the one pending timer callback
        self._gbn_una: int | None = None    # una of the go-back in progress (None: none)

    # -- sender
    def ready(self, now: int) -> tuple[bool, int | None]:
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
            return wire_size(0, RETH_LEN)
        left = self.msg_left or self.gen.size()
        first = self.msg_left == 0
        return wire_size(min(left, self.hca.mtu), RETH_LEN if (self.op == "write" and first) else 0)

    def next_packet(self, now: int) -> bytes | bytearray:
        if self._redo:
            return self._resend(now)
        mtu = self.hca.mtu
        if self.msg_left == 0:
            self.msg_size = self.msg_left = self.gen.taken()
            self.msg_no += 1
            first = True
            self.flow_sink().started(self.msg_no, now)
        else:
            first = False
        ext: dict[str, dict[str, int]] | None = None
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
                    ext = {"RETH": {"va": 0, "r_key": 0, "dma_len": self.msg_size}}
            else:
                opcode = (OP.RC_SEND_ONLY if last else OP.RC_SEND_FIRST) if first else \
                         (OP.RC_SEND_LAST if last else OP.RC_SEND_MIDDLE)
            offset = self.msg_size - self.msg_left
            payload = self._payload(n, self.msg_no, offset)
            if self.integrity is not None:
                self.integrity.tx(self.name, payload, last)
            psn = self.psn
            self.psn = (self.psn + 1) % PSN_MOD
            self.outs += 1
            self.msg_left -= n
            ackreq = 1 if (last or (self.cwnd is not None and self.outs >= self.cwnd)
                           or self.outs >= self.max_outstanding) else 0
            self.flow_sink().tx(now, n)
        # bytes: kept for a retransmission as it is sent, since nothing rewrites a bytes frame
        # (a switch copies it to: fabric.xport.Entry.frame), and read natively where it goes
        frame = bytes(self._build(opcode, psn, ackreq=ackreq, payload=payload, ext=ext))
        self._unacked.append((psn, npk, frame, n, self.msg_no))
        self._sent(now, frame)
        self._restart_timer(now)
        return frame

    def _resend(self, now: int) -> bytearray:
        """The next request of a go-back-N retransmission (a copy of the original; the
        last one of the burst asks for an ACK)."""
        _, _, stored = self._redo.popleft()
        frame = bytearray(stored)
        if not self._redo and not get_ackreq(frame):
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
        redo: deque[tuple[int, int, bytes]] = deque()
        una = self.una
        for first, npk, stored, n, _msg in self._unacked:
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
    def on_packet(self, now: int, frame: Buf) -> bytearray | None:
        """ACKs, NAKs, READ responses and CNPs for this QP; returns a CNP to send back
        when the packet itself was FECN-marked, else None."""
        op = get_opcode(frame)
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
            syndrome = get_aeth_syndrome(frame)
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
            if self.integrity is not None:
                self.integrity.rx(self.name, payload_of(frame), last)
            sink = self.flow_sink()
            sink.rx(now, payload_len(frame), len(frame), last)
            if last:
                self.reads_out -= 1
                sink.done(self.reads_done, now)
                self.reads_done += 1
            self.on_ack(now, frame, psn, n)
        return self._echo(frame)

    def _on_nak_seq(self, now: int, frame: Buf, psn: int) -> None:
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

    def _echo(self, frame: Buf) -> bytearray | None:
        """A FECN-marked ACK or READ response is answered with a CNP (IBA A10)."""
        return self.cnp_for(frame) if get_fecn_local(frame) else None

    def _acked_through(self, psn: int, now: int) -> int:
        """Retire the packets up to *psn*; returns how many were newly acknowledged."""
        n = (psn - self.una + 1) % PSN_MOD
        if 0 < n <= self.outs:
            self.outs -= n
            self.una = una = (psn + 1) % PSN_MOD
            unacked = self._unacked
            while unacked:
                head = unacked[0]
                first, npk = head[0], head[1]
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

    def on_ack(self, now: int, frame: Buf, psn: int, n: int) -> None:
        """Pass an acknowledgement of *n* new packets and its BECN to the CC response."""
        if self.cc is not None:
            self.cc.on_ack(self, now, psn, n, get_becn_local(frame))
