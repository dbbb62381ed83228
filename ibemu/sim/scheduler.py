"""The one scheduler of both clocks (../shared/DESIGN.md §1, §7 and §8; issues 12 and 27).

A discrete-event loop over a heap of events, in the manner of SimPy's core.  Every event
is an :class:`Event` ``(time, seq, kind, node, port, frame, link)`` (indexable like that
tuple):

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

The order (issue 27 Deliver 2).  Events run in the order of their *key* ``(time, seq)``,
and *seq* is not a counter of insertions but is derived from the model alone
(:func:`order`), so that every placement of the nodes on processes, and the virtual
clock, runs every node's events in one and the same order::

    seq = depth << 56 | node << 38 | port << 29 | link_seq mod 2**29

- *depth*: how many events of the same instant lie behind this one: an event made by
  an event at the same emulated time (a zero-delay reaction over a link without
  propagation, a timer armed for *now*) has its maker's depth plus one; any other has
  depth 0.  Causes therefore run before their effects at one instant, and a key made
  while an event runs is always greater than that event's key: the heap pops keys in
  increasing order, a pure function of the model.
- *node*: the node's index in the fabric (``SimNode.sched_id``, the build order);
- *port*: the receiving port's *rank* at that instant (:func:`port_rank`): a permutation
  of the node's ports drawn afresh for every instant from the time and the node, so that
  no port wins every tie (ordering simultaneous arrivals by port number would favour
  port 1 over port 2 at every instant: with greedy flows of equal packets on equal links,
  arrivals tie at every packet, and a switch's FIFOs would serve the low ports first);
  :data:`WAKE_PORT` for a deadline, so at one (time, depth) a node takes the frames that
  arrived before its own timers;
- *link_seq*: the frame's number on its directed link (1, 2, ...: the shim's sequence
  number on the wall clock), which keeps a link's frames of one instant in the order
  they were sent.

Before issue 27, *seq* counted insertions into one heap, so events of one instant ran
first in, first out, and that order depended on which events shared a heap: a worker's
heap holds only its own nodes.  The derived key changes the order of simultaneous events
only (never their times), and only where the old order was an accident of insertion.

After each event the scheduler takes the node's transmissions (``outbox``) and arms its
next deadline; it keeps, per node, the time of the earliest ``WAKE`` it has pending
(``sched_wake_at``) so that a deadline is scheduled once, not once per event.  Both
per-node tables live on the node itself (:class:`SimNode`'s ``sched_wake_at`` and
``sched_peers``), so the compiled core reads them as attributes.

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

DEPTH_SHIFT: Final = 56
NODE_SHIFT: Final = 38
PORT_SHIFT: Final = 29
LSEQ_MASK: Final = (1 << 29) - 1
MAX_DEPTH: Final = 63
"""Depths beyond it are counted as it (64 zero-delay reactions in one instant)."""
MAX_NODES: Final = 1 << 18
MAX_PORT: Final = 507
"""The highest port number a scheduler orders (IBA switches have at most 254)."""
WAKE_PORT: Final = 511
"""The *port* field of a deadline's key: after every port's deliveries (the module text)."""
DEPTH_ONE: Final = 1 << DEPTH_SHIFT


def order(depth: int, node: int, port: int, link_seq: int = 0) -> int:
    """The *seq* of an event's key (the module text): *depth* at its instant, the *node*'s
    index, the receiving *port* (:data:`WAKE_PORT` for a deadline), the frame's
    *link_seq* on its directed link."""
    if depth > MAX_DEPTH:
        depth = MAX_DEPTH
    return (depth << DEPTH_SHIFT) | (node << NODE_SHIFT) | (port << PORT_SHIFT) | (link_seq & LSEQ_MASK)


def port_rank(t: int, node: int, port: int) -> int:
    """The place, 1 to 508, of *port* among *node*'s simultaneous arrivals at time *t*
    (the module text): ``(port + 1) * a mod 509`` with 509 prime and the multiplier
    ``a`` in 1..508 drawn from *t* and *node* by a multiplicative hash (Knuth's
    2654435761 on 26 bits, so that every product fits a machine word), a permutation of
    the ports 0..507 that changes from instant to instant."""
    x = (t ^ (t >> 26) ^ (t >> 47) ^ node) & 0x3FFFFFF
    a = 1 + ((x * 2654435761) >> 20) % 508
    return ((port + 1) * a) % 509


def arrival_order(depth: int, t: int, node: int, port: int, link_seq: int) -> int:
    """:func:`order` of a frame's arrival on *node*'s *port* at *t* (its port's rank)."""
    return order(depth, node, port_rank(t, node, port), link_seq)


def depth_of(seq: int) -> int:
    """The depth field of an event's *seq*."""
    return seq >> DEPTH_SHIFT


class SimNode:
    """What the scheduler needs of a node (:class:`ibemu.fabric.node.Node` extends it):
    it is handed frames and deadlines with the time as an argument, and leaves its
    transmissions ``(port, frame, link, t_start)`` in ``outbox`` and its deadlines,
    ordered and indexed like tuples that begin ``(t, seq, ...)``, in the heap ``timers``;
    the loop reads the earliest with :meth:`deadline`.

    ``sched_id`` is the node's index in its fabric (the build order, set by
    :func:`ibemu.build.build_fabric`; a scheduler numbers nodes that have none by their
    place in its list): the *node* field of its events' keys.

    A concrete base class rather than a protocol, so that the compiled core (issue 16)
    calls a node's methods and reads its attributes natively instead of by name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.outbox: list[Any] = []
        self.timers: list[Any] = []
        self.sched_id = -1
        # the scheduler's (Scheduler.__init__ sets them): the time of the WAKE it has
        # pending for this node, its WAKE key without the depth, and where each port's
        # frames go
        self.sched_wake_at = INF
        self.sched_wake_key = 0
        self.sched_peers: dict[int, PortPeer] = {}

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


class PortCapture(Protocol):
    """A capture that files every frame under the port it leaves from (a pcapng
    interface per directed link, :class:`ibemu.capture.pcapng.LinkCapture`)."""

    def write_port(self, node: Any, port: int, time_ns: int, frame: Any, link: bool, /) -> None: ...


class FaultyLink(Protocol):
    """The fault injector of a directed link (:class:`ibemu.fabric.faults.LinkFaultInjector`)."""

    def transmit(self, now: int, frame: Any, link: bool = False, /) -> list[Any]: ...

    def accept(self, seq: int, /) -> bool: ...


class Event(Ordered):
    """One scheduled event ``(time, seq, kind, node, port, frame, link)`` (the module
    text).  The heap orders events by (time, seq), *seq* derived from the model
    (:func:`order`); a native object compares its two ints directly and holds them
    unboxed (:mod:`.heap`).  ``event[i]`` reads the i-th field, as a tuple's would."""
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


class PortPeer:
    """Where a port's frames go: the *peer* node's *pport* after *prop* ps (through *inj*,
    a faulty link, when given).  *pid* is the peer's node index; *sent* counts the frames
    sent on the directed link (their link sequence numbers).  ``peer[i]`` reads (peer,
    pport, prop, inj)[i]."""
    __slots__ = ("peer", "pport", "prop", "inj", "pid", "sent")

    def __init__(self, peer: SimNode, pport: int, prop: int, inj: FaultyLink | None) -> None:
        self.peer = peer
        self.pport = pport
        self.prop = prop
        self.inj = inj
        self.pid = peer.sched_id
        self.sent = 0

    def __getitem__(self, i: int) -> Any:
        return (self.peer, self.pport, self.prop, self.inj)[i]


Peer = PortPeer
"""(Kept name.)"""


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
        self.now = 0                    # every event before it has run
        self.cur_time = 0               # the running event's time and depth (transmit reads them)
        self.cur_depth = 0
        self.events = 0
        self.frames = 0                 # frames routed across links (frame-hops)
        # frames routed from node to node arrive as DELIVER_INTACT (no CRC checks); set
        # by VirtualEngine for a run without fault injectors, never on the wall clock,
        # whose frames come in from other processes (the module text)
        self.intact = False
        for i, n in enumerate(self.nodes):
            if n.sched_id < 0:
                n.sched_id = i
            if n.sched_id >= MAX_NODES:
                raise ValueError("at most %d nodes, got node index %d" % (MAX_NODES, n.sched_id))
            n.sched_wake_at = INF
            n.sched_wake_key = order(0, n.sched_id, WAKE_PORT)
            n.sched_peers = {}
        # the wall clock's hooks (ibemu.runtime.loop)
        self.transmit: Callable[[SimNode], None] | None = None
        self.hybrid = False
        self.port_capture: PortCapture | None = None
        self.poll: Callable[[], None] | None = None
        self.poll_mask = 1
        self.last_now: dict[SimNode, int] | None = None
        # the exact wall clock's window clip: no event at or after (clip_time, clip_seq)
        # runs (set by transmit when a frame leaves for another process, :meth:`clip`)
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
        node.sched_peers[port] = PortPeer(peer, peer_port, propagation, injector)

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
        push(self.heap, Event(t, seq, DELIVER, node, port, frame, link))

    def arm(self, node: SimNode) -> None:
        """Schedule *node*'s next deadline unless a wake-up at or before it is pending."""
        d = node.next_deadline()
        if d is not None and d < node.sched_wake_at:
            node.sched_wake_at = d
            push(self.heap, Event(d, node.sched_wake_key | self.depth_at(d), WAKE, node, 0, None, False))

    def route(self, node: SimNode) -> None:
        """Turn *node*'s outbox into deliveries at the peer ports (the virtual clock's
        transmission; :meth:`run` inlines the same steps)."""
        heap = self.heap
        peers = node.sched_peers
        cap = self.capture
        pcap = self.port_capture
        kind = DELIVER_INTACT if self.intact else DELIVER
        rest: list[Any] = []
        for item in node.outbox:
            port, frame, link, t0 = item
            if cap is not None:
                cap.write(t0 // 1000, frame, link)
            if pcap is not None:
                pcap.write_port(node, port, t0 // 1000, frame, link)
            target = peers.get(port)
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
                    push(heap, Event(at, key | self.depth_at(at), DELIVER_FAULTY, target.peer,
                                     target.pport, f2, (link, fseq, inj)))
                continue
            self.frames += 1
            at = t0 + target.prop
            key = order(0, target.pid, port_rank(at, target.pid, target.pport), target.sent)
            push(heap, Event(at, key | self.depth_at(at), kind, target.peer, target.pport, frame, link))
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
        native = NATIVE                     # the compiled core's heap (.heap): native calls
        k_deliver, k_wake, k_faulty, k_intact, inf = DELIVER, WAKE, DELIVER_FAULTY, DELIVER_INTACT, INF
        k_route = k_intact if self.intact else k_deliver     # the kind of a routed frame
        lmask = LSEQ_MASK
        dshift = DEPTH_SHIFT
        nshift = NODE_SHIFT
        pshift = PORT_SHIFT
        max_depth = MAX_DEPTH
        cap = self.capture
        transmit = self.transmit
        hybrid = self.hybrid
        pcap = self.port_capture
        poll = self.poll
        poll_mask = self.poll_mask
        last = self.last_now
        next_report = self.now + progress_step if progress is not None else INF
        events = 0
        frames = 0
        if poll is not None:
            next_report = -INF                  # the wall clock: poll in place of progress
        if self.clip_time < until or (self.clip_time == until and self.clip_seq < until_seq):
            until, until_seq = self.clip_time, self.clip_seq
        while heap:
            ev: Event = heap[0]
            t = ev.time
            if t >= until and (t > until or ev.seq >= until_seq):
                break
            ev = heap_pop(heap) if native else pop(heap)
            kind = ev.kind
            node = ev.node
            port = ev.port
            frame = ev.frame
            link = ev.link
            depth = ev.seq >> dshift
            nd = depth + 1 if depth < max_depth else max_depth
            dnext = nd << dshift                # the depth of what this event makes for time t
            events += 1
            now = t
            if last is not None:                # the slip rule (free-running wall clock)
                seen = last[node]
                if t < seen:
                    if kind != k_wake:
                        d = seen - t
                        self.last_slip = (node.name, kind, port, t, ev.seq, seen)
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
                if transmit is None or hybrid:
                    peers = node.sched_peers
                    rest: list[Any] | None = None
                    for item in outbox:
                        p, f, lk, t0 = item
                        if cap is not None:
                            cap.write(t0 // 1000, f, lk)
                        if pcap is not None:
                            pcap.write_port(node, p, t0 // 1000, f, lk)
                        target = peers.get(p)
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
                                ev = Event(at, key | dnext if at == t else key, k_route, target.peer,
                                           target.pport, f, lk)
                                if native:
                                    heap_push(heap, ev)
                                else:
                                    push_(heap, ev)
                            else:
                                for extra, f2, fseq in inj.transmit(t0, f, lk):
                                    frames += 1
                                    a2 = at + extra
                                    push(heap, Event(a2, key | dnext if a2 == t else key, k_faulty,
                                                     target.peer, target.pport, f2, (lk, fseq, inj)))
                    outbox.clear()
                    if rest is not None and transmit is not None:
                        outbox.extend(rest)
                        self.cur_time = t
                        self.cur_depth = depth
                        transmit(node)          # may clip the run
                        if self.clip_time < until or (self.clip_time == until and self.clip_seq < until_seq):
                            until, until_seq = self.clip_time, self.clip_seq
                else:
                    self.cur_time = t
                    self.cur_depth = depth
                    transmit(node)              # may schedule deliveries, or clip the run
                    if self.clip_time < until or (self.clip_time == until and self.clip_seq < until_seq):
                        until, until_seq = self.clip_time, self.clip_seq
            d = node.deadline()
            if d < node.sched_wake_at:
                node.sched_wake_at = d
                ev = Event(d, node.sched_wake_key | dnext if d == t else node.sched_wake_key, k_wake,
                           node, 0, None, False)
                if native:
                    heap_push(heap, ev)
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
