"""The traffic of a scenario: ``[[flow]]`` entries (seed 003 section 3: greedy sources,
message counts and ON/OFF sources; RC or UD; static rate limits by IPD or rate).

Issue 15 Deliver 4 adds Poisson arrivals (``pattern = "poisson"`` with
``mean_interarrival``, or ``load``: the fraction of the source's link rate its payload
offers on average, so mean interarrival = mean size / (load x link rate)) and message
sizes drawn per message (``message_size`` as a table, :func:`size_dist`).  The
``[[traffic]]`` tables of :mod:`.traffic` use :func:`flow_options` for the same keys.
"""
from __future__ import annotations

from typing import Any

from ..fabric.params import MAX_MESSAGE, FlowSpec, SizeDist
from ..units import PS_PER_S, describe, format_time, parse_bytes, parse_rate, parse_time
from ..validate import Checker, integer, join, name, string, table, tables, unknown_node
from .model import LinkSpec
from .nodes import pkey

__all__ = ["FLOW_KEYS", "PATTERNS", "parse_flows", "flow_options", "message_size", "size_dist", "number"]

FLOW_KEYS = ("name", "src", "dst", "transport", "op", "pattern", "message_size", "count", "start",
             "stop", "window", "ipd", "rate", "rate_fraction", "sl", "mean_on", "mean_off", "group", "pkey",
             "mean_interarrival", "load", "path")
PATTERNS = ("greedy", "messages", "onoff", "poisson")
SIZE_DISTS = ("exponential", "uniform", "choice")
MAX_CHOICES = 1024


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
        flow_options(ctx, path, f, fl, rate_of[fl.src])
        flows.append(fl)
    return flows


def flow_options(ctx: Checker, path: str, f: dict[str, Any], fl: FlowSpec, src_rate: int,
                 pattern_key: str = "pattern") -> None:
    """Set on *fl* every flow key of the table *f* at *path* but name, src and dst
    (*src_rate*: the rate of the source's link, for rate_fraction and load;
    *pattern_key*: the key named when "pattern" is wrong, "arrival" in [[traffic]])."""

    def p(k: str) -> str:
        return "%s.%s" % (path, k)

    fl.transport = string(ctx, p("transport"), f.get("transport", "rc"), ("rc", "ud"))
    fl.op = string(ctx, p("op"), f.get("op", "send"), ("send", "write", "read"))
    if fl.transport == "ud" and fl.op != "send":
        raise ctx.err(p("op"), "ud supports only send (got %r)" % fl.op)
    fl.pattern = string(ctx, p(pattern_key), f.get("pattern", "greedy"), PATTERNS)
    if "message_size" in f:
        if isinstance(f["message_size"], dict):
            fl.size_dist = size_dist(ctx, p("message_size"), f["message_size"])
        else:
            fl.message_size = message_size(ctx, p("message_size"), f["message_size"])
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
    if fl.pattern == "poisson":
        if "mean_interarrival" not in f and "load" not in f:
            raise ctx.err(p("mean_interarrival"), "missing (pattern 'poisson' needs mean_interarrival or load)")
        if "mean_interarrival" in f and "load" in f:
            raise ctx.err(p("load"), "give only one of mean_interarrival, load")
        if "load" in f:
            x = number(ctx, p("load"), f["load"])
            if not 0 < x <= 1:
                raise ctx.err(p("load"), "must be in (0, 1], got %r" % x)
            mean = fl.size_dist.mean_size() if fl.size_dist is not None else fl.message_size
            fl.mean_interarrival = max(1, round(mean * PS_PER_S / (x * src_rate)))
        else:
            fl.mean_interarrival = ctx.conv(p("mean_interarrival"), parse_time, f["mean_interarrival"])
            if fl.mean_interarrival <= 0:
                raise ctx.err(p("mean_interarrival"), "must be positive")
    else:
        for k in ("mean_interarrival", "load"):
            if k in f:
                raise ctx.err(p(k), "only used with pattern 'poisson' (pattern is %r)" % fl.pattern)
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
        x = number(ctx, p("rate_fraction"), f["rate_fraction"])
        if not 0 < x <= 1:
            raise ctx.err(p("rate_fraction"), "must be in (0, 1], got %r" % x)
        fl.rate = x * src_rate
    fl.sl = integer(ctx, p("sl"), f.get("sl", 0), 0, 15)
    if "pkey" in f:
        fl.pkey = pkey(ctx, p("pkey"), f["pkey"])
    if "group" in f:
        fl.group = name(ctx, p("group"), f["group"])
    if "path" in f:                 # LID offset under LMC > 0 (checked against routing.lmc)
        fl.path = integer(ctx, p("path"), f["path"], 0, 127)


def number(ctx: Checker, path: str, x: Any) -> float:
    """*x* as a number (an integer or a float, not a boolean)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ctx.err(path, "expected a number, got %s" % describe(x))
    return float(x)


def message_size(ctx: Checker, path: str, v: Any) -> int:
    """A message size: bytes (an integer or a string such as "2KiB"), 1 byte to 2 GiB."""
    n = ctx.conv(path, parse_bytes, v)
    if not 1 <= n <= MAX_MESSAGE:
        raise ctx.err(path, "must be between 1 byte and 2GiB, got %d" % n)
    return n


def size_dist(ctx: Checker, path: str, v: dict[str, Any]) -> SizeDist:
    """A message_size table (issue 15 Deliver 4): ``{dist = "exponential", mean = ...}``
    (optional ``min``/``max`` bound the draws), ``{dist = "uniform", min = ..., max = ...}``
    or ``{dist = "choice", values = [...], weights = [...]}`` (weights optional)."""
    kind = string(ctx, join(path, "dist"), v.get("dist"), SIZE_DISTS) if "dist" in v else None
    if kind is None:
        raise ctx.err(join(path, "dist"), "missing (one of %s)" % ", ".join(SIZE_DISTS))
    if kind == "exponential":
        table(ctx, path, v, ("dist", "mean", "min", "max"), ("mean",))
    elif kind == "uniform":
        table(ctx, path, v, ("dist", "min", "max"), ("min", "max"))
    else:
        table(ctx, path, v, ("dist", "values", "weights"), ("values",))
    d = SizeDist(kind)
    if "min" in v:
        d.low = message_size(ctx, join(path, "min"), v["min"])
    if "max" in v:
        d.high = message_size(ctx, join(path, "max"), v["max"])
        if d.high < d.low:
            raise ctx.err(join(path, "max"), "must be at least min (%d), got %d" % (d.low, d.high))
    if kind == "exponential":
        d.mean = float(message_size(ctx, join(path, "mean"), v["mean"]))
        if not d.low <= d.mean <= d.high:
            raise ctx.err(join(path, "mean"), "must be within min and max (%d..%d)" % (d.low, d.high))
    if kind == "choice":
        vals = v["values"]
        if not isinstance(vals, list) or not vals:
            raise ctx.err(join(path, "values"), "expected a non-empty list of sizes, got %s" % describe(vals))
        if len(vals) > MAX_CHOICES:
            raise ctx.err(join(path, "values"), "at most %d sizes, got %d" % (MAX_CHOICES, len(vals)))
        d.values = [message_size(ctx, join(join(path, "values"), i), x) for i, x in enumerate(vals)]
        if "weights" in v:
            ws = v["weights"]
            if not isinstance(ws, list) or len(ws) != len(vals):
                raise ctx.err(join(path, "weights"), "expected a list of %d numbers (one per value), got %s"
                              % (len(vals), describe(ws)))
            d.weights = [number(ctx, join(join(path, "weights"), i), w) for i, w in enumerate(ws)]
            if any(w < 0 for w in d.weights) or sum(d.weights) <= 0:
                raise ctx.err(join(path, "weights"), "must be non-negative numbers with a positive sum")
    return d
