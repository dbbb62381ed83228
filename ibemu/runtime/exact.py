"""The exact wall clock (issue 27; ../shared/DESIGN.md §8): a worker's rounds of
:mod:`.syncproto` -- a window of events, then the counts and the promises on its cut
links -- driven under trio, paced by the wall clock.

Pacing is a target, not a condition (issue 27 Deliver 3): an event at emulated time t
runs no earlier than the wall instant ``t0 + t * dilation``, but when the worker or a
peer is slower than that, it simply runs later.  The results do not depend on it; the
*effective dilation* (wall time over emulated time) says how fast the run really was,
and ``wait_peers_s`` how much of it this worker spent waiting for the other workers'
messages (``pace_wait_s``: waiting for the wall clock).

Waiting is cheap for the other workers of a 2-core machine: a worker waiting for
messages polls its sockets (and the shared file) and gives up the CPU between polls
(``select`` with a short timeout); it gives trio a turn (its heartbeat and control
channel) at least every :data:`YIELD` s, and fails with one line naming the link when a
cut link has said nothing for :data:`STALL` s (a lost datagram, a peer that died).
"""
from __future__ import annotations

import os
import select
import sys
import time
from typing import TYPE_CHECKING, Any

import trio

from ..sim.scheduler import INF
from .syncproto import InLink, Transport

if TYPE_CHECKING:
    from .loop import NodeLoop

YIELD = 0.002
"""Wall seconds between trio checkpoints while a worker runs or waits."""
SPIN = 0.0005
"""Wait for the wall clock in ``select`` (not trio's timers) when this close (s)."""
SPINS = 64
"""Polls in a row before a waiting worker starts giving up the CPU between polls."""
YIELDS = 4096
"""Polls with a ``sched_yield`` between them before it naps instead."""
STALL = 60.0
"""A cut link silent this long (wall s) in a phase ends the run with an error."""


class ExactDriver:
    """Runs *loop*'s scheduler in rounds over *transport* (the module text)."""

    def __init__(self, loop: NodeLoop, transport: Transport) -> None:
        self.loop = loop
        self.sched = loop.sched
        self.transport = transport
        self.remote = [ps for ps in loop.io.sockets if ps.remote]
        self.inbound: list[InLink] = [transport.inbound(ps) for ps in self.remote]
        self.round = 0
        self.limit = (0, 0)
        self.wait_peers_s = 0.0
        self.pace_wait_s = 0.0
        self.run_s = 0.0                # wall seconds in the scheduler's loop (the events themselves)
        self.published = 0              # the earliest key's time this worker last told the others
        self.windows_run = 0            # rounds whose window ran at least one event
        self._fds = [ps.sock.fileno() for ps in self.remote]
        self._yielded = 0.0
        self._yielded_pc = 0.0          # the same, on perf_counter (the window's clock)
        self._trio_off = 0.0            # trio's clock less perf_counter (window)

    # ------------------------------------------------------------------ waiting
    async def _turn(self) -> None:
        """A trio checkpoint when :data:`YIELD` s have passed since the last."""
        now = time.monotonic()
        if now - self._yielded >= YIELD:
            self._yielded = now
            await trio.lowlevel.checkpoint()

    def _nap(self, timeout: float) -> None:
        """Give up the CPU until a cut link's socket is readable or *timeout* s pass."""
        if self._fds and len(self._fds) < 512:
            select.select(self._fds, (), (), timeout)
        elif timeout > 0:
            time.sleep(timeout)
        else:
            os.sched_yield()

    async def wait(self, ready: Any, what: str, poll: Any = True) -> None:
        """Poll until ``ready()`` (the time goes to ``wait_peers_s``): a short spin first
        (the peer is usually on the other core, microseconds away), then yielding the
        CPU between polls (more workers than cores), then short naps.  *poll*: what to
        call between tests -- True: the transport's poll (sockets and messages); None:
        nothing (``ready`` reads shared memory itself)."""
        if poll is True:
            poll = self.transport.poll
        if poll is not None:
            poll()
        if ready():
            return
        start = time.monotonic()
        spins = 0
        while True:
            spins += 1
            if spins > SPINS:
                if spins < YIELDS:
                    os.sched_yield()
                else:
                    self._nap(0.0002)
            if poll is not None:
                poll()
            if ready():
                break
            if spins & 255 == 0:
                await self._turn()
                if time.monotonic() - start > STALL:
                    raise RuntimeError("exact clock: no %s from %s for %.0f s (round %d)" % (
                        what, self._silent(what), STALL, self.round))
        self.wait_peers_s += time.monotonic() - start

    def _silent(self, what: str) -> str:
        r = self.round
        names = [ln.name + "'s peer" for ln in self.inbound
                 if (ln.a_round if what == "count" else ln.b_at[0]) < r]
        return ", ".join(names) or "a peer (its key, or frames it counted)"

    # ------------------------------------------------------------------ a round
    async def phases(self) -> bool:
        """The current round's messages (the transport's exchange); True when the run
        is over."""
        r = self.round
        heap = self.sched.heap
        self.published = heap[0].time if heap else INF
        self.limit, done = await self.transport.exchange(self, r)
        return done

    async def window(self) -> None:
        """Run every event before the limit and the end, each no earlier than its time
        on the wall clock (the module text); port-counter samples as the loop takes them.
        One clock read before and one after each run of the scheduler: the pace, the
        time in events and the trio turns all use ``perf_counter`` (trio's clock is it
        plus an offset, :attr:`_trio_off`)."""
        loop = self.loop
        sched = self.sched
        heap = sched.heap
        end = loop.duration
        lt, ls = self.limit
        if lt >= end:
            lt, ls = end, 0
        sched.unclip()
        ran = False
        clock = time.perf_counter
        off = self._trio_off - loop.t0              # perf_counter + off: wall s since emulated 0
        rate = loop.ps_per_wall
        while heap:
            if sched.clip_time < lt or (sched.clip_time == lt and sched.clip_seq < ls):
                lt, ls = sched.clip_time, sched.clip_seq     # a frame left for another process
            top = heap[0]
            t = top.time
            if t > lt or (t == lt and top.seq >= ls):
                break
            now = clock()
            E = int((now + off) * rate)
            if t > E:
                await self._pace(t)
                now = clock()
                E = int((now + off) * rate)
            if lt <= E:
                ut, us = lt, ls
            else:
                ut, us = E + 1, 0
            ns = loop.next_sample
            if ns < ut or (ns == ut and us > 0):
                ut, us = ns, 0
            sched.run(ut, until_seq=us)
            after = clock()
            self.run_s += after - now
            ran = True
            # samples at T once every event before T ran and none can still come: the
            # heap's next and every promise are at or after T
            if loop.next_sample <= lt:
                bound = heap[0].time if heap and heap[0].time < lt else lt
                if loop.next_sample <= bound:
                    loop.sample_upto(bound)
            if after - self._yielded_pc >= YIELD:
                self._yielded_pc = after
                await trio.lowlevel.checkpoint()
        if loop.next_sample <= lt:
            loop.sample_upto(lt)
        if ran:
            self.windows_run += 1
        if lt > sched.floor_time or (lt == sched.floor_time and ls > sched.floor_seq):
            sched.floor_time, sched.floor_seq = lt, ls      # every event before it has run
        loop.now_ps = lt if lt < end else end

    async def _pace(self, t: int) -> None:
        """Wait until the wall clock reaches emulated *t* (``pace_wait_s``)."""
        loop = self.loop
        target = loop.wall_of(t)
        start = trio.current_time()
        while True:
            left = target - trio.current_time()
            if left <= 0:
                break
            if left > 2 * SPIN:
                await trio.sleep_until(target - SPIN)
            else:
                self._nap(min(left, SPIN))
        self.pace_wait_s += trio.current_time() - start

    async def run(self) -> None:
        """Round 0 (the frames the nodes sent at start), then rounds until the end."""
        self._yielded = time.monotonic()
        self._yielded_pc = time.perf_counter()
        self._trio_off = trio.current_time() - self._yielded_pc
        done = await self.phases()
        sched = self.sched
        while not done:
            self.round += 1
            slips = sched.slips
            await self.window()
            if sched.slips != slips:            # a broken promise: say where (the verdict counts it)
                print("exact clock: a frame behind its receiver in round %d (window to %s): %s"
                      % (self.round, self.limit, sched.last_slip), file=sys.stderr)
            done = await self.phases()
        self.loop.io.drain_all()                # strangers and forgeries on every socket are counted
        self.loop.sample_upto(self.loop.duration)
        await self._pace(self.loop.duration)     # the run's pace is its target to the end
        self.loop.now_ps = self.loop.duration

    def stats(self) -> dict[str, Any]:
        return {"sync": "exact", "transport": type(self.transport).__name__, "rounds": self.round,
                "windows_run": self.windows_run,
                "wait_peers_s": self.wait_peers_s, "pace_wait_s": self.pace_wait_s, "events_s": self.run_s,
                "stray_messages": sum(ln.strays for ln in self.inbound),
                "limit_end": None if self.limit[0] >= INF else self.limit[0]}
