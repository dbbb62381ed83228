"""OpenSM's ``updn`` engine (REFERENCE-FABRICS §3-§4; OSM opensm/osm_ucast_updn.c):
up*/down* ranks from a root set, min-hop tables restricted to up*-then-down* paths,
then the shared LFT fill of :mod:`.minhop`.

Roots: the given switches, else OpenSM's automatic choice -- a switch whose histogram of
least hops to the CAs (counted at the CAs' switches) has exactly one bar above 90 % of
the CAs and none other above 5 %.  Roots rank 0, a breadth-first search ranks the rest
(+1).  A hop to a lower rank is UP; between equal ranks, from the higher to the lower id
(node GUID) is UP; between two roots it is UP.  The per-target search from each switch
never turns DOWN then UP (searching away from the target), so every path a packet takes
is up* then down* (Schroeder et al., Autonet 1991): its channel dependency graph is
acyclic.  No root found: OpenSM falls back to minhop; so does :func:`updn` (it says so
in its notes).
"""
from __future__ import annotations

from collections import deque

from ..errors import UserError
from .graph import Routes, Subnet, switch_hops
from .minhop import Hops, fill_lfts, least, minhop_hops

__all__ = ["auto_roots", "ranks", "updn_hops", "updn"]

_UNRANKED = 1 << 32


def auto_roots(sn: Subnet) -> list[str]:
    """OpenSM's root choice by min-hop histograms (updn_find_root_nodes_by_min_hop)."""
    hops = minhop_hops(sn)
    per_sw: dict[str, int] = {}
    for ca in sn.cas():
        att = sn.attached_switch(ca.name)
        if att:
            per_sw[att[0]] = per_sw.get(att[0], 0) + 1
    n = sum(per_sw.values())
    thd1, thd2 = n * 0.9, n * 0.05
    roots = []
    for s in sorted(sn.switches(), key=lambda x: x.guid):
        hist: dict[int, int] = {}
        for t, k in per_sw.items():
            h = least(hops, s.name, t)
            if h is not None:
                hist[h] = hist.get(h, 0) + k
        if sum(v > thd1 for v in hist.values()) == 1 and sum(v > thd2 for v in hist.values()) == 1:
            roots.append(s.name)
    return roots


def ranks(sn: Subnet, roots: list[str]) -> dict[str, int]:
    """Breadth-first ranks from *roots* (rank 0) over switch links (updn_subn_rank)."""
    rank = {s.name: _UNRANKED for s in sn.switches()}
    rank.update(switch_hops(sn, [s.name for s in sn.switches() if s.name in roots]))
    return rank


def _up(cur_rank: int, rem_rank: int, cur_id: int, rem_id: int) -> bool:
    """updn_get_dir: is the hop cur -> rem UP?"""
    if cur_rank == 0 and rem_rank == 0:
        return True
    if cur_rank != rem_rank:
        return cur_rank > rem_rank
    return cur_id > rem_id


def updn_hops(sn: Subnet, rank: dict[str, int]) -> Hops:
    """Min-hop tables over up*/down* paths only: for each target switch, a search away
    from it that never takes a DOWN hop followed by an UP hop (updn_bfs_by_node)."""
    sws = sorted(sn.switches(), key=lambda x: x.guid)
    guid = {s.name: s.guid for s in sws}
    nbrs = {s.name: sn.switch_peers(s.name) for s in sws}
    out: Hops = {s.name: {} for s in sws}
    for t in sws:
        tn = t.name
        tables: dict[str, dict[int, int]] = {tn: {0: 0}}
        down = {tn: False}
        queued = {tn}
        todo = deque([tn])
        while todo:
            u = todo.popleft()
            queued.discard(u)
            cur_down = down[u]
            cur = min(tables[u].values())
            for _, v, vp in nbrs[u]:
                up = _up(rank[u], rank[v], guid[u], guid[v])
                if cur_down and up:
                    continue                    # DOWN then UP: illegal
                row = tables.setdefault(v, {})
                if cur + 1 < row.get(vp, 255):
                    row[vp] = cur + 1
                    if v not in queued:
                        down[v] = not up
                        queued.add(v)
                        todo.append(v)
        for s, row in tables.items():
            out[s][tn] = row
    return out


def updn(sn: Subnet, roots: list[str] | None = None, notes: list[str] | None = None) -> Routes:
    """OpenSM ``updn`` from *roots* (switch names; empty or None: found automatically)."""
    names = {s.name for s in sn.switches()}
    for r in roots or ():
        if r not in names:
            raise UserError("routing: root %r is not a switch" % r)
    chosen = list(roots) if roots else auto_roots(sn)
    if not chosen:
        if notes is not None:
            notes.append("updn: no root switch found, falling back to minhop (as OpenSM does)")
        return fill_lfts(sn, minhop_hops(sn))
    return fill_lfts(sn, updn_hops(sn, ranks(sn, chosen)))
