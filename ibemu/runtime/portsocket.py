"""One emulated port's UDP socket and its receiving checks (split from
:mod:`ibemu.runtime.delivery`, issue 27): :class:`PortSocket` and the per-link sequence
check and replay window :class:`SeqCheck` (issue 14 items 1 and 2)."""
from __future__ import annotations

from typing import Any

from ..sim.scheduler import SimNode


NO_MAC = b""
"""The *key* that turns authentication off: for benchmarks measuring its cost only."""
DUP_WINDOW = 4096
"""Sequence numbers a faulty link's duplicate filter remembers here.  A duplicate is sent
right after its original on the same socket, so it arrives right after it; the virtual
clock's window (65,536, for copies held back by reordering) would cost a worker about
8 MB per faulty link it receives on."""


REPLAY_WINDOW = 1024
"""Sequence numbers behind the highest one received that a link still accepts (once
each): datagrams reordered by less than this are *late*, older ones are rejected."""
MAX_AHEAD = 1 << 16
"""The most a sequence number may jump ahead of the next one expected.  A link's
datagrams in flight are bounded by its credits (a few hundred), so a larger jump is no
loss but an attack (issue 14 item 2: the loss count is bounded by this window)."""
SEEN_MASK = (1 << REPLAY_WINDOW) - 1


class SeqCheck:
    """Per-link datagram sequence check and replay window (issue 14 items 1 and 2; the
    anti-replay window of RFC 4303 §3.4.3 on 32-bit wrapping numbers).

    :meth:`update` accepts a sequence number ahead of the highest one seen by at most
    :data:`MAX_AHEAD` (the ones in between count as lost) or, once, one up to
    :data:`REPLAY_WINDOW` behind it (late: it was counted lost, and no longer is).  It
    rejects (returns False, counts nothing) a number seen before (a replay), further
    behind, or further ahead: such a datagram is dropped unread."""
    __slots__ = ("expect", "lost", "late", "received", "seen")

    def __init__(self) -> None:
        self.expect = 1
        self.lost = 0
        self.late = 0
        self.received = 0
        self.seen = 0                   # bit i: expect - 1 - i was received

    def update(self, seq: int) -> bool:
        d = (seq - self.expect) & 0xFFFFFFFF
        if d == 0:
            self.seen = ((self.seen << 1) | 1) & SEEN_MASK
        elif d < MAX_AHEAD:             # ahead: the ones in between were lost
            self.lost += d
            self.seen = ((self.seen << (d + 1)) | 1) & SEEN_MASK
        elif d >= 0x100000000 - REPLAY_WINDOW:      # behind, within the window
            bit = 1 << (0xFFFFFFFF - d)             # expect - 1 - seq
            if self.seen & bit:
                return False            # a replay
            self.seen |= bit
            self.late += 1
            if self.lost:
                self.lost -= 1          # it was counted lost when the gap appeared
            self.received += 1
            return True
        else:
            return False                # out of the window
        self.expect = (seq + 1) & 0xFFFFFFFF
        self.received += 1
        return True


class PortSocket:
    """One emulated port's UDP socket; it sends to and accepts datagrams from *peer*
    (the peer port's numeric (host, port)) only.  ``remote``: the peer port is in
    another process (the exact clock synchronises on it, :mod:`.exact`)."""
    __slots__ = ("sock", "node", "index", "propagation", "tx_seq", "rx", "send_errors",
                 "drop_every", "dropped", "addr", "peer", "local_peer", "inj", "rx_inj",
                 "rx_hi", "rx_ext", "inj_lost", "dup_sent", "dup_dropped", "strangers",
                 "tx_key", "rx_key", "forged", "remote", "peer_key", "win_t", "win_s")

    def __init__(self, sock: Any, node: SimNode, index: int, propagation: int,
                 addr: Any, peer: tuple[str, int]) -> None:
        self.sock = sock
        self.node = node
        self.index = index
        self.propagation = propagation
        self.addr = addr
        self.peer = peer
        self.tx_seq = 0
        self.rx = SeqCheck()
        self.send_errors = 0
        self.drop_every = 0             # fault injection (tests): skip every n-th link packet
        self.dropped = 0
        self.local_peer: PortSocket | None = None   # the peer's PortSocket when in this process
        self.inj: Any = None            # LinkFaultInjector of the link this port sends on
        self.rx_inj: Any = None         # ... and of the link it receives from
        self.rx_hi = 0                  # highest sequence number received (32 bits) ...
        self.rx_ext = 0                 # ... and unwrapped (for the duplicate filter)
        self.inj_lost = 0               # frames the injector lost (no datagram sent)
        self.dup_sent = 0               # second copies sent (the injector duplicated)
        self.dup_dropped = 0            # second copies received and dropped
        self.strangers = 0              # datagrams from an address that is not the peer
        self.tx_key: bytes | None = None    # the link key of what it sends (None: no MAC)
        self.rx_key: bytes | None = None    # ... and of what it receives
        self.forged = 0                 # from the peer's address: bad tag, replayed, out of window
        self.remote = False             # the peer port is in another process
        self.peer_key: tuple[str, int] = ("", 0)    # the peer port's (node name, port)
        # the least arrival key (time, seq at its depth) of the frames sent to the peer in
        # this window of the exact clock (INF: none; reset by the transport, syncshm)
        self.win_t = 1 << 62
        self.win_s = 0

    def frames_sent(self) -> int:
        """Frame datagrams sent on the link so far (the exact clock's count, :mod:`.syncproto`)."""
        return self.tx_seq - self.dropped - self.send_errors + self.dup_sent
