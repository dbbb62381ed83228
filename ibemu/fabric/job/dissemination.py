"""Dissemination barrier (Hensgen, Finkel and Manber 1988; MPICH's barrier): ceil(log2 N)
rounds; in round k rank r sends to (r + 2^k) mod N and receives from (r - 2^k) mod N.
The messages carry no data (*size*, at least one byte; see :mod:`.rounds`).
"""
from __future__ import annotations

from .rounds import Schedule, at_least_one, check_ranks


def dissemination_barrier(n: int, size: int = 1) -> Schedule:
    """The ceil(log2 n) rounds of a dissemination barrier."""
    check_ranks(n)
    s = at_least_one(size)
    dists = []
    d = 1
    while d < n:
        dists.append(d)
        d <<= 1
    return [[([((r + d) % n, s)], [(r - d) % n]) for d in dists] for r in range(n)]
