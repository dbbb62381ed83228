"""The real-time driver: runs a set of sans-I/O nodes under trio, one UDP socket per node
port, emulated time = wall time / dilation (../shared/DESIGN.md §1 and §4; issue 4 item 1).

How time is kept (DESIGN §4: trio's timers wake about 0.6 ms late, so pacing is against
absolute deadlines):

- Every event -- a frame arriving at a port, a node's own deadline -- carries its
  *emulated* time and waits in one heap per process, like the virtual-time engine's.
  :meth:`NodeLoop.step` reads the clock once, ``E = (wall - t0) / dilation``, and runs,
  in time order, every event at or before ``E``, each at *its own* time, not at ``E``.
  A late wake-up therefore delays when the work is done, never the emulated times, and
  long-run rates stay exact.
- A node's transmissions carry their emulated start time ``t_start`` (the shim's
  ``time_ns``); the datagram is sent as soon as the node hands it over, which is when
  the wall clock has reached ``t_start``.  The receiver schedules it at
  ``t_start + propagation``.
- Between two nodes of the same process the sender takes the datagram off the peer's
  socket right after ``send`` (loopback delivers it during the call): the frames are real
  datagrams, yet the receiver never sees one late, so a process is exactly the
  virtual-time engine.
- A node is never given a decreasing ``now``: a frame from another process whose arrival
  time is already behind what its node has seen is processed at the node's current time.
  These *slips* are the emulation's error; they are counted with their total and maximum
  (``slips``, ``slip_ps``, ``max_slip_ps``).  They shrink with a larger dilation, with
  the select-based wait of :meth:`NodeLoop._timer_task`, with the polling of the sockets
  linked to other processes during a step (every 2 events, :data:`POLL_MASK`), and with
  real-time scheduling of the workers (:mod:`ibemu.runtime.worker`);
  :mod:`ibemu.fidelity` measures the effect.

Lost datagrams: every (node, port) socket numbers its datagrams (the shim's per-link
``seq``) and the receiving socket counts gaps (:class:`SeqCheck`).  Credits bound the
data in flight on a link, and SO_RCVBUF is sized for that (:mod:`ibemu.runtime.sockets`),
so a healthy run reports zero.

Link faults (issue 8 item 2; the scenario's ``[faults]``): they are applied at the
sending socket, by the same :class:`~ibemu.fabric.faults.LinkFaultInjector` the
virtual clock uses (*faults*: ``(node, port) -> injector`` of the directed link that port
sends on).  Each frame the node starts goes through ``transmit(t_start, frame, link)``;
each delivery it returns is sent at once with the emulated time ``t_start + extra`` in
its shim, so the receiver's heap puts a held-back frame behind the ones that overtake
it.  A frame the injector loses consumes no sequence number, so the gap count above
stays a count of *socket* losses; injected losses are counted apart
(``datagrams_lost_injected``, and per link in the fault counters).  A duplicate is sent
with its original's sequence number, and the receiving socket hands every sequence
number of a faulty link to the link's ``accept`` (its duplicate filter, with the numbers
unwrapped past 32 bits), which drops the second copy and counts it.  Corrupted copies
are caught by the receiving node's VCRC/ICRC checks, as on the virtual clock.
*faults_until* (emulated ps) heals every link for frames started from then on, so a
test can let the credits settle (:func:`ibemu.fabric.integrity.settle` on the virtual
clock).

Strangers (issue 8 item 5): a datagram whose source address is not the port's
configured peer is dropped before anything reads it and counted (``strangers``); the
sockets are unconnected so that the kernel does not drop such datagrams uncounted
(:mod:`ibemu.runtime.sockets`).

Only this package imports trio and socket; the nodes stay sans-I/O.
"""
from __future__ import annotations

import itertools
import select
import struct
from heapq import heappop, heappush

import trio

from ..config import PS_PER_S
from ..fabric.faults import DuplicateFilter
from ..wire.shim import KIND_LINK, MAGIC, SHIM_LEN, VERSION
from .sockets import open_port_socket, resolve

INF = 1 << 62
_DELIVER, _WAKE = 0, 1
SPIN = 0.002
"""Poll instead of sleeping when the next event is this close (wall seconds); 0: never."""
POLL_MASK = 1
"""During a step, the sockets linked to other processes are polled every 2 events."""
DUP_WINDOW = 4096
"""Sequence numbers a faulty link's duplicate filter remembers here.  A duplicate is sent
right after its original on the same socket, so it arrives right after it; the virtual
clock's window (65,536, for copies held back by reordering) would cost a worker about
8 MB per faulty link it receives on."""
OVERLOAD = 0.05
"""A loop this far (wall seconds) behind the clock is *overloaded*: the dilation is too
small for the machine.  Reported, and the worker gives up real-time priority."""
_SHIM = struct.Struct(">2sBBIQ")
_MAGIC0, _MAGIC1 = MAGIC[0], MAGIC[1]


class SeqCheck:
    """Per-link datagram sequence check: counts lost (a gap), and late or duplicate
    datagrams (a sequence number already passed).  Sequence numbers are u32 and wrap."""
    __slots__ = ("expect", "lost", "late", "received")

    def __init__(self):
        self.expect = 1
        self.lost = 0
        self.late = 0
        self.received = 0

    def update(self, seq: int) -> None:
        self.received += 1
        d = (seq - self.expect) & 0xFFFFFFFF
        if d == 0:
            self.expect = (seq + 1) & 0xFFFFFFFF
        elif d < 0x80000000:            # ahead: the ones in between were lost
            self.lost += d
            self.expect = (seq + 1) & 0xFFFFFFFF
        else:                           # behind: reordered or duplicated
            self.late += 1
            if self.lost:
                self.lost -= 1          # it was counted lost when the gap appeared


class PortSocket:
    """One emulated port's UDP socket; it sends to and accepts datagrams from *peer*
    (the peer port's numeric (host, port)) only."""
    __slots__ = ("sock", "node", "index", "propagation", "tx_seq", "rx", "send_errors",
                 "drop_every", "dropped", "addr", "peer", "local_peer", "inj", "rx_inj",
                 "rx_hi", "rx_ext", "inj_lost", "dup_sent", "dup_dropped", "strangers")

    def __init__(self, sock, node, index, propagation, addr, peer):
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
        self.local_peer = None          # the peer's PortSocket when it is in this process
        self.inj = None                 # LinkFaultInjector of the link this port sends on
        self.rx_inj = None              # ... and of the link it receives from
        self.rx_hi = 0                  # highest sequence number received (32 bits) ...
        self.rx_ext = 0                 # ... and unwrapped (for the duplicate filter)
        self.inj_lost = 0               # frames the injector lost (no datagram sent)
        self.dup_sent = 0               # second copies sent (the injector duplicated)
        self.dup_dropped = 0            # second copies received and dropped
        self.strangers = 0              # datagrams from an address that is not the peer


class NodeLoop:
    """Drives *nodes* (a list of :class:`~ibemu.fabric.node.Node`) in real time.

    *wiring*: the fabric's ``(node, port) -> (peer, peer_port, propagation)``.
    *addresses*: ``(node name, port) -> (host, udp port)`` for every port of the fabric
    that is wired (the address map).  *duration*: emulated ps to run.  *capture*: an
    object with ``write(time_ns, frame, link)`` that gets every frame these nodes send.
    *faults*: ``(node, port) -> LinkFaultInjector`` (:func:`ibemu.fabric.faults.engine_faults`
    of the fabric), applied to frames started before *faults_until* (see the module text).
    """

    def __init__(self, nodes, wiring, addresses, dilation: float, duration: int,
                 capture=None, rcvbuf=None, drop_link_every: int = 0, spin: float = SPIN,
                 faults=None, faults_until: int | None = None):
        if dilation <= 0:
            raise ValueError("dilation must be positive, got %r" % dilation)
        self.nodes = list(nodes)
        self.dilation = float(dilation)
        self.duration = int(duration)
        self.capture = capture
        self.spin = float(spin)
        self.ps_per_wall = PS_PER_S / self.dilation        # emulated ps per wall second
        self.heap: list = []
        self._nextseq = itertools.count().__next__          # heap tie-breaker: FIFO
        self.t0 = None                                      # trio clock at emulated 0
        self.now_ps = 0
        self.done = False
        self.events = 0
        self.slips = 0
        self.slip_ps = 0
        self.max_slip_ps = 0
        self.max_lag_ps = 0                                 # processing behind the clock
        self.bad_datagrams = 0
        self.faults_until = INF if faults_until is None else int(faults_until)
        self.wall_s = 0.0                                   # wall seconds from t0 to the end
        self.overload_ps = int(OVERLOAD * self.ps_per_wall)
        self.overloaded = False
        self.on_overload = None                             # called once when overloaded
        self.on_sample = None                               # on_sample(t): every sample_step ps
        self.sample_step = 0
        self._next_sample = INF
        self._finished = None
        self._timer_scope = None
        self._deadline = INF
        self._last = {n: 0 for n in self.nodes}
        self._wake_at = {n: INF for n in self.nodes}
        self.ports: dict = {n: {} for n in self.nodes}     # node -> {port: PortSocket}
        self.sockets: list[PortSocket] = []
        local = set(self.nodes)
        try:
            for (node, port), (peer, pport, prop) in wiring.items():
                if node not in local:
                    continue
                addr = addresses[(node.name, port)]
                paddr = resolve(addresses[(peer.name, pport)])
                sock = open_port_socket(addr, None, rcvbuf(node, port) if rcvbuf else None)
                ps = PortSocket(sock, node, port, prop, addr, paddr)
                ps.drop_every = drop_link_every
                if faults:
                    ps.inj = faults.get((node, port))
                    ps.rx_inj = faults.get((peer, pport))
                    if ps.rx_inj is not None:
                        ps.rx_inj.filter = DuplicateFilter(window=DUP_WINDOW)
                self.ports[node][port] = ps
                self.sockets.append(ps)
        except BaseException:
            self.close()
            raise
        for (node, port), (peer, pport, prop) in wiring.items():
            if node in local and peer in local:
                self.ports[node][port].local_peer = self.ports[peer][pport]
        self._buf = bytearray(65536)
        # sockets whose peer is in another process, polled during long steps
        self._remote = {ps.sock.fileno(): ps for ps in self.sockets if ps.local_peer is None}
        self._remote_fds = list(self._remote) if self._remote and max(self._remote) < 1024 else None

    # ------------------------------------------------------------------ clock
    def emulated_now(self) -> int:
        return int((trio.current_time() - self.t0) * self.ps_per_wall)

    def wall_of(self, t_ps: int) -> float:
        """The trio clock instant at which emulated time reaches *t_ps*."""
        return self.t0 + t_ps / self.ps_per_wall

    # ------------------------------------------------------------------ the step
    def step(self) -> None:
        """Run every event due by now, in emulated-time order (see the module text)."""
        if self.done:
            return
        E = int((trio.current_time() - self.t0) * self.ps_per_wall)
        end = self.duration
        until = E if E < end else end - 1
        heap = self.heap
        last = self._last
        wake_at = self._wake_at
        ports = self.ports
        nextseq = self._nextseq
        events = 0
        if heap and E - heap[0][0] > self.max_lag_ps:   # the step's first event is its latest
            self.max_lag_ps = E - heap[0][0]
            if self.max_lag_ps > self.overload_ps and not self.overloaded:
                self.overloaded = True          # the machine cannot keep up with the dilation
                if self.on_overload is not None:
                    self.on_overload()
        remote_fds = self._remote_fds
        while heap and heap[0][0] <= until:
            if heap[0][0] >= self._next_sample:
                self._sample_upto(heap[0][0])
            if remote_fds and events & POLL_MASK == POLL_MASK:
                # a long step: take in what the other processes sent meanwhile, so that
                # it is handled in time order with the rest instead of late (a slip)
                for fd in select.select(remote_fds, (), (), 0)[0]:
                    self._drain(self._remote[fd], self._buf)
            t, _, kind, node, port, frame, link = heappop(heap)
            events += 1
            t_event = t
            tn = last[node]
            if t < tn:
                if kind == _DELIVER:
                    self.slips += 1
                    d = tn - t
                    self.slip_ps += d
                    if d > self.max_slip_ps:
                        self.max_slip_ps = d
                t = tn
            else:
                last[node] = t
            if kind == _DELIVER:
                node.receive(port, frame, link, t)
            else:
                if wake_at[node] == t_event:
                    wake_at[node] = INF
                node.wake(t)
            if node.outbox:
                self._send_all(node, ports[node])
            timers = node.timers
            if timers:
                d = timers[0][0]
                if d < wake_at[node]:
                    wake_at[node] = d
                    heappush(heap, (d, nextseq(), _WAKE, node, 0, None, False))
        self.events += events
        self.now_ps = min(E, end)
        if E >= end:
            self._sample_upto(end)
            self.done = True
            self._finished.set()
        else:
            self._arm(heap[0][0] if heap and heap[0][0] < end else end)

    def _sample_upto(self, t: int) -> None:
        """Call ``on_sample(T)`` for every sample time T <= *t* not yet sampled: after
        every event before T and before any at or after it, as the virtual clock does."""
        step, end = self.sample_step, self.duration
        while self._next_sample <= t:
            T = self._next_sample
            self.on_sample(T)
            self._next_sample = INF if T >= end else min(T + step, end)

    def _send_all(self, node, ports) -> None:
        """Send the node's outbox, each frame behind its shim.  When the peer port is in
        this process, take the datagram off the peer's socket at once (loopback delivers
        it during ``send``): within a process no frame is ever behind its receiver."""
        cap = self.capture
        pack = _SHIM.pack
        faults_until = self.faults_until
        for p, frame, link, ts in node.outbox:
            if cap is not None:
                cap.write(ts // 1000, frame, link)
            ps = ports.get(p)
            if ps is None:
                continue                        # unconnected port: the frame goes nowhere
            if ps.inj is not None and ts < faults_until:
                self._send_faulty(ps, frame, link, ts)
                continue
            ps.tx_seq = s = (ps.tx_seq + 1) & 0xFFFFFFFF
            if link and ps.drop_every and s % ps.drop_every == 0:
                ps.dropped += 1
                continue
            try:
                ps.sock.sendto(pack(MAGIC, VERSION, link, s, -(-ts // 1000)) + frame, ps.peer)
            except OSError:                     # incl. BlockingIOError
                ps.send_errors += 1             # counted; shows up as a loss at the peer
                continue
            if ps.local_peer is not None:
                self._take_local(ps.local_peer)
        node.outbox.clear()

    def _send_faulty(self, ps: PortSocket, frame, link: bool, ts: int) -> None:
        """Send a frame through the link's fault injector (see the module text)."""
        deliveries = ps.inj.transmit(ts, frame, link)
        if not deliveries:
            ps.inj_lost += 1                    # lost on purpose: no sequence number used
            return
        ps.tx_seq = s = (ps.tx_seq + 1) & 0xFFFFFFFF
        pack = _SHIM.pack
        for k, (extra, f, _) in enumerate(deliveries):
            if k:
                ps.dup_sent += 1                # a second copy, same sequence number
            try:
                ps.sock.sendto(pack(MAGIC, VERSION, link, s, -(-(ts + extra) // 1000)) + f, ps.peer)
            except OSError:
                ps.send_errors += 1
                continue
            if ps.local_peer is not None:
                self._take_local(ps.local_peer)

    def _take_local(self, lp: PortSocket) -> None:
        """Take the datagram just sent to *lp* (a port of this process) off its socket."""
        buf = self._buf
        try:
            n, src = lp.sock.recvfrom_into(buf)
        except OSError:
            return                              # not there yet: its receive task takes it
        if src != lp.peer:                      # a stranger's datagram was waiting before ours
            lp.strangers += 1
            self._drain(lp, buf)
            return
        if n < SHIM_LEN or buf[0] != _MAGIC0 or buf[1] != _MAGIC1 or buf[2] != VERSION \
                or buf[3] > KIND_LINK:
            self.bad_datagrams += 1
            return
        _, _, kind, dseq, tns = _SHIM.unpack_from(buf, 0)
        if lp.rx_inj is not None and self._duplicate(lp, dseq):
            return
        rx = lp.rx
        if dseq == rx.expect:
            rx.expect = (dseq + 1) & 0xFFFFFFFF
            rx.received += 1
        else:
            rx.update(dseq)
        heappush(self.heap, (tns * 1000 + lp.propagation, self._nextseq(), _DELIVER, lp.node,
                             lp.index, buf[SHIM_LEN:n], kind == KIND_LINK))

    @staticmethod
    def _duplicate(ps: PortSocket, dseq: int) -> bool:
        """The duplicate filter of a faulty link: True (counted) for a second copy."""
        d = (dseq - ps.rx_hi) & 0xFFFFFFFF
        if d >= 0x80000000:
            d -= 0x100000000
        ext = ps.rx_ext + d
        if d > 0:
            ps.rx_hi, ps.rx_ext = dseq, ext
        if ps.rx_inj.accept(ext):
            return False
        ps.dup_dropped += 1
        ps.rx.received += 1                     # received (and dropped): sent == received
        return True

    def _arm(self, t_ps: int) -> None:
        """Move the timer task's wake-up to emulated time *t_ps*."""
        if t_ps == self._deadline:
            return
        self._deadline = t_ps
        if self._timer_scope is not None:
            self._timer_scope.deadline = self.wall_of(t_ps) - self.spin

    def call_now(self, node, fn, *args) -> None:
        """Run ``fn(now, *args)`` on *node* at the current emulated time, as a node timer
        (a command from outside the fabric: a live management request, ibemu/runtime/mgmt.py)."""
        t = max(self.emulated_now(), self._last[node])
        node.at(t, fn, *args)
        if t < self._wake_at[node]:
            self._wake_at[node] = t
            heappush(self.heap, (t, self._nextseq(), _WAKE, node, 0, None, False))
        self.step()                         # runs it now (t <= now) and re-arms the timer

    # ------------------------------------------------------------------ receiving
    def _drain(self, ps: PortSocket, buf: bytearray, limit: int = 1 << 30) -> None:
        """Read the datagrams waiting on *ps* (at most *limit*) into the heap."""
        sock = ps.sock
        heap = self.heap
        rx = ps.rx
        node, index, prop, peer = ps.node, ps.index, ps.propagation, ps.peer
        unpack = _SHIM.unpack_from
        nextseq = self._nextseq
        faulty = ps.rx_inj is not None
        while limit:
            limit -= 1
            try:
                n, src = sock.recvfrom_into(buf)
            except BlockingIOError:
                break
            except ConnectionRefusedError:
                continue                        # an ICMP error from an earlier send
            if src != peer:
                ps.strangers += 1               # not from the peer port: dropped, counted
                continue
            if n < SHIM_LEN or buf[0] != _MAGIC0 or buf[1] != _MAGIC1:
                self.bad_datagrams += 1
                continue
            _, version, kind, dseq, tns = unpack(buf, 0)
            if version != VERSION or kind > KIND_LINK:
                self.bad_datagrams += 1
                continue
            if faulty and self._duplicate(ps, dseq):
                continue
            if dseq == rx.expect:
                rx.expect = (dseq + 1) & 0xFFFFFFFF
                rx.received += 1
            else:
                rx.update(dseq)
            heappush(heap, (tns * 1000 + prop, nextseq(), _DELIVER, node, index, buf[SHIM_LEN:n],
                            kind == KIND_LINK))

    async def _rx_task(self, ps: PortSocket) -> None:
        buf = bytearray(65536)
        sock = ps.sock
        wait = trio.lowlevel.wait_readable
        while not self.done:
            await wait(sock)
            self._drain(ps, buf)
            self.step()

    async def _timer_task(self) -> None:
        """Wake the loop at the next event's time.  trio sleeps in whole milliseconds
        (epoll's timeout), 0.5 ms late on average -- at dilation 200 that is 2.5 µs of
        emulated time, more than a packet.  So within ``spin`` seconds of the deadline
        the task instead waits in ``select`` (a microsecond timeout) for the deadline or
        a datagram on any of its sockets, then lets trio run the receive tasks (a
        checkpoint) and steps: steps are tens of microseconds apart, frames between
        processes are seldom behind their receiver, and the CPU is left to the other
        workers while nothing is due."""
        spin = self.spin
        checkpoint = trio.lowlevel.checkpoint
        now = trio.current_time
        fds = [ps.sock.fileno() for ps in self.sockets]
        if not fds or max(fds) >= 1024:         # select's FD_SETSIZE: just poll then
            fds = None
        while not self.done:
            d = self._deadline
            if spin:
                left = self.wall_of(d) - now()
                if left <= spin:
                    if left > 20e-6 and fds:
                        select.select(fds, (), (), min(left, 0.0005))
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
        try:
            for node in self.nodes:
                node.start(0)
                if node.outbox:
                    self._send_all(node, self.ports[node])
                d = node.next_deadline()
                if d is not None:
                    self._wake_at[node] = d
                    heappush(self.heap, (d, self._nextseq(), _WAKE, node, 0, None, False))
            if self.on_sample is not None and self.sample_step > 0:
                self.on_sample(0)
                self._next_sample = min(self.sample_step, self.duration)
            self._deadline = None
            self._arm(self.heap[0][0] if self.heap else self.duration)
            async with trio.open_nursery() as nursery:
                for ps in self.sockets:
                    nursery.start_soon(self._rx_task, ps)
                nursery.start_soon(self._timer_task)
                await self._finished.wait()
                nursery.cancel_scope.cancel()
        finally:
            self.wall_s = trio.current_time() - t0

    def close(self) -> None:
        for ps in self.sockets:
            ps.sock.close()

    def stats(self) -> dict:
        """Counters of this loop (datagrams, losses, slips), for results.json."""
        socks = self.sockets
        st = {"events": self.events, "emulated_ps": self.now_ps, "wall_s": self.wall_s,
              "datagrams_sent": sum(p.tx_seq - p.dropped - p.send_errors + p.dup_sent for p in socks),
              "datagrams_received": sum(p.rx.received for p in socks),
              "datagrams_lost": sum(p.rx.lost for p in socks),
              "datagrams_late": sum(p.rx.late for p in socks),
              "datagrams_dropped_injected": sum(p.dropped for p in socks),
              "datagrams_lost_injected": sum(p.inj_lost for p in socks),
              "datagrams_duplicated": sum(p.dup_sent for p in socks),
              "duplicates_dropped": sum(p.dup_dropped for p in socks),
              "strangers": sum(p.strangers for p in socks),
              "strangers_by_port": {"%s:%d" % (p.node.name, p.index): p.strangers
                                    for p in socks if p.strangers},
              "send_errors": sum(p.send_errors for p in socks),
              "bad_datagrams": self.bad_datagrams,
              "slips": self.slips, "slip_ps": self.slip_ps, "max_slip_ps": self.max_slip_ps,
              "max_lag_ps": self.max_lag_ps, "overloaded": self.overloaded}
        return st
