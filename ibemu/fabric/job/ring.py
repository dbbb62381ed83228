"""Ring algorithms (Patarasuk and Yuan's bandwidth-optimal allreduce; MPICH's and NCCL's
ring): the buffer of S bytes is split into N chunks; rank r sends to r + 1 and receives
from r - 1 (mod N).

- reduce-scatter: N - 1 rounds; in round k rank r sends chunk (r - k) mod N (its partial
  sum so far) and receives chunk (r - k - 1) mod N, which it adds to its own;
- allgather: N - 1 rounds; in round k rank r sends chunk (r + 1 - k) mod N (complete)
  and receives chunk (r - k) mod N;
- allreduce: a reduce-scatter then an allgather, 2(N - 1) rounds of S/N bytes each, so
  every rank sends and receives 2(N - 1)/N x S bytes.
"""
from __future__ import annotations

from .rounds import Schedule, at_least_one, check_ranks, chunks


def ring_reduce_scatter(n: int, size: int) -> Schedule:
    """The rounds of a ring reduce-scatter of *size* bytes over *n* ranks."""
    check_ranks(n)
    c = chunks(size, n)
    return [[([((r + 1) % n, at_least_one(c[(r - k) % n]))], [(r - 1) % n]) for k in range(n - 1)]
            for r in range(n)]


def ring_allgather(n: int, size: int) -> Schedule:
    """The rounds of a ring allgather whose gathered buffer is *size* bytes (each rank
    contributes a chunk of about size/n)."""
    check_ranks(n)
    c = chunks(size, n)
    return [[([((r + 1) % n, at_least_one(c[(r + 1 - k) % n]))], [(r - 1) % n]) for k in range(n - 1)]
            for r in range(n)]


def ring_allreduce(n: int, size: int) -> Schedule:
    """The 2(n - 1) rounds of a ring allreduce of *size* bytes over *n* ranks."""
    rs, ag = ring_reduce_scatter(n, size), ring_allgather(n, size)
    return [rs[r] + ag[r] for r in range(n)]
