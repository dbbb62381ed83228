"""Port groups for adaptive routing (issue 31 Deliver 1): for each switch and each CA
LID, the output ports a packet to that LID may take.

A group is derived from the topology and the routing: the ports of the switch that lead
to a switch one hop nearer the destination's leaf switch (a minimal path), provided the
LFT's own port is one of them -- where the routing engine chose a longer path (updn
around a forbidden turn), the switch keeps the LFT's port alone.  On a fat tree routed by
ftree these are the up-ports that lie on a minimal path (every up-port of a leaf for a
destination on another leaf; the down port that leads to it wherever the destination is
below), so adaptive choices stay on minimal up*/down* paths and cannot close a credit
loop (Dally & Seitz 1987; REFERENCE-FABRICS §4).  On other topologies minimal paths may
close one: :func:`ibemu.routing.cdg.check_credit_loops` is given the groups and refuses
such a configuration.

Only groups of two ports or more are kept; switch LIDs (management) get none.
"""
from __future__ import annotations

from .graph import Routes, Subnet, switch_hops

__all__ = ["Groups", "minimal_groups", "merge_groups"]

Groups = dict[str, dict[int, tuple[int, ...]]]
"""Adaptive routing groups: switch name -> {destination LID: its output ports}."""


def minimal_groups(sn: Subnet, lfts: Routes, switches: set[str] | None = None) -> Groups:
    """The groups of every switch (of *switches*, if given) for every CA LID whose LFT
    port lies on a minimal path with at least one other port beside it."""
    out: Groups = {}
    names = [n.name for n in sn.switches() if switches is None or n.name in switches]
    by_leaf: dict[str, list[int]] = {}                # leaf switch -> LIDs of its CAs
    for c in sn.cas():
        att = sn.attached_switch(c.name)
        if att is not None:
            by_leaf.setdefault(att[0], []).extend(sn.lids(c.name))
    for leaf, lids in by_leaf.items():
        dist = switch_hops(sn, [leaf])
        for s in names:
            d = dist.get(s)
            if d is None or d == 0:
                continue
            ports = tuple(sorted(p for p, (q, _) in sn.nodes[s].peers.items()
                                 if sn.nodes[q].switch and dist.get(q) == d - 1))
            if len(ports) < 2:
                continue
            lft = lfts.get(s, {})
            mine = out.setdefault(s, {})
            for lid in lids:
                if lft.get(lid) in ports:
                    mine[lid] = ports
    return {s: g for s, g in out.items() if g}


def merge_groups(derived: Groups, explicit: dict[str, dict[int, list[int]]]) -> Groups:
    """*derived* with the *explicit* groups of a scenario winning, LID by LID."""
    out = {s: dict(g) for s, g in derived.items()}
    for s, g in explicit.items():
        mine = out.setdefault(s, {})
        for lid, ports in g.items():
            mine[lid] = tuple(ports)
    return out
