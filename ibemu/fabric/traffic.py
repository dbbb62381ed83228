"""Traffic generators: when a flow's source has a message to send.

- greedy: always backlogged between start and stop (seed 003 §3: "flows try to use all
  the network bandwidth that they can");
- messages: *count* messages, all posted at start;
- onoff: greedy during ON periods, silent during OFF periods, both exponentially
  distributed with the given means (seed 003 §6.3.2); the ON/OFF sequence is drawn from
  the scenario seed, so a run is a pure function of scenario and seed;
- poisson: messages arrive as a Poisson process (exponential interarrival times of the
  given mean; issue 15 Deliver 4) and queue at the source until it starts them: an open
  loop, whose backlog is counted (:attr:`Poisson.backlog`), never lost.

Message sizes: every generator offers each message's size (:meth:`Generator.size`):
the flow's fixed ``message_size``, or one drawn per message from its ``size_dist``
(:class:`MessageSizes`).  Each flow draws from its own random streams, seeded by the
scenario seed and the flow's name (one for its ON/OFF periods or arrivals, one for its
sizes), so adding a flow does not change the others' draws.
"""
from __future__ import annotations

import math
import random
import zlib
from typing import Final, TYPE_CHECKING

if TYPE_CHECKING:
    from .params import FlowSpec, SizeDist

INF: Final = 1 << 62


def flow_rng(seed: int, name: str, stream: str = "") -> random.Random:
    """A flow's random stream: from the scenario *seed* and the flow's *name* (and the
    *stream*'s name, "" for the arrivals of :class:`OnOff` and :class:`Poisson`)."""
    return random.Random((seed << 32) ^ zlib.crc32((name + stream).encode()))


class MessageSizes:
    """Message sizes drawn from a :class:`~ibemu.fabric.params.SizeDist` with their own
    random stream (see :func:`flow_rng`, stream "/size"); whole bytes in [low, high]."""

    def __init__(self, dist: SizeDist, rng: random.Random) -> None:
        self.dist = dist
        self.rng = rng
        if dist.kind == "choice":
            total = sum(dist.weights) if dist.weights else float(len(dist.values))
            acc, self.cum = 0.0, []
            for w in dist.weights or [1.0] * len(dist.values):
                acc += w
                self.cum.append(acc / total)

    def draw(self) -> int:
        """One message's size in bytes."""
        d, rng = self.dist, self.rng
        if d.kind == "exponential":
            return min(d.high, max(d.low, round(rng.expovariate(1.0 / d.mean))))
        if d.kind == "uniform":
            return rng.randint(d.low, d.high)
        if d.kind == "choice":
            u = rng.random()
            for v, c in zip(d.values, self.cum):
                if u < c:
                    return v
            return d.values[-1]
        raise ValueError("unknown size distribution %r" % d.kind)


class Generator:
    """Base: a flow is active in [start, stop)."""

    on_until: int | None = None
    """The end of the current ON period (ON/OFF sources only; seed 003 §6.3.2)."""

    sizes: MessageSizes | None = None
    """Sizes drawn per message (None: every message is :attr:`message_size` bytes)."""

    def __init__(self, start: int, stop: int | None, message_size: int = 2048) -> None:
        self.start = start
        self.stop = INF if stop is None else stop
        self.message_size = message_size
        self._size: int | None = None       # the offered message's size, once drawn

    def next_message(self, now: int) -> tuple[bool, int | None]:
        """Return ``(True, None)`` when a new message may start at *now*; otherwise
        ``(False, t)`` where *t* is when to ask again (None: never)."""
        if now < self.start:
            return False, self.start
        if now >= self.stop:
            return False, None
        return True, None

    def size(self) -> int:
        """The size in bytes of the message :meth:`next_message` offers (drawn once, when
        first asked, and kept until the message is :meth:`taken`)."""
        if self.sizes is None:
            return self.message_size
        if self._size is None:
            self._size = self.sizes.draw()
        return self._size

    def taken(self) -> int:
        """The source started the message offered by :meth:`next_message`; returns its
        size in bytes."""
        n = self.size()
        self._size = None
        return n


class Greedy(Generator):
    pass


class Messages(Generator):
    def __init__(self, start: int, stop: int | None, count: int, message_size: int = 2048) -> None:
        super().__init__(start, stop, message_size)
        self.remaining = count

    def next_message(self, now: int) -> tuple[bool, int | None]:
        if self.remaining <= 0:
            return False, None
        return super().next_message(now)

    def taken(self) -> int:
        self.remaining -= 1
        return super().taken()


class OnOff(Generator):
    def __init__(self, start: int, stop: int | None, mean_on: int, mean_off: int, seed: int, name: str,
                 message_size: int = 2048) -> None:
        super().__init__(start, stop, message_size)
        self.rng = flow_rng(seed, name)
        self.mean_on = mean_on
        self.mean_off = mean_off
        on_until = start + self._draw(mean_on)
        self.on_until = on_until
        self.off_until = on_until + self._draw(mean_off)

    def _draw(self, mean: int) -> int:
        return max(1, int(self.rng.expovariate(1.0 / mean)))

    def next_message(self, now: int) -> tuple[bool, int | None]:
        ok, t = super().next_message(now)
        if not ok:
            return ok, t
        on_until = self.on_until
        assert on_until is not None
        while now >= self.off_until:          # advance whole ON/OFF cycles
            on_until = self.off_until + self._draw(self.mean_on)
            self.on_until = on_until
            self.off_until = on_until + self._draw(self.mean_off)
        if now < on_until:
            return True, None
        return False, (self.off_until if self.off_until < self.stop else None)


class Poisson(Generator):
    """Messages arriving as a Poisson process from *start*: exponential interarrival
    times of mean *mean_interarrival* ps, drawn from the flow's stream (:func:`flow_rng`).
    Arrivals before *stop* queue at the source (open loop): :attr:`arrivals` counts them,
    :attr:`backlog` those not yet started; none is dropped, so a source offered more than
    its link carries builds a backlog rather than slowing its arrivals."""

    def __init__(self, start: int, stop: int | None, mean_interarrival: int, seed: int, name: str,
                 message_size: int = 2048) -> None:
        super().__init__(start, stop, message_size)
        if mean_interarrival <= 0:
            raise ValueError("mean interarrival time must be positive")
        self.rng = flow_rng(seed, name)
        self.mean = mean_interarrival
        self.arrivals = 0                   # messages arrived so far
        self.backlog = 0                    # arrived and not yet started
        self._t = float(start) + self.rng.expovariate(1.0 / mean_interarrival)
        self.next_arrival = math.ceil(self._t)

    def _arrive(self, now: int) -> None:
        """Count the arrivals up to *now* (and before stop)."""
        while self.next_arrival <= now and self.next_arrival < self.stop:
            self.arrivals += 1
            self.backlog += 1
            self._t += self.rng.expovariate(1.0 / self.mean)
            self.next_arrival = math.ceil(self._t)

    def next_message(self, now: int) -> tuple[bool, int | None]:
        if now < self.start:
            return False, self.start
        if now >= self.stop:
            return False, None
        self._arrive(now)
        if self.backlog:
            return True, None
        return False, (self.next_arrival if self.next_arrival < self.stop else None)

    def taken(self) -> int:
        self.backlog -= 1
        return super().taken()


def make_generator(flow: FlowSpec, seed: int) -> Generator:
    """The generator of *flow* (its ``pattern``), with its message sizes."""
    gen: Generator
    size = flow.message_size
    if flow.pattern == "greedy":
        gen = Greedy(flow.start, flow.stop, size)
    elif flow.pattern == "messages":
        gen = Messages(flow.start, flow.stop, flow.count or 1, size)
    elif flow.pattern == "onoff":
        if flow.mean_on is None or flow.mean_off is None:
            raise ValueError("onoff flow %r needs mean_on and mean_off" % flow.name)
        gen = OnOff(flow.start, flow.stop, flow.mean_on, flow.mean_off, seed, flow.name, size)
    elif flow.pattern == "poisson":
        if flow.mean_interarrival is None:
            raise ValueError("poisson flow %r needs mean_interarrival" % flow.name)
        gen = Poisson(flow.start, flow.stop, flow.mean_interarrival, seed, flow.name, size)
    else:
        raise ValueError("unknown traffic pattern %r" % flow.pattern)
    if flow.size_dist is not None:
        gen.sizes = MessageSizes(flow.size_dist, flow_rng(seed, flow.name, "/size"))
    return gen
