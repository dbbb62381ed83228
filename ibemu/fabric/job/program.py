"""A job's operations as every rank's steps (issue 29 Deliver 1): each operation
expands by its algorithm into rounds (:mod:`.ring`, :mod:`.doubling`, :mod:`.pairwise`,
:mod:`.binomial`, :mod:`.dissemination`, :mod:`.stencil`, or explicit point-to-point
messages), repeated ``iterations`` times, with the operation's compute time before
each iteration but the first.  A rank with no part in an iteration (a point-to-point
message between others) gets an empty step, so every rank passes through every
iteration (and its compute time) in order.
"""
from __future__ import annotations

from .binomial import binomial_broadcast
from .dissemination import dissemination_barrier
from .doubling import recursive_doubling_allreduce
from .pairwise import pairwise_alltoall
from .ring import ring_allgather, ring_allreduce, ring_reduce_scatter
from .rounds import Round, Schedule
from .spec import OpSpec, Step
from .stencil import halo_exchange

__all__ = ["ALGORITHMS", "expand", "point_to_point", "program", "steps_of"]

ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "recursive_doubling"), "allgather": ("ring",), "reduce_scatter": ("ring",),
    "alltoall": ("pairwise",), "broadcast": ("binomial",), "barrier": ("dissemination",),
    "halo": ("stencil",), "p2p": ("explicit",)}
"""Operation kind -> its algorithms, the default first."""


def point_to_point(n: int, messages: list[tuple[int, int, int]]) -> Schedule:
    """One round: every rank posts its messages ((src, dst, bytes)) and waits for those
    sent to it."""
    out: Schedule = [[([], [])] for _ in range(n)]
    for src, dst, size in messages:
        if not (0 <= src < n and 0 <= dst < n) or src == dst:
            raise ValueError("message %d -> %d: needs two different ranks of 0 to %d" % (src, dst, n - 1))
        out[src][0][0].append((dst, size if size > 0 else 1))
        out[dst][0][1].append(src)
    return out


def expand(op: OpSpec, n: int) -> Schedule:
    """The rounds of one iteration of *op* over *n* ranks (a ValueError when the
    algorithm cannot run on them)."""
    alg = op.algorithm or ALGORITHMS[op.kind][0]
    if op.kind == "allreduce":
        return recursive_doubling_allreduce(n, op.size) if alg == "recursive_doubling" else ring_allreduce(n, op.size)
    if op.kind == "allgather":
        return ring_allgather(n, op.size)
    if op.kind == "reduce_scatter":
        return ring_reduce_scatter(n, op.size)
    if op.kind == "alltoall":
        return pairwise_alltoall(n, op.size)
    if op.kind == "broadcast":
        return binomial_broadcast(n, op.size, op.root)
    if op.kind == "barrier":
        return dissemination_barrier(n, op.size)
    if op.kind == "halo":
        return halo_exchange(op.grid, op.size)
    if op.kind == "p2p":
        return point_to_point(n, op.messages)
    raise ValueError("unknown operation %r" % op.kind)


def steps_of(rounds: list[Round], op: int, iteration: int, compute: int) -> list[Step]:
    """One rank's steps for one iteration: its rounds (an empty step when it has
    none), *compute* before the first, ``first``/``last`` marked."""
    if not rounds:
        rounds = [([], [])]
    out = [Step(list(s), list(r), op, iteration) for s, r in rounds]
    out[0].first = True
    out[0].compute = compute
    out[-1].last = True
    return out


def program(ops: list[OpSpec], n: int) -> list[list[Step]]:
    """Every rank's steps for the operations *ops* in order."""
    progs: list[list[Step]] = [[] for _ in range(n)]
    for i, op in enumerate(ops):
        sched = expand(op, n)
        for it in range(op.iterations):
            for r in range(n):
                progs[r] += steps_of(sched[r], i, it, op.compute if it else 0)
    return progs
