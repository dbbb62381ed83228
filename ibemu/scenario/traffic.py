"""Traffic patterns (issue 15 Deliver 4): ``[[traffic]]`` tables that expand into flows,
for any fabric, and the same patterns as Python functions returning (src, dst) pairs.

A ``[[traffic]]`` table::

    [[traffic]]
    pattern = "permutation"       # see below
    hosts = ["h0", "h1", ...]     # optional: the HCAs taking part, in this order (default: all, as listed)
    group = "perm"                # optional: the flows' group (default: the pattern's name)
    seed = 7                      # optional (default: scenario.seed)
    max_flows = 65536             # optional guard on the number of flows the table makes
    arrival = "poisson"           # the flows' traffic generator: greedy (default), messages, onoff, poisson
    load = 0.5                    # ... and every other flow key of [[flow]] but name/src/dst/group:
    message_size = {dist = "exponential", mean = "64KiB"}     # transport, op, window, start, stop, sl, ...

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

import copy
import random
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..fabric.params import FlowSpec, LinkParams
from ..validate import Checker, describe, integer, join, name, string, table, tables, unknown_node
from .flows import FLOW_KEYS, flow_options, number
from .model import LinkSpec

__all__ = ["PATTERNS", "PAIR_PATTERNS", "PatternError", "uniform", "permutation", "shift", "bit_reversal",
           "bit_complement", "all_to_all", "hotspot", "bystanders", "pairs", "flow_names", "expand_traffic",
           "parse_traffic", "MAX_FLOWS"]

Pair = tuple[str, str]

PAIR_PATTERNS = ("uniform", "permutation", "shift", "bit_reversal", "bit_complement", "all_to_all")
PATTERNS = PAIR_PATTERNS + ("hotspot", "incast")
MAX_FLOWS = 65536                       # default guard: a table making more flows is a mistake until raised

# flow keys a [[traffic]] table passes to each flow ("arrival" stands for [[flow]]'s "pattern")
FLOW_KEYS_OF_TRAFFIC = tuple(k for k in FLOW_KEYS if k not in ("name", "src", "dst", "pattern", "group")) \
    + ("arrival",)
_OWN_KEYS = ("pattern", "hosts", "exclude", "group", "seed", "max_flows")
_PARAMS = {"uniform": ("flows_per_host",), "shift": ("k",),
           "hotspot": ("destination", "fraction", "senders", "background"),
           "incast": ("destination", "fraction", "senders", "background")}
_ALL_PARAMS = ("flows_per_host", "k", "destination", "fraction", "senders", "background")
_BACKGROUND_KEYS = ("pattern", "group", "flows_per_host", "k") + FLOW_KEYS_OF_TRAFFIC


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


# -- [[traffic]] tables
def expand_traffic(entries: Sequence[Mapping[str, Any]], hosts: Sequence[str], seed: int = 1,
                   rates: Mapping[str, int] | None = None, label: str = "<traffic>") -> list[FlowSpec]:
    """The flows of ``[[traffic]]``-shaped tables over *hosts* (for scripts): *rates*
    gives each host's link rate in bytes/s (default 4X SDR) for rate_fraction and load.
    A mistake raises :class:`~ibemu.validate.ScenarioError` naming ``traffic[i].<key>``."""
    default = LinkParams().rate
    rate_of = {h: default for h in hosts}
    rate_of.update(rates or {})
    return _expand(Checker(label), list(entries), list(hosts), seed, rate_of, None, {})


def parse_traffic(ctx: Checker, entries: Any, hcas: Sequence[str], nodes: Mapping[str, str],
                  links: Sequence[LinkSpec], seed: int, flows: Sequence[FlowSpec]) -> list[FlowSpec]:
    """The flows of a scenario's ``[[traffic]]`` tables (after its ``[[flow]]`` entries
    *flows*, whose names they must not take); *hcas*: every HCA in listing order."""
    rate_of: dict[str, int] = {}
    sw_nbr: dict[str, list[str]] = {}
    attached: dict[str, set[str]] = {h: set() for h in hcas}     # HCA -> switches and HCAs it links to
    for ln in links:
        for x, y in ((ln.a, ln.b), (ln.b, ln.a)):
            if nodes.get(x) == "hca":
                rate_of[x] = ln.params.rate
                attached.setdefault(x, set()).add(y)
            elif nodes.get(y) == "switch":
                sw_nbr.setdefault(x, []).append(y)
    comp: dict[str, int] = {}
    for s in (x for x, kind in nodes.items() if kind == "switch"):
        if s not in comp:
            comp[s], todo = len(comp), [s]
            cid = comp[s]
            while todo:
                for m in sw_nbr.get(todo.pop(), []):
                    if m not in comp:
                        comp[m] = cid
                        todo.append(m)
    # an HCA's reach: the switch components it attaches to (by name "#c") and HCAs linked directly
    reach = {h: {("#%d" % comp[y]) if nodes.get(y) == "switch" else y for y in ys}
             for h, ys in attached.items()}

    def reachable(src: str, dst: str) -> bool:
        return dst in reach[src] or bool({r for r in reach[src] if r.startswith("#")} & reach[dst])

    taken = {f.name: "flow[%d]" % i for i, f in enumerate(flows)}
    entries = tables(ctx, "traffic", entries)
    return _expand(ctx, entries, list(hcas), seed, rate_of, reachable, taken, nodes)


def _expand(ctx: Checker, entries: list[Any], all_hosts: list[str], seed: int, rate_of: Mapping[str, int],
            reachable: Callable[[str, str], bool] | None, taken: dict[str, str],
            nodes: Mapping[str, str] | None = None) -> list[FlowSpec]:
    out: list[FlowSpec] = []
    for i, t in enumerate(entries):
        path = join("traffic", i)
        out += _one_table(ctx, path, t, all_hosts, seed, rate_of, reachable, taken, nodes)
    return out


def _one_table(ctx: Checker, path: str, t: Any, all_hosts: list[str], scn_seed: int,
               rate_of: Mapping[str, int], reachable: Callable[[str, str], bool] | None,
               taken: dict[str, str], nodes: Mapping[str, str] | None) -> list[FlowSpec]:
    """The flows of one [[traffic]] table at *path*."""
    def p(k: str) -> str:
        return join(path, k)

    table(ctx, path, t, _OWN_KEYS + _ALL_PARAMS + FLOW_KEYS_OF_TRAFFIC, ("pattern",))
    pattern = string(ctx, p("pattern"), t["pattern"], PATTERNS)
    for k in _ALL_PARAMS:
        if k in t and k not in _PARAMS.get(pattern, ()):
            users = [q for q in PATTERNS if k in _PARAMS.get(q, ())]
            raise ctx.err(p(k), "only used with pattern %s (pattern is %r)"
                          % (" or ".join(repr(u) for u in users), pattern))
    hosts = _host_list(ctx, p("hosts"), t, all_hosts, nodes)
    group = name(ctx, p("group"), t.get("group", pattern))
    seed = integer(ctx, p("seed"), t.get("seed", scn_seed), 0, 2**63 - 1)
    max_flows = integer(ctx, p("max_flows"), t.get("max_flows", MAX_FLOWS), 1)
    keys = {k: t[k] for k in FLOW_KEYS_OF_TRAFFIC if k in t}

    # the patterns' parameters
    params: dict[str, Any] = {}
    if "flows_per_host" in t:
        params["flows_per_host"] = integer(ctx, p("flows_per_host"), t["flows_per_host"], 1)
    if "k" in t:
        params["k"] = integer(ctx, p("k"), t["k"])
    if "fraction" in t:
        params["fraction"] = number(ctx, p("fraction"), t["fraction"])
    if "senders" in t:
        params["senders"] = integer(ctx, p("senders"), t["senders"], 1)
    if "destination" in t:
        d = t["destination"]
        if not isinstance(d, (str, int)) or isinstance(d, bool):
            raise ctx.err(p("destination"), "expected a host name or an index, got %s" % describe(d))
        params["destination"] = d
    _guard(ctx, path, pattern, len(hosts), params.get("flows_per_host", 1), max_flows)
    made = _pairs(ctx, path, pattern, hosts, table_seed(seed, group), params)
    groups = [(group, made, keys, path)]

    if pattern in ("hotspot", "incast") and "background" in t:
        bpath = p("background")
        b = t["background"]
        if isinstance(b, str):
            b = {"pattern": b}
        table(ctx, bpath, b, _BACKGROUND_KEYS, ("pattern",))
        bpattern = string(ctx, join(bpath, "pattern"), b["pattern"], PAIR_PATTERNS)
        for k in ("flows_per_host", "k"):
            if k in b and k not in _PARAMS.get(bpattern, ()):
                raise ctx.err(join(bpath, k), "not a parameter of pattern %r" % bpattern)
        bparams: dict[str, Any] = {}
        if "flows_per_host" in b:
            bparams["flows_per_host"] = integer(ctx, join(bpath, "flows_per_host"), b["flows_per_host"], 1)
        if "k" in b:
            bparams["k"] = integer(ctx, join(bpath, "k"), b["k"])
        bgroup = name(ctx, join(bpath, "group"), b.get("group", "background"))
        rest = bystanders(hosts, made)
        if len(rest) < 2:
            raise ctx.err(bpath, "needs at least 2 hosts besides the hot spot and its senders, %d left" % len(rest))
        _guard(ctx, path, bpattern, len(rest), bparams.get("flows_per_host", 1), max_flows, len(made))
        bmade = _pairs(ctx, bpath, bpattern, rest, table_seed(seed, bgroup), bparams)
        bkeys = dict(keys)
        bkeys.update({k: b[k] for k in FLOW_KEYS_OF_TRAFFIC if k in b})
        groups.append((bgroup, bmade, bkeys, bpath))
    if sum(len(g[1]) for g in groups) > max_flows:
        raise ctx.err(p("max_flows"), "the pattern makes %d flows, more than max_flows = %d (raise it to allow)"
                      % (sum(len(g[1]) for g in groups), max_flows))

    out: list[FlowSpec] = []
    for grp, prs, fkeys, gpath in groups:
        opts = dict(fkeys)
        if "arrival" in opts:
            opts["pattern"] = opts.pop("arrival")
        protos: dict[int, FlowSpec] = {}        # per source link rate: the flows' options, checked once
        for nm, (src, dst) in zip(flow_names(grp, prs), prs):
            if reachable is not None and not reachable(src, dst):
                raise ctx.err(p("hosts"), "%r cannot be reached from %r" % (dst, src))
            if nm in taken:
                raise ctx.err(join(gpath, "group"), "flow name %r made twice (also %s)" % (nm, taken[nm]))
            name(ctx, join(gpath, "group"), nm)
            taken[nm] = gpath
            rate = rate_of[src]
            if rate not in protos:
                proto = FlowSpec("", "", "")
                flow_options(ctx, gpath, opts, proto, rate, pattern_key="arrival")
                proto.group = grp
                protos[rate] = proto
            fl = copy.copy(protos[rate])
            fl.name, fl.src, fl.dst = nm, src, dst
            out.append(fl)
    return out


def _host_list(ctx: Checker, path: str, t: Mapping[str, Any], all_hosts: list[str],
               nodes: Mapping[str, str] | None) -> list[str]:
    """The table's ``hosts``: HCA names, each once (default: every HCA in listing order),
    less those its ``exclude`` lists."""
    hosts = _names(ctx, path, t["hosts"], all_hosts, nodes) if "hosts" in t else list(all_hosts)
    if "exclude" in t:
        gone = set(_names(ctx, path[:-len("hosts")] + "exclude", t["exclude"], all_hosts, nodes))
        hosts = [h for h in hosts if h not in gone]
    return hosts


def _names(ctx: Checker, path: str, v: Any, all_hosts: list[str], nodes: Mapping[str, str] | None) -> list[str]:
    """A list of HCA names at *path*, each once."""
    if not isinstance(v, list):
        raise ctx.err(path, "expected a list of HCA names, got %s" % describe(v))
    known_hosts, seen, out = set(all_hosts), set(), []
    for j, h in enumerate(v):
        hp = join(path, j)
        h = string(ctx, hp, h)
        if h not in known_hosts:
            if nodes is not None and nodes.get(h) == "switch":
                raise ctx.err(hp, "%r is a switch; traffic runs between HCAs" % h)
            raise ctx.err(hp, unknown_node(h, dict(nodes) if nodes is not None else {x: "hca" for x in all_hosts}))
        if h in seen:
            raise ctx.err(hp, "%r listed twice" % h)
        seen.add(h)
        out.append(h)
    return out


def _guard(ctx: Checker, path: str, pattern: str, n: int, flows_per_host: int, max_flows: int,
           made: int = 0) -> None:
    """Refuse, before making them, more flows than *max_flows* (all_to_all, uniform),
    *made* flows of the table's hot spot included."""
    count = n * (n - 1) if pattern == "all_to_all" else n * flows_per_host
    if made + count > max_flows:
        raise ctx.err(join(path, "max_flows"), "%s of %d hosts makes %d flows%s, more than max_flows = %d "
                      "(raise it to allow)" % (pattern, n, count, " (and the hot spot %d)" % made if made else "",
                                               max_flows))


def _pairs(ctx: Checker, path: str, pattern: str, hosts: list[str], seed: int, params: dict[str, Any]) -> list[Pair]:
    try:
        return pairs(pattern, hosts, seed, **params)
    except PatternError as e:        # a background's hosts are those left over: the error names the background
        key = path if e.key == "hosts" and path.endswith(".background") else join(path, e.key)
        raise ctx.err(key, str(e)) from None
