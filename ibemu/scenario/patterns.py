"""Traffic patterns (issue 15 Deliver 4) as Python functions returning (src, dst) pairs,
for any fabric; ``[[traffic]]`` tables (:mod:`ibemu.scenario.traffic`) expand into flows
through them.

Patterns (host i is the i-th of ``hosts``, N of them, N >= 2):

- ``uniform``: each host sends ``flows_per_host`` (default 1) flows, each to a destination
  drawn independently and uniformly from the other N-1 hosts.  An ibemu flow is one
  queue pair with one destination, so the destination is drawn per flow, not per message.
- ``permutation``: a random derangement (a bijection without fixed points, drawn
  uniformly by shuffling until no host maps to itself);
- ``shift``: host i sends to host (i + k) mod N (``k``, default 1; k mod N must not be 0);
- ``bit_reversal``: host i sends to the host whose index has i's log2(N) bits reversed;
- ``bit_complement``: host i sends to host i XOR (N - 1).  These two need N a power of
  two; they are involutions, and bit_reversal's fixed points (palindromic indices such as
  0 and N - 1) send nothing;
- ``all_to_all``: every ordered pair (i, j), i != j, once: N(N - 1) flows;
- ``hotspot`` (alias ``incast``): ``senders`` hosts (a count), or ``fraction`` of the N - 1
  other hosts (rounded, at least one; default: all of them), drawn at random, send to the
  ``destination`` (a host name or an index into ``hosts``; default the first host).
  ``background`` (optional): a pattern name, or a table ``{pattern = ..., k = ...,
  flows_per_host = ..., group = ..., <flow keys>}`` whose flow keys override the
  table's, run by the hosts that are neither the hot spot nor its senders, as group
  "background" (default); the hot spot's flows have the table's group (default "hotspot"
  or "incast").

Flow names are ``<group>.<src>-<dst>``; a pair that a table draws again (``uniform``)
gets ``#2``, ``#3``, ... appended.  Flows are listed source by source in host order
(uniform: a source's draws in the order drawn).  Random choices come from
``random.Random((seed << 32) ^ crc32(group))``, so the same seed makes the same flows and
two tables with different groups draw independently; the flows' own random streams
(ON/OFF periods, Poisson arrivals, message sizes) are seeded by the scenario seed and the
flow's name (:mod:`ibemu.fabric.traffic`).
"""
from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["PATTERNS", "PAIR_PATTERNS", "Pair", "PatternError", "uniform", "permutation", "shift", "bit_reversal",
           "bit_complement", "all_to_all", "hotspot", "bystanders", "pairs", "flow_names", "table_seed"]

Pair = tuple[str, str]

PAIR_PATTERNS = ("uniform", "permutation", "shift", "bit_reversal", "bit_complement", "all_to_all")
PATTERNS = PAIR_PATTERNS + ("hotspot", "incast")


class PatternError(ValueError):
    """A pattern's parameter that cannot be used; *key* names it (``k``, ``hosts``, ...)."""

    def __init__(self, key: str, reason: str):
        super().__init__(reason)
        self.key = key


def _hosts(hosts: Sequence[str]) -> list[str]:
    hs = list(hosts)
    if len(hs) < 2:
        raise PatternError("hosts", "a traffic pattern needs at least 2 hosts, got %d" % len(hs))
    if len(set(hs)) != len(hs):
        dup = next(h for h in hs if hs.count(h) > 1)
        raise PatternError("hosts", "host %r listed twice" % dup)
    return hs


def _bits(n: int) -> int:
    """log2(n) for *n* a power of two (else a PatternError)."""
    if n & (n - 1):
        raise PatternError("hosts", "needs a power-of-two number of hosts, got %d" % n)
    return n.bit_length() - 1


def uniform(hosts: Sequence[str], seed: int, flows_per_host: int = 1) -> list[Pair]:
    """Each host's *flows_per_host* destinations, each drawn uniformly from the others."""
    hs = _hosts(hosts)
    if flows_per_host < 1:
        raise PatternError("flows_per_host", "must be at least 1, got %d" % flows_per_host)
    rng, n, out = random.Random(seed), len(hs), []
    for i, src in enumerate(hs):
        for _ in range(flows_per_host):
            j = rng.randrange(n - 1)
            out.append((src, hs[j + 1 if j >= i else j]))
    return out


def permutation(hosts: Sequence[str], seed: int) -> list[Pair]:
    """A random derangement: every host sends to one other and receives from one other
    (uniform over derangements: shuffles with a fixed point are drawn again)."""
    hs = _hosts(hosts)
    rng, idx = random.Random(seed), list(range(len(hs)))
    while True:
        rng.shuffle(idx)
        if all(i != j for i, j in enumerate(idx)):
            return [(hs[i], hs[j]) for i, j in enumerate(idx)]


def shift(hosts: Sequence[str], k: int = 1) -> list[Pair]:
    """Host i sends to host (i + k) mod N."""
    hs = _hosts(hosts)
    n = len(hs)
    if k % n == 0:
        raise PatternError("k", "shift by %d of %d hosts sends every host to itself (k mod N must not be 0)"
                           % (k, n))
    return [(hs[i], hs[(i + k) % n]) for i in range(n)]


def bit_reversal(hosts: Sequence[str]) -> list[Pair]:
    """Host i sends to the host whose index is i's log2(N) bits reversed; N a power of
    two; fixed points (palindromic indices) send nothing."""
    hs = _hosts(hosts)
    b = _bits(len(hs))
    out = []
    for i, src in enumerate(hs):
        j = int(format(i, "0%db" % b)[::-1], 2)
        if j != i:
            out.append((src, hs[j]))
    return out


def bit_complement(hosts: Sequence[str]) -> list[Pair]:
    """Host i sends to host i XOR (N - 1) (its bits complemented); N a power of two."""
    hs = _hosts(hosts)
    n = len(hs)
    _bits(n)
    return [(hs[i], hs[i ^ (n - 1)]) for i in range(n)]


def all_to_all(hosts: Sequence[str]) -> list[Pair]:
    """Every ordered pair of distinct hosts once, source by source."""
    hs = _hosts(hosts)
    return [(s, d) for s in hs for d in hs if s != d]


def hotspot(hosts: Sequence[str], seed: int, fraction: float | None = None, senders: int | None = None,
            destination: str | int | None = None) -> list[Pair]:
    """The hot spot's flows: *senders* hosts, or round(*fraction* x (N - 1)) of them (at
    least 1; default: every other host), drawn at random from the hosts other than
    *destination* (a name or an index; default the first host) and listed in host order."""
    hs = _hosts(hosts)
    n = len(hs)
    if destination is None:
        dst = hs[0]
    elif isinstance(destination, int):
        if not 0 <= destination < n:
            raise PatternError("destination", "index %d is not one of the %d hosts (0 to %d)"
                               % (destination, n, n - 1))
        dst = hs[destination]
    elif destination in hs:
        dst = destination
    else:
        raise PatternError("destination", "%r is not one of the pattern's hosts" % destination)
    others = [h for h in hs if h != dst]
    if fraction is not None and senders is not None:
        raise PatternError("senders", "give only one of fraction, senders")
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise PatternError("fraction", "must be in (0, 1], got %r" % fraction)
        count = max(1, round(fraction * len(others)))
    elif senders is not None:
        if not 1 <= senders <= len(others):
            raise PatternError("senders", "must be between 1 and %d (the other hosts), got %d"
                               % (len(others), senders))
        count = senders
    else:
        count = len(others)
    chosen = set(random.Random(seed).sample(others, count))
    return [(h, dst) for h in others if h in chosen]


def bystanders(hosts: Sequence[str], hot: Sequence[Pair]) -> list[str]:
    """The hosts (in order) that are neither a hot spot nor one of its senders."""
    used = {h for p in hot for h in p}
    return [h for h in hosts if h not in used]


def pairs(pattern: str, hosts: Sequence[str], seed: int = 1, **params: Any) -> list[Pair]:
    """The (src, dst) pairs of *pattern* (one of :data:`PATTERNS`; for hotspot, the hot
    spot's pairs only) with its parameters (k, flows_per_host, fraction, senders,
    destination)."""
    fns: dict[str, Callable[..., list[Pair]]] = {
        "uniform": lambda: uniform(hosts, seed, **params), "permutation": lambda: permutation(hosts, seed, **params),
        "shift": lambda: shift(hosts, **params), "bit_reversal": lambda: bit_reversal(hosts, **params),
        "bit_complement": lambda: bit_complement(hosts, **params), "all_to_all": lambda: all_to_all(hosts, **params),
        "hotspot": lambda: hotspot(hosts, seed, **params), "incast": lambda: hotspot(hosts, seed, **params)}
    if pattern not in fns:
        raise PatternError("pattern", "unknown pattern %r (expected one of: %s)" % (pattern, ", ".join(PATTERNS)))
    return fns[pattern]()


def flow_names(group: str, prs: Sequence[Pair]) -> list[str]:
    """``<group>.<src>-<dst>``, with ``#2``, ``#3``, ... for a pair met again."""
    seen: dict[Pair, int] = {}
    out = []
    for p in prs:
        k = seen[p] = seen.get(p, 0) + 1
        out.append("%s.%s-%s%s" % (group, p[0], p[1], "#%d" % k if k > 1 else ""))
    return out


def table_seed(seed: int, group: str) -> int:
    """The seed of a table's random choices: the scenario's (or its own) and its group."""
    return (seed << 32) ^ zlib.crc32(group.encode())
