"""Least-hop entries for the destinations a routing engine left out (ibemu's addition to
OpenSM's ``ftree``, :mod:`.ftree`): OpenSM leaves a switch without an entry where no
up*/down* path exists, e.g. from one root to another (only its ``connect_roots`` option
fills those); ibemu gives each such entry a least-hop port so that every destination is
reachable from every switch, as a management packet expects.
"""
from __future__ import annotations


import numpy as np

from .graph import Subnet

__all__ = ["fill_least_hop"]


def fill_least_hop(sn: Subnet, table: list[str], order: list[int], lfts: list[dict[int, int]],
                   load: list[list[int]]) -> None:
    """Give every switch of *table* (its LFT is ``lfts[i]``) an entry for every CA LID and
    then every switch LID (switches in *order*) it lacks: a least-hop port, the least
    loaded first (``load[i][port]``: routes the engine counted there), then the lowest
    port.  Done as arrays per destination switch that some switch lacks."""
    n = len(table)
    index = {s: i for i, s in enumerate(table)}
    targets = [(sn.nodes[ca].lid, index[att[0]]) for ca in (c.name for c in sn.cas())
               if (att := sn.attached_switch(ca)) is not None]
    targets += [(sn.nodes[table[i]].lid, i) for i in order]
    if not targets:
        return
    wanted = np.array([lid for lid, _ in targets], dtype=np.int64)
    top = int(wanted.max())
    missing: list[list[tuple[int, int]]] = []
    for lft in lfts:        # the targets each table lacks, as arrays (a lookup each was seconds at 11,664 hosts)
        keys = np.fromiter(lft.keys(), dtype=np.int64, count=len(lft))
        present = np.zeros(top + 1, dtype=bool)
        present[keys[(keys >= 0) & (keys <= top)]] = True
        missing.append([targets[k] for k in np.flatnonzero(~present[wanted]).tolist()])
    if not any(missing):
        return
    adj = [[(p, index[v]) for p, v, _ in sn.switch_peers(s)] for s in table]
    width = max(1, max(len(a) for a in adj))
    nbr = np.full((n, width), n, dtype=np.int64)          # n: no neighbour (distance -1)
    port = np.zeros((n, width), dtype=np.int64)
    weight = np.zeros((n, width), dtype=np.int64)
    for i, a in enumerate(adj):
        for k, (p, j) in enumerate(a):
            nbr[i, k] = j
            port[i, k] = p
            weight[i, k] = load[i][p]
    tiebreak = weight * 65536 + port                         # least loaded, then lowest port
    starts = np.cumsum([0] + [len(a) for a in adj])
    flat = np.array([j for a in adj for _, j in a] or [0], dtype=np.int64)
    choice: dict[int, list[int]] = {}
    for i, row in enumerate(missing):
        lft = lfts[i]
        for lid, dest in row:
            if dest not in choice:
                choice[dest] = _least_hop_ports(dest, starts, flat, nbr, port, tiebreak)
            p = choice[dest][i]
            if p >= 0:
                lft[lid] = p


def _least_hop_ports(dest: int, starts: np.ndarray, flat: np.ndarray, nbr: np.ndarray, port: np.ndarray,
                     tiebreak: np.ndarray) -> list[int]:
    """Per switch: its port towards switch *dest* with the fewest hops (ties: *tiebreak*),
    0 at *dest* itself, -1 where *dest* is not reached.  Breadth-first from *dest*."""
    n = len(nbr)
    dist = np.full(n + 1, -1, dtype=np.int64)
    dist[dest] = 0
    front = np.array([dest])
    step = 0
    while front.size:
        step += 1
        lo, hi = starts[front], starts[front + 1]
        sizes = hi - lo
        at = np.repeat(lo - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        seen = np.zeros(n + 1, dtype=bool)          # the front's neighbours, marked (no sort)
        seen[flat[at]] = True
        reached = np.flatnonzero(seen & (dist < 0))
        dist[reached] = step
        front = reached
    hops = dist[nbr]
    valid = hops >= 0
    hops = np.where(valid, hops, n + 1)
    best = hops.min(axis=1)
    key = np.where(valid & (hops == best[:, None]), tiebreak, np.iinfo(np.int64).max)
    out = port[np.arange(n), key.argmin(axis=1)]
    out[~valid.any(axis=1)] = -1
    out[dest] = 0
    return [int(x) for x in out.tolist()]
