"""A ``[[job]]`` table's ``hosts`` (issue 29 Deliver 1): where the job's ranks run,
rank i on the i-th host listed or chosen.

- a list of HCA names: ``hosts = ["h0", "h5", "h2"]``;
- a range of HCAs by position in the scenario's listing: ``hosts = {range = [0, 16]}``
  (start included, stop not, as Python's ``range``; optional third item, the step);
- the first N: ``hosts = {first = 16}``;
- every k-th: ``hosts = {every = 4, offset = 1, count = 8}`` (positions offset,
  offset + k, ...; ``offset`` default 0, ``count`` default: as many as there are);
- N at random: ``hosts = {random = 16, seed = 7}`` (drawn without replacement with
  ``random.Random(seed)``, default the scenario seed; ranks in listing order).

Positions count the scenario's HCAs in the order they are listed (a topology's order).
"""
from __future__ import annotations

import random
from typing import Any

from ..validate import Checker, describe, integer, join, string, table, unknown_node

__all__ = ["PLACEMENTS", "job_hosts"]

PLACEMENTS = ("range", "first", "every", "random")


def job_hosts(ctx: Checker, path: str, v: Any, hcas: list[str], nodes: dict[str, str], seed: int) -> list[str]:
    """The hosts at *path* (a list or a placement table) as HCA names, each once."""
    if isinstance(v, list):
        return _names(ctx, path, v, hcas, nodes)
    if not isinstance(v, dict):
        raise ctx.err(path, "expected a list of HCA names or a placement table {%s = ...}, got %s"
                      % (" | ".join(PLACEMENTS), describe(v)))
    rule = [k for k in PLACEMENTS if k in v]
    if len(rule) != 1:
        raise ctx.err(path, "give exactly one of %s" % ", ".join(PLACEMENTS))
    kind = rule[0]
    n = len(hcas)
    if kind == "first":
        table(ctx, path, v, ("first",))
        k = integer(ctx, join(path, "first"), v["first"], 1)
        _enough(ctx, join(path, "first"), k, n)
        return hcas[:k]
    if kind == "range":
        table(ctx, path, v, ("range",))
        r = v["range"]
        rp = join(path, "range")
        if not isinstance(r, list) or len(r) not in (2, 3):
            raise ctx.err(rp, "expected [start, stop] or [start, stop, step], got %s" % describe(r))
        start, stop = integer(ctx, join(rp, 0), r[0], 0), integer(ctx, join(rp, 1), r[1], 0)
        step = integer(ctx, join(rp, 2), r[2], 1) if len(r) == 3 else 1
        if stop > n:
            raise ctx.err(join(rp, 1), "the scenario has %d HCAs (positions 0 to %d), got stop %d" % (n, n - 1, stop))
        return hcas[start:stop:step]
    if kind == "every":
        table(ctx, path, v, ("every", "offset", "count"))
        k = integer(ctx, join(path, "every"), v["every"], 1)
        off = integer(ctx, join(path, "offset"), v.get("offset", 0), 0, max(0, n - 1))
        chosen = hcas[off::k]
        if "count" in v:
            c = integer(ctx, join(path, "count"), v["count"], 1)
            if c > len(chosen):
                raise ctx.err(join(path, "count"), "every %d-th HCA from position %d gives %d hosts, not %d"
                              % (k, off, len(chosen), c))
            chosen = chosen[:c]
        return chosen
    table(ctx, path, v, ("random", "seed"))
    k = integer(ctx, join(path, "random"), v["random"], 1)
    _enough(ctx, join(path, "random"), k, n)
    s = integer(ctx, join(path, "seed"), v.get("seed", seed), 0)
    picked = set(random.Random(s).sample(range(n), k))
    return [h for i, h in enumerate(hcas) if i in picked]


def _enough(ctx: Checker, path: str, k: int, n: int) -> None:
    if k > n:
        raise ctx.err(path, "the scenario has only %d HCAs, got %d" % (n, k))


def _names(ctx: Checker, path: str, v: list[Any], hcas: list[str], nodes: dict[str, str]) -> list[str]:
    known, seen, out = set(hcas), set(), []
    for j, h in enumerate(v):
        hp = join(path, j)
        h = string(ctx, hp, h)
        if h not in known:
            if nodes.get(h) == "switch":
                raise ctx.err(hp, "%r is a switch; a job's ranks run on HCAs" % h)
            raise ctx.err(hp, unknown_node(h, nodes) + ": not an HCA of the fabric")
        if h in seen:
            raise ctx.err(hp, "%r listed twice (one rank per host in a job)" % h)
        seen.add(h)
        out.append(h)
    return out
