"""The scheduler's queue of events (ibemu/sim/eventq.py and eventq.c, issue 28).

Both implementations are checked against one rule: items come out in the order of their
keys ``(time, seq)``, and ``pop_due`` stops at the limit.  The C one is the compiled
core's; here it is compiled on its own from ibemu/sim/eventq.c with the C compiler
Python was built with (a second or two), so the source tree's pure test run checks it
too.  Without a compiler the C half skips, unless ``IBEMU_REQUIRE_COMPILED=1`` (CI).
"""
from __future__ import annotations

import importlib.util
import random
import weakref
from pathlib import Path
from typing import Any

import pytest

from cext import compile_extension
from ibemu.sim import eventq
from ibemu.sim.heap import Ordered

SOURCE = Path(eventq.__file__).with_suffix(".c")


class Item(Ordered):
    """An item with a key, as the scheduler's events have (a plain class: weakrefs)."""
    __slots__ = ("__weakref__", "name")

    def __init__(self, time: int, seq: int, name: str = "") -> None:
        super().__init__(time, seq)
        self.name = name


def _compile_c(tmp: Path) -> Any:
    out = compile_extension(SOURCE, tmp, "the C queue")
    spec = importlib.util.spec_from_file_location("eventq", out)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=["python", "c"])
def impl(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The module: eventq.py, or eventq.c compiled here."""
    if request.param == "python":
        return eventq
    return _compile_c(tmp_path_factory.mktemp("eventq"))


@pytest.fixture
def queue_class(impl: Any) -> Any:
    return impl.EventQueue


def test_pops_in_key_order_with_pushes_in_between(queue_class: Any) -> None:
    """Random keys, many equal times (seq breaks the tie), pushes between pops: every pop
    is the least key left (checked against a sorted list)."""
    rng = random.Random(7)
    q = queue_class()
    left: list[tuple[int, int]] = []
    seqs = rng.sample(range(1 << 62), 6000)
    for step in range(6000):
        t = rng.randrange(0, 50) * 1000
        q.push(Item(t, seqs[step]), t, seqs[step])
        left.append((t, seqs[step]))
        if rng.random() < 0.45:
            least = min(left)
            left.remove(least)
            item = q.pop_least()
            assert (item.time, item.seq) == least
        assert len(q) == len(left)
        if left:
            assert (q[0].time, q[0].seq) == min(left)
    out = []
    while len(q):
        item = q.pop_least()
        out.append((item.time, item.seq))
    assert out == sorted(left)



def test_every_size_of_the_last_level_drains_in_key_order(queue_class: Any) -> None:
    """Every queue length from 1 to 100 (the C heap's last level holding one to four
    children of an entry, or none), drained with a push between pops, in key order."""
    rng = random.Random(11)
    for n in range(1, 101):
        q = queue_class()
        keys = [(rng.randrange(0, 8), rng.randrange(1 << 40)) for _ in range(n)]
        for t, s in keys:
            q.push(Item(t, s), t, s)
        out: list[tuple[int, int]] = []
        extra = (0, 0)
        while len(q):
            item = q.pop_least()
            out.append((item.time, item.seq))
            if len(out) == 1:                   # after the first pop: a key just after it
                extra = (item.time, item.seq + (1 << 41))
                q.push(Item(*extra), *extra)
        assert out == sorted(keys + [extra]), n


def test_pop_due_then_any_operation_sees_the_queue_without_the_item(queue_class: Any) -> None:
    """Random runs of pop_due followed by each operation -- zero to three pushes, len,
    q[0], iteration, pop_least, another pop_due, clear -- agree with a sorted list at every
    step, and every popped item is released once (the scheduler's pattern: a pop, then the
    pushes of the event it ran)."""
    rng = random.Random(13)
    q = queue_class()
    q.set_limit(1 << 62, 0)
    left: list[tuple[int, int]] = []
    seqs = iter(rng.sample(range(1 << 50), 40000))
    refs: list[weakref.ref[Any]] = []

    def push() -> None:
        t = rng.randrange(0, 40) * 1000
        s = next(seqs)
        item = Item(t, s)
        refs.append(weakref.ref(item))
        q.push_item(item)
        left.append((t, s))

    def pop_checked(item: Any) -> None:
        least = min(left)
        left.remove(least)
        assert (item.time, item.seq) == least

    for _ in range(200):
        push()
    for step in range(8000):
        if left and rng.random() < 0.7:
            pop_checked(q.pop_due())
        op = rng.randrange(8)
        if op == 0:
            for _ in range(rng.randrange(4)):
                push()
        elif op == 1:
            assert len(q) == len(left)
        elif op == 2 and left:
            assert (q[0].time, q[0].seq) == min(left)
        elif op == 3:
            assert sorted((i.time, i.seq) for i in q) == sorted(left)
        elif op == 4 and left:
            pop_checked(q.pop_least())
        elif op == 5 and left:
            pop_checked(q.pop_due())
        elif op == 6 and step % 500 == 0:
            q.clear()
            left.clear()
        else:
            push()
        assert len(q) == len(left)
    out = []
    while (item := q.pop_due()) is not None:
        out.append((item.time, item.seq))
    assert out == sorted(left) and len(q) == 0
    del item
    assert all(r() is None for r in refs)        # nothing held twice, nothing freed early


def test_push_item_takes_the_items_own_key(queue_class: Any) -> None:
    """``push_item(item)`` orders by ``(item.time, item.seq)`` as ``push`` does; an item
    without them is refused."""
    rng = random.Random(3)
    q = queue_class()
    keys = [(rng.randrange(20), s) for s in rng.sample(range(1 << 40), 500)]
    for t, s in keys:
        q.push_item(Item(t, s))
    out = []
    while len(q):
        item = q.pop_least()
        out.append((item.time, item.seq))
    assert out == sorted(keys)
    with pytest.raises(AttributeError):
        q.push_item(object())
    assert len(q) == 0


def test_only_a_layout_that_reads_back_is_registered(impl: Any) -> None:
    """``native_layout`` registers a type for direct reads of the key only when its probe's
    fields read back as the keys given: never for a Python class (its slots hold pointers,
    not mypyc's tagged ints), nor for an object too small to hold the fields."""
    probe = Item(0x5A5A5A5A5A5, 0x3C3C3C3C3C3C3C3)
    assert impl.native_layout(probe, probe.time, probe.seq) is False
    assert impl.native_layout(7, 7, 7) is False
    q = impl.EventQueue()
    q.push_item(probe)                          # read through its attributes
    assert q.pop_least() is probe


def test_pop_due_stops_at_the_limit(queue_class: Any) -> None:
    """``pop_due`` returns the items before the limit key, least first, then None; a
    key equal to the limit is not before it; with no limit set, everything is due."""
    q = queue_class()
    for t, s in [(5, 2), (5, 1), (3, 9), (7, 0), (5, 3)]:
        q.push(Item(t, s), t, s)
    assert q.pop_due().seq == 9                 # no limit yet: the least
    q.set_limit(5, 2)
    assert (q.pop_due().time, q.pop_due()) == (5, None)    # (5, 1) is before (5, 2); (5, 2) is not
    q.set_limit(6, 0)
    assert [(i.time, i.seq) for i in (q.pop_due(), q.pop_due())] == [(5, 2), (5, 3)]
    assert q.pop_due() is None and len(q) == 1
    q.set_limit(1 << 62, 0)                     # the scheduler's INF
    assert q.pop_due().time == 7
    assert q.pop_due() is None                  # empty


def test_a_sequence_of_its_items(queue_class: Any) -> None:
    """``len``, ``q[i]`` (``q[0]`` the least), iteration over every item, ``clear``."""
    q = queue_class()
    assert not q and len(q) == 0
    items = [Item(t, t) for t in (40, 10, 30, 20)]
    for i in items:
        q.push(i, i.time, i.seq)
    assert q and q[0] is items[1]
    assert sorted(i.time for i in q) == [10, 20, 30, 40]
    with pytest.raises(IndexError):
        q[4]
    q.clear()
    assert len(q) == 0 and list(q) == []


def test_items_are_released(queue_class: Any) -> None:
    """The queue holds a reference to each item until it is popped or cleared, no longer."""
    q = queue_class()
    a, b = Item(1, 1, "a"), Item(2, 2, "b")
    refs = [weakref.ref(a), weakref.ref(b)]
    q.push(a, 1, 1)
    q.push(b, 2, 2)
    del a, b
    assert all(r() is not None for r in refs)
    assert q.pop_least().name == "a"
    assert refs[0]() is None
    q.clear()
    assert refs[1]() is None


def test_misuse_is_an_error_not_a_crash(queue_class: Any) -> None:
    q = queue_class()
    with pytest.raises(IndexError):
        q.pop_least()
    with pytest.raises((TypeError, ValueError)):
        q.push(Item(1, 1), "1", 1)
    with pytest.raises(TypeError):
        q.push(Item(1, 1), 1)
    if queue_class is not eventq.EventQueue:    # C: keys are 64-bit (the scheduler's are below 2**62)
        with pytest.raises(OverflowError):
            q.push(Item(1 << 70, 1), 1 << 70, 1)
    assert len(q) == 0


def test_the_python_queue_refuses_a_key_not_its_items() -> None:
    """The pure queue checks that the key pushed is the item's own (the scheduler's pure
    runs then check every push the compiled core makes without the check)."""
    q = eventq.EventQueue()
    with pytest.raises(ValueError, match="key"):
        q.push(Item(1, 2), 1, 3)
