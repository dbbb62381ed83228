"""Binomial-tree broadcast (Thakur et al. 2005, §4.1; MPICH's short-message
``MPIR_Bcast_binomial``): with v = (r - root) mod N, a rank other than the root first
receives the message from v minus its lowest set bit, then sends it to v + 2^j for every
2^j below that bit (the root: below the smallest power of two >= N), largest subtree
first, each send a round of its own (they go out together: a round without receives
does not wait).  ceil(log2 N) levels.
"""
from __future__ import annotations

from .rounds import Round, Schedule, at_least_one, check_ranks


def binomial_broadcast(n: int, size: int, root: int = 0) -> Schedule:
    """The rounds of a binomial-tree broadcast of *size* bytes from rank *root*."""
    check_ranks(n)
    if not 0 <= root < n:
        raise ValueError("root %d is not a rank (0 to %d)" % (root, n - 1))
    s = at_least_one(size)
    top = 1
    while top < n:
        top <<= 1
    out: Schedule = []
    for r in range(n):
        v = (r - root) % n
        rounds: list[Round] = []
        low = v & -v if v else top
        if v:
            rounds.append(([], [((v - low) + root) % n]))
        mask = low >> 1
        while mask:
            if v + mask < n:
                rounds.append(([((v + mask + root) % n, s)], []))
            mask >>= 1
        out.append(rounds)
    return out
