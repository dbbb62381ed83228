"""The binary heap of the nodes' timers (issue 16); the scheduler's events have their own
queue (:mod:`.eventq`, in C in the compiled core: issue 28).

Both hold :class:`Ordered` objects, ordered by ``(time, seq)``; *seq* is unique within a
heap, so every correct heap pops them in one and the same order, whichever holds them.

Two implementations of the same heap, chosen once at import:

- the compiled core (mypyc) uses :func:`heap_push` and :func:`heap_pop` below, which
  compare the two unboxed ints of each object natively;
- pure Python uses the standard library's :mod:`heapq` (C), which orders the objects by
  their ``__lt__``: an interpreted heap would be slower there.

Called through :func:`push` and :func:`pop`, or, in a hot loop, by testing
:data:`NATIVE` and calling the chosen one directly (a native call in the compiled core).
"""
from __future__ import annotations

import heapq
from typing import Any, Final


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


def _sift_up(heap: list[Any], pos: int, item: Ordered) -> None:
    """Put *item* at *pos* or above it, moving larger parents down (heapq's _siftdown)."""
    t = item.time
    s = item.seq
    while pos > 0:
        up = (pos - 1) >> 1
        parent: Ordered = heap[up]
        if t < parent.time or (t == parent.time and s < parent.seq):
            heap[pos] = parent
            pos = up
        else:
            break
    heap[pos] = item


def heap_push(heap: list[Any], item: Ordered) -> None:
    """:func:`heapq.heappush` for :class:`Ordered` items."""
    heap.append(item)
    _sift_up(heap, len(heap) - 1, item)


def heap_pop(heap: list[Any]) -> Any:
    """:func:`heapq.heappop` for :class:`Ordered` items (its bottom-up method: the hole
    at the top goes down the smaller children to a leaf, the last item fills it and
    rises to its place)."""
    last: Ordered = heap.pop()
    if not heap:
        return last
    top = heap[0]
    n = len(heap)
    pos = 0
    child = 1
    while child < n:
        c: Ordered = heap[child]
        right = child + 1
        if right < n:
            r: Ordered = heap[right]
            if r.time < c.time or (r.time == c.time and r.seq < c.seq):
                child = right
                c = r
        heap[pos] = c
        pos = child
        child = 2 * pos + 1
    _sift_up(heap, pos, last)
    return top


NATIVE: Final = type(heap_push).__name__ != "function"
"""True in the compiled core, where :func:`heap_push` is a native function."""


def push(heap: list[Any], item: Ordered) -> None:
    """Push *item* with the implementation of this core (the module text)."""
    if NATIVE:
        heap_push(heap, item)
    else:
        heapq.heappush(heap, item)


def pop(heap: list[Any]) -> Any:
    """Pop the least item with the implementation of this core."""
    if NATIVE:
        return heap_pop(heap)
    return heapq.heappop(heap)
