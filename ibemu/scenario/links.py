"""The links of a scenario: ``[[link]]`` entries over ``[defaults.link]``, their ports
(given as ``node:port`` or assigned: the next free one from 1; port 0 is a switch's
management port), their labels in results (``a->b`` / ``b->a``, or a name) and their
fabric levels (``levels = ["up1", "down1"]``, issue 15).
"""
from __future__ import annotations

import re
from typing import Any

from ..fabric.params import LinkParams
from ..units import ascii_digits, describe, parse_rate, parse_time
from ..validate import Checker, identifier, join, merged, string, table, tables, unknown_node
from .model import LinkSpec

__all__ = ["LINK_KEYS", "link_params", "link_levels", "parse_links", "label_paths"]

LINK_KEYS = ("rate", "propagation", "fc_period", "flow_control")
FLOW_CONTROL = ("wire", "ideal")


def link_params(ctx: Checker, items: dict[str, tuple[Any, str]]) -> LinkParams:
    """Rate, propagation delay, flow-control period and whether flow-control packets
    take link time (seed 003 Table 1 defaults; issue 13)."""
    p = LinkParams()
    if "rate" in items:
        p.rate = ctx.conv(items["rate"][1], parse_rate, items["rate"][0])
    if "propagation" in items:
        p.propagation = ctx.conv(items["propagation"][1], parse_time, items["propagation"][0])
    if "fc_period" in items:
        v, path = items["fc_period"]
        p.fc_period = ctx.conv(path, parse_time, v)
        if p.fc_period <= 0:
            raise ctx.err(path, "must be positive")
    if "flow_control" in items:
        v, path = items["flow_control"]
        if v not in FLOW_CONTROL:
            raise ctx.err(path, "must be one of %s, got %r" % (", ".join(map(repr, FLOW_CONTROL)), v))
        p.flow_control = v
    return p


_LEVEL_RE = re.compile(r"(up|down)([1-9][0-9]?)")


def link_levels(ctx: Checker, path: str, v: Any) -> tuple[str, str]:
    """A link's ``levels``: the fabric level of its a->b and b->a directions, ["up<i>",
    "down<i>"] or ["down<i>", "up<i>"] (issue 15: hosts are level 0, leaves level 1, ...;
    a->b going up from level i-1 to level i is "up<i>")."""
    if not isinstance(v, list) or len(v) != 2:
        raise ctx.err(path, "expected two level names such as [\"up1\", \"down1\"], got %s" % describe(v))
    ms = []
    for i, x in enumerate(v):
        m = _LEVEL_RE.fullmatch(string(ctx, join(path, i), x))
        if not m:
            raise ctx.err(join(path, i), "bad level %r (expected \"up<i>\" or \"down<i>\", i = 1..99)" % x)
        ms.append(m)
    if ms[0][1] == ms[1][1] or ms[0][2] != ms[1][2]:
        raise ctx.err(path, "the two directions must be up<i> and down<i> of one level i, got %r, %r" % (v[0], v[1]))
    return v[0], v[1]


def parse_links(ctx: Checker, entries: Any, nodes: dict[str, str], where: dict[str, str],
                ports_of: dict[str, int | None], dl: dict[str, Any]
                ) -> tuple[list[LinkSpec], dict[tuple[str, int], str]]:
    """[[link]] entries, with ports given or assigned (next free from 1; 0 is the
    switch management port); returns the links and {(node, port): link key path}."""
    links: list[LinkSpec] = []
    used: dict[tuple[str, int], str] = {}
    hca_link: dict[str, str] = {}
    lraw = tables(ctx, "link", entries)
    for i, ln in enumerate(lraw):
        path = join("link", i)
        table(ctx, path, ln, ("a", "b", "name", "levels") + LINK_KEYS, ("a", "b"))
        ends: list[tuple[str, int | None]] = []
        for side in ("a", "b"):
            epath = "%s.%s" % (path, side)
            node, _, port = string(ctx, epath, ln[side]).partition(":")
            if node not in nodes:
                raise ctx.err(epath, unknown_node(node, nodes))
            if ends and ends[0][0] == node:
                raise ctx.err(epath, "a link cannot connect %r to itself" % node)
            pnum = None
            if port:
                if not ascii_digits(port):
                    raise ctx.err(epath, "cannot read port %r (expected node or node:port)" % port)
                pnum = int(port)
                if nodes[node] == "hca" and pnum != 1:
                    raise ctx.err(epath, "HCA %r has one port, 1" % node)
                if nodes[node] == "switch":
                    if pnum == 0:
                        raise ctx.err(epath, "port 0 is the switch management port; links use ports 1 and up")
                    limit = ports_of[node] or 254
                    if pnum > limit:
                        raise ctx.err(epath, "switch %r has ports 1..%d" % (node, limit))
                if (node, pnum) in used:
                    raise ctx.err(epath, "port %s:%d is already used by %s" % (node, pnum, used[node, pnum]))
                used[node, pnum] = path
            if nodes[node] == "hca":
                if node in hca_link:
                    raise ctx.err(epath, "HCA %r already has a link (%s); an HCA has one port" % (node, hca_link[node]))
                hca_link[node] = path
            ends.append((node, pnum))
        lname = identifier(ctx, path + ".name", ln["name"]) if "name" in ln else None
        lp = link_params(ctx, merged(ln, path, dl, "defaults.link", LINK_KEYS))
        levels = link_levels(ctx, path + ".levels", ln["levels"]) if "levels" in ln else None
        links.append(LinkSpec(ends[0][0], ends[1][0], ends[0][1], ends[1][1], lp, lname, levels))
    for i, spec in enumerate(links):          # auto ports: next free, from 1 (0 is management)
        if spec.a_port is None:
            spec.a_port = _next_port(ctx, spec.a, i, used, nodes, where, ports_of)
        if spec.b_port is None:
            spec.b_port = _next_port(ctx, spec.b, i, used, nodes, where, ports_of)
    linked = {n for n, _ in used}
    for nm in nodes:
        if nm not in linked:
            raise ctx.err(where[nm], "%s %r has no link" % ("HCA" if nodes[nm] == "hca" else "switch", nm))
    return links, used


def _next_port(ctx: Checker, node: str, i: int, used: dict[tuple[str, int], str], nodes: dict[str, str],
               where: dict[str, str], ports_of: dict[str, int | None]) -> int:
    """The lowest free port of *node* from 1, taken for ``link[i]``."""
    port = 1
    while (node, port) in used:
        port += 1
    if nodes[node] == "switch" and port > (ports_of[node] or 254):
        raise ctx.err(where[node] + ".ports", "switch %r has %d ports; link[%d] needs one more"
                      % (node, ports_of[node] or 254, i))
    used[node, port] = join("link", i)
    return port


def label_paths(ctx: Checker, links: list[LinkSpec]) -> dict[str, str]:
    """Every direction's label -> key path of its link; two links may not share one."""
    labels: dict[str, str] = {}
    for i, ln in enumerate(links):
        for lab in ln.labels():
            if lab in labels:
                raise ctx.err(join("link", i) + ".name", "link label %r is also used by %s" % (lab, labels[lab]))
            labels[lab] = join("link", i)
    return labels
