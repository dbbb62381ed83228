"""The scenario's ``[routing]`` table (issue 15): which subnet-manager engine fills the
switches' LFTs (OpenSM's names, REFERENCE-FABRICS §3), the LMC, the roots, an LFT file
and the credit-loop check, validated into :class:`~ibemu.scenario.model.RoutingSpec`.
"""
from __future__ import annotations

import os
from typing import Any

from ..cc import CCSpec
from ..fabric.params import FlowSpec
from ..fabric.arn import ARN_HOLD, ARN_THRESHOLD
from ..units import parse_time
from ..validate import Checker, boolean, integer, string, table, unknown_node
from .model import HCASpec, RoutingSpec, SwitchSpec
from .opensm_routing import routing_defaults

__all__ = ["ROUTING_KEYS", "ENGINES", "ADAPTIVE_POLICIES", "REORDER_WINDOW", "parse_routing"]

ROUTING_KEYS = ("engine", "lmc", "roots", "lft_file", "check_credit_loops", "adaptive", "adaptive_policy",
                "reorder_window", "arn", "arn_threshold", "arn_hold")
ADAPTIVE_POLICIES = ("credits", "random", "static")
REORDER_WINDOW = 64
"""The RC responders' default out-of-order window (packets) under adaptive routing: the
most packets of one flow that can overtake another on two minimal paths of the shipped
fat trees -- a packet can wait behind at most the input buffers feeding its output at
each of the two queueing hops (up at the leaf, down at the spine): 2 hops x 8 inputs x 4
packets = 64 on the 128-host fat tree (radix 16, 4-packet buffers).  A loss is then
NAKed as soon as a packet 64 PSNs beyond it arrives (docs/adaptive.md)."""
ENGINES = ("minhop", "updn", "ftree", "file")


def parse_routing(ctx: Checker, raw: Any, switches: list[SwitchSpec], hcas: list[HCASpec], flows: list[FlowSpec],
                  source: str | None, explicit_lids: set[int] | frozenset[int] = frozenset(),
                  path: str = "routing", cc: CCSpec | None = None) -> RoutingSpec:
    """Validate ``[routing]`` (every key: the site's scenario reference, docs/reference/scenario.md,
    "Output and routing", generated from :mod:`ibemu.scenario.keyref`)::

        [routing]
        engine = "ftree"              # minhop (default) | updn | ftree | file
        lmc = 0                       # 0..7: 2^LMC LIDs per HCA port, base LIDs aligned to 2^LMC
        roots = ["S0", "S1"]          # switches: updn/ftree roots (default: found as OpenSM does)
        lft_file = "lfts.dump"        # engine "file": opensm-lfts.dump or ibroute output,
                                      # relative to the scenario file
        check_credit_loops = true     # refuse a routing whose channel dependency graph has a cycle
        adaptive = false              # adaptive routing in the switches (issue 31; [[switch]] adaptive wins)
        adaptive_policy = "credits"   # credits | random | static (ibemu.fabric.adaptive)
        reorder_window = 64           # RC responders: packets taken ahead of the expected PSN
                                      # (default 64 with adaptive routing, else 0: in order only)
        arn = false                   # adaptive routing notifications (ibemu.fabric.arn; needs adaptive)
        arn_threshold = 1             # notify upstream for a packet queued behind this many full packets (MTU bytes)
        arn_hold = "10us"             # how long a notified port is avoided for the DLID (and notified again)

    Also checks the HCAs' base LIDs against the LMC and each flow's ``path``.  With
    LMC > 0 the HCAs without a ``lid`` (indices not in *explicit_lids*) get, in list
    order, the lowest free blocks of 2^LMC LIDs instead of consecutive LIDs.

    The opensm.conf of ``[cc.cca]`` in *cc* (issue 18) gives the keys this table does not
    (:func:`~ibemu.scenario.opensm_routing.routing_defaults`: routing_engine, lmc,
    root_guid_file, lfts_file); a key given here wins.
    """
    t = table(ctx, path, raw if raw is not None else {}, ROUTING_KEYS)
    spec = RoutingSpec()
    defaults, spec.fallback, spec.opensm = routing_defaults(ctx, cc, t, switches, hcas)
    t = {**defaults, **t}
    spec.engine = string(ctx, path + ".engine", t.get("engine", "minhop"), ENGINES)
    chain = [spec.engine, *spec.fallback]
    spec.lmc = integer(ctx, path + ".lmc", t.get("lmc", 0), 0, 7)
    if "roots" in t:
        rp = path + ".roots"
        roots = t["roots"]
        if not isinstance(roots, list):
            raise ctx.err(rp, "expected an array of switch names, got %r" % (roots,))
        kinds = {s.name: "switch" for s in switches} | {h.name: "hca" for h in hcas}
        for i, r in enumerate(roots):
            ip = "%s[%d]" % (rp, i)
            r = string(ctx, ip, r)
            if r not in kinds:
                raise ctx.err(ip, unknown_node(r, kinds))
            if kinds[r] != "switch":
                raise ctx.err(ip, "%r is an HCA; roots are switches" % r)
            if r in spec.roots:
                raise ctx.err(ip, "%r is listed twice" % r)
            spec.roots.append(r)
        if not {"updn", "ftree"} & set(chain):
            raise ctx.err(rp, "only used with engine 'updn' or 'ftree' (engine is %r)" % spec.engine)
    if "lft_file" in t:
        f = string(ctx, path + ".lft_file", t["lft_file"])
        if "file" not in chain:
            raise ctx.err(path + ".lft_file", "only used with engine 'file' (engine is %r)" % spec.engine)
        base = os.path.dirname(source) if source else ""
        spec.lft_file = os.path.join(base, f)
    elif spec.engine == "file":
        raise ctx.err(path + ".lft_file", "missing (engine 'file' loads the LFTs from it)")
    spec.check_credit_loops = boolean(ctx, path + ".check_credit_loops", t.get("check_credit_loops", True))
    spec.adaptive = boolean(ctx, path + ".adaptive", t.get("adaptive", False))
    spec.adaptive_policy = string(ctx, path + ".adaptive_policy", t.get("adaptive_policy", "credits"),
                                  ADAPTIVE_POLICIES)
    adaptive_anywhere = spec.adaptive or any(s.adaptive for s in switches)
    spec.reorder_window = integer(ctx, path + ".reorder_window",
                                  t.get("reorder_window", REORDER_WINDOW if adaptive_anywhere else 0), 0, 1 << 22)
    spec.arn = boolean(ctx, path + ".arn", t.get("arn", False))
    if spec.arn and not adaptive_anywhere:
        raise ctx.err(path + ".arn", "notifications serve adaptive routing: set routing.adaptive = true too")
    spec.arn_threshold = integer(ctx, path + ".arn_threshold", t.get("arn_threshold", ARN_THRESHOLD), 1, 1 << 16)
    spec.arn_hold = ctx.conv(path + ".arn_hold", parse_time, t["arn_hold"]) if "arn_hold" in t else ARN_HOLD
    if spec.arn_hold <= 0:
        raise ctx.err(path + ".arn_hold", "must be a positive time, got %r" % (t["arn_hold"],))
    n = 1 << spec.lmc
    if n > 1:
        taken = {lid for i, h in enumerate(hcas) if i in explicit_lids for lid in range(h.lid, h.lid + n)}
        nxt = n
        for i, h in enumerate(hcas):
            if i in explicit_lids:
                continue
            while any(x in taken for x in range(nxt, nxt + n)):
                nxt += n
            h.lid = nxt
            taken.update(range(nxt, nxt + n))
    for i, h in enumerate(hcas):
        if h.lid % n:
            raise ctx.err("hca[%d].lid" % i, "LID %d is not aligned to 2^LMC = %d (routing.lmc = %d): "
                          "use a multiple of %d" % (h.lid, n, spec.lmc, n))
        if h.lid + n - 1 >= 0xC000:
            raise ctx.err("hca[%d].lid" % i, "LIDs %d..%d go beyond the unicast range (0xbfff)"
                          % (h.lid, h.lid + n - 1))
    for i, fl in enumerate(flows):
        p = getattr(fl, "path", None)
        if p is not None and p >= n:
            raise ctx.err("flow[%d].path" % i, "path %d needs routing.lmc >= %d (2^LMC paths, 0..%d)"
                          % (p, max(1, p.bit_length()), n - 1))
    return spec
