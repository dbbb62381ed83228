"""The one scheduler of both clocks (../shared/DESIGN.md §1, §7 and §8; issues 12 and 27).

A discrete-event loop in the manner of SimPy's core, over a queue of events by key
(:mod:`.eventq`: a list heap, or in the compiled core a C heap).  Every event is an
:class:`Event` ``(time, seq, kind, node, port, frame, link)`` (indexable like that tuple):

- ``DELIVER``: *frame* arrives on *node*'s *port* at *time*; *link* is True for a
  link-layer (flow-control) packet;
- ``DELIVER_INTACT``: the same for a frame that the scheduler carried itself from a node
  it runs, over a link without faults, in a run without any (:attr:`Scheduler.intact`):
  the node is handed it by ``receive_intact``, which may skip the CRC checks that cannot
  fail on it (issue 16: they were a fifth of the virtual clock's time);
- ``DELIVER_FAULTY``: the same through a faulty link (issue 8): *link* is
  ``(link, link_seq, injector)`` and the frame is handed over only if the injector's
  duplicate filter ``accept(link_seq)``;
- ``WAKE``: *node*'s own deadline (the earliest of its ``timers``) is due.

The order (issue 27 Deliver 2): events run in the order of their key ``(time, seq)``, and
*seq* is derived from the model alone (:mod:`.order`: causal depth in the instant, node,
port rank, link sequence), so that every placement of the nodes on processes, and the
virtual clock, runs every node's events in one and the same order.

After each event the scheduler takes the node's transmissions (``outbox``) and arms its
next deadline once: the node holds the time of its earliest pending ``WAKE``
(``sched_wake_at``) and its peers (``sched_peers``), attributes in the compiled core.

The virtual clock (:class:`ibemu.sim.engine.VirtualEngine`) runs this loop as fast as
the CPU allows: a node's transmissions become ``DELIVER`` events at the peer port after
the link's propagation delay (the *peer* table).  The wall clock
(:mod:`ibemu.runtime.loop`) runs the same loop and plugs in, as SimPy's real-time
environment overrides one step:

- *transmit*: a strategy that sends a node's outbox as datagrams instead of routing it
  (frames then come back through :meth:`Scheduler.deliver`); it reads the running
  event's time and depth from :attr:`Scheduler.cur_time` and :attr:`Scheduler.cur_depth`.
  With :attr:`Scheduler.hybrid`, the loop routes itself the frames of every port that has
  a peer (:meth:`connect`: the nodes of this process) and leaves only the others in the
  outbox for *transmit* (the exact wall clock: frames between processes; issue 27);
  *port_capture*, when set, then gets every frame with the port it leaves from;
- *poll*: called after every ``poll_mask + 1``-th event of a run, to take in datagrams
  from other processes between events (it takes the place of *progress*);
- *last_now*: the slip rule.  A node never sees a decreasing ``now``: an event behind
  the latest time its node has seen runs at that time instead; for deliveries this is a
  *slip*, counted with its total and maximum.  On the virtual clock, and on the wall
  clock synchronised exactly (:mod:`ibemu.runtime.exact`), events come in key order, so
  the rule never acts.

The hot loop (:meth:`Scheduler.run`) is written once, inlined: on the virtual clock the
hooks cost a test of a local per event.  Sans-I/O: no trio, socket or time.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from heapq import heappop, heappush
from typing import Any, Final, cast

from .eventq import EventQueue, native_layout
from .events import FREE_MAX, INF, NEVER, Capture, Event, FaultyLink, PortCapture, PortPeer, SimNode, reuse
from .order import (DEPTH_SHIFT, LSEQ_MASK, MAX_DEPTH, MAX_NODES, MAX_PORT, NODE_SHIFT, PORT_SHIFT,
                    WAKE_PORT, arrival_order, depth_of, order, port_rank)

__all__ = ["DELIVER", "DELIVER_FAULTY", "DELIVER_INTACT", "DEPTH_SHIFT", "INF", "LSEQ_MASK", "MAX_DEPTH", "NEVER",
           "MAX_NODES", "MAX_PORT", "NODE_SHIFT", "PORT_SHIFT", "WAKE", "WAKE_PORT", "Capture", "Event", "FaultyLink",
           "PortCapture", "PortPeer", "Scheduler", "SimNode", "arrival_order", "depth_of", "order", "port_rank"]

_PROBE: Final = (0x5A5A5A5A5A5, 0x3C3C3C3C3C3C3C3)     # the C queue reads events' keys from their fields
NATIVE_EVENTS: Final = native_layout(Event(*_PROBE, 0, SimNode("probe"), 0, None, False), *_PROBE)  # (.eventq)
DELIVER: Final = 0
WAKE: Final = 1
DELIVER_FAULTY: Final = 2
DELIVER_INTACT: Final = 3

class Scheduler:
    """The heap, the dispatch and the deadline bookkeeping of a set of *nodes*.

    *capture*, when given, gets every frame the nodes start (``write(time_ns, frame,
    link)``).  The wall-clock hooks (*transmit*, *poll*, *last_now*) are ``None`` on the
    virtual clock; see the module text.
    """

    def __init__(self, nodes: Iterable[SimNode], capture: Capture | None = None) -> None:
        self.nodes: list[SimNode] = list(nodes)
        self.capture = capture
        # the events by key (.eventq); typed Any, not list: mypyc uses no list primitive on it
        self.heap: Any = EventQueue()
        self.free: list[Event] = []     # events that ran, for run() to reuse (events.reuse)
        self.now = 0                    # every event before it has run
        self.cur_time = self.cur_depth = 0  # the running event's time and depth (transmit reads them)
        self.events = 0
        self.frames = 0                 # frames routed across links (frame-hops)
        # routed frames arrive as DELIVER_INTACT (no CRC checks): set by VirtualEngine for a
        # run without fault injectors, never on the wall clock (the module text)
        self.intact = False
        for i, n in enumerate(self.nodes):
            if n.sched_id < 0:
                n.sched_id = i
            if n.sched_id >= MAX_NODES:
                raise ValueError("at most %d nodes, got node index %d" % (MAX_NODES, n.sched_id))
            n.sched_wake_at = NEVER
            n.sched_wake_key = order(0, n.sched_id, WAKE_PORT)
            n.sched_peers = []
        # the wall clock's hooks (ibemu.runtime.loop)
        self.transmit: Callable[[SimNode], None] | None = None
        self.hybrid = False
        self.port_capture: PortCapture | None = None
        self.poll: Callable[[], None] | None = None
        self.poll_mask = 1
        self.last_now: dict[SimNode, int] | None = None
        # the exact wall clock's window clip: nothing at or after (clip_time, clip_seq) runs (:meth:`clip`)
        self.clip_time = INF
        self.clip_seq = 0
        # the exact wall clock: every event before (floor_time, floor_seq) has run
        self.floor_time = 0
        self.floor_seq = 0
        self.slips = 0
        self.last_slip: tuple[Any, ...] = ()
        self.slip_ps = 0
        self.max_slip_ps = 0

    # ------------------------------------------------------------------ scheduling
    def connect(self, node: SimNode, port: int, peer: SimNode, peer_port: int, propagation: int,
                injector: FaultyLink | None = None) -> None:
        """*node*'s frames on *port* arrive at *peer*'s *peer_port* after *propagation* ps
        (through *injector*, a faulty link, when given)."""
        if peer.sched_id < 0:
            raise ValueError("node %s has no index (sched_id)" % peer.name)
        if peer_port > MAX_PORT or port > MAX_PORT:
            raise ValueError("port numbers above %d are not supported" % MAX_PORT)
        if port < 0:
            raise ValueError("port numbers are not negative, got %d" % port)
        peers = node.sched_peers
        if len(peers) <= port:
            peers.extend([None] * (port + 1 - len(peers)))
        peers[port] = PortPeer(peer, peer_port, propagation, injector)

    def depth_at(self, t: int) -> int:
        """The depth field (shifted) of an event made now for time *t* (the module text)."""
        if t != self.cur_time:
            return 0
        d = self.cur_depth + 1
        return (d if d < MAX_DEPTH else MAX_DEPTH) << DEPTH_SHIFT

    def deliver(self, t: int, node: SimNode, port: int, frame: Any, link: bool,
                depth: int = 0, link_seq: int = 0) -> None:
        """Schedule *frame*'s arrival on *node*'s *port* at *t* (a datagram taken in: its
        shim's *depth* and sequence number *link_seq*).  A frame whose key is before
        :attr:`floor` (the exact wall clock: every event before it has run) counts as a
        slip: a broken promise."""
        seq = arrival_order(depth, t, node.sched_id, port, link_seq)
        if t < self.floor_time or (t == self.floor_time and seq < self.floor_seq):
            d = self.floor_time - t
            self.last_slip = (node.name, DELIVER, port, t, seq, self.floor_time)
            self.slips += 1
            self.slip_ps += d
            if d > self.max_slip_ps:
                self.max_slip_ps = d
        self.heap.push_item(Event(t, seq, DELIVER, node, port, frame, link))

    def arm(self, node: SimNode) -> None:
        """Schedule *node*'s next deadline unless a wake-up at or before it is pending."""
        d = node.next_deadline()
        if d is not None and d < node.sched_wake_at:
            node.sched_wake_at = d
            self.heap.push_item(Event(d, node.sched_wake_key | self.depth_at(d), WAKE, node, 0, None, False))

    def route(self, node: SimNode) -> None:
        """Turn *node*'s outbox into deliveries at the peer ports (the virtual clock's
        transmission; :meth:`run` inlines the same steps)."""
        heap = self.heap
        peers = node.sched_peers
        cap = self.capture
        pcap = self.port_capture
        kind = DELIVER_INTACT if self.intact else DELIVER
        rest: list[tuple[int, Any, bool, int]] = []
        for item in node.outbox:
            port, frame, link, t0 = item
            if cap is not None:
                cap.write(t0 // 1000, frame, link)
            if pcap is not None:
                pcap.write_port(node, port, t0 // 1000, frame, link)
            target = peers[port] if 0 <= port < len(peers) else None
            if target is None:
                if self.hybrid:
                    rest.append(item)           # to another process: transmit's
                continue                        # unconnected port: the frame goes nowhere
            target.sent += 1
            inj = target.inj
            if inj is not None:
                for extra, f2, fseq in inj.transmit(t0, frame, link):
                    self.frames += 1
                    at = t0 + target.prop + extra
                    key = order(0, target.pid, port_rank(at, target.pid, target.pport), target.sent)
                    heap.push_item(Event(at, key | self.depth_at(at), DELIVER_FAULTY, target.peer, target.pport,
                                         f2, (link, fseq, inj)))
                continue
            self.frames += 1
            at = t0 + target.prop
            key = order(0, target.pid, port_rank(at, target.pid, target.pport), target.sent)
            heap.push_item(Event(at, key | self.depth_at(at), kind, target.peer, target.pport, frame, link))
        node.outbox.clear()
        if rest and self.transmit is not None:
            node.outbox.extend(rest)
            self.transmit(node)

    def after(self, node: SimNode) -> None:
        """Take *node*'s transmissions and arm its next deadline (after the node was
        driven from outside the loop: started, or given a timer)."""
        if node.outbox:
            if self.transmit is None or self.hybrid:
                self.route(node)
            else:
                self.transmit(node)
        self.arm(node)

    def start(self, t: int = 0) -> None:
        """Start every node at *t* (an instant of depth 0: what they make for *t* has depth 1)."""
        self.cur_time, self.cur_depth = t, 0
        for node in self.nodes:
            node.start(t)
            self.after(node)

    def clip(self, t: int, seq: int) -> None:
        """Run nothing at or after key ``(t, seq)`` until :meth:`unclip` (the exact wall
        clock: a frame sent to another process may be answered from that key on,
        :mod:`ibemu.runtime.syncproto`)."""
        if t < self.clip_time or (t == self.clip_time and seq < self.clip_seq):
            self.clip_time = t
            self.clip_seq = seq

    def unclip(self) -> None:
        self.clip_time = INF
        self.clip_seq = 0

    def limit(self, until: int, until_seq: int) -> tuple[int, int]:
        """A run's limit ``(until, until_seq)``, lowered to the clip; the C queue's limit too."""
        if self.clip_time < until or (self.clip_time == until and self.clip_seq < until_seq):
            until, until_seq = self.clip_time, self.clip_seq
        if not isinstance(self.heap, list):
            self.heap.set_limit(until, until_seq)
        return until, until_seq

    def next_key(self) -> tuple[int, int]:
        """The key ``(time, seq)`` of the earliest pending event; ``(INF, 0)`` for none."""
        heap = self.heap
        if not heap:
            return INF, 0
        top = heap[0]
        return top.time, top.seq

    # ------------------------------------------------------------------ the hot loop
    def run(self, until: int, progress: Callable[[int], object] | None = None,
            progress_step: int = 0, until_seq: int = 0) -> None:
        """Run every event whose key is before ``(until, until_seq)`` (ps; with the default
        *until_seq*: every event before time *until*), in key order.
        *progress(now)* is called about every *progress_step* ps of emulated time."""
        heap = self.heap
        pop, push_ = heappop, heappush      # pure Python's heap, as locals: faster
        cq = not isinstance(heap, list)     # the compiled core's C queue (.eventq): its methods,
        qpush, qdue = heap.push_item, heap.pop_due   # bound once (no lookup by name per call)
        k_deliver, k_wake, k_faulty, k_intact, never = DELIVER, WAKE, DELIVER_FAULTY, DELIVER_INTACT, NEVER
        k_route = k_intact if self.intact else k_deliver     # the kind of a routed frame
        lmask, dshift, nshift, pshift, max_depth = LSEQ_MASK, DEPTH_SHIFT, NODE_SHIFT, PORT_SHIFT, MAX_DEPTH
        cap = self.capture
        transmit = self.transmit
        hybrid = self.hybrid
        pcap = self.port_capture
        poll = self.poll
        poll_mask = self.poll_mask
        last = self.last_now
        free = self.free
        free_max = FREE_MAX
        # the wall clock polls in place of progress
        next_report = -INF if poll is not None else self.now + progress_step if progress is not None else NEVER
        events = frames = 0
        until, until_seq = self.limit(until, until_seq)
        ev: Event                               # not Any: mypyc then keeps kind, port and depth unboxed
        while True:
            if cq:
                due = qdue()                    # None: empty, or nothing before the limit
                if due is None:
                    break
                ev = cast(Event, due)
            elif not heap:
                break
            else:
                ev = heap[0]
                if ev.time >= until and (ev.time > until or ev.seq >= until_seq):
                    break
                ev = pop(heap)
            t = ev.time
            kind = ev.kind
            node = ev.node
            port = ev.port
            frame = ev.frame
            link = ev.link
            seq = ev.seq
            if len(free) < free_max:
                free.append(ev)                 # read: reused for an event this one makes
            depth = seq >> dshift
            nd = depth + 1 if depth < max_depth else max_depth
            dnext = nd << dshift                # the depth of what this event makes for time t
            events += 1
            now = t
            if last is not None:                # the slip rule (free-running wall clock)
                seen = last[node]
                if t < seen:
                    if kind != k_wake:
                        d = seen - t
                        self.last_slip = (node.name, kind, port, t, seq, seen)
                        self.slips += 1
                        self.slip_ps += d
                        if d > self.max_slip_ps:
                            self.max_slip_ps = d
                    now = seen
                else:
                    last[node] = t
            if kind == k_intact:
                node.receive_intact(port, frame, link, now)
            elif kind == k_deliver:
                node.receive(port, frame, link, now)
            elif kind == k_faulty:
                link, lseq, inj = link
                if not inj.accept(lseq):
                    continue                    # a duplicate: the link layer drops it
                node.receive(port, frame, link, now)
            else:
                if node.sched_wake_at == t:
                    node.sched_wake_at = never
                node.wake(now)
            # the node's transmissions, then its next deadline (inlined route, arm)
            outbox = node.outbox
            if outbox:
                if transmit is None or hybrid:
                    peers = node.sched_peers
                    rest: list[tuple[int, Any, bool, int]] | None = None
                    for item in outbox:
                        p, f, lk, t0 = item
                        if cap is not None:
                            cap.write(t0 // 1000, f, lk)
                        if pcap is not None:
                            pcap.write_port(node, p, t0 // 1000, f, lk)
                        target = peers[p] if 0 <= p < len(peers) else None
                        if target is None:
                            if hybrid:          # to another process: transmit's
                                if rest is None:
                                    rest = []
                                rest.append(item)
                        else:
                            target.sent += 1
                            at = t0 + target.prop
                            pid = target.pid
                            key = (pid << nshift) | (port_rank(at, pid, target.pport) << pshift) | (target.sent & lmask)
                            inj = target.inj
                            if inj is None:
                                frames += 1
                                if at == t:
                                    key |= dnext
                                ev = reuse(free, at, key, k_route, target.peer, target.pport, f, lk)
                                if cq:
                                    qpush(ev)
                                else:
                                    push_(heap, ev)
                            else:
                                for extra, f2, fseq in inj.transmit(t0, f, lk):
                                    frames += 1
                                    a2 = at + extra
                                    qpush(Event(a2, key | dnext if a2 == t else key, k_faulty, target.peer,
                                                target.pport, f2, (lk, fseq, inj)))
                    outbox.clear()
                    if rest is not None and transmit is not None:
                        outbox.extend(rest)
                        self.cur_time = t
                        self.cur_depth = depth
                        transmit(node)          # may clip the run
                        until, until_seq = self.limit(until, until_seq)
                else:
                    self.cur_time = t
                    self.cur_depth = depth
                    transmit(node)              # may schedule deliveries, or clip the run
                    until, until_seq = self.limit(until, until_seq)
            d = node.deadline()
            if d < node.sched_wake_at:
                node.sched_wake_at = d
                wkey = node.sched_wake_key | dnext if d == t else node.sched_wake_key
                ev = reuse(free, d, wkey, k_wake, node, 0, None, False)
                if cq:
                    qpush(ev)
                else:
                    push_(heap, ev)
            if t >= next_report:
                if poll is not None:
                    if events & poll_mask == poll_mask:
                        poll()                  # may schedule deliveries
                elif progress is not None:
                    self.now = t
                    progress(t)
                    next_report = t + progress_step
        self.frames += frames
        self.events += events
        self.now = until
