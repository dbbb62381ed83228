"""Which worker process runs which nodes (issue 4 item 2; the issue leaves the rule open).

The rule, and why:

1. Each switch and the HCAs attached only to it form a *cluster* (HCAs linked to no
   switch form their own).  A cluster stays in one process: between co-located nodes
   the runtime takes each datagram off the peer socket as soon as it is sent, so their
   interplay is exact (:mod:`ibemu.runtime.loop`); only links between processes add the
   real-time error.  Seed 003's Figure 1 splits into A's side and B's side, cut at the
   inter-switch link.
2. Clusters go, heaviest first, to the least loaded worker (LPT).  Weight: a switch
   counts its ports, an HCA 2 (its queue pairs do about as much work per packet).
3. When there are fewer clusters than workers (e.g. one switch, 2 workers), HCAs are
   moved off the most loaded worker to the empty ones, so every worker runs nodes.
   Never more workers than nodes.

The rule balances the work; it does not know where lateness hurts.  A frame between two
processes reaches its receiver late (a microsecond of emulated time at dilation 50),
and where flows compete for credits a few hundred nanoseconds can move a result by 5 %
(seed 003 Fig 2(a)'s victim: benchmarks/README.md, "why the victim decides the figure").
The cut at the inter-switch link is the most sensitive place for congestion spreading;
the links into HCAs that only sink traffic are the least.  So the user may place the
nodes by hand (``--place``, :func:`placement`): the default stays the rule above.
"""
from __future__ import annotations

from ..fabric.network import Fabric
from ..fabric.node import Node
from ..fabric.switch import Switch


def _weight(node: Node) -> int:
    return len(node.ports) if isinstance(node, Switch) else 2


def clusters(fabric: Fabric) -> list[list[str]]:
    """The node names of each cluster (rule 1 above), in build order."""
    names = {id(n): name for name, n in fabric.nodes.items()}
    is_switch = {name: isinstance(n, Switch) for name, n in fabric.nodes.items()}
    owner: dict[str, str] = {}
    for (node, _port), (peer, _pp, _prop) in fabric.wiring.items():
        a, b = names[id(node)], names[id(peer)]
        if is_switch[a] and not is_switch[b] and b not in owner:
            owner[b] = a
    groups: dict[str, list[str]] = {}
    for name in fabric.nodes:
        key = name if is_switch[name] else owner.get(name, name)
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def partition(fabric: Fabric, workers: int) -> list[list[str]]:
    """Node names per worker: a list of *workers* (at most the number of nodes)
    non-empty lists."""
    nodes = fabric.nodes
    workers = max(1, min(int(workers), len(nodes)))
    cl = sorted(clusters(fabric), key=lambda c: -sum(_weight(nodes[n]) for n in c))
    groups: list[list[str]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for c in cl:
        i = loads.index(min(loads))
        groups[i].extend(c)
        loads[i] += sum(_weight(nodes[n]) for n in c)
    for i in range(workers):
        if groups[i]:
            continue
        j = loads.index(max(loads))
        hcas = [n for n in groups[j] if not isinstance(nodes[n], Switch)]
        if len(groups[j]) < 2 or not hcas:
            continue
        take = hcas[len(hcas) // 2:]
        if len(take) == len(groups[j]):
            take = take[1:]
        for n in take:
            groups[j].remove(n)
            groups[i].append(n)
            loads[j] -= _weight(nodes[n])
            loads[i] += _weight(nodes[n])
    order = list(nodes)
    return [sorted(g, key=order.index) for g in groups if g]


def parse_placement(text: str) -> list[list[str]]:
    """``--place`` text: the workers' node names, a group per worker separated by
    ``/``, the names in a group by ``,`` (e.g. ``A,B,L1,L2/BC``).  ValueError names
    what is wrong with the text itself."""
    groups = [[n.strip() for n in g.split(",")] for g in text.split("/")]
    for i, g in enumerate(groups):
        if g == [""]:
            raise ValueError("worker %d has no nodes (groups are separated by '/')" % (i + 1))
        if "" in g:
            raise ValueError("an empty node name in worker %d's group %r" % (i + 1, ",".join(g)))
    return groups


def placement(fabric: Fabric, groups: list[list[str]]) -> list[list[str]]:
    """Check a hand placement against *fabric*: every node in exactly one group.
    Returns the groups, each in the fabric's order; ValueError names the first node
    unknown, placed twice or left out."""
    nodes = fabric.nodes
    seen: dict[str, int] = {}
    for i, g in enumerate(groups):
        for n in g:
            if n not in nodes:
                raise ValueError("no node %r in the fabric (its nodes: %s)" % (n, ", ".join(nodes)))
            if n in seen:
                raise ValueError("node %r is placed twice (workers %d and %d)" % (n, seen[n] + 1, i + 1))
            seen[n] = i
    missing = [n for n in nodes if n not in seen]
    if missing:
        raise ValueError("no worker runs %s: every node must be placed" % ", ".join(missing))
    order = list(nodes)
    return [sorted(g, key=order.index) for g in groups]
