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
  OpenSM 3.3.23 (tests/test_routing_opensm.py); :mod:`.leasthop` makes them.

At scale (issue 28: 11,664 hosts, 1,620 switches) the same algorithm runs on switch
numbers: groups are lists kept sorted by (counter, tuple) as counters change, the hops of
the LID being routed are one list, and a switch whose neighbours below (or above) are the
same set as those of a switch that already offered them the LID at as few hops skips the
loop that could not change anything (every neighbour already has the LID at hops + 1 or
less).  The routes, and the order of the entries, are those of the plain recursion
(tests/test_routing_identity.py).
"""
from __future__ import annotations

from collections import deque

from ..errors import UserError
from .graph import Routes, Subnet, Tick, switch_hops
from .leasthop import fill_least_hop

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
_TLEN = 8              # FTREE_TUPLE_LEN

Links = list[tuple[int, int]]          # one port group: (port, remote port), in port order


def _guid_key(guid: int) -> int:
    """OpenSM's switch table order: a cl_qmap keyed by the GUID in network byte order,
    compared as a host (little-endian) integer."""
    return int.from_bytes(guid.to_bytes(8, "big"), "little")


def _least_port(links: Links, cnt: list[int]) -> tuple[int, int]:
    """The group's port with the lowest counter, the first in port order among equals."""
    best = links[0]
    if len(links) == 1:
        return best
    low = cnt[best[0]]
    for pv in links:
        if cnt[pv[0]] < low:
            best, low = pv, cnt[pv[0]]
    return best


def _classes(groups: list[list[int]]) -> list[int]:
    """A class number per switch: switches with the same set of neighbours share one."""
    ids: dict[frozenset[int], int] = {}
    return [ids.setdefault(frozenset(g), len(ids)) for g in groups]


def _bump(order: list[int], pos: list[int], counts: list[int], k: int) -> None:
    """Count one more route on group *k* and keep *order* sorted by (count, group index):
    OpenSM's bubble sorts by counter, then by the remote switch's tuple (group index
    order is tuple order).  *pos* holds each group's place in *order*.  A count only
    grows, so *k* moves right, past the groups now below it (one step of insertion sort:
    no key is boxed, no list resized)."""
    c = counts[k] + 1
    counts[k] = c
    i = pos[k]
    last = len(order) - 1
    while i < last:
        j = order[i + 1]
        cj = counts[j]
        if cj > c or (cj == c and j > k):
            break
        order[i] = j
        pos[j] = i
        i += 1
    order[i] = k
    pos[k] = i


class _Tree:
    """The fat tree as osm_ucast_ftree.c keeps it: switch tuples (indices), port groups
    (the links to one neighbour) with their counters, per-switch LFTs.

    Switches are numbers (their place in OpenSM's switch table); a switch's groups are
    lists in tuple order, each kept with an order list sorted by (counter, tuple) so that
    no visit sorts.  The hop counts of the LID being routed are one list over switches,
    reset after each LID (a LID's entries never depend on another LID's hops)."""

    def __init__(self, sn: Subnet, rank: dict[str, int]):
        self.sn = sn
        self.table = [s.name for s in sorted(sn.switches(), key=lambda x: _guid_key(x.guid))]
        index = {s: i for i, s in enumerate(self.table)}
        n = len(self.table)
        self.rank = [rank[s] for s in self.table]
        self.h = max(self.rank)
        raw_up: list[dict[int, Links]] = []
        raw_down: list[dict[int, Links]] = []
        nports = [0] * n
        for i, s in enumerate(self.table):
            up: dict[int, Links] = {}
            down: dict[int, Links] = {}
            for p, v, vp in sn.switch_peers(s):
                j = index[v]
                (up if self.rank[j] < self.rank[i] else down).setdefault(j, []).append((p, vp))
            raw_up.append(up)
            raw_down.append(down)
            nports[i] = sn.nodes[s].nports
        self.leafy = [any(not sn.nodes[q].switch for q, _ in sn.nodes[s].peers.values()) for s in self.table]
        self.tuple = self._indexing(raw_up, raw_down)
        # groups by remote tuple (qsort after indexing); counters per group and per port:
        # "down" counters on the lower switch's up groups/ports, "up" on the upper's down ones
        self.up_nbr = [sorted(g, key=self.tuple.__getitem__) for g in raw_up]
        self.up_links = [[raw_up[i][j] for j in self.up_nbr[i]] for i in range(n)]
        self.down_nbr = [sorted(g, key=self.tuple.__getitem__) for g in raw_down]
        self.down_links = [[raw_down[i][j] for j in self.down_nbr[i]] for i in range(n)]
        self.g_down = [[0] * len(g) for g in self.up_nbr]
        self.g_up = [[0] * len(g) for g in self.down_nbr]
        self.up_order = [list(range(len(g))) for g in self.up_nbr]
        self.down_order = [list(range(len(g))) for g in self.down_nbr]
        self.up_pos = [list(range(len(g))) for g in self.up_nbr]
        self.down_pos = [list(range(len(g))) for g in self.down_nbr]
        self.cnt_down = [[0] * (k + 1) for k in nports]
        self.cnt_up = [[0] * (k + 1) for k in nports]
        self.lft: list[dict[int, int]] = [{} for _ in range(n)]
        self.hops = [_NO] * n          # of the LID being routed
        self.port = [-1] * n           # its LFT entries
        self.touched: list[int] = []
        # switches with the same neighbours below (above): once one has offered the LID to
        # all of them at hops h, none of them takes it from another at h or more
        self.down_class = _classes(self.down_nbr)
        self.up_class = _classes(self.up_nbr)
        self.down_done = [_NO] * (max(self.down_class, default=0) + 1)
        self.up_done = [_NO] * (max(self.up_class, default=0) + 1)
        self.classes_touched: list[int] = []

    def _indexing(self, up: list[dict[int, Links]], down: list[dict[int, Links]]) -> list[tuple[int, ...]]:
        """fabric_make_indexing / bfs_fabric_indexing: tuples by a breadth-first search from
        the first leaf in switch-table order; a new tuple takes the lowest free digit."""
        n = len(self.table)
        first = next((i for i in range(n) if self.leafy[i]), 0)
        tup: list[tuple[int, ...] | None] = [None] * n
        used: set[tuple[int, ...]] = set()
        t0 = [255] * _TLEN
        t0[0] = self.rank[first]
        for i in range(1, self.h + 1):
            t0[i] = 0
        tup[first] = tuple(t0)
        used.add(tuple(t0))

        def new(frm: tuple[int, ...], going_down: bool) -> tuple[int, ...]:
            t = list(frm)
            t[0] += 1 if going_down else -1
            var = frm[0] + 1 if going_down else frm[0]
            for d in range(255):
                t[var] = d
                if tuple(t) not in used:
                    break
            return tuple(t)

        todo = deque([first])
        while todo:
            u = todo.popleft()
            tu = tup[u]
            assert tu is not None
            dirs: list[tuple[dict[int, Links], bool]] = []
            if self.rank[u] < self.h:
                dirs.append((down[u], True))
            if self.rank[u] != 0:
                dirs.append((up[u], False))
            for groups, going_down in dirs:
                for v in groups:
                    if tup[v] is None:
                        tv = new(tu, going_down)
                        tup[v] = tv
                        used.add(tv)
                        todo.append(v)
        return [t if t is not None else () for t in tup]

    def _set(self, sw: int, port: int, hops: int) -> None:
        if self.hops[sw] == _NO:
            self.touched.append(sw)
        self.hops[sw] = hops
        self.port[sw] = port

    def done(self, lid: int, keep: bool) -> None:
        """Write the LID's entries into the LFTs (not for a dummy LID) and reset."""
        if keep:
            lfts, port = self.lft, self.port
            for sw in self.touched:
                p = port[sw]
                if p >= 0:
                    lfts[sw][lid] = p
        n = len(self.table)
        self.hops = [_NO] * n
        self.port = [-1] * n
        self.touched = []
        for c in self.classes_touched:
            self.down_done[c] = self.up_done[c] = _NO
        self.classes_touched = []

    def down_by_going_up(self, sw: int, prev: int, main: bool, hops: int) -> bool:
        """fabric_route_downgoing_by_going_up (no reverse hops, no sibling links)."""
        created = self.up_by_going_down(sw, prev, hops)
        if self.rank[sw] == 0:
            return created
        c = self.up_class[sw]
        if not main and self.up_done[c] <= hops:
            return created           # every switch above has the LID at hops + 1 or less
        # bubble_sort_down: by routes down, then remote index (the remote-load tie-break
        # compares min_counter_down, which stays 0: no down group's counter_down is counted)
        order = self.up_order[sw]
        groups = list(order)
        nbr, links, cnt = self.up_nbr[sw], self.up_links[sw], self.cnt_down[sw]
        at, port = self.hops, self.port
        h1 = hops + 1
        if main:
            k = groups[0]
            upper = nbr[k]
            p, vp = _least_port(links[k], cnt)
            _bump(order, self.up_pos[sw], self.g_down[sw], k)
            cnt[p] += 1
            if h1 < at[upper]:
                if at[upper] == _NO:
                    self.touched.append(upper)
                at[upper] = h1
                port[upper] = vp
            created |= self.down_by_going_up(upper, sw, True, h1)
        for k in groups[1 if main else 0:]:
            upper = nbr[k]
            if h1 >= at[upper]:
                continue
            lk = links[k]
            vp = lk[0][1] if len(lk) == 1 else _least_port(lk, cnt)[1]
            if at[upper] == _NO:
                self.touched.append(upper)
            at[upper] = h1
            port[upper] = vp
            created |= self.down_by_going_up(upper, sw, False, h1)
        if hops < self.up_done[c]:
            self.up_done[c] = hops
            self.classes_touched.append(c)
        return created

    def up_by_going_down(self, sw: int, prev: int, hops: int) -> bool:
        """fabric_route_upgoing_by_going_down: switches below *sw* route the LID up to it.
        A group to a CA (a leaf below) means "route created"."""
        if self.leafy[sw]:
            return True
        c = self.down_class[sw]
        if self.down_done[c] <= hops:
            return False             # every switch below has the LID at hops + 1 or less
        created = False
        order = self.down_order[sw]
        nbr, links, cnt, g = self.down_nbr[sw], self.down_links[sw], self.cnt_up[sw], self.g_up[sw]
        at, port, leafy = self.hops, self.port, self.leafy
        h1 = hops + 1
        for k in list(order):
            lower = nbr[k]
            if lower == prev or h1 >= at[lower]:
                continue
            lk = links[k]
            p, vp = lk[0] if len(lk) == 1 else _least_port(lk, cnt)
            if at[lower] == _NO:
                self.touched.append(lower)
            at[lower] = h1
            port[lower] = vp
            if leafy[lower] or self.up_by_going_down(lower, -1, h1):
                created = True
                cnt[p] += 1
                _bump(order, self.down_pos[sw], g, k)
        if hops < self.down_done[c]:
            self.down_done[c] = hops
            self.classes_touched.append(c)
        return created


def ftree(sn: Subnet, roots: list[str] | None = None, tick: Tick | None = None) -> Routes:
    """OpenSM ``ftree`` (module doc); *tick* is called with 1 per LID routed."""
    if sn.lmc:
        raise UserError("routing: ftree supports LMC 0 only (OpenSM's ftree falls back to minhop with LMC > 0); "
                        "use minhop or updn with lmc = %d" % sn.lmc)
    names = {s.name for s in sn.switches()}
    for r in roots or ():
        if r not in names:
            raise UserError("routing: root %r is not a switch" % r)
    t = _Tree(sn, tree_ranks(sn, roots))
    n = len(t.table)
    leaves = sorted((i for i in range(n) if t.rank[i] == t.h), key=t.tuple.__getitem__)
    ends = [k for k, i in enumerate(leaves) if t.leafy[i]]    # fabric_create_leaf_switch_array
    leaves = leaves[ends[0]:ends[-1] + 1]
    cas_of = {i: [(p, q) for p, (q, _) in sorted(sn.nodes[t.table[i]].peers.items()) if not sn.nodes[q].switch]
              for i in leaves}
    full = max(len(v) for v in cas_of.values())
    for leaf in leaves:
        for p, ca in cas_of[leaf]:
            t._set(leaf, p, 1)
            t.down_by_going_up(leaf, -1, True, 1)
            t.done(sn.nodes[ca].lid, True)
            if tick is not None:
                tick(1)
        for _ in range(full - len(cas_of[leaf])):     # a dummy LID: counters only
            t._set(leaf, -1, 1)
            t.down_by_going_up(leaf, -1, True, 1)
            t.done(0, False)
    for i, s in enumerate(t.table):    # fabric_route_to_switches: secondary paths, uncounted
        t._set(i, 0, 0)
        t.down_by_going_up(i, -1, False, 0)
        t.done(sn.nodes[s].lid, True)
        if tick is not None:
            tick(1)
    load = [[u + d for u, d in zip(t.cnt_up[i], t.cnt_down[i])] for i in range(n)]
    fill_least_hop(sn, t.table, sorted(range(n), key=t.tuple.__getitem__), t.lft, load)
    return {s: t.lft[i] for i, s in enumerate(t.table)}
