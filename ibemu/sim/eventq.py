"""The scheduler's queue of events (issue 28): items ordered by their key ``(time, seq)``,
least first (:mod:`.scheduler`, :mod:`.order`).

*seq* is unique within a queue, so every correct heap pops one and the same sequence:
the order is a function of the keys alone.  Two implementations of one interface:

- this file, for the pure-Python core: a list kept as a heap by :mod:`heapq` (whose C
  functions order the items by their ``__lt__``, :class:`ibemu.sim.heap.Ordered`).  The
  scheduler's hot loop, in pure Python, calls :func:`heapq.heappush` and
  :func:`heapq.heappop` on it directly: it is a list, and the C queue is not;
- ``eventq.c``, the same module compiled by setup.py beside the mypyc core (an extension
  module, not mypyc's: ``ibemu.core.C_SOURCES``): each key is kept beside its item in one
  array of C structs, so ordering never reads the items.  A pop of the heap of Python
  objects took 1,824 instructions on the 648-host congestion-tree case, a quarter of the
  event loop's, and at 11,664 hosts the objects it compared were cache misses as well
  (benchmarks/README.md, stops 37 and 38).

``push_item(item)`` takes the key from the item; the C queue reads the compiled core's
events' keys from their fields, without making int objects (:func:`native_layout`, which
the scheduler calls once: it checks mypyc's layout on a probe before relying on it).

Both are sequences: ``len(q)``, ``q[i]`` (``q[0]`` is the least item) and iteration (the
heap's order, not sorted), so the wall clock's runtime reads the next event's time as
``q[0].time`` from either.
"""
from __future__ import annotations

import heapq
from typing import Any, Final

INT64_MAX: Final = (1 << 63) - 1


class EventQueue(list[Any]):
    """Items under keys ``(time, seq)``; each item has ``time`` and ``seq`` attributes equal
    to its key and orders by them (``__lt__``), as :class:`ibemu.sim.events.Event` does."""

    def __init__(self) -> None:
        super().__init__()
        self.lim_time = INT64_MAX
        self.lim_seq = 0

    def push(self, item: Any, time: int, seq: int) -> None:
        """Add *item* under the key ``(time, seq)`` (its own ``time`` and ``seq``)."""
        if item.time != time or item.seq != seq:
            raise ValueError("item's key (%d, %d) is not (%d, %d)" % (item.time, item.seq, time, seq))
        heapq.heappush(self, item)

    def push_item(self, item: Any) -> None:
        """Add *item* under its own key ``(item.time, item.seq)``."""
        self.push(item, item.time, item.seq)

    def pop_least(self) -> Any:
        """Remove and return the item of the least key (IndexError when empty)."""
        if not self:
            raise IndexError("pop_least from an empty queue")
        return heapq.heappop(self)

    def set_limit(self, time: int, seq: int) -> None:
        """:meth:`pop_due` returns nothing at or after the key ``(time, seq)``."""
        self.lim_time = time
        self.lim_seq = seq

    def pop_due(self) -> Any:
        """Remove and return the least item if its key is before the limit, else None."""
        if not self:
            return None
        top = self[0]
        if top.time > self.lim_time or (top.time == self.lim_time and top.seq >= self.lim_seq):
            return None
        return heapq.heappop(self)


def native_layout(probe: Any, time: int, seq: int) -> bool:
    """Register ``type(probe)`` for :meth:`EventQueue.push_item`'s direct reads of the key
    when *probe*'s fields read back as ``(time, seq)``: the C queue's (eventq.c); here,
    where keys are read as attributes, False."""
    return False
