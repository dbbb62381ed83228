"""The real-time driver: runs a set of sans-I/O nodes under trio, one UDP socket per node
port, emulated time = wall time / dilation (../shared/DESIGN.md §1 and §4; issue 4 item 1).

The events, their order, their dispatch and the nodes' deadlines are the shared
scheduler's (:mod:`ibemu.sim.scheduler`), the very loop the virtual-time engine runs.
This module adds only what the wall clock needs: pacing, socket delivery
(:mod:`ibemu.runtime.delivery`, the scheduler's *transmit* and *poll*), the slip rule
(the scheduler's *last_now*), port-counter sampling and overload detection.

How time is kept (DESIGN §4: trio's timers wake about 0.6 ms late, so pacing is against
absolute deadlines):

- Every event -- a frame arriving at a port, a node's own deadline -- carries its
  *emulated* time and waits in the scheduler's heap, one per process.
  :meth:`NodeLoop.step` reads the clock once, ``E = (wall - t0) / dilation``, and runs,
  in time order, every event at or before ``E``, each at *its own* time, not at ``E``.
  A late wake-up therefore delays when the work is done, never the emulated times, and
  long-run rates stay exact.
- Frames between nodes of this process never arrive late (see
  :mod:`ibemu.runtime.delivery`), so a process is exactly the virtual-time engine.
- A node is never given a decreasing ``now``: a frame from another process whose arrival
  time is already behind what its node has seen is processed at the node's current time.
  These *slips* are the emulation's error; they are counted with their total and maximum
  (``slips``, ``slip_ps``, ``max_slip_ps``).  They shrink with a larger dilation, with
  the select-based wait of :meth:`NodeLoop._timer_task`, with the polling of the sockets
  linked to other processes during a step (every 2 events, :data:`POLL_MASK`), and with
  real-time scheduling of the workers (:mod:`ibemu.runtime.worker`);
  :mod:`ibemu.runtime.fidelity` measures the effect.

Only this package imports trio and socket; the nodes and the scheduler stay sans-I/O.
"""
from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import trio

from ..sim.scheduler import INF, Scheduler, SimNode
from ..units import PS_PER_S
from .delivery import PortSocket, SocketPorts
from .exact import ExactDriver
from .syncnet import NetSync
from .syncshm import ShmSync
from .verdict import SYNC_MODES

SPIN = 0.002
"""Poll instead of sleeping when the next event is this close (wall seconds); 0: never."""
POLL_MASK = 1
STEP_BUDGET = 0.005
"""A step that is far behind the clock runs its events in slices of ``chunk_ps`` and
returns after this many wall seconds, so that trio's other tasks (the control channel,
the heartbeat) still run while a worker catches up."""
YIELD = 0.001
"""While events are due in quick succession the timer task steps without going through
trio; it gives trio a turn (a checkpoint) at least every this many wall seconds."""
"""During a step, the sockets linked to other processes are polled every 2 events."""
OVERLOAD = 0.05
"""A loop this far (wall seconds) behind the clock is *overloaded*: the dilation is too
small for the machine.  Reported, and the worker gives up real-time priority."""


class NodeLoop:
    """Drives *nodes* (a list of :class:`~ibemu.fabric.node.Node`) in real time.

    *wiring*: the fabric's ``(node, port) -> (peer, peer_port, propagation)``.
    *addresses*: ``(node name, port) -> (host, udp port)`` for every port of the fabric
    that is wired (the address map).  *duration*: emulated ps to run.  *capture*: an
    object with ``write(time_ns, frame, link)`` that gets every frame these nodes send.
    *faults*: ``(node, port) -> LinkFaultInjector`` (:func:`ibemu.fabric.faults.engine_faults`
    of the fabric), applied to frames started before *faults_until*
    (:mod:`ibemu.runtime.delivery`).  *key*: the run's secret, which authenticates every
    datagram (the same in every process of the run; None: a fresh one, for a loop that
    runs every node itself).  *local_datagrams*: False hands the frames between nodes
    of this process over directly instead of through their sockets (the same results,
    fewer system calls; :meth:`~ibemu.runtime.delivery.SocketPorts.transmit`).
    """

    def __init__(self, nodes: Iterable[SimNode], wiring: Mapping[Any, Any],
                 addresses: Mapping[Any, Any], dilation: float, duration: int,
                 capture: Any = None, rcvbuf: Callable[[Any, int], int] | None = None,
                 drop_link_every: int = 0, spin: float = SPIN,
                 faults: Mapping[Any, Any] | None = None, faults_until: int | None = None,
                 key: bytes | None = None, local_datagrams: bool = True, sync: str = "exact",
                 sync_file: str | None = None, workers: int = 2) -> None:
        if dilation <= 0:
            raise ValueError("dilation must be positive, got %r" % dilation)
        self.sched = sched = Scheduler(nodes)
        self.nodes = sched.nodes
        self.dilation = float(dilation)
        self.duration = int(duration)
        self.spin = float(spin)
        self.ps_per_wall = PS_PER_S / self.dilation        # emulated ps per wall second
        self.t0: float | None = None                        # trio clock at emulated 0
        self.now_ps = 0
        self.done = False
        self.max_lag_ps = 0                                 # processing behind the clock
        self.wall_s = 0.0                                   # wall seconds from t0 to the end
        self.cpu_s = 0.0                                    # CPU seconds of this process meanwhile
        self.overload_ps = int(OVERLOAD * self.ps_per_wall)
        self.chunk_ps = max(1, int(STEP_BUDGET * self.ps_per_wall))   # emulated ps per slice
        self.overloaded = False
        self.on_overload: Callable[[], object] | None = None    # called once when overloaded
        self.on_sample: Callable[[int], object] | None = None   # every sample_step ps
        self.sample_step = 0
        self.next_sample = INF
        self._finished: trio.Event | None = None
        self._timer_scope: trio.CancelScope | None = None
        self._deadline: int | None = INF
        self.io = SocketPorts(sched, wiring, addresses, capture, rcvbuf, drop_link_every,
                              faults, faults_until, key, local_datagrams)
        self.ports = self.io.ports                          # node -> {port: PortSocket}
        self.sockets = self.io.sockets
        sched.transmit = self.io.transmit
        if sync not in SYNC_MODES:
            raise ValueError("sync must be one of %s, got %r" % (", ".join(SYNC_MODES), sync))
        self.sync = sync
        self.driver: ExactDriver | None = None
        if sync == "exact":
            if sync_file is not None:
                order = {(n.name, p): i for i, (n, p) in enumerate(wiring)}
                buf = bytearray(65536)
                transport: Any = ShmSync(sync_file, self.io.sockets, lambda name, port: order[(name, port)],
                                         wiring, [n.name for n in sched.nodes], self.io.poll_remote,
                                         self.duration, take=lambda ps: self.io.drain(ps, buf))
            else:
                transport = NetSync(self.io, workers)
            self.driver = ExactDriver(self, transport)
            self.io.exact = True
            if not local_datagrams:
                self._route_locally(wiring, faults or {}, drop_link_every, capture)
        elif self.io.remote_fds:
            sched.poll = self.io.poll_remote
            sched.poll_mask = POLL_MASK
        if self.driver is None:
            sched.last_now = {n: 0 for n in sched.nodes}    # the slip rule (free-running)

    def _route_locally(self, wiring: Mapping[Any, Any], faults: Mapping[Any, Any], drop_every: int,
                       capture: Any) -> None:
        """The exact clock without local datagrams: the scheduler routes the frames
        between this worker's nodes itself, natively, as the virtual clock does
        (:attr:`~ibemu.sim.scheduler.Scheduler.hybrid`), and hands only the frames to other
        workers to the sockets; the capture then gets every frame from the scheduler."""
        sched = self.sched
        local = set(sched.nodes)
        for (node, port), (peer, pport, prop) in wiring.items():
            if node in local and peer in local and (node, port) not in faults and not drop_every:
                sched.connect(node, port, peer, pport, prop)
        sched.hybrid = True
        sched.intact = not faults
        if capture is not None:
            sched.port_capture = capture
            self.io.capture = None

    @property
    def events(self) -> int:
        return self.sched.events

    # ------------------------------------------------------------------ clock
    def emulated_now(self) -> int:
        assert self.t0 is not None
        return int((trio.current_time() - self.t0) * self.ps_per_wall)

    def wall_of(self, t_ps: int) -> float:
        """The trio clock instant at which emulated time reaches *t_ps*."""
        assert self.t0 is not None
        return self.t0 + t_ps / self.ps_per_wall

    # ------------------------------------------------------------------ the step
    def step(self) -> None:
        """Run every event due by now, in emulated-time order (see the module text)."""
        if self.done:
            return
        sched = self.sched
        heap = sched.heap
        E = self.emulated_now()
        end = self.duration
        limit = E + 1 if E < end else end       # the events at or before E, before the end
        if heap and min(E, end) - heap[0].time > self.max_lag_ps:   # the step's first event is its latest
            self.max_lag_ps = min(E, end) - heap[0].time
            if self.max_lag_ps > self.overload_ps and not self.overloaded:
                self.overloaded = True          # the machine cannot keep up with the dilation
                if self.on_overload is not None:
                    self.on_overload()
        chunk = self.chunk_ps
        stop_at = 0.0
        while True:
            upto = min(limit, self.next_sample)
            if heap and upto - heap[0].time > chunk:      # far behind: in slices, see below
                upto = heap[0].time + chunk
                if not stop_at:
                    stop_at = trio.current_time() + STEP_BUDGET
                elif trio.current_time() > stop_at:
                    break                       # let trio run; the timer task steps on at once
            sched.run(upto)
            if heap and self.next_sample <= heap[0].time < limit:
                self.sample_upto(heap[0].time)   # before the first event at or after it
                continue
            if upto < limit and heap and heap[0].time < limit:
                continue
            break
        self.now_ps = min(E, end)
        if heap and heap[0].time < limit:         # a step cut short (STEP_BUDGET)
            self._arm(heap[0].time)
        elif E >= end:
            self.sample_upto(end)
            self.done = True
            assert self._finished is not None
            self._finished.set()
        else:
            self._arm(heap[0].time if heap and heap[0].time < end else end)

    def sample_upto(self, t: int) -> None:
        """Call ``on_sample(T)`` for every sample time T <= *t* not yet sampled: after
        every event before T and before any at or after it, as the virtual clock does."""
        step, end = self.sample_step, self.duration
        while self.next_sample <= t:
            T = self.next_sample
            assert self.on_sample is not None
            self.on_sample(T)
            self.next_sample = INF if T >= end else min(T + step, end)

    def _arm(self, t_ps: int) -> None:
        """Move the timer task's wake-up to emulated time *t_ps*."""
        if t_ps == self._deadline:
            return
        self._deadline = t_ps
        if self._timer_scope is not None:
            self._timer_scope.deadline = self.wall_of(t_ps) - self.spin

    def call_now(self, node: Any, fn: Callable[..., object], *args: Any) -> None:
        """Run ``fn(now, *args)`` on *node* at the current emulated time, as a node timer
        (a command from outside the fabric: a live management request, ibemu/runtime/mgmt.py).
        On the exact clock it is due no earlier than what this worker last told the others
        (its earliest key then stays a true bound) and runs in the driver's next window;
        a live command is outside the scenario, so such a run is no longer the virtual
        clock's."""
        sched = self.sched
        if self.driver is not None:
            t = max(self.emulated_now(), sched.floor_time, self.driver.published)
            node.at(t, fn, *args)
            sched.arm(node)
            return
        assert sched.last_now is not None
        t = max(self.emulated_now(), sched.last_now[node])
        node.at(t, fn, *args)
        sched.arm(node)
        self.step()                         # runs it now (t <= now) and re-arms the timer

    # ------------------------------------------------------------------ tasks
    async def _rx_task(self, ps: PortSocket) -> None:
        buf = bytearray(65536)
        sock = ps.sock
        wait = trio.lowlevel.wait_readable
        drain = self.io.drain
        while not self.done:
            await wait(sock)
            drain(ps, buf)
            self.step()

    async def _timer_task(self) -> None:
        """Wake the loop at the next event's time.  trio sleeps in whole milliseconds
        (epoll's timeout), 0.5 ms late on average -- at dilation 200 that is 2.5 µs of
        emulated time, more than a packet.  So within ``spin`` seconds of the deadline
        the task instead waits in ``select`` (a microsecond timeout) for the deadline or
        a datagram on any of its sockets, takes in what the ready sockets hold and
        steps, without going through trio (a scheduler turn costs tens of µs), which it
        gives a checkpoint every :data:`YIELD` s: steps are tens of microseconds apart,
        frames between processes are seldom behind their receiver, and the CPU is left
        to the other workers while nothing is due."""
        spin = self.spin
        checkpoint = trio.lowlevel.checkpoint
        now = trio.current_time
        fds: list[int] | None = [ps.sock.fileno() for ps in self.sockets]
        if not fds or max(fds) >= 1024:         # select's FD_SETSIZE: just poll then
            fds = None
        by_fd = {ps.sock.fileno(): ps for ps in self.sockets}
        drain = self.io.drain
        buf = bytearray(65536)
        yielded = now()
        while not self.done:
            d = self._deadline
            assert d is not None
            if spin:
                t = now()
                left = self.wall_of(d) - t
                if left <= spin:
                    # the hot path: wait, take in what came, step -- without trio, which
                    # is given a turn (its other tasks: control, heartbeat) every YIELD s
                    if fds:
                        for fd in select.select(fds, (), (), min(left, 0.0005) if left > 20e-6 else 0)[0]:
                            drain(by_fd[fd], buf)
                        if t - yielded >= YIELD:
                            await checkpoint()
                            yielded = now()
                    else:
                        await checkpoint()
                    self.step()
                    continue
            with trio.CancelScope(deadline=self.wall_of(d) - spin) as cs:
                self._timer_scope = cs
                await trio.sleep_forever()
            self._timer_scope = None
            self.step()

    # ------------------------------------------------------------------ running
    async def run(self, t0: float) -> None:
        """Start every node at emulated 0 = trio clock *t0* and run to the duration.
        Cancel the calling scope to stop early (the counters keep what was done)."""
        self.t0 = t0
        self._finished = trio.Event()
        await trio.sleep_until(t0)
        cpu0 = time.process_time()
        try:
            self.sched.start(0)
            if self.on_sample is not None and self.sample_step > 0:
                self.on_sample(0)
                self.next_sample = min(self.sample_step, self.duration)
            if self.driver is not None:         # the exact clock (issue 27)
                await self.driver.run()
                self.done = True
                return
            self._deadline = None
            heap = self.sched.heap
            self._arm(heap[0].time if heap else self.duration)
            async with trio.open_nursery() as nursery:
                for ps in self.sockets:
                    nursery.start_soon(self._rx_task, ps)
                nursery.start_soon(self._timer_task)
                await self._finished.wait()
                nursery.cancel_scope.cancel()
        finally:
            self.wall_s = trio.current_time() - t0
            self.cpu_s = time.process_time() - cpu0

    def close(self) -> None:
        if self.driver is not None:
            self.driver.transport.close()
        self.io.close()

    def stats(self) -> dict[str, Any]:
        """Counters of this loop (datagrams, losses, slips), for results.json."""
        sched = self.sched
        emulated_s = self.now_ps / PS_PER_S
        out = {"events": sched.events, "emulated_ps": self.now_ps, "wall_s": self.wall_s, "cpu_s": self.cpu_s,
               "effective_dilation": self.wall_s / emulated_s if emulated_s > 0 else None,
               **self.io.counters(),
               "slips": sched.slips, "slip_ps": sched.slip_ps, "max_slip_ps": sched.max_slip_ps,
               "max_lag_ps": self.max_lag_ps, "overloaded": self.overloaded}
        out.update(self.driver.stats() if self.driver is not None else {"sync": "free"})
        if sched.hybrid:                    # frames the scheduler routed within this worker, in memory
            out["frames_direct"] += sched.frames
        return out
