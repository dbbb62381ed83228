"""OpenSM's ``minhop`` engine (REFERENCE-FABRICS §3; OSM doc/current-routing.txt,
opensm/osm_ucast_mgr.c, osm_switch.c): min-hop tables, then the LFT fill with port
load balancing that minhop, updn and dnup share.

Min-hop tables: for every switch, every port towards another switch and every target
switch, the hops through that port (1 + the neighbour's least hops); a CA is reached
through the switch its port is linked to.

LFT fill, per switch, for LID offset 0 .. 2^LMC - 1, for each end port in OpenSM's
order (the CA ports of each switch, switches with most CA links first, ties by switch
GUID, ports ascending; then the remaining ports, i.e. the switches, by port GUID):
a CA on this switch goes out its own port, the switch's own LID to port 0; else, among
the ports with least hops to the target, scanning from ``start_from`` cyclically over
ports 1..NumPorts, the port with strictly fewer routes so far wins (ties: first
scanned).  ``start_from`` is 1 for offset 0 and (port of LID - 1) + 1 for the others.
With LMC > 0 a port whose remote node no earlier LID of this end port went through
is preferred, then fewest routes ("forwarded_to" among used remote nodes) -- OpenSM
prefers another system image GUID, then another node GUID; ibemu's nodes have their
node GUID as system image GUID, so the two tests are one.  Routes to CA LIDs are
counted per port; switch LIDs are not (``port_profile_switch_nodes`` off).
"""
from __future__ import annotations

from collections import deque

from .graph import Routes, Subnet

__all__ = ["Hops", "minhop_hops", "least", "end_port_order", "fill_lfts", "minhop"]

Hops = dict[str, dict[str, dict[int, int]]]
"""switch -> target switch -> {port: hops through it}; port 0 -> 0 for the switch itself."""


def minhop_hops(sn: Subnet) -> Hops:
    """Min-hop tables: breadth-first distances between switches (the fixed point of
    OpenSM's relaxation through neighbours, hop weight 1)."""
    sws = [s.name for s in sn.switches()]
    nbrs = {s: sn.switch_peers(s) for s in sws}
    out: Hops = {s: {} for s in sws}
    for t in sws:
        dist = {t: 0}
        todo = deque([t])
        while todo:
            u = todo.popleft()
            for _, v, _ in nbrs[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    todo.append(v)
        for s in sws:
            if s == t:
                out[s][t] = {0: 0}
            elif s in dist:
                out[s][t] = {p: 1 + dist[v] for p, v, _ in nbrs[s] if v in dist}
    return out


def least(hops: Hops, s: str, t: str) -> int | None:
    row = hops[s].get(t)
    return min(row.values()) if row else None


def end_port_order(sn: Subnet) -> list[str]:
    """End ports in the order OpenSM routes them (osm_ucast_mgr.c sort_ports_by_switch_load,
    then the port GUID table): CAs grouped by switch, most CA links first; then the rest."""
    sws = sorted(sn.switches(), key=lambda n: n.guid)
    ncas = {s.name: sum(1 for q, _ in s.peers.values() if not sn.nodes[q].switch) for s in sws}
    order: list[str] = []
    seen: set[str] = set()
    for s in sorted(sws, key=lambda n: -ncas[n.name]):      # stable: GUID order among equals
        for p in range(1, s.nports + 1):
            peer = s.peers.get(p)
            if peer and not sn.nodes[peer[0]].switch and peer[0] not in seen:
                seen.add(peer[0])
                order.append(peer[0])
    rest = sorted((n for n in sn.nodes.values() if n.name not in seen), key=lambda n: n.port_guid)
    order.extend(n.name for n in rest)
    return order


def fill_lfts(sn: Subnet, hops: Hops) -> Routes:
    """The LFT fill of OpenSM's ucast manager over min-hop tables *hops* (module doc)."""
    order = end_port_order(sn)
    lfts: Routes = {}
    for sw in sn.switches():
        name, nports = sw.name, sw.nports + 1            # OpenSM's num_ports counts port 0
        lft: dict[int, int] = {}
        count = [0] * nports
        used: dict[str, dict[str, int]] = {}              # end port -> remote node -> forwarded_to
        for off in range(1 << sn.lmc):
            for ep in order:
                node = sn.nodes[ep]
                if node.switch:
                    if off:
                        continue
                    target = ep
                else:
                    att = sn.attached_switch(ep)
                    if att is None:
                        continue
                    target = att[0]
                lid = node.lid + off
                if node.switch and ep == name:
                    lft[lid] = 0
                    continue
                if not node.switch and target == name:
                    port: int | None = att[1] if att else None
                else:
                    start = 1 if off == 0 else lft.get(lid - 1, 255) + 1
                    port = _recommend(sn, hops, name, nports, target, start, count,
                                      used.setdefault(ep, {}) if sn.lmc else None)
                if port is None:
                    continue
                lft[lid] = port
                if not node.switch:
                    count[port] += 1
                    if sn.lmc and port:
                        rem = sw.peers[port][0]
                        u = used.setdefault(ep, {})
                        u[rem] = u.get(rem, 0) + 1
        lfts[name] = lft
    return lfts


def _recommend(sn: Subnet, hops: Hops, name: str, nports: int, target: str, start: int, count: list[int],
               used: dict[str, int] | None) -> int | None:
    """osm_switch_recommend_path without scatter/shifting (module doc)."""
    row = hops[name].get(target)
    if not row:
        return None
    lo = min(row.values())
    peers = sn.nodes[name].peers
    best: int | None = None
    least_paths = least_other = least_fwd = 1 << 32
    best_other: int | None = None
    for i in range(start, start + nports):
        p = i % nports
        if p == 0 or row.get(p) != lo or p not in peers:
            continue
        c = count[p]
        fwd: int | None = None
        if used is not None:
            rem = peers[p][0]
            if rem not in used:
                if c < least_other:
                    least_other, best_other, least_fwd = c, p, 0
            else:
                fwd = used[rem]
        if c < least_paths:
            best, least_paths = p, c
            if fwd is not None and fwd < least_fwd:
                least_fwd = fwd
        elif fwd is not None and c == least_paths and fwd < least_fwd:
            least_fwd, best = fwd, p
    if used is not None and best and best_other:
        best = best_other
    return best


def minhop(sn: Subnet) -> Routes:
    """OpenSM ``minhop``: min-hop tables and the balanced LFT fill."""
    return fill_lfts(sn, minhop_hops(sn))
