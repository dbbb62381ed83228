"""Pairwise exchange all-to-all (Thakur et al. 2005, §4.3, the long-message algorithm):
N - 1 rounds; in round k (1 .. N - 1) rank r sends its block for rank (r + k) mod N and
receives the block of rank (r - k) mod N.  *size* is the block each rank sends to each
other rank.
"""
from __future__ import annotations

from .rounds import Schedule, at_least_one, check_ranks


def pairwise_alltoall(n: int, size: int) -> Schedule:
    """The n - 1 rounds of a pairwise-exchange all-to-all of *size* bytes per pair."""
    check_ranks(n)
    s = at_least_one(size)
    return [[([((r + k) % n, s)], [(r - k) % n]) for k in range(1, n)] for r in range(n)]
