"""The exact wall clock's synchronisation protocol, without I/O (issue 27;
../shared/DESIGN.md §8; docs/sync-protocol.md is its specification for other programs).

A *worker* is a process that runs some of the fabric's nodes.  A directed link whose two
ends are in different workers is a *cut link*.  The workers advance in *rounds*; round r
of a worker is:

1. **window r** (not in round 0): run, in key order (:func:`ibemu.sim.scheduler.order`),
   every event whose key is before the worker's *limit* (below) and before the end of the
   run, each no earlier than its emulated time on the wall clock (the pace);
2. **phase A**: on every outbound cut link, say how many frame datagrams it has sent on
   it so far (``A(r, count)``); then wait until every inbound cut link has said ``A(r)``
   and every frame it counted has been received into the heap;
3. **phase B**: let ``N = (time, seq)`` be the key of the worker's earliest pending event
   (every frame sent to it is now in its heap).  On every outbound cut link L send the
   *promise* ``B(r, P_L, idle)``: no frame sent on L after this message arrives with a
   key before ``P_L`` (:func:`promise`).  Then wait for ``B(r)`` on every inbound cut
   link; the worker's limit for window r+1 is the least promise received.

Why this is exact: in window r+1 a worker runs only events before every promise it
holds, and every frame another worker sends in its window r+1 comes from an event at or
after that worker's N, so it arrives with a key at or after the promise made from N.
Frames sent before the promise were counted in phase A and are in the heap.  So a worker
never runs an event while a frame with a smaller key may still come: each worker runs
its nodes' events in the same order as the virtual clock (the key is a function of the
model alone), whatever the placement and however slow the machine.

Why it cannot deadlock: the worker that holds the least N of all receives promises no
smaller than its own N plus one level of depth, so it always runs at least the events of
that key.  Depth takes the place of a positive lookahead: a link with no propagation
delay promises ``(N.time, depth(N) + 1)``; the events of one instant are causally ordered
by depth, so the next round runs the next depth.

The end (termination without a coordinator): a worker is *idle* in round r when its N is
at or after the end of the run.  Phase B also carries *idle bits*: bit m of worker i's
bits in round r says that every worker within m cut links upstream of i was idle in
round r - m (:meth:`Rounds.idle_bits`).  Bit W (W at least the number of workers, less
one) set means every worker was idle in round r - W, so no frame will ever be sent
again: every worker sees it in the same round and stops.

Promise terms (:func:`promise`), each derived from the model:

- *propagation*: a frame sent at t arrives at t + propagation;
- *depth*: a frame that arrives at the instant of the event that sent it has that
  event's depth plus one (links without propagation);
- *transmitter busy*: a port whose link-level packets take link time (``flow_control =
  "wire"``) starts nothing, data or flow control, before the end of what it sends now
  (:attr:`ibemu.fabric.node.Port.busy_until`).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..sim.scheduler import DEPTH_SHIFT, INF, MAX_DEPTH

PHASE_A: Final = 1
PHASE_B: Final = 2
MESSAGE: Final = struct.Struct(">BB6xQQQQ")
"""A synchronisation message: (phase, step, round, a, b, c).  Phase A: a = frame
datagrams sent on the link so far.  Phase B, step s of the round: (a, b) = a key
(time ps, seq), c = the idle bits (on the round's last step; 0 before).  Big-endian,
40 bytes: the payload of a kind-2 datagram (docs/sync-protocol.md)."""
MAX_WORKERS: Final = 64
"""The idle bits fit 64 bits, so an exact run has at most 64 workers."""
FOREVER: Final = (1 << 64) - 1
"""A key time meaning "nothing, ever" (a worker with no event left)."""


def encode(phase: int, rnd: int, a: int, b: int = 0, c: int = 0, step: int = 0) -> bytes:
    """One message (:data:`MESSAGE`)."""
    return MESSAGE.pack(phase, step, rnd, min(a, FOREVER), b, c)


def decode(payload: bytes) -> tuple[int, int, int, int, int, int] | None:
    """(phase, step, round, a, b, c), or None when *payload* is not a message."""
    if len(payload) != MESSAGE.size:
        return None
    phase, step, rnd, a, b, c = MESSAGE.unpack(payload)
    if phase not in (PHASE_A, PHASE_B):
        return None
    return phase, step, rnd, a, b, c


def hop(t: int, seq: int, propagation: int) -> tuple[int, int]:
    """The least key at which an event with key ``(t, seq)``, or anything it leads to,
    can make a frame arrive across a link of *propagation* ps (the module text): a later
    instant when the link has propagation; else the same instant one depth deeper."""
    if t >= INF:
        return FOREVER, 0
    if propagation > 0:
        return t + propagation, 0
    return t, min((seq >> DEPTH_SHIFT) + 1, MAX_DEPTH) << DEPTH_SHIFT


def bound(t: int, seq: int, props: int, hops: int) -> tuple[int, int]:
    """:func:`hop` over a path of *hops* links whose propagation delays add up to *props*."""
    if t >= INF or (hops <= 0 and props <= 0):
        return (FOREVER, 0) if t >= INF else (t, seq)
    if props > 0:
        return t + props, 0
    return t, min((seq >> DEPTH_SHIFT) + hops, MAX_DEPTH) << DEPTH_SHIFT


def relay_steps(workers: int) -> int:
    """Phase B's steps per round on the datagram transport: a worker's key reaches every
    worker within ``steps`` links (the module text), at least one."""
    return max(1, workers - 1)


def distances(workers: int, links: list[tuple[int, int, int]]) -> list[list[tuple[int, int] | None]]:
    """The least (propagation sum, hops) from worker a to worker b over the cut links
    *links* ``(a, b, propagation)``, lexicographically (Floyd-Warshall; None: no path).
    :func:`bound` of the least weight is the least of every path's."""
    INFW = None
    d: list[list[tuple[int, int] | None]] = [[INFW] * workers for _ in range(workers)]
    for a, b, prop in links:
        w = (prop, 1)
        if a != b and (d[a][b] is None or w < d[a][b]):       # type: ignore[operator]
            d[a][b] = w
    for k in range(workers):
        for i in range(workers):
            dik = d[i][k]
            if dik is None:
                continue
            for j in range(workers):
                dkj = d[k][j]
                if dkj is None or i == j:
                    continue
                w = (dik[0] + dkj[0], dik[1] + dkj[1])
                if d[i][j] is None or w < d[i][j]:            # type: ignore[operator]
                    d[i][j] = w
    return d


@dataclass
class InLink:
    """What a worker holds of one inbound cut link: the last A and B messages read."""
    name: str
    propagation: int = 0
    a_round: int = -1
    a_count: int = 0
    b_at: tuple[int, int] = (-1, 0)     # (round, step) of the last B
    b_time: int = 0
    b_seq: int = 0
    bits: dict[int, int] = field(default_factory=dict)     # round -> idle bits (its last step)
    strays: int = 0                     # messages out of turn (dropped, counted)

    def take(self, phase: int, step: int, rnd: int, a: int, b: int, c: int, last_step: int) -> bool:
        """Record a message; False (counted) for one out of turn (not the next of its
        phase)."""
        if phase == PHASE_A:
            if rnd != self.a_round + 1:
                self.strays += 1
                return False
            self.a_round, self.a_count = rnd, a
            return True
        r0, s0 = self.b_at
        if (rnd, step) != ((r0, s0 + 1) if s0 < last_step and r0 >= 0 else (r0 + 1, 0)):
            self.strays += 1
            return False
        self.b_at, self.b_time, self.b_seq = (rnd, step), a, b
        if step == last_step:
            self.bits[rnd] = c
            self.bits.pop(rnd - 3, None)
        return True

    def key(self) -> tuple[int, int]:
        """The key of the last B message, across the link (:func:`hop`)."""
        if self.b_time >= FOREVER:
            return FOREVER, 0
        return hop(self.b_time, self.b_seq, self.propagation)


@dataclass
class Rounds:
    """The round bookkeeping of one worker on the datagram transport: its idle history
    and the idle bits it sends, and the stop rule (the module text).  *bound*: W, at
    least the number of workers less one (at most 63)."""
    bound: int
    history: list[bool] = field(default_factory=list)

    def idle_bits(self, rnd: int, idle: bool, inbound: list[InLink]) -> int:
        """Round *rnd*'s idle bits, from this worker's idleness now and in earlier rounds
        and its inbound links' bits of round *rnd* - 1."""
        self.history.append(idle)
        h = self.history
        r = len(h) - 1
        before = [ln.bits.get(rnd - 1, 0) for ln in inbound]
        bits = 0
        for m in range(min(self.bound, 63) + 1):
            if r - m < 0 or not h[r - m]:
                break
            if m and any(not (b >> (m - 1)) & 1 for b in before):
                break
            bits |= 1 << m
        del h[:-64]
        return bits

    def done(self, bits: int) -> bool:
        """Every worker was idle in round r - W: stop."""
        return bool((bits >> min(self.bound, 63)) & 1)


def least(keys: Any) -> tuple[int, int]:
    """The least of *keys* ``(time, seq)``; ``(INF, 0)`` for none."""
    best = (INF, 0)
    for k in keys:
        if k < best:
            best = k
    return best


class Transport(Protocol):
    """How a worker's messages travel (:mod:`.syncnet`: datagrams on the cut links;
    :mod:`.syncshm`: a file every worker on one host maps).  Links are named by the
    local port socket of the cut link (:class:`~ibemu.runtime.portsocket.PortSocket`),
    which both sends on it and receives from it."""

    def inbound(self, ps: Any, /) -> InLink:
        """What has been read of the cut link into *ps* (inbound)."""

    def poll(self) -> None:
        """Read what has come (messages, and frames from the cut links' sockets)."""

    def close(self) -> None:
        """Release what the transport holds (the shared file's mapping)."""

    async def exchange(self, driver: Any, rnd: int, /) -> tuple[tuple[int, int], bool]:
        """Round *rnd*'s messages after its window: every frame sent to this worker is
        then in its heap; returns the limit of the next window, and whether the run is
        over."""
