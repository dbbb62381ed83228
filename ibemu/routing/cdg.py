"""Credit-loop (deadlock) check over the channel dependency graph (REFERENCE-FABRICS §4:
Dally & Seitz 1987; ibdmchk's CredLoops): the vertices are directed links (channels,
named ``node:out port``), and c1 -> c2 is an edge if some CA-to-CA route, to any of the
destination's 2^LMC LIDs, goes from c1 straight onto c2.  Lossless links hold a packet in
c1's buffer until c2 returns a credit, so a cycle of full channels never drains:
routing is deadlock-free iff the graph is acyclic.  One VL per channel (ibemu's SL->VL
is the identity per port, so VLs never split a dependency chain of one SL).

Forwarding is by destination only, so the edges are found per destination LID from the
switches that carry its traffic, not per (source, destination) pair: linear in
switches x LIDs.
"""
from __future__ import annotations

from ..errors import UserError
from .graph import Routes, Subnet

__all__ = ["Channel", "dependencies", "find_cycle", "check_credit_loops"]

Channel = tuple[str, int]                       # (node, out port)


def dependencies(sn: Subnet, lfts: Routes) -> dict[Channel, set[Channel]]:
    """The channel dependency graph of CA-to-CA routes under *lfts*."""
    edges: dict[Channel, set[Channel]] = {}
    cas = [(c.name, att[0]) for c in sn.cas() if (att := sn.attached_switch(c.name)) is not None]
    for dst, _ in cas:
        for lid in sn.lids(dst):
            into: dict[str, set[Channel]] = {}
            for src, sw in cas:
                if src != dst:
                    into.setdefault(sw, set()).add((src, 1))
            out: dict[str, int] = {}            # active switch -> out port to lid
            todo = list(into)
            while todo:                         # follow the LFT chains from the sources' switches
                s = todo.pop()
                if s in out:
                    continue
                p = lfts.get(s, {}).get(lid)
                peer = sn.nodes[s].peers.get(p) if p else None
                if p is None or peer is None:
                    continue                    # dropped or at the switch itself: no onward channel
                out[s] = p
                if sn.nodes[peer[0]].switch:
                    into.setdefault(peer[0], set()).add((s, p))
                    todo.append(peer[0])
            for s, p in out.items():
                for c in into[s]:
                    edges.setdefault(c, set()).add((s, p))
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


def check_credit_loops(sn: Subnet, lfts: Routes, engine: str = "") -> None:
    """Refuse *lfts* if their channel dependency graph has a cycle: one UserError line
    naming it, ``node:port -> node:port -> ... -> first again``."""
    cycle = find_cycle(dependencies(sn, lfts))
    if cycle:
        names = " -> ".join("%s:%d" % c for c in cycle + cycle[:1])
        raise UserError("routing%s has a credit loop (channel dependency cycle, deadlock possible): %s"
                        % (" (%s)" % engine if engine else "", names))
