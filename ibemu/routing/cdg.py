"""Credit-loop (deadlock) check over the channel dependency graph (REFERENCE-FABRICS §4:
Dally & Seitz 1987; ibdmchk's CredLoops): the vertices are directed links (channels,
named ``node:out port``), and c1 -> c2 is an edge if some CA-to-CA route, to any of the
destination's 2^LMC LIDs, goes from c1 straight onto c2.  Lossless links hold a packet in
c1's buffer until c2 returns a credit, so a cycle of full channels never drains:
routing is deadlock-free iff the graph is acyclic.  One VL per channel (ibemu's SL->VL
is the identity per port, so VLs never split a dependency chain of one SL).

Forwarding is by destination only, so the edges are found per destination LID from the
switches that carry its traffic, not per (source, destination) pair.  All destination
LIDs are done at once as arrays (switches x LIDs): each switch's out port and next
switch, the switches a LID's traffic reaches (the sources' switches, then the LFT chains
from them, one hop per step), and each edge as one integer, made unique.  A CA's channel
``(ca, 1)`` leads to its switch's out port for every LID the CA does not own.

Adaptive routing (issue 31): with *groups* (:mod:`.groups`) a switch may forward a LID
on any port of its group, so every port of every group is a route: c1 -> c2 for each
port the packet may take next.  The traffic to one LID then fans out; the graph is
walked LID by LID from the sources' switches (:func:`_group_dependencies`; plain Python,
slower than the arrays, but only run when some switch routes adaptively).
"""
from __future__ import annotations

import numpy as np

from ..arrays import runs, unique
from ..errors import UserError
from .graph import Routes, Subnet, Tick
from .groups import Groups

__all__ = ["Channel", "dependencies", "find_cycle", "check_credit_loops"]

Channel = tuple[str, int]                       # (node, out port)

_CHUNK = 4096                                   # destination LIDs per array pass (memory)


def dependencies(sn: Subnet, lfts: Routes, tick: Tick | None = None,
                 groups: Groups | None = None) -> dict[Channel, set[Channel]]:
    """The channel dependency graph of CA-to-CA routes under *lfts* (and, with adaptive
    routing, every port of *groups*); *tick* is called with the number of destination
    LIDs done."""
    if groups:
        return _group_dependencies(sn, lfts, groups, tick)
    return _edges(_switch_codes(sn, lfts, tick))


_Codes = tuple[list[str], int, np.ndarray, dict[Channel, set[Channel]]]


def _edges(found: _Codes | None) -> dict[Channel, set[Channel]]:
    """The graph of :func:`dependencies` from :func:`_switch_codes`'s arrays."""
    if found is None:
        return {}
    sws, width, codes, edges = found
    nch = len(sws) * width
    for code in codes.tolist():
        a, b = divmod(code, nch)
        edges.setdefault((sws[a // width], a % width), set()).add((sws[b // width], b % width))
    return edges


def _switch_codes(sn: Subnet, lfts: Routes, tick: Tick | None) -> _Codes | None:
    """:func:`dependencies` as arrays, None without CAs: the switches, the channel id's
    *width* (a switch's channel is ``switch * width + port``), the edges between switches'
    channels, each ``c1 * (switches * width) + c2`` and increasing, and the CAs' edges
    ``(ca, 1) -> (switch, port)`` as a dict."""
    edges: dict[Channel, set[Channel]] = {}
    cas = [(c.name, att[0]) for c in sn.cas() if (att := sn.attached_switch(c.name)) is not None]
    if not cas:
        return None
    sws = [n.name for n in sn.switches()]
    index = {s: i for i, s in enumerate(sws)}
    width = max(sn.nodes[s].nports for s in sws) + 1           # channel id: switch * width + port
    peer_sw = np.full((len(sws), width), -1, dtype=np.int32)    # next switch through a port
    wired = np.zeros((len(sws), width), dtype=bool)             # a port with a peer
    for i, s in enumerate(sws):
        for p, (q, _) in sn.nodes[s].peers.items():
            wired[i, p] = p > 0
            if q in index:
                peer_sw[i, p] = index[q]
    lids = [(lid, dst, index[sw]) for dst, sw in cas for lid in sn.lids(dst)]
    sources = np.zeros(len(sws), dtype=np.int32)                # CAs attached to each switch
    for _, sw in cas:
        sources[index[sw]] += 1
    attached = np.array(sorted({index[sw] for _, sw in cas}), dtype=np.int64)   # the switches with CAs
    owner = np.array([k for k, (dst, _) in enumerate(cas) for _ in sn.lids(dst)], dtype=np.int64)
    codes = []
    owned = []                                                  # (switch * width + out port) * CAs + owner
    table = _port_table(sws, lfts, max(lid for lid, _, _ in lids), width)
    for lo in range(0, len(lids), _CHUNK):
        part = lids[lo:lo + _CHUNK]
        out = table[:, np.array([lid for lid, _, _ in part], dtype=np.int64)].astype(np.int64)
        rows = np.arange(len(sws))[:, None]
        out[~wired[rows, out]] = 0                              # no peer there: no channel
        nxt = np.where(out > 0, peer_sw[rows, out], -1)
        active = np.repeat(sources[:, None] > 0, len(part), axis=1)
        for k, (_, _, i) in enumerate(part):                    # the destination alone on its switch
            if sources[i] == 1:
                active[i, k] = False
        while True:                                             # follow the LFT chains
            u, c = np.nonzero(active & (nxt >= 0))
            v = nxt[u, c]
            fresh = ~active[v, c]
            if not fresh.any():
                break                                           # (u, c, v: every hop of the chains)
            active[v[fresh], c[fresh]] = True
        keep = out[v, c] > 0
        first = u[keep] * width + out[u[keep], c[keep]]
        codes.append(first * (len(sws) * width) + v[keep] * width + out[v[keep], c[keep]])
        sw_at, col = np.nonzero(out[attached] > 0)              # a CA's switch sends a LID out a port
        owned.append(unique((attached[sw_at] * width + out[attached[sw_at], col]) * len(cas) + owner[lo + col]))
        if tick is not None:
            tick(len(part))
    # (src, 1) -> each out port of its switch that carries a LID of another CA
    pairs = unique(np.concatenate(owned))
    ports, first, count = runs(pairs // len(cas))
    alone = pairs % len(cas)                                    # the owner, where a port carries one CA's
    leaf_ports: dict[str, list[tuple[int, int]]] = {}          # switch -> (out port, its only owner or -1)
    for key, f, n in zip(ports.tolist(), first.tolist(), count.tolist()):
        leaf_ports.setdefault(sws[key // width], []).append((key % width, int(alone[f]) if n == 1 else -1))
    for k, (src, sw) in enumerate(cas):
        for p, only in leaf_ports.get(sw, ()):
            if only != k:
                edges.setdefault((src, 1), set()).add((sw, p))
    return sws, width, unique(np.concatenate(codes)), edges


def _acyclic(codes: np.ndarray, nch: int) -> bool:
    """Whether the edges *codes* (``c1 * nch + c2``) make an acyclic graph: Kahn's
    algorithm a layer at a time, every channel nothing leads to taken off with its edges
    until no edge is left (acyclic) or none can be taken (a cycle).  A layer per hop of the
    longest chain of dependencies: a few numpy passes for a fat tree."""
    src, dst = codes // nch, codes % nch
    indeg = np.bincount(dst, minlength=nch)
    live = np.ones(codes.size, dtype=bool)
    while live.any():
        go = live & (indeg[src] == 0)
        if not go.any():
            return False
        live &= ~go
        indeg -= np.bincount(dst[go], minlength=nch)
    return True


def _port_table(sws: list[str], lfts: Routes, top: int, width: int) -> np.ndarray:
    """Switches x LIDs 0..*top*: each switch's out port for each LID, 0 for none or for a
    port outside 1..*width* - 1.  Read from each table's keys and values at once (a
    lookup per switch and LID was most of the check at 11,664 hosts, issue 28)."""
    table = np.zeros((len(sws), top + 1), dtype=np.int16)
    for i, s in enumerate(sws):
        t = lfts.get(s)
        if not t:
            continue
        keys = np.fromiter(t.keys(), dtype=np.int64, count=len(t))
        ports = np.fromiter(t.values(), dtype=np.int64, count=len(t))
        keep = (keys >= 0) & (keys <= top) & (ports > 0) & (ports < width)
        table[i, keys[keep]] = ports[keep]
    return table


def _group_dependencies(sn: Subnet, lfts: Routes, groups: Groups,
                        tick: Tick | None) -> dict[Channel, set[Channel]]:
    """:func:`dependencies` when switches route adaptively: for each destination LID, the
    switches its traffic reaches from the sources' switches, following every port a
    switch may take for it (its group, else its LFT entry)."""
    edges: dict[Channel, set[Channel]] = {}
    cas = [(c.name, att[0]) for c in sn.cas() if (att := sn.attached_switch(c.name)) is not None]
    sources: dict[str, list[str]] = {}
    for ca, sw in cas:
        sources.setdefault(sw, []).append(ca)
    nodes = sn.nodes

    def hops(s: str, lid: int) -> list[tuple[int, str | None]]:
        """(port, next switch or None) for each port *s* may send *lid* on that has a peer."""
        g = groups.get(s, {}).get(lid)
        ports = g if g is not None else (lfts.get(s, {}).get(lid),)
        out: list[tuple[int, str | None]] = []
        for p in ports:
            if p is None or p <= 0:
                continue
            peer = nodes[s].peers.get(p)
            if peer is not None:
                out.append((p, peer[0] if nodes[peer[0]].switch else None))
        return out

    for dst, _ in cas:
        for lid in sn.lids(dst):
            todo = [sw for sw, owners in sources.items() if set(owners) - {dst}]
            seen = set(todo)
            for sw in todo:                                     # (src, 1) -> its switch's out ports
                for p, _ in hops(sw, lid):
                    for src in sources[sw]:
                        if src != dst:
                            edges.setdefault((src, 1), set()).add((sw, p))
            while todo:
                u = todo.pop()
                for p, v in hops(u, lid):
                    if v is None:
                        continue
                    for q, _ in hops(v, lid):
                        edges.setdefault((u, p), set()).add((v, q))
                    if v not in seen:
                        seen.add(v)
                        todo.append(v)
        if tick is not None:
            tick(len(sn.lids(dst)))
    return edges


def find_cycle(edges: dict[Channel, set[Channel]]) -> list[Channel] | None:
    """A cycle of the graph (its channels in order), None if acyclic; iterative DFS."""
    color: dict[Channel, int] = {}
    for root in sorted(edges):
        if color.get(root):
            continue
        stack: list[tuple[Channel, list[Channel]]] = [(root, sorted(edges.get(root, ())))]
        path = [root]
        color[root] = 1
        while stack:
            node, rest = stack[-1]
            if not rest:
                stack.pop()
                path.pop()
                color[node] = 2
                continue
            nxt = rest.pop(0)
            c = color.get(nxt, 0)
            if c == 1:
                return path[path.index(nxt):]
            if c == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append((nxt, sorted(edges.get(nxt, ()))))
    return None


def check_credit_loops(sn: Subnet, lfts: Routes, engine: str = "", tick: Tick | None = None,
                       groups: Groups | None = None) -> None:
    """Refuse *lfts* (with the adaptive routing *groups*, if any) if their channel
    dependency graph has a cycle: one UserError line naming it, ``node:port -> node:port
    -> ... -> first again``.  *tick*: see :func:`dependencies`.  Without *groups*, an
    acyclic graph is told apart on arrays (:func:`_acyclic`); the cycle is looked for only
    in a graph that has one.  (A CA's channel is never in a cycle: nothing leads to it.)"""
    if groups:
        cycle = find_cycle(_group_dependencies(sn, lfts, groups, tick))
    else:
        found = _switch_codes(sn, lfts, tick)
        if found is None or _acyclic(found[2], len(found[0]) * found[1]):
            return
        cycle = find_cycle(_edges(found))          # (the same arrays, turned into the graph)
    if cycle:
        names = " -> ".join("%s:%d" % c for c in cycle + cycle[:1])
        what = "routing%s%s" % (" (%s)" % engine if engine else "", " with adaptive routing groups" if groups else "")
        raise UserError("%s has a credit loop (channel dependency cycle, deadlock possible): %s" % (what, names))
