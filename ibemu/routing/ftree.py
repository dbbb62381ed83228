"""OpenSM's ``ftree`` engine (REFERENCE-FABRICS §3, §5; OSM opensm/osm_ucast_ftree.c,
Zahavi et al. CCPE 2010).

- Leaves are the switches with CAs.  Ranks: breadth-first from the given roots (rank 0),
  else by distance from the leaves, reversed so that the top switches have rank 0.  The
  fabric must be a fat tree: every switch ranked, all leaves at the deepest rank, every
  switch-to-switch link between adjacent ranks.  Otherwise :class:`UserError` (OpenSM
  falls back to minhop; ibemu refuses, so that a misread tree does not pass silently).
  LMC > 0 is refused too (OpenSM's ftree falls back to minhop with LMC > 0).
- Switches are indexed breadth-first from the roots (roots by GUID, then by port);
  a port group is the set of links to one neighbour switch.
- For each leaf (index order), each CA (port order): the leaf's LFT points at the CA;
  then the route climbs: the up group with the fewest routes down so far (ties: the
  upper switch with fewer routes down, then the lower index), its port with the fewest
  routes down (ties: the lower port); the upper switch's LFT points back down; counters
  +1; at every switch of that climb, the other down groups get, recursively downwards,
  LFT entries pointing up to it (the least-used up port of the group, counting routes up),
  unless they have one.  Consecutive LIDs of a leaf thus leave by different up ports.
- Leaves short of CAs climb "dummy" LIDs (counters only) so that every leaf counts as full.
- Then the switch LIDs, over least-hop ports, uncounted; switches that no CA route
  passes for a LID (e.g. spines of other pods not under the chosen root) get a least-hop
  entry the same way, so that every destination is reachable from every switch.
"""
from __future__ import annotations

from collections import deque

from ..errors import UserError
from .graph import Routes, Subnet
from .minhop import least, minhop_hops

__all__ = ["ftree", "tree_ranks"]


def tree_ranks(sn: Subnet, roots: list[str] | None = None) -> dict[str, int]:
    """Switch ranks (roots 0, leaves deepest); UserError if the fabric is no fat tree."""
    sws = sorted(sn.switches(), key=lambda x: x.guid)
    leaves = [s.name for s in sws if any(not sn.nodes[q].switch for q, _ in s.peers.values())]
    if not leaves:
        raise UserError("routing: ftree needs a fat tree, but no switch has a CA (leaf) attached")
    start = list(roots) if roots else leaves
    dist = {s: 0 for s in start}
    todo = deque(start)
    while todo:
        u = todo.popleft()
        for _, v, _ in sn.switch_peers(u):
            if v not in dist:
                dist[v] = dist[u] + 1
                todo.append(v)
    lost = [s.name for s in sws if s.name not in dist]
    if lost:
        raise UserError("routing: ftree: switch %s is not connected to the tree (not a fat tree)" % lost[0])
    h = max(dist.values())
    rank = dict(dist) if roots else {s: h - d for s, d in dist.items()}
    for leaf in leaves:
        if rank[leaf] != h:
            raise UserError("routing: ftree: leaf %s (it has CAs) is at rank %d, not the bottom rank %d "
                            "(not a fat tree; use minhop or updn)" % (leaf, rank[leaf], h))
    for s in sws:
        for _, v, _ in sn.switch_peers(s.name):
            if abs(rank[s.name] - rank[v]) != 1:
                raise UserError("routing: ftree: link %s - %s joins ranks %d and %d, not adjacent ones "
                                "(not a fat tree; use minhop or updn)" % (s.name, v, rank[s.name], rank[v]))
    return rank


class _Tree:
    def __init__(self, sn: Subnet, rank: dict[str, int]):
        self.sn, self.rank = sn, rank
        roots = sorted((s for s in sn.switches() if rank[s.name] == 0), key=lambda x: x.guid)
        self.index: dict[str, int] = {}
        todo = deque(r.name for r in roots)
        for r in roots:
            self.index[r.name] = len(self.index)
        while todo:
            u = todo.popleft()
            for _, v, _ in sn.switch_peers(u):
                if v not in self.index:
                    self.index[v] = len(self.index)
                    todo.append(v)
        # groups: switch -> neighbour -> [(port, remote port)], up and down
        self.up: dict[str, dict[str, list[tuple[int, int]]]] = {}
        self.down: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for s in self.index:
            up: dict[str, list[tuple[int, int]]] = {}
            down: dict[str, list[tuple[int, int]]] = {}
            for p, v, vp in sn.switch_peers(s):
                (up if rank[v] < rank[s] else down).setdefault(v, []).append((p, vp))
            self.up[s] = dict(sorted(up.items(), key=lambda kv: self.index[kv[0]]))
            self.down[s] = dict(sorted(down.items(), key=lambda kv: self.index[kv[0]]))
        self.cnt_down: dict[tuple[str, int], int] = {}     # (lower switch, up port) -> routes down
        self.cnt_up: dict[tuple[str, int], int] = {}       # (lower switch, up port) -> routes up
        self.load_down: dict[str, int] = {s: 0 for s in self.index}
        self.lft: Routes = {s: {} for s in self.index}

    def climb(self, sw: str, lid: int, came_from: str | None, real: bool) -> None:
        """fabric_route_downgoing_by_going_up: route *lid* down to *sw* from above."""
        if real:
            self.spread_up(sw, lid, came_from)
        ups = self.up[sw]
        if not ups:
            return

        def gkey(kv: tuple[str, list[tuple[int, int]]]) -> tuple[int, int, int]:
            v, links = kv
            return (sum(self.cnt_down.get((sw, p), 0) for p, _ in links), self.load_down[v], self.index[v])

        upper, links = min(ups.items(), key=gkey)
        p, vp = min(links, key=lambda pv: (self.cnt_down.get((sw, pv[0]), 0), pv[0]))
        self.cnt_down[(sw, p)] = self.cnt_down.get((sw, p), 0) + 1
        self.load_down[upper] += 1
        if real:
            self.lft[upper][lid] = vp
        self.climb(upper, lid, sw, real)

    def spread_up(self, sw: str, lid: int, exclude: str | None) -> None:
        """fabric_route_upgoing_by_going_down: switches below *sw* route *lid* up to it."""
        for lower in self.down[sw]:
            if lower == exclude or lid in self.lft[lower]:
                continue
            links = self.up[lower][sw]
            p, _ = min(links, key=lambda pv: (self.cnt_up.get((lower, pv[0]), 0), pv[0]))
            self.cnt_up[(lower, p)] = self.cnt_up.get((lower, p), 0) + 1
            self.lft[lower][lid] = p
            self.spread_up(lower, lid, None)


def ftree(sn: Subnet, roots: list[str] | None = None) -> Routes:
    """OpenSM ``ftree`` (module doc)."""
    if sn.lmc:
        raise UserError("routing: ftree supports LMC 0 only (OpenSM's ftree falls back to minhop with LMC > 0); "
                        "use minhop or updn with lmc = %d" % sn.lmc)
    names = {s.name for s in sn.switches()}
    for r in roots or ():
        if r not in names:
            raise UserError("routing: root %r is not a switch" % r)
    rank = tree_ranks(sn, roots)
    t = _Tree(sn, rank)
    h = max(rank.values())
    leaves = sorted((s for s in t.index if rank[s] == h), key=t.index.__getitem__)
    cas_of = {leaf: [(p, q) for p, (q, _) in sorted(sn.nodes[leaf].peers.items()) if not sn.nodes[q].switch]
              for leaf in leaves}
    full = max(len(v) for v in cas_of.values())
    for leaf in leaves:
        for p, ca in cas_of[leaf]:
            lid = sn.nodes[ca].lid
            t.lft[leaf][lid] = p
            t.climb(leaf, lid, None, True)
        for _ in range(full - len(cas_of[leaf])):
            t.climb(leaf, 0, None, False)
    # switch LIDs (uncounted) and entries no CA route needs: least-hop ports, fewest routes
    hops = minhop_hops(sn)
    load: dict[tuple[str, int], int] = {}
    for k, v in list(t.cnt_up.items()) + list(t.cnt_down.items()):
        load[k] = load.get(k, 0) + v
    targets = [(sn.nodes[ca].lid, att[0]) for ca in (c.name for c in sn.cas())
               if (att := sn.attached_switch(ca)) is not None]
    targets += [(sn.nodes[s].lid, s) for s in sorted(t.index, key=t.index.__getitem__)]
    for s in t.index:
        for lid, dest in targets:
            if lid in t.lft[s]:
                continue
            if dest == s:
                t.lft[s][lid] = 0        # only switch LIDs reach here: CAs on s were set above
                continue
            lo = least(hops, s, dest)
            if lo is None:
                continue
            row = hops[s][dest]
            t.lft[s][lid] = min((p for p, hh in row.items() if hh == lo), key=lambda p: (load.get((s, p), 0), p))
    return t.lft
