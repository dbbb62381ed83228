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
    edges: dict[Channel, set[Channel]] = {}
    cas = [(c.name, att[0]) for c in sn.cas() if (att := sn.attached_switch(c.name)) is not None]
    if not cas:
        return edges
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
    attached = list(dict.fromkeys(sw for _, sw in cas))         # the switches with CAs
    codes = []
    leaf_ports: dict[str, dict[int, set[str]]] = {}            # switch -> out port -> owners of LIDs
    for lo in range(0, len(lids), _CHUNK):
        part = lids[lo:lo + _CHUNK]
        out = np.array([[lfts.get(s, {}).get(lid, 0) or 0 for lid, _, _ in part] for s in sws],
                       dtype=np.int64).reshape(len(sws), len(part))
        out[(out < 0) | (out >= width)] = 0
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
        for sw in attached:
            i = index[sw]
            ports = leaf_ports.setdefault(sw, {})
            for k in np.nonzero(out[i] > 0)[0].tolist():
                ports.setdefault(int(out[i, k]), set()).add(part[k][1])
        if tick is not None:
            tick(len(part))
    nch = len(sws) * width
    for code in np.unique(np.concatenate(codes)).tolist():
        a, b = divmod(code, nch)
        edges.setdefault((sws[a // width], a % width), set()).add((sws[b // width], b % width))
    for src, sw in cas:                                         # (src, 1) -> its switch's out ports
        for p, owners in leaf_ports.get(sw, {}).items():
            if owners - {src}:
                edges.setdefault((src, 1), set()).add((sw, p))
    return edges


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
    -> ... -> first again``.  *tick*: see :func:`dependencies`."""
    cycle = find_cycle(dependencies(sn, lfts, tick, groups))
    if cycle:
        names = " -> ".join("%s:%d" % c for c in cycle + cycle[:1])
        what = "routing%s%s" % (" (%s)" % engine if engine else "", " with adaptive routing groups" if groups else "")
        raise UserError("%s has a credit loop (channel dependency cycle, deadlock possible): %s" % (what, names))
