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

The patterns, the flow names and the tables' random choices are in
:mod:`ibemu.scenario.patterns`.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..fabric.params import FlowSpec, LinkParams
from ..validate import Checker, describe, integer, join, name, string, table, tables, unknown_node
from .flows import FLOW_KEYS, flow_options, number
from .model import LinkSpec
from .patterns import PAIR_PATTERNS, PATTERNS, Pair, PatternError, bystanders, flow_names, pairs, table_seed

__all__ = ["expand_traffic", "parse_traffic", "MAX_FLOWS", "FLOW_KEYS_OF_TRAFFIC"]

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
