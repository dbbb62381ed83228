"""A neutral subnet graph for the routing engines (issue 15): nodes (switches and CAs)
with their GUIDs, ports and peers, base LIDs and the LMC, as a subnet manager sees
them after discovery and LID assignment (REFERENCE-FABRICS §3).

It knows nothing of scenarios: ``ibemu.build`` makes one from a scenario's port
assignment and node GUIDs (:func:`ibemu.build.subnet_of`).  A switch's port GUID is its
node GUID (IBA 14.2.5.6: one port GUID, port 0); a CA's port 1 GUID is given.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import UserError

__all__ = ["SubnetNode", "Subnet", "Routes", "Tick", "switch_hops", "levels", "balance"]

Routes = dict[str, dict[int, int]]
"""Linear forwarding tables: switch name -> {destination LID: out port}."""

Tick = Callable[[int], None]
"""A progress callback: called with the units of work done since its last call."""


@dataclass
class SubnetNode:
    name: str
    switch: bool
    guid: int                                # node GUID
    port_guid: int                           # switch: node GUID; CA: port 1's GUID
    lid: int                                 # base LID (switch: port 0's LID)
    desc: str
    nports: int                              # NumPorts (port 0 not counted)
    peers: dict[int, tuple[str, int]] = field(default_factory=dict)   # port -> (peer name, peer port)


@dataclass
class Subnet:
    """The subnet: *nodes* by name in the scenario's order, *lmc* (CAs own
    2^LMC LIDs from their base LID; switch port 0 has one LID, no enhanced SP0)."""
    nodes: dict[str, SubnetNode]
    lmc: int = 0
    _lid_owner: dict[int, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        owner: dict[int, str] = {}
        for n in self.nodes.values():
            for lid in self.lids(n.name):
                if lid in owner:
                    raise UserError("LID %d is used by both %s and %s" % (lid, owner[lid], n.name))
                owner[lid] = n.name
        self._lid_owner = owner

    @classmethod
    def build(cls, links: list[tuple[str, int, str, int]], switches: dict[str, tuple[int, int, str, int]],
              cas: dict[str, tuple[int, int, int, str]], lmc: int = 0) -> Subnet:
        """From wired *links* (a, port a, b, port b), *switches* name -> (GUID, LID, desc,
        NumPorts or 0: the highest port linked) and *cas* name -> (node GUID, port GUID,
        base LID, desc)."""
        nodes: dict[str, SubnetNode] = {}
        for name, (guid, lid, desc, nports) in switches.items():
            nodes[name] = SubnetNode(name, True, guid, guid, lid, desc, nports)
        for name, (guid, pguid, lid, desc) in cas.items():
            nodes[name] = SubnetNode(name, False, guid, pguid, lid, desc, 1)
        for a, pa, b, pb in links:
            nodes[a].peers[pa] = (b, pb)
            nodes[b].peers[pb] = (a, pa)
        for n in nodes.values():
            n.nports = max([n.nports, *n.peers])
        return cls(nodes, lmc)

    def switches(self) -> list[SubnetNode]:
        return [n for n in self.nodes.values() if n.switch]

    def cas(self) -> list[SubnetNode]:
        return [n for n in self.nodes.values() if not n.switch]

    def lids(self, name: str) -> range:
        """The LIDs of node *name*: a CA's base .. base + 2^LMC - 1, a switch's one LID."""
        n = self.nodes[name]
        return range(n.lid, n.lid + (1 if n.switch else 1 << self.lmc))

    def owner(self, lid: int) -> str | None:
        """The node that owns *lid* (None: nobody)."""
        return self._lid_owner.get(lid)

    def max_lid(self) -> int:
        return max(self._lid_owner, default=0)

    def attached_switch(self, ca: str) -> tuple[str, int] | None:
        """(switch, its port) a CA's port 1 is linked to, None if not linked to a switch."""
        peer = self.nodes[ca].peers.get(1)
        if peer is None or not self.nodes[peer[0]].switch:
            return None
        return peer

    def switch_peers(self, name: str) -> list[tuple[int, str, int]]:
        """(port, peer switch, peer port) of a switch's links to other switches, by port."""
        n = self.nodes[name]
        return [(p, q, qp) for p, (q, qp) in sorted(n.peers.items()) if self.nodes[q].switch and q != name]


def switch_hops(sn: Subnet, sources: list[str]) -> dict[str, int]:
    """Switch hops from the nearest of *sources* (0) to every switch it reaches, by a
    breadth-first search over switch-to-switch links."""
    dist = {s: 0 for s in sources}
    todo = deque(sources)
    while todo:
        u = todo.popleft()
        for _, v, _ in sn.switch_peers(u):
            if v not in dist:
                dist[v] = dist[u] + 1
                todo.append(v)
    return dist


def levels(sn: Subnet) -> dict[str, int]:
    """Fabric level of each switch (issue 15 naming): 1 for switches with CAs (leaves),
    else 1 + the fewest switch hops to a leaf."""
    leaves = [s.name for s in sn.switches() if any(not sn.nodes[q].switch for q, _ in s.peers.values())]
    return {name: 1 + hops for name, hops in switch_hops(sn, leaves).items()}


def balance(sn: Subnet, lfts: Routes) -> list[tuple[int, int, int, int, int, int]]:
    """Per switch level: (level, switches, up-ports, CA LIDs routed over them, the least
    and the most on one up-port); an up-port leads to a switch of a higher level."""
    lvl = levels(sn)
    ca_lids = [lid for c in sn.cas() for lid in sn.lids(c.name)]
    rows: dict[int, list[int]] = {}
    nsw: dict[int, int] = {}
    for s in sn.switches():
        if s.name not in lvl:
            continue
        n = lvl[s.name]
        nsw[n] = nsw.get(n, 0) + 1
        ups = [p for p, (q, _) in s.peers.items() if q in lvl and lvl[q] > n]
        lft = lfts.get(s.name, {})
        counts = {p: 0 for p in ups}
        for lid in ca_lids:
            p = lft.get(lid)
            if p in counts:
                counts[p] += 1
        rows.setdefault(n, []).extend(counts.values())
    return [(n, nsw[n], len(c), sum(c), min(c, default=0), max(c, default=0)) for n, c in sorted(rows.items())]
