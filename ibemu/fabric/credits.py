"""Per-VL link-level credit flow control (IBA 7.9; seed 004 "Link Level Flow Control";
../shared/REFERENCE.md "Credits").

Credits are 64-byte blocks.  The sender keeps FCTBS, the total blocks it sent on the VL,
and FCCL, the credit limit last granted by the receiver; the receiver keeps ABR, the
adjusted blocks received, and grants FCCL = ABR + free blocks.  All three are cumulative
modulo 4096, so a lost flow-control packet is corrected by the next one.

Comparison rule (the spec text is not public; this is ibemu's documented choice): a
packet of *n* blocks may be sent when ``(FCCL - (FCTBS + n)) mod 4096 < 2048``, i.e. when
FCTBS + n does not pass FCCL in a half-range window.  It is exact as long as a VL's
buffer is smaller than 2048 blocks (128 KiB), which the scenario loader enforces.
"""
from __future__ import annotations

from typing import Final

BLOCK: Final = 64
MOD: Final = 4096
HALF: Final = 2048
MAX_CAPACITY_BLOCKS: Final = HALF - 1


def blocks_of(nbytes: int) -> int:
    return (nbytes + BLOCK - 1) >> 6


class CreditTx:
    """Sender side of one VL on one port.  *limit*: the peer's buffer on the VL in
    blocks, the most credit it can ever grant (:meth:`plausible`); the fabric's builder
    sets it from the peer port (default: the largest buffer there can be)."""
    __slots__ = ("fctbs", "fccl", "limit")

    def __init__(self, limit: int = MAX_CAPACITY_BLOCKS) -> None:
        self.fctbs = 0
        self.fccl = 0          # no credit until the peer's first flow-control packet
        self.limit = limit

    def plausible(self, fccl: int) -> bool:
        """Could the peer have granted *fccl*?  It grants FCCL = ABR + free blocks, its
        ABR never passes our FCTBS (it counts blocks we sent) and its free blocks never
        pass its VL buffer (IBA 7.9.4's per-VL credit limit), so FCCL is at most
        ``limit`` ahead of FCTBS; behind it (packets in flight) is always possible.  A
        larger grant is forged or corrupt (issue 14 item 2: an attacker granting 1,500
        extra blocks overran a switch's buffer)."""
        d = (fccl - self.fctbs) & 0xFFF
        return d >= HALF or d <= self.limit

    def can_send(self, blocks: int) -> bool:
        return ((self.fccl - self.fctbs - blocks) & 0xFFF) < HALF

    def available(self) -> int:
        d = (self.fccl - self.fctbs) & 0xFFF
        return d if d < HALF else 0

    def sent(self, blocks: int) -> None:
        self.fctbs = (self.fctbs + blocks) & 0xFFF

    def update(self, fccl: int) -> None:
        self.fccl = fccl & 0xFFF


class CreditRx:
    """Receiver side of one VL on one port: buffer capacity and occupancy in blocks."""
    __slots__ = ("abr", "capacity", "used")

    def __init__(self, capacity_blocks: int):
        if not 0 < capacity_blocks <= MAX_CAPACITY_BLOCKS:
            raise ValueError("VL buffer must be 1..%d blocks, got %d" % (MAX_CAPACITY_BLOCKS, capacity_blocks))
        self.abr = 0
        self.capacity = capacity_blocks
        self.used = 0

    def received(self, blocks: int) -> bool:
        """Account a packet's arrival; False when it overruns the buffer (the sender
        ignored the credit limit -- counted as ExcessiveBufferOverrunErrors)."""
        self.abr = (self.abr + blocks) & 0xFFF
        if self.used + blocks > self.capacity:
            return False
        self.used += blocks
        return True

    def freed(self, blocks: int) -> None:
        self.used -= blocks

    def fccl(self) -> int:
        return (self.abr + self.capacity - self.used) & 0xFFF

    def sync(self, fctbs: int) -> None:
        """On a flow-control packet from the sender: ABR = FCTBS."""
        self.abr = fctbs & 0xFFF

    def free(self) -> int:
        return self.capacity - self.used
