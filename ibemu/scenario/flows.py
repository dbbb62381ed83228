"""The traffic of a scenario: ``[[flow]]`` entries (seed 003 section 3: greedy sources,
message counts and ON/OFF sources; RC or UD; static rate limits by IPD or rate).
"""
from __future__ import annotations

from typing import Any

from ..fabric.params import FlowSpec
from ..units import describe, format_time, parse_bytes, parse_rate, parse_time
from ..validate import Checker, integer, join, name, string, table, tables, unknown_node
from .model import LinkSpec
from .nodes import pkey

__all__ = ["FLOW_KEYS", "parse_flows"]

FLOW_KEYS = ("name", "src", "dst", "transport", "op", "pattern", "message_size", "count", "start",
             "stop", "window", "ipd", "rate", "rate_fraction", "sl", "mean_on", "mean_off", "group", "pkey", "path")


def parse_flows(ctx: Checker, entries: Any, nodes: dict[str, str], links: list[LinkSpec]) -> list[FlowSpec]:
    """``[[flow]]`` entries between HCAs that the links connect (through switches only)."""
    nbr: dict[str, list[str]] = {n: [] for n in nodes}
    rate_of: dict[str, int] = {}
    for ln in links:
        nbr[ln.a].append(ln.b)
        nbr[ln.b].append(ln.a)
        for end in (ln.a, ln.b):
            if nodes[end] == "hca":
                rate_of[end] = ln.params.rate

    def reachable(src: str) -> set[str]:
        seen, todo = {src}, [src]
        while todo:
            n = todo.pop()
            for m in nbr[n]:
                if m not in seen:
                    seen.add(m)
                    if nodes[m] == "switch":
                        todo.append(m)
        return seen

    flows: list[FlowSpec] = []
    names: dict[str, str] = {}
    for i, f in enumerate(tables(ctx, "flow", entries)):
        path = join("flow", i)

        def p(k: str, path: str = path) -> str:
            return "%s.%s" % (path, k)

        table(ctx, path, f, FLOW_KEYS, ("src", "dst"))
        nm = name(ctx, p("name"), f.get("name", "flow%d" % i))
        if nm in names:
            raise ctx.err(p("name"), "duplicate flow name %r (also %s)" % (nm, names[nm]))
        names[nm] = path
        ends: dict[str, str] = {}
        for k in ("src", "dst"):
            node = string(ctx, p(k), f[k])
            if node not in nodes:
                raise ctx.err(p(k), unknown_node(node, nodes))
            if nodes[node] != "hca":
                raise ctx.err(p(k), "%r is a switch; flows start and end at HCAs" % node)
            ends[k] = node
        if ends["src"] == ends["dst"]:
            raise ctx.err(p("dst"), "same as src (%r)" % ends["src"])
        if ends["dst"] not in reachable(ends["src"]):
            raise ctx.err(p("dst"), "%r cannot be reached from %r" % (ends["dst"], ends["src"]))
        fl = FlowSpec(nm, ends["src"], ends["dst"])
        fl.transport = string(ctx, p("transport"), f.get("transport", "rc"), ("rc", "ud"))
        fl.op = string(ctx, p("op"), f.get("op", "send"), ("send", "write", "read"))
        if fl.transport == "ud" and fl.op != "send":
            raise ctx.err(p("op"), "ud supports only send (got %r)" % fl.op)
        fl.pattern = string(ctx, p("pattern"), f.get("pattern", "greedy"), ("greedy", "messages", "onoff"))
        if "message_size" in f:
            fl.message_size = ctx.conv(p("message_size"), parse_bytes, f["message_size"])
            if not 1 <= fl.message_size <= 2**31:
                raise ctx.err(p("message_size"), "must be between 1 byte and 2GiB, got %d" % fl.message_size)
        if fl.pattern == "messages":
            if "count" not in f:
                raise ctx.err(p("count"), "missing (pattern 'messages' needs a message count)")
            fl.count = integer(ctx, p("count"), f["count"], 1)
        elif "count" in f:
            raise ctx.err(p("count"), "only used with pattern 'messages' (pattern is %r)" % fl.pattern)
        for k in ("mean_on", "mean_off"):
            if fl.pattern == "onoff":
                if k not in f:
                    raise ctx.err(p(k), "missing (pattern 'onoff' needs mean_on and mean_off)")
                t = ctx.conv(p(k), parse_time, f[k])
                if t <= 0:
                    raise ctx.err(p(k), "must be positive")
                setattr(fl, k, t)
            elif k in f:
                raise ctx.err(p(k), "only used with pattern 'onoff' (pattern is %r)" % fl.pattern)
        fl.start = ctx.conv(p("start"), parse_time, f.get("start", 0))
        if "stop" in f:
            fl.stop = ctx.conv(p("stop"), parse_time, f["stop"])
            if fl.stop <= fl.start:
                raise ctx.err(p("stop"), "must be after start (%s)" % format_time(fl.start))
        if "window" in f:
            if fl.transport == "ud":
                raise ctx.err(p("window"), "needs transport 'rc' (ud has no ACKs to clock a window)")
            fl.window = integer(ctx, p("window"), f["window"], 1)
        given = [k for k in ("ipd", "rate", "rate_fraction") if k in f]
        if len(given) > 1:
            raise ctx.err(p(given[1]), "give only one of ipd, rate, rate_fraction")
        if "ipd" in f:
            fl.ipd = integer(ctx, p("ipd"), f["ipd"], 0, 255)
        if "rate" in f:
            fl.rate = float(ctx.conv(p("rate"), parse_rate, f["rate"]))
        if "rate_fraction" in f:
            x = f["rate_fraction"]
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise ctx.err(p("rate_fraction"), "expected a number, got %s" % describe(x))
            if not 0 < x <= 1:
                raise ctx.err(p("rate_fraction"), "must be in (0, 1], got %r" % x)
            fl.rate = x * rate_of[fl.src]
        fl.sl = integer(ctx, p("sl"), f.get("sl", 0), 0, 15)
        if "pkey" in f:
            fl.pkey = pkey(ctx, p("pkey"), f["pkey"])
        if "group" in f:
            fl.group = name(ctx, p("group"), f["group"])
        if "path" in f:                 # LID offset under LMC > 0 (checked against routing.lmc)
            fl.path = integer(ctx, p("path"), f["path"], 0, 127)
        flows.append(fl)
    return flows
