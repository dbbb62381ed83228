"""ibemu.sim.order: the arithmetic of an event's key (issue 27), as written (issue 28)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from ibemu.sim.order import MAX_PORT, port_rank


def _rank_as_specified(t: int, node: int, port: int) -> int:
    """The module text's formula, written as it reads: Knuth's multiplier in one product."""
    x = (t ^ (t >> 26) ^ (t >> 47) ^ node) & 0x3FFFFFF
    a = 1 + ((x * 2654435761) >> 20) % 508
    return ((port + 1) * a) % 509


@given(st.integers(0, (1 << 62) - 1), st.integers(0, (1 << 18) - 1), st.integers(0, MAX_PORT))
def test_port_rank_is_the_specified_formula(t: int, node: int, port: int) -> None:
    # the compiled core computes it in 64-bit machine ints (i64): the same value for every key
    assert port_rank(t, node, port) == _rank_as_specified(t, node, port)

