"""Traffic generators: when a flow's source has a message to send.

- greedy: always backlogged between start and stop (seed 003 §3: "flows try to use all
  the network bandwidth that they can");
- messages: *count* messages, all posted at start;
- onoff: greedy during ON periods, silent during OFF periods, both exponentially
  distributed with the given means (seed 003 §6.3.2); the ON/OFF sequence is drawn from
  the scenario seed, so a run is a pure function of scenario and seed.
"""
from __future__ import annotations

import random
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .params import FlowSpec

INF = 1 << 62


class Generator:
    """Base: a flow is active in [start, stop)."""

    on_until: int | None = None
    """The end of the current ON period (ON/OFF sources only; seed 003 §6.3.2)."""

    def __init__(self, start: int, stop: int | None) -> None:
        self.start = start
        self.stop = INF if stop is None else stop

    def next_message(self, now: int) -> tuple[bool, int | None]:
        """Return ``(True, None)`` when a new message may start at *now*; otherwise
        ``(False, t)`` where *t* is when to ask again (None: never)."""
        if now < self.start:
            return False, self.start
        if now >= self.stop:
            return False, None
        return True, None

    def taken(self) -> None:
        """The source started the message offered by :meth:`next_message`."""


class Greedy(Generator):
    pass


class Messages(Generator):
    def __init__(self, start: int, stop: int | None, count: int) -> None:
        super().__init__(start, stop)
        self.remaining = count

    def next_message(self, now: int) -> tuple[bool, int | None]:
        if self.remaining <= 0:
            return False, None
        return super().next_message(now)

    def taken(self) -> None:
        self.remaining -= 1


class OnOff(Generator):
    def __init__(self, start: int, stop: int | None, mean_on: int, mean_off: int, seed: int, name: str) -> None:
        super().__init__(start, stop)
        self.rng = random.Random((seed << 32) ^ zlib.crc32(name.encode()))
        self.mean_on = mean_on
        self.mean_off = mean_off
        self.on_until: int = start + self._draw(mean_on)
        self.off_until = self.on_until + self._draw(mean_off)

    def _draw(self, mean: int) -> int:
        return max(1, int(self.rng.expovariate(1.0 / mean)))

    def next_message(self, now: int) -> tuple[bool, int | None]:
        ok, t = super().next_message(now)
        if not ok:
            return ok, t
        while now >= self.off_until:          # advance whole ON/OFF cycles
            self.on_until = self.off_until + self._draw(self.mean_on)
            self.off_until = self.on_until + self._draw(self.mean_off)
        if now < self.on_until:
            return True, None
        return False, (self.off_until if self.off_until < self.stop else None)


def make_generator(flow: FlowSpec, seed: int) -> Generator:
    if flow.pattern == "greedy":
        return Greedy(flow.start, flow.stop)
    if flow.pattern == "messages":
        return Messages(flow.start, flow.stop, flow.count or 1)
    if flow.pattern == "onoff":
        if flow.mean_on is None or flow.mean_off is None:
            raise ValueError("onoff flow %r needs mean_on and mean_off" % flow.name)
        return OnOff(flow.start, flow.stop, flow.mean_on, flow.mean_off, seed, flow.name)
    raise ValueError("unknown traffic pattern %r" % flow.pattern)
