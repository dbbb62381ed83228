"""OpenSM's ``ftree`` engine (REFERENCE-FABRICS §3, §5; OSM opensm/osm_ucast_ftree.c,
Zahavi et al. CCPE 2010).

- Leaves are the switches with CAs.  Ranks: breadth-first from the given roots (rank 0),
  else by distance from the leaves, reversed so that the top switches have rank 0.  The
  fabric must be a fat tree: every switch ranked, all leaves at the deepest rank, every
  switch-to-switch link between adjacent ranks.  Otherwise :class:`UserError` (OpenSM
  falls back to minhop; ibemu refuses, so that a misread tree does not pass silently).
  LMC > 0 is refused too (OpenSM's ftree falls back to minhop with LMC > 0).
- Switches are indexed as OpenSM does (fabric_make_indexing): tuples by a breadth-first
  search from the first leaf in OpenSM's switch-table order (GUIDs in network byte order);
  a port group is the set of links to one neighbour switch, groups ordered by the
  neighbour's tuple.
- For each leaf (tuple order), each CA (port order): the leaf's LFT points at the CA, then
  fabric_route_downgoing_by_going_up: first the switches below (other than the one we came
  from) get LFT entries pointing up to this switch (fabric_route_upgoing_by_going_down,
  down groups by routes-up count, then tuple; the least-used port of the group; counted
  only when the subtree has CAs; skipped where the switch already has as few hops); then
  the main climb takes the up group with the fewest routes down (ties: lower tuple --
  OpenSM's remote-load tie-break compares min_counter_down, which stays 0), its least-used
  port, sets the upper switch's LFT back down, +1 counters; and every other up group is a
  secondary path: the upper switch gets an entry if it has none (or a longer one) and the
  climb goes on from there, uncounted.  Consecutive LIDs of a leaf thus leave by different
  up ports.
- Leaves short of CAs route "dummy" LIDs (counters only, entries dropped) so that every
  leaf counts as full.
- Then the switch LIDs (fabric_route_to_switches: secondary paths from each switch, uncounted).
  OpenSM leaves a switch without an entry where no up*/down* path exists (e.g. root to
  root; only its connect_roots option fills those); ibemu gives those a least-hop entry,
  the least-loaded port first, so that every destination is reachable from every switch.
  On tests/data/opensm these extra switch-to-switch entries are the only difference from
  OpenSM 3.3.23 (tests/test_routing_opensm.py).
"""
from __future__ import annotations

from collections import deque

from ..errors import UserError
from .graph import Routes, Subnet, switch_hops
from .minhop import least, minhop_hops

__all__ = ["ftree", "tree_ranks"]


def tree_ranks(sn: Subnet, roots: list[str] | None = None) -> dict[str, int]:
    """Switch ranks (roots 0, leaves deepest); UserError if the fabric is no fat tree."""
    sws = sorted(sn.switches(), key=lambda x: x.guid)
    leaves = [s.name for s in sws if any(not sn.nodes[q].switch for q, _ in s.peers.values())]
    if not leaves:
        raise UserError("routing: ftree needs a fat tree, but no switch has a CA (leaf) attached")
    start = list(roots) if roots else leaves
    dist = switch_hops(sn, start)
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


_NO = 1 << 16          # no path (OpenSM's OSM_NO_PATH)
_DUMMY = 0             # the LID a dummy compute node is routed to (cleared after each)
_TLEN = 8              # FTREE_TUPLE_LEN


def _guid_key(guid: int) -> int:
    """OpenSM's switch table order: a cl_qmap keyed by the GUID in network byte order,
    compared as a host (little-endian) integer."""
    return int.from_bytes(guid.to_bytes(8, "big"), "little")


class _Tree:
    """The fat tree as osm_ucast_ftree.c keeps it: switch tuples (indices), port groups
    (the links to one neighbour) with their counters, per-switch LFTs and hop counts."""

    def __init__(self, sn: Subnet, rank: dict[str, int]):
        self.sn, self.rank = sn, rank
        self.h = max(rank.values())
        self.table = [s.name for s in sorted(sn.switches(), key=lambda x: _guid_key(x.guid))]
        # groups in port order of their first port: switch -> neighbour -> [(port, remote port)]
        self.up: dict[str, dict[str, list[tuple[int, int]]]] = {}
        self.down: dict[str, dict[str, list[tuple[int, int]]]] = {}
        for s in self.table:
            up: dict[str, list[tuple[int, int]]] = {}
            down: dict[str, list[tuple[int, int]]] = {}
            for p, v, vp in sn.switch_peers(s):
                (up if rank[v] < rank[s] else down).setdefault(v, []).append((p, vp))
            self.up[s], self.down[s] = up, down
        self.leafy = {s for s in self.table if any(not sn.nodes[q].switch for q, _ in sn.nodes[s].peers.values())}
        self.tuple = self._indexing()
        for s in self.table:           # groups by remote index (qsort after indexing)
            self.up[s] = dict(sorted(self.up[s].items(), key=lambda kv: self.tuple[kv[0]]))
            self.down[s] = dict(sorted(self.down[s].items(), key=lambda kv: self.tuple[kv[0]]))
        # counters: group (switch, neighbour) and port (switch, port); "down" counters sit on
        # the lower switch's up groups/ports, "up" counters on the upper switch's down ones
        self.g_down: dict[tuple[str, str], int] = {}
        self.g_up: dict[tuple[str, str], int] = {}
        self.cnt_down: dict[tuple[str, int], int] = {}
        self.cnt_up: dict[tuple[str, int], int] = {}
        self.lft: Routes = {s: {} for s in self.table}
        self.hops: dict[str, dict[int, int]] = {s: {} for s in self.table}

    def _indexing(self) -> dict[str, tuple[int, ...]]:
        """fabric_make_indexing / bfs_fabric_indexing: tuples by a breadth-first search from
        the first leaf in switch-table order; a new tuple takes the lowest free digit."""
        first = next((s for s in self.table if s in self.leafy), self.table[0])
        tup: dict[str, tuple[int, ...]] = {}
        used: set[tuple[int, ...]] = set()
        t0 = [255] * _TLEN
        t0[0] = self.rank[first]
        for i in range(1, self.h + 1):
            t0[i] = 0
        tup[first] = tuple(t0)
        used.add(tup[first])

        def new(frm: tuple[int, ...], down: bool) -> tuple[int, ...]:
            t = list(frm)
            t[0] += 1 if down else -1
            var = frm[0] + 1 if down else frm[0]
            for i in range(255):
                t[var] = i
                if tuple(t) not in used:
                    break
            return tuple(t)

        todo = deque([first])
        while todo:
            u = todo.popleft()
            dirs = []
            if self.rank[u] < self.h:
                dirs.append((self.down[u], True))
            if self.rank[u] != 0:
                dirs.append((self.up[u], False))
            for groups, down in dirs:
                for v in groups:
                    if v not in tup:
                        tup[v] = new(tup[u], down)
                        used.add(tup[v])
                        todo.append(v)
        return tup

    def _least_port(self, links: list[tuple[int, int]], cnt: dict[tuple[str, int], int], sw: str) -> tuple[int, int]:
        """The group's port with the lowest counter, the first in port order among equals."""
        best = links[0]
        for pv in links[1:]:
            if cnt.get((sw, pv[0]), 0) < cnt.get((sw, best[0]), 0):
                best = pv
        return best

    def down_by_going_up(self, sw: str, prev: str | None, lid: int, main: bool, hops: int) -> bool:
        """fabric_route_downgoing_by_going_up (no reverse hops, no sibling links)."""
        created = self.up_by_going_down(sw, prev, lid, hops)
        if self.rank[sw] == 0:
            return created
        # bubble_sort_down: by routes down, then remote index (the remote-load tie-break
        # compares min_counter_down, which stays 0: no down group's counter_down is counted)
        groups = sorted(self.up[sw], key=lambda v: (self.g_down.get((sw, v), 0), self.tuple[v]))
        if main:
            upper = groups[0]
            p, vp = self._least_port(self.up[sw][upper], self.cnt_down, sw)
            self.g_down[(sw, upper)] = self.g_down.get((sw, upper), 0) + 1
            self.cnt_down[(sw, p)] = self.cnt_down.get((sw, p), 0) + 1
            if lid not in self.lft[upper] or hops + 1 < self.hops[upper].get(lid, _NO):
                self.lft[upper][lid] = vp
                self.hops[upper][lid] = hops + 1
            created |= self.down_by_going_up(upper, sw, lid, True, hops + 1)
        for upper in groups[1 if main else 0:]:
            if lid in self.lft[upper] and hops + 1 >= self.hops[upper].get(lid, _NO):
                continue
            _, vp = self._least_port(self.up[sw][upper], self.cnt_down, sw)
            self.lft[upper][lid] = vp
            self.hops[upper][lid] = hops + 1
            created |= self.down_by_going_up(upper, sw, lid, False, hops + 1)
        return created

    def up_by_going_down(self, sw: str, prev: str | None, lid: int, hops: int) -> bool:
        """fabric_route_upgoing_by_going_down: switches below *sw* route *lid* up to it."""
        if sw in self.leafy:
            return True              # a group to a CA: "route created"
        created = False
        for lower in sorted(self.down[sw], key=lambda v: (self.g_up.get((sw, v), 0), self.tuple[v])):
            if lower == prev:
                continue
            p, vp = self._least_port(self.down[sw][lower], self.cnt_up, sw)
            if hops + 1 >= self.hops[lower].get(lid, _NO):
                continue
            self.lft[lower][lid] = vp
            self.hops[lower][lid] = hops + 1
            if self.up_by_going_down(lower, None, lid, hops + 1):
                created = True
                self.cnt_up[(sw, p)] = self.cnt_up.get((sw, p), 0) + 1
                self.g_up[(sw, lower)] = self.g_up.get((sw, lower), 0) + 1
        return created


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
    leaves = sorted((s for s in t.table if rank[s] == t.h), key=t.tuple.__getitem__)
    ends = [i for i, s in enumerate(leaves) if s in t.leafy]    # fabric_create_leaf_switch_array
    leaves = leaves[ends[0]:ends[-1] + 1]
    cas_of = {leaf: [(p, q) for p, (q, _) in sorted(sn.nodes[leaf].peers.items()) if not sn.nodes[q].switch]
              for leaf in leaves}
    full = max(len(v) for v in cas_of.values())
    for leaf in leaves:
        for p, ca in cas_of[leaf]:
            lid = sn.nodes[ca].lid
            t.lft[leaf][lid] = p
            t.hops[leaf][lid] = 1
            t.down_by_going_up(leaf, None, lid, True, 1)
        for _ in range(full - len(cas_of[leaf])):
            t.hops[leaf][_DUMMY] = 1
            t.down_by_going_up(leaf, None, _DUMMY, True, 1)
            for s in t.table:
                t.lft[s].pop(_DUMMY, None)
                t.hops[s].pop(_DUMMY, None)
    for s in t.table:                # fabric_route_to_switches: secondary paths, uncounted
        lid = sn.nodes[s].lid
        t.lft[s][lid] = 0
        t.hops[s][lid] = 0
        t.down_by_going_up(s, None, lid, False, 0)
    # ibemu's addition: entries no up*/down* route gives (e.g. root to root): least-hop
    # ports, the least loaded first
    hops = minhop_hops(sn)
    load: dict[tuple[str, int], int] = {}
    for k, v in list(t.cnt_up.items()) + list(t.cnt_down.items()):
        load[k] = load.get(k, 0) + v
    targets = [(sn.nodes[ca].lid, att[0]) for ca in (c.name for c in sn.cas())
               if (att := sn.attached_switch(ca)) is not None]
    targets += [(sn.nodes[s].lid, s) for s in sorted(t.table, key=t.tuple.__getitem__)]
    for s in t.table:
        for lid, dest in targets:
            if lid in t.lft[s]:
                continue
            lo = least(hops, s, dest)
            if lo is None:
                continue
            row = hops[s][dest]
            t.lft[s][lid] = min((p for p, hh in row.items() if hh == lo), key=lambda p: (load.get((s, p), 0), p))
    return t.lft
