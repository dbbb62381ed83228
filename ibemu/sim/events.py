"""What the scheduler holds and hands over (split from :mod:`.scheduler`, issue 27): the
node as the scheduler sees it (:class:`SimNode`), an event (:class:`Event`), where a
port's frames go (:class:`PortPeer`) and the capture and faulty-link protocols."""
from __future__ import annotations

from typing import Any, Final, Protocol

from .heap import Ordered

INF: Final = 1 << 62
"""A time after every event ("no deadline"; the sync protocol's "never", docs/sync-protocol.md)."""
NEVER: Final = INF - 1
"""The same within a process, where only the scheduler reads it (:meth:`SimNode.deadline`,
``sched_wake_at``): the largest int the compiled core holds unboxed, so comparing a
deadline with it takes no Python long (issue 28: :data:`INF` took the slow path twice
an event)."""


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
        self.outbox: list[tuple[int, Any, bool, int]] = []
        self.timers: list[Any] = []
        self.sched_id = -1
        # the scheduler's (Scheduler.__init__ sets them): the time of the WAKE it has
        # pending for this node, its WAKE key without the depth, and where each port's
        # frames go, indexed by port number (None: unconnected)
        self.sched_wake_at = NEVER
        self.sched_wake_key = 0
        self.sched_peers: list[PortPeer | None] = []

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
        """:meth:`next_deadline` as an int, :data:`NEVER` for none (the hot loop's: no
        boxing; :class:`ibemu.fabric.node.Node` reads its typed timers)."""
        return self.timers[0][0] if self.timers else NEVER


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


FREE_MAX: Final = 4096
"""The most events that ran a scheduler keeps to reuse (:func:`reuse`)."""


def reuse(free: list[Event], time: int, seq: int, kind: int, node: SimNode, port: int, frame: Any,
          link: Any) -> Event:
    """An :class:`Event` of these fields: one of *free*, events that ran, when it holds
    one, else a new one (issue 28: an event's allocation and release cost about as much
    as its ordering in the heap)."""
    if free:
        # __init__'s assignments, repeated rather than shared: an attribute that __init__
        # does not assign itself is one mypyc checks for being unset on every read
        ev = free.pop()
        ev.time = time
        ev.seq = seq
        ev.kind = kind
        ev.node = node
        ev.port = port
        ev.frame = frame
        ev.link = link
        return ev
    return Event(time, seq, kind, node, port, frame, link)


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
