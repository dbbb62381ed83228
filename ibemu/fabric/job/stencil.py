"""Nearest-neighbour halo exchange of a 2-D or 3-D stencil (the Ember ``halo`` motifs of
SST; a periodic Cartesian grid as ``MPI_Cart_create`` with periods set makes it): ranks
are laid out row-major on the grid, and each sends *size* bytes to each of its 2d
neighbours (-1 and +1 along every dimension, wrapping) and receives one message from
each, in one round.  A dimension of extent 2 makes both neighbours the same rank (two
messages); one of extent 1 has no neighbour along it.
"""
from __future__ import annotations

from .rounds import Schedule, at_least_one, check_ranks


def balanced_grid(n: int, dims: int) -> list[int]:
    """*n* ranks as a grid of *dims* extents as nearly equal as possible, largest first
    (what ``MPI_Dims_create`` returns): prime factors dealt to the smallest extent."""
    if dims < 1:
        raise ValueError("dims must be at least 1")
    factors, m, p = [], n, 2
    while p * p <= m:
        while m % p == 0:
            factors.append(p)
            m //= p
        p += 1
    if m > 1:
        factors.append(m)
    grid = [1] * dims
    for f in sorted(factors, reverse=True):
        grid[grid.index(min(grid))] *= f
    return sorted(grid, reverse=True)


def halo_exchange(grid: list[int], size: int) -> Schedule:
    """The one round of a periodic halo exchange on *grid* (row-major ranks)."""
    n = 1
    for g in grid:
        if g < 1:
            raise ValueError("grid extents must be positive, got %r" % grid)
        n *= g
    check_ranks(n)
    s = at_least_one(size)
    out: Schedule = []
    for r in range(n):
        coords, rest = [], r
        for g in reversed(grid):
            coords.append(rest % g)
            rest //= g
        coords.reverse()
        peers: list[int] = []
        for axis, g in enumerate(grid):
            if g == 1:
                continue
            for step in (-1, 1):
                c = list(coords)
                c[axis] = (c[axis] + step) % g
                peer = 0
                for x, e in zip(c, grid):
                    peer = peer * e + x
                peers.append(peer)
        out.append([([(p, s) for p in peers], list(peers))])
    return out
