"""The queue of a node's timers (issues 16 and 28); the scheduler's events have their own
queue (:mod:`.eventq`, in C in the compiled core: issue 28).

Both hold :class:`Ordered` objects, ordered by ``(time, seq)``; *seq* is unique within a
queue, so every correct queue gives them up in one and the same order, whichever holds
them.

Two implementations of that queue, chosen once at import (:data:`NATIVE`):

- the compiled core (mypyc) keeps the timers in a list sorted latest first: a timer is
  inserted at its place, found by a binary search that compares the two unboxed ints of
  each object natively (:func:`insert_timer`), and the earliest is the last item, taken
  by ``list.pop()``.  A node holds few timers (on the 648-host congestion-tree case, 23
  at most, and most are set at switches holding a dozen or more), where the binary heap
  it replaces cost 317 instructions a push and 610 a pop, in list reads and writes
  (issue 28);
- pure Python uses the standard library's :mod:`heapq` (C), which orders the objects by
  their ``__lt__``: an interpreted search would be slower there.

:func:`push`, :func:`pop` and :func:`first` use this core's one; a hot loop tests
:data:`NATIVE` and calls the chosen one directly (a native call in the compiled core).
"""
from __future__ import annotations

import heapq
from typing import Any, Final

from mypy_extensions import i64


class Ordered:
    """An item ordered by ``(time, seq)``: a scheduler event or a node's timer."""
    __slots__ = ("time", "seq")

    def __init__(self, time: int, seq: int) -> None:
        self.time = time
        self.seq = seq

    def __lt__(self, other: Ordered) -> bool:
        if self.time != other.time:
            return self.time < other.time
        return self.seq < other.seq


def insert_timer(timers: list[Any], item: Ordered) -> None:
    """Insert *item* into *timers*, a list of :class:`Ordered` sorted latest first, at its
    place: before the first item whose key is less than its own."""
    t = item.time
    s = item.seq
    lo: i64 = 0                             # 64-bit indices: machine arithmetic when compiled
    hi: i64 = len(timers)
    while lo < hi:
        mid = (lo + hi) >> 1
        m: Ordered = timers[mid]
        if m.time < t or (m.time == t and m.seq < s):
            hi = mid
        else:
            lo = mid + 1
    timers.insert(lo, item)


NATIVE: Final = type(insert_timer).__name__ != "function"
"""True in the compiled core, where :func:`insert_timer` is a native function."""


def push(timers: list[Any], item: Ordered) -> None:
    """Add *item* with the implementation of this core (the module text)."""
    if NATIVE:
        insert_timer(timers, item)
    else:
        heapq.heappush(timers, item)


def pop(timers: list[Any]) -> Any:
    """Remove and return the least item with the implementation of this core."""
    if NATIVE:
        return timers.pop()
    return heapq.heappop(timers)


def first(timers: list[Any]) -> Any:
    """The least item, left in place (*timers* not empty)."""
    return timers[-1] if NATIVE else timers[0]
