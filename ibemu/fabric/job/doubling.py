"""Recursive doubling (Thakur, Rabenseifner and Gropp, "Optimization of collective
communication operations in MPICH", IJHPCA 2005, §4.4): in round k (0 .. log2 N - 1)
rank r exchanges its whole buffer of S bytes with rank r XOR 2^k; N a power of two.
"""
from __future__ import annotations

from .rounds import Schedule, at_least_one, check_ranks, power_of_two


def recursive_doubling_allreduce(n: int, size: int) -> Schedule:
    """The log2(n) rounds of a recursive-doubling allreduce of *size* bytes."""
    check_ranks(n)
    steps = power_of_two(n)
    s = at_least_one(size)
    return [[([(r ^ (1 << k), s)], [r ^ (1 << k)]) for k in range(steps)] for r in range(n)]
