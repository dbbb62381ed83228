"""The one scheduler of both clocks (../shared/DESIGN.md §1 and §7; issue 12 item 3).

A discrete-event loop over a heap of events keyed by (time, sequence), in the manner of
SimPy's core.  Every event is an :class:`Event` ``(time, seq, kind, node, port, frame,
link)`` (indexable like that tuple):

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

*seq* numbers the events in the order they are scheduled, so that events of one instant
run first in, first out.  After each event the scheduler takes the node's transmissions
(``outbox``) and arms its next deadline; it keeps, per node, the time of the earliest
``WAKE`` it has pending (``sched_wake_at``) so that a deadline is scheduled once, not once
per event.  Both per-node tables live on the node itself (:class:`SimNode`'s
``sched_wake_at`` and ``sched_peers``), so the compiled core reads them as attributes.

The virtual clock (:class:`ibemu.sim.engine.VirtualEngine`) runs this loop as fast as
the CPU allows: a node's transmissions become ``DELIVER`` events at the peer port after
the link's propagation delay (the *peer* table).  The wall clock
(:mod:`ibemu.runtime.loop`) runs the same loop and plugs in, as SimPy's real-time
environment overrides one step:

- *transmit*: a strategy that sends a node's outbox as datagrams instead of routing it
  (frames then come back through :meth:`Scheduler.deliver`);
- *poll*: called after every ``poll_mask + 1``-th event of a run, to take in datagrams
  from other processes between events (it takes the place of *progress*);
- *last_now*: the slip rule.  A node never sees a decreasing ``now``: an event behind
  the latest time its node has seen runs at that time instead; for deliveries this is a
  *slip*, counted with its total and maximum.  On the virtual clock events come in time
  order, so the rule could never act, and it is off (``None``).

The hot loop (:meth:`Scheduler.run`) is written once, inlined: on the virtual clock the
hooks cost a test of a local variable per event, no call.  This module is sans-I/O: it
imports neither trio, socket nor time, and knows the nodes only by the :class:`SimNode`
class.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from heapq import heappop, heappush
from typing import Any, Final, Protocol

from .heap import NATIVE, Ordered, heap_pop, heap_push, push

INF: Final = 1 << 62
"""A time after every event ("no deadline")."""
DELIVER: Final = 0
WAKE: Final = 1
DELIVER_FAULTY: Final = 2
DELIVER_INTACT: Final = 3


class SimNode:
    """What the scheduler needs of a node (:class:`ibemu.fabric.node.Node` extends it):
    it is handed frames and deadlines with the time as an argument, and leaves its
    transmissions ``(port, frame, link, t_start)`` in ``outbox`` and its deadlines,
    ordered and indexed like tuples that begin ``(t, seq, ...)``, in the heap ``timers``;
    the loop reads the earliest with :meth:`deadline`.

    A concrete base class rather than a protocol, so that the compiled core (issue 16)
    calls a node's methods and reads its attributes natively instead of by name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.outbox: list[Any] = []
        self.timers: list[Any] = []
        # the scheduler's (Scheduler.__init__ sets them): the time of the WAKE it has
        # pending for this node, and where each port's frames go
        self.sched_wake_at = INF
        self.sched_peers: dict[int, Peer] = {}

    def receive(self, port: int, frame: Any, link: bool, now: int, /) -> None:
        raise NotImplementedError

    def receive_intact(self, port: int, frame: Any, link: bool, now: int, /) -> None:
        """:meth:`receive` for a frame that reached *port* exactly as a node of the same
        fault-free scheduler built it (``DELIVER_INTACT``): its CRCs are right by
        construction, so a node may skip computing them.  By default: :meth:`receive`."""
        self.receive(port, frame, link, now)

    def wake(self, now: int, /) -> None:
        raise NotImplementedError

    def start(self, now: int, /) -> None:
        raise NotImplementedError

    def next_deadline(self) -> int | None:
        return self.timers[0][0] if self.timers else None

    def deadline(self) -> int:
        """:meth:`next_deadline` as an int, :data:`INF` for none (the hot loop's: no
        boxing; :class:`ibemu.fabric.node.Node` reads its typed timers)."""
        return self.timers[0][0] if self.timers else INF


class Capture(Protocol):
    """A capture file: every frame as it starts on a link."""

    def write(self, time_ns: int, frame: Any, link: bool, /) -> None: ...


class FaultyLink(Protocol):
    """The fault injector of a directed link (:class:`ibemu.fabric.faults.LinkFaultInjector`)."""

    def transmit(self, now: int, frame: Any, link: bool = False, /) -> list[Any]: ...

    def accept(self, seq: int, /) -> bool: ...


class Event(Ordered):
    """One scheduled event ``(time, seq, kind, node, port, frame, link)`` (the module
    text).  The heap orders events by (time, seq) as it ordered the tuples it held
    before (issue 16): *seq* is unique, so the order is the same, but a native object
    compares its two ints directly and holds them unboxed, where a tuple compared item
    by item through the generic rich comparison and boxed every int (:mod:`.heap`).
    ``event[i]`` reads the i-th field, as the tuple's did."""
    __slots__ = ("kind", "node", "port", "frame", "link")

    def __init__(self, time: int, seq: int, kind: int, node: SimNode, port: int, frame: Any,
                 link: Any) -> None:
        self.time = time
        self.seq = seq
        self.kind = kind
        self.node = node
        self.port = port
        self.frame = frame
        self.link = link

    def __getitem__(self, i: int) -> Any:
        return (self.time, self.seq, self.kind, self.node, self.port, self.frame, self.link)[i]

    def __len__(self) -> int:
        return 7

Peer = tuple[SimNode, int, int, "FaultyLink | None"]
"""Where a port's frames go: ``(peer node, peer port, propagation ps, injector)``."""


class Scheduler:
    """The heap, the dispatch and the deadline bookkeeping of a set of *nodes*.

    *capture*, when given, gets every frame the nodes start (``write(time_ns, frame,
    link)``).  The wall-clock hooks (*transmit*, *poll*, *last_now*) are ``None`` on the
    virtual clock; see the module text.
    """

    def __init__(self, nodes: Iterable[SimNode], capture: Capture | None = None) -> None:
        self.nodes: list[SimNode] = list(nodes)
        self.capture = capture
        self.heap: list[Event] = []
        self.seq = 0
        self.now = 0                    # every event before it has run
        self.events = 0
        self.frames = 0                 # frames routed across links (frame-hops)
        # frames routed from node to node arrive as DELIVER_INTACT (no CRC checks); set
        # by VirtualEngine for a run without fault injectors, never on the wall clock,
        # whose frames come in from other processes (the module text)
        self.intact = False
        for n in self.nodes:
            n.sched_wake_at = INF
            n.sched_peers = {}
        # the wall clock's hooks (ibemu.runtime.loop)
        self.transmit: Callable[[SimNode], None] | None = None
        self.poll: Callable[[], None] | None = None
        self.poll_mask = 1
        self.last_now: dict[SimNode, int] | None = None
        self.slips = 0
        self.slip_ps = 0
        self.max_slip_ps = 0

    # ------------------------------------------------------------------ scheduling
    def connect(self, node: SimNode, port: int, peer: SimNode, peer_port: int, propagation: int,
                injector: FaultyLink | None = None) -> None:
        """*node*'s frames on *port* arrive at *peer*'s *peer_port* after *propagation* ps
        (through *injector*, a faulty link, when given)."""
        node.sched_peers[port] = (peer, peer_port, propagation, injector)

    def deliver(self, t: int, node: SimNode, port: int, frame: Any, link: bool) -> None:
        """Schedule *frame*'s arrival on *node*'s *port* at *t* (a datagram taken in)."""
        self.seq += 1
        push(self.heap, Event(t, self.seq, DELIVER, node, port, frame, link))

    def arm(self, node: SimNode) -> None:
        """Schedule *node*'s next deadline unless a wake-up at or before it is pending."""
        d = node.next_deadline()
        if d is not None and d < node.sched_wake_at:
            node.sched_wake_at = d
            self.seq += 1
            push(self.heap, Event(d, self.seq, WAKE, node, 0, None, False))

    def route(self, node: SimNode) -> None:
        """Turn *node*'s outbox into deliveries at the peer ports (the virtual clock's
        transmission; :meth:`run` inlines the same steps)."""
        heap = self.heap
        peers = node.sched_peers
        cap = self.capture
        kind = DELIVER_INTACT if self.intact else DELIVER
        for port, frame, link, t0 in node.outbox:
            if cap is not None:
                cap.write(t0 // 1000, frame, link)
            target = peers.get(port)
            if target is None:
                continue                        # unconnected port: the frame goes nowhere
            peer, pport, prop, inj = target
            if inj is not None:
                for extra, f2, lseq in inj.transmit(t0, frame, link):
                    self.seq += 1
                    self.frames += 1
                    push(heap, Event(t0 + prop + extra, self.seq, DELIVER_FAULTY, peer, pport,
                                    f2, (link, lseq, inj)))
                continue
            self.seq += 1
            self.frames += 1
            push(heap, Event(t0 + prop, self.seq, kind, peer, pport, frame, link))
        node.outbox.clear()

    def after(self, node: SimNode) -> None:
        """Take *node*'s transmissions and arm its next deadline (after the node was
        driven from outside the loop: started, or given a timer)."""
        if node.outbox:
            if self.transmit is None:
                self.route(node)
            else:
                self.transmit(node)
        self.arm(node)

    def start(self, t: int = 0) -> None:
        """Start every node at *t*."""
        for node in self.nodes:
            node.start(t)
            self.after(node)

    # ------------------------------------------------------------------ the hot loop
    def run(self, until: int, progress: Callable[[int], object] | None = None,
            progress_step: int = 0) -> None:
        """Run every event before time *until* (ps), in (time, seq) order.
        *progress(now)* is called about every *progress_step* ps of emulated time."""
        heap = self.heap
        pop, push_ = heappop, heappush      # pure Python's heap, as locals: faster
        native = NATIVE                     # the compiled core's heap (.heap): native calls
        k_deliver, k_wake, k_faulty, k_intact, inf = DELIVER, WAKE, DELIVER_FAULTY, DELIVER_INTACT, INF
        k_route = k_intact if self.intact else k_deliver     # the kind of a routed frame
        cap = self.capture
        transmit = self.transmit
        poll = self.poll
        poll_mask = self.poll_mask
        last = self.last_now
        next_report = self.now + progress_step if progress is not None else INF
        events = 0
        frames = 0
        seq = self.seq
        if poll is not None:
            next_report = -INF                  # the wall clock: poll in place of progress
        while heap and heap[0].time < until:
            ev: Event = heap_pop(heap) if native else pop(heap)
            t = ev.time
            kind = ev.kind
            node = ev.node
            port = ev.port
            frame = ev.frame
            link = ev.link
            events += 1
            now = t
            if last is not None:                # the slip rule (wall clock)
                seen = last[node]
                if t < seen:
                    if kind != k_wake:
                        d = seen - t
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
                    node.sched_wake_at = inf
                node.wake(now)
            # the node's transmissions, then its next deadline (inlined route, arm)
            outbox = node.outbox
            if outbox:
                if transmit is None:
                    peers = node.sched_peers
                    for p, f, lk, t0 in outbox:
                        if cap is not None:
                            cap.write(t0 // 1000, f, lk)
                        target = peers.get(p)
                        if target is not None:
                            inj = target[3]
                            if inj is None:
                                seq += 1
                                frames += 1
                                ev = Event(t0 + target[2], seq, k_route, target[0], target[1], f, lk)
                                if native:
                                    heap_push(heap, ev)
                                else:
                                    push_(heap, ev)
                            else:
                                for extra, f2, lseq in inj.transmit(t0, f, lk):
                                    seq += 1
                                    frames += 1
                                    push(heap, Event(t0 + target[2] + extra, seq, k_faulty,
                                                     target[0], target[1], f2, (lk, lseq, inj)))
                    outbox.clear()
                else:
                    self.seq = seq
                    transmit(node)              # may schedule deliveries
                    seq = self.seq
            d = node.deadline()
            if d < node.sched_wake_at:
                node.sched_wake_at = d
                seq += 1
                ev = Event(d, seq, k_wake, node, 0, None, False)
                if native:
                    heap_push(heap, ev)
                else:
                    push_(heap, ev)
            if t >= next_report:
                if poll is not None:
                    if events & poll_mask == poll_mask:
                        self.seq = seq
                        poll()                  # may schedule deliveries
                        seq = self.seq
                elif progress is not None:
                    self.now = t
                    progress(t)
                    next_report = t + progress_step
        self.seq = seq
        self.frames += frames
        self.events += events
        self.now = until
