"""VL arbitration: the IBA dual-priority weighted round robin (IBA 7.6.9; seed 004
"VL Arbitration", Figures 6 and 7).

Each output port has a High and a Low table of (VL, weight) entries, weights in
64-byte units, and a Limit of High-Priority in 4096-byte units (255: unlimited; 0: one
packet).  High is served while it has a packet and its counter has not expired; then
Low gets one packet.  Within a table the entries are served in order; an entry may send
packets while its remaining weight is positive (a packet larger than the remainder is
still sent and ends the entry); weight-0 entries are skipped.
"""
from __future__ import annotations

from typing import Final

from collections.abc import Collection, Iterable

UNLIMITED: Final = 255


class _WRR:
    __slots__ = ("entries", "idx", "remaining")

    def __init__(self, entries: Iterable[tuple[int, int]]) -> None:
        self.entries: list[tuple[int, int]] = [(vl, w) for vl, w in entries if w > 0]
        self.idx = 0
        self.remaining = self.entries[0][1] * 64 if self.entries else 0

    def vls(self) -> set[int]:
        return {vl for vl, _ in self.entries}

    def pick(self, ready: Collection[int]) -> int | None:
        """The VL to serve next among the *ready* set, or None; does not consume."""
        n = len(self.entries)
        if not n:
            return None
        idx, rem = self.idx, self.remaining
        for _ in range(n + 1):
            vl, _w = self.entries[idx]
            if rem > 0 and vl in ready:
                return vl
            idx = (idx + 1) % n
            rem = self.entries[idx][1] * 64
        return None

    def consume(self, vl: int, nbytes: int) -> None:
        """Charge a packet of *nbytes* sent on *vl* (which :meth:`pick` returned)."""
        n = len(self.entries)
        for _ in range(n + 1):
            cvl, _w = self.entries[self.idx]
            if cvl == vl and self.remaining > 0:
                break
            self.idx = (self.idx + 1) % n
            self.remaining = self.entries[self.idx][1] * 64
        self.remaining -= nbytes
        if self.remaining <= 0:
            self.idx = (self.idx + 1) % n
            self.remaining = self.entries[self.idx][1] * 64


class VLArbiter:
    """Chooses the VL an output port sends next."""

    def __init__(self, high: Iterable[tuple[int, int]] = (), low: Iterable[tuple[int, int]] = ((0, 255),),
                 limit_of_high_priority: int = UNLIMITED) -> None:
        self.high = _WRR(high)
        self.low = _WRR(low)
        self.limit = limit_of_high_priority
        self.high_sent = 0          # bytes sent from High since Low last had an opportunity
        self._high_vls = self.high.vls()
        self.single: int | None = None      # fast path: only one VL configured anywhere
        vls = self._high_vls | self.low.vls()
        if len(vls) == 1:
            self.single = next(iter(vls))

    def _high_expired(self) -> bool:
        if self.limit == UNLIMITED:
            return False
        return self.high_sent >= max(self.limit * 4096, 1)

    def choose(self, ready: Collection[int]) -> int | None:
        """Pick the VL to send among *ready* (a set of VLs with a sendable packet)."""
        if not ready:
            return None
        if not self._high_expired():
            vl = self.high.pick(ready)
            if vl is not None:
                return vl
        vl = self.low.pick(ready)
        if vl is not None:
            return vl
        return self.high.pick(ready)      # Low had nothing: High continues

    def sent(self, vl: int, nbytes: int, ready: Collection[int]) -> None:
        """Charge a packet the caller sent on *vl* (chosen by :meth:`choose` from *ready*)."""
        if not self._high_expired() and self.high.pick(ready) == vl:
            self.high.consume(vl, nbytes)
            self.high_sent += nbytes
        elif self.low.pick(ready) == vl:
            self.low.consume(vl, nbytes)
            self.high_sent = 0
        else:
            self.high.consume(vl, nbytes)     # counter expired but Low was empty: reset
            self.high_sent = nbytes
