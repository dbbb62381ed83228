"""The queue of a node's timers (ibemu/sim/heap.py, issues 16 and 28): the compiled core's
sorted list gives :class:`Ordered` items up in exactly the order heapq does, so the two
cores run every timer in the same order."""
from __future__ import annotations

import heapq
import random

from ibemu.sim import heap as H
from ibemu.sim.heap import Ordered, insert_timer


def test_same_order_as_heapq_under_random_pushes_and_pops() -> None:
    rng = random.Random(7)
    ours: list[Ordered] = []
    ref: list[Ordered] = []
    seq = 0
    popped_ours, popped_ref = [], []
    for _ in range(20_000):
        if rng.random() < 0.55 or not ref:
            seq += 1
            item = Ordered(rng.randrange(50), seq)      # many equal times: seq decides
            insert_timer(ours, item)
            heapq.heappush(ref, item)
        else:
            assert ours[-1] is ref[0]                   # the least: the list's last, the heap's first
            popped_ours.append(ours.pop())
            popped_ref.append(heapq.heappop(ref))
    while ref:
        popped_ours.append(ours.pop())
        popped_ref.append(heapq.heappop(ref))
    assert not ours
    assert popped_ours == popped_ref                    # the same objects, in the same order
    assert len(popped_ref) > 10_000
    keys = [(o.time, o.seq) for o in popped_ref[-200:]]
    assert keys == sorted(keys)


def test_push_and_pop_use_this_cores_queue() -> None:
    h: list[Ordered] = []
    for t, s in ((5, 1), (3, 2), (5, 0), (1, 9)):
        H.push(h, Ordered(t, s))
    assert (H.first(h).time, H.first(h).seq) == (1, 9)
    assert [(o.time, o.seq) for o in (H.pop(h), H.pop(h), H.pop(h), H.pop(h))] == [(1, 9), (3, 2), (5, 0), (5, 1)]
    # in pure Python (the tests' tree) the functions are interpreted and heapq is used
    assert H.NATIVE == (type(insert_timer).__name__ != "function")


def test_insert_timer_keeps_the_list_sorted_latest_first() -> None:
    rng = random.Random(5)
    timers: list[Ordered] = []
    for seq in rng.sample(range(10_000), 300):
        insert_timer(timers, Ordered(rng.randrange(20), seq))
        keys = [(o.time, o.seq) for o in timers]
        assert keys == sorted(keys, reverse=True)


def test_ordered_compares_time_then_seq() -> None:
    assert Ordered(1, 5) < Ordered(2, 0)
    assert Ordered(2, 0) < Ordered(2, 1)
    assert not Ordered(2, 1) < Ordered(2, 1)
