"""The ``ops`` of a ``[[job]]`` table (issue 29 Deliver 1): the operations its ranks run
in order, each ``[[job.ops]]`` one of

- ``type = "allreduce"``, ``algorithm = "ring"`` (default) or ``"recursive_doubling"``
  (ranks a power of two); ``size``: the buffer each rank reduces;
- ``type = "allgather"`` / ``"reduce_scatter"`` (ring); ``size``: the whole buffer
  (each rank's share about size / N);
- ``type = "alltoall"`` (pairwise exchange); ``size``: the block to each other rank;
- ``type = "broadcast"`` (binomial tree, ``root`` a rank, default 0); ``size``: the message;
- ``type = "barrier"`` (dissemination; ``size`` default 1 byte);
- ``type = "halo"`` (periodic 2-D or 3-D stencil: ``dims`` 2 or 3, default 2, or
  ``grid = [x, y(, z)]`` whose product is the ranks); ``size``: to each neighbour;
- ``type = "p2p"``: ``messages = [[src, dst], [src, dst, size], ...]`` between ranks
  (``size`` the default of each);

with ``iterations`` (default 1) and ``compute`` (a time, default 0) before every
iteration but the first.  The algorithms are :mod:`ibemu.fabric.job`.
"""
from __future__ import annotations

from typing import Any

from ..fabric.job.program import ALGORITHMS
from ..fabric.job.spec import OpSpec
from ..fabric.job.stencil import balanced_grid
from ..units import parse_time
from ..validate import Checker, describe, integer, join, string, table, tables
from .flows import message_size

__all__ = ["OP_KEYS", "parse_ops"]

OP_KEYS = ("type", "algorithm", "size", "iterations", "compute", "root", "dims", "grid", "messages")
_ONLY = {"root": "broadcast", "dims": "halo", "grid": "halo", "messages": "p2p"}


def parse_ops(ctx: Checker, path: str, v: Any, n: int) -> list[OpSpec]:
    """The operations at *path* for a job of *n* ranks."""
    entries = tables(ctx, path, v)
    if not entries:
        raise ctx.err(path, "a job needs at least one operation")
    return [_op(ctx, join(path, i), e, n) for i, e in enumerate(entries)]


def _op(ctx: Checker, path: str, e: dict[str, Any], n: int) -> OpSpec:
    def p(k: str) -> str:
        return join(path, k)

    table(ctx, path, e, OP_KEYS, ("type",))
    kind = string(ctx, p("type"), e["type"], tuple(ALGORITHMS))
    for k, only in _ONLY.items():
        if k in e and only != kind:
            raise ctx.err(p(k), "only used with type %r (type is %r)" % (only, kind))
    op = OpSpec(kind)
    op.algorithm = string(ctx, p("algorithm"), e.get("algorithm", ALGORITHMS[kind][0]), ALGORITHMS[kind])
    if "size" in e:
        op.size = message_size(ctx, p("size"), e["size"])
    elif kind not in ("barrier", "p2p"):
        raise ctx.err(p("size"), "missing (the message size of the %s)" % kind)
    op.iterations = integer(ctx, p("iterations"), e.get("iterations", 1), 1, 10**6)
    op.compute = ctx.conv(p("compute"), parse_time, e.get("compute", 0))
    if op.compute < 0:
        raise ctx.err(p("compute"), "must not be negative")
    if kind == "broadcast":
        op.root = integer(ctx, p("root"), e.get("root", 0), 0, n - 1)
    if kind == "halo":
        op.grid = _grid(ctx, path, e, n)
    if kind == "p2p":
        op.messages = _messages(ctx, p("messages"), e.get("messages"), n, op.size)
    return op


def _grid(ctx: Checker, path: str, e: dict[str, Any], n: int) -> list[int]:
    if "grid" in e:
        if "dims" in e:
            raise ctx.err(join(path, "dims"), "give only one of dims, grid")
        g = e["grid"]
        if not isinstance(g, list) or len(g) not in (2, 3):
            raise ctx.err(join(path, "grid"), "expected [x, y] or [x, y, z], got %s" % describe(g))
        grid = [integer(ctx, join(join(path, "grid"), i), x, 1) for i, x in enumerate(g)]
        prod = 1
        for x in grid:
            prod *= x
        if prod != n:
            raise ctx.err(join(path, "grid"), "%s holds %d ranks; the job has %d" % ("x".join(map(str, grid)), prod, n))
        return grid
    dims = integer(ctx, join(path, "dims"), e.get("dims", 2), 2, 3)
    return balanced_grid(n, dims)


def _messages(ctx: Checker, path: str, v: Any, n: int, size: int) -> list[tuple[int, int, int]]:
    if not isinstance(v, list) or not v:
        raise ctx.err(path, "expected a non-empty list of [src, dst] or [src, dst, size] rank pairs, got %s"
                      % describe(v))
    out = []
    for i, m in enumerate(v):
        mp = join(path, i)
        if not isinstance(m, list) or len(m) not in (2, 3):
            raise ctx.err(mp, "expected [src, dst] or [src, dst, size], got %s" % describe(m))
        src = integer(ctx, join(mp, 0), m[0], 0, n - 1)
        dst = integer(ctx, join(mp, 1), m[1], 0, n - 1)
        if src == dst:
            raise ctx.err(join(mp, 1), "same rank as src (%d)" % src)
        out.append((src, dst, message_size(ctx, join(mp, 2), m[2]) if len(m) == 3 else size))
    return out
