"""ibemu.routing engines on small hand-written fat trees (issue 15 Acceptance)."""
from __future__ import annotations

from collections import Counter, deque

import pytest

from ibemu.build import scenario_routes, subnet_of
from ibemu.errors import UserError
from ibemu.routing import Subnet, check_credit_loops, route
from ibemu.routing.cdg import dependencies, find_cycle
from ibemu.routing.ftree import tree_ranks
from ibemu.scenario.model import HCASpec, LinkSpec, RoutingSpec, Scenario, SwitchSpec


def two_level(leaves: int, spines: int, hosts: int, lmc: int = 0, engine: str = "minhop") -> Scenario:
    """leaves L0.., spines S0.., hosts H<leaf>_<i> on ports 1..hosts of each leaf; leaf
    port hosts+1+j goes to spine j, spine port 1+i to leaf i."""
    n = 1 << lmc
    sws = [SwitchSpec("L%d" % i) for i in range(leaves)] + [SwitchSpec("S%d" % j) for j in range(spines)]
    hcas, links = [], []
    for i in range(leaves):
        for k in range(hosts):
            h = "H%d_%d" % (i, k)
            hcas.append(HCASpec(h, n * (1 + len(hcas))))
            links.append(LinkSpec(h, "L%d" % i, 1, 1 + k))
        for j in range(spines):
            links.append(LinkSpec("L%d" % i, "S%d" % j, hosts + 1 + j, 1 + i))
    return Scenario("ft", 1, sws, hcas, links, routing=RoutingSpec(engine=engine, lmc=lmc))


def three_level(k: int = 2) -> Scenario:
    """A k-ary 3-tree (REFERENCE-FABRICS §5): switches <w, l>, w in {0..k-1}^2, l = 0 roots
    .. 2 leaves; <w,l> - <w',l+1> iff w_i = w'_i for i != l; k hosts per leaf."""
    import itertools
    words = list(itertools.product(range(k), repeat=2))
    name = {(w, lv): "R%d_%d%d" % (lv, *w) for w in words for lv in range(3)}
    sws = [SwitchSpec(name[(w, lv)]) for lv in range(3) for w in words]
    links, hcas = [], []
    nxt: Counter[str] = Counter()
    for lv in range(2):
        for w in words:
            for w2 in words:
                if all(w[i] == w2[i] for i in range(2) if i != lv):
                    a, b = name[(w, lv)], name[(w2, lv + 1)]
                    nxt[a] += 1
                    nxt[b] += 1
                    links.append(LinkSpec(a, b, nxt[a], k + nxt[b] if lv == 1 else nxt[b]))
    for w in words:
        leaf = name[(w, 2)]
        for h in range(k):
            hn = "H%d%d_%d" % (*w, h)
            hcas.append(HCASpec(hn, 1 + len(hcas)))
            links.append(LinkSpec(hn, leaf, 1, 1 + h))
    return Scenario("kary", 1, sws, hcas, links)


def walk(sn: Subnet, lfts, src: str, lid: int) -> list[str] | None:
    """Nodes from CA *src* to *lid* under *lfts*; None if dropped or looping."""
    node, _ = sn.attached_switch(src)
    path = [src]
    while len(path) < 64:
        path.append(node)
        n = sn.nodes[node]
        if not n.switch:
            return path if lid in sn.lids(node) else None
        p = lfts[node].get(lid)
        if p is None:
            return None
        if p == 0:
            return path if lid == n.lid else None
        node = n.peers[p][0]
    return None


def switch_dist(sn: Subnet) -> dict[str, dict[str, int]]:
    out = {}
    for s in sn.nodes:
        d = {s: 0}
        q = deque([s])
        while q:
            u = q.popleft()
            if u != s and not sn.nodes[u].switch:
                continue
            for v, _ in sn.nodes[u].peers.values():
                if v not in d:
                    d[v] = d[u] + 1
                    q.append(v)
        out[s] = d
    return out


ENGINES = ["minhop", "updn", "ftree"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("make", [lambda: two_level(4, 3, 3), lambda: two_level(3, 2, 2), lambda: three_level(2)])
def test_every_destination_reachable_min_hops_no_loop(engine, make):
    scn = make()
    sn = subnet_of(scn)
    lfts = route(sn, engine)
    dist = switch_dist(sn)
    for s in sn.switches():                 # every LID reachable from every switch
        for t in sn.nodes.values():
            if engine == "updn" and t.switch and not sn.nodes[s.name].peers.keys() - {
                    p for p, (q, _) in s.peers.items() if sn.nodes[q].switch}:
                continue    # up*/down*: a root cannot reach another root's own LID (OpenSM's connect_roots off)
            for lid in sn.lids(t.name):
                node, hops = s.name, 0
                while node != t.name:
                    p = lfts[node].get(lid)
                    assert p is not None, (engine, s.name, lid)
                    if p == 0:
                        break
                    node = sn.nodes[node].peers[p][0]
                    hops += 1
                    assert hops < 20
                if engine == "minhop":
                    assert hops == dist[s.name][t.name], (s.name, t.name)
    for a in sn.cas():                      # CA to CA: minimal on fat trees for all three
        for b in sn.cas():
            if a is not b:
                path = walk(sn, lfts, a.name, b.lid)
                assert path is not None and len(path) - 1 == dist[a.name][b.name]
    check_credit_loops(sn, lfts, engine)    # fat trees: no cycle for any engine


def test_minhop_spreads_over_spines_not_only_spine0():
    """Issue 15: 'every path crossed spine S0' under the old lowest-port BFS."""
    scn = two_level(4, 4, 4)
    sn = subnet_of(scn)
    lfts = route(sn, "minhop")
    via = Counter()
    for a in sn.cas():
        for b in sn.cas():
            path = walk(sn, lfts, a.name, b.lid) if a is not b else None
            for n in path or ():
                if n.startswith("S"):
                    via[n] += 1
    assert set(via) == {"S0", "S1", "S2", "S3"}
    assert max(via.values()) - min(via.values()) <= len(sn.cas())   # within one leaf's worth


def up_counts(sn: Subnet, lfts, leaf: str) -> Counter:
    """Destination CA LIDs per up-port of *leaf* (ports to switches)."""
    ups = {p for p, (q, _) in sn.nodes[leaf].peers.items() if sn.nodes[q].switch}
    c = Counter({p: 0 for p in ups})
    for ca in sn.cas():
        p = lfts[leaf].get(ca.lid)
        if p in ups:
            c[p] += 1
    return c


@pytest.mark.parametrize("leaves,spines,hosts", [(4, 4, 4), (6, 3, 3), (5, 2, 4)])
def test_ftree_spreads_destinations_evenly_over_up_ports(leaves, spines, hosts):
    sn = subnet_of(two_level(leaves, spines, hosts))
    lfts = route(sn, "ftree")
    for i in range(leaves):
        c = up_counts(sn, lfts, "L%d" % i)
        assert sum(c.values()) == (leaves - 1) * hosts
        assert max(c.values()) - min(c.values()) <= 1, c
    # consecutive LIDs of a leaf come down through different spines
    down = [sn.nodes["L1"].peers[lfts["L1"][ca.lid]][0] for ca in sn.cas()[:hosts]]
    assert len(set(down)) == min(hosts, spines)


def test_ftree_three_level_even():
    sn = subnet_of(three_level(2))
    lfts = route(sn, "ftree")
    for s in sn.switches():
        if s.name.startswith("R2_"):
            c = up_counts(sn, lfts, s.name)
            assert max(c.values()) - min(c.values()) <= 1, (s.name, c)


def test_ftree_refuses_non_tree():
    scn = two_level(2, 1, 1)
    scn.links.append(LinkSpec("L0", "L1", 10, 10))          # leaf-leaf link: same rank
    with pytest.raises(UserError, match="not a fat tree"):
        tree_ranks(subnet_of(scn))


def test_updn_roots_and_auto_roots():
    sn = subnet_of(two_level(3, 2, 2))
    from ibemu.routing.updn import auto_roots
    assert auto_roots(sn) == ["S0", "S1"]     # spines: every CA 1 hop to its leaf +1 = 2 hops
    lfts = route(sn, "updn", ["S1"])
    for a in sn.cas():                        # single root: every inter-leaf route via S1
        for b in sn.cas():
            path = walk(sn, lfts, a.name, b.lid) if a is not b else None
            if path and len(path) > 3:
                assert "S1" in path and "S0" not in path


def ring(n: int) -> Scenario:
    """n switches in a ring, one HCA each: minhop routes clockwise and counterclockwise."""
    sws = [SwitchSpec("R%d" % i) for i in range(n)]
    hcas = [HCASpec("H%d" % i, 1 + i) for i in range(n)]
    links = [LinkSpec("H%d" % i, "R%d" % i, 1, 1) for i in range(n)]
    links += [LinkSpec("R%d" % i, "R%d" % ((i + 1) % n), 2, 3) for i in range(n)]
    return Scenario("ring", 1, sws, hcas, links)


def test_injected_cycle_is_refused_naming_it():
    scn = ring(4)
    sn = subnet_of(scn)
    # hand LFTs: every switch sends every remote HCA clockwise (port 2) -> a cycle of the 4 ring links
    lfts = {s.name: {h.lid: (1 if h.name[1:] == s.name[1:] else 2) for h in sn.cas()} for s in sn.switches()}
    with pytest.raises(UserError) as e:
        check_credit_loops(sn, lfts, "hand")
    msg = str(e.value)
    assert "\n" not in msg and "credit loop" in msg
    cyc = msg.split(": ", 1)[1].split(" -> ")
    assert cyc[0] == cyc[-1] and sorted(cyc[:-1]) == ["R0:2", "R1:2", "R2:2", "R3:2"]
    # the same through the scenario: hand lft entries win over the engine, the check refuses
    for s in scn.switches:
        s.lft = lfts[s.name]
    with pytest.raises(UserError, match="credit loop"):
        scenario_routes(scn)
    scn.routing.check_credit_loops = False
    assert scenario_routes(scn)["R0"][3] == 2


def test_ring_minhop_cycle_found_updn_none():
    sn = subnet_of(ring(5))                    # 5-ring: minhop uses 2-hop routes both ways round
    assert find_cycle(dependencies(sn, route(sn, "minhop"))) is not None
    check_credit_loops(sn, route(sn, "updn", ["R0"]), "updn")


def test_lmc_distinct_paths_and_alignment():
    scn = two_level(3, 4, 2, lmc=2)
    sn = subnet_of(scn)
    lfts = route(sn, "minhop")
    for a in sn.cas():
        for b in sn.cas():
            if a.name[1] == b.name[1]:
                continue                      # same leaf: one path
            paths = {tuple(walk(sn, lfts, a.name, lid)) for lid in sn.lids(b.name)}
            assert len(paths) == 4            # 4 spines, 4 LIDs: 4 different spines
    lfts = route(sn, "updn")
    check_credit_loops(sn, lfts, "updn")
    with pytest.raises(UserError, match="LMC 0 only"):
        route(sn, "ftree")


def test_old_single_path_lfts_unchanged_on_trees():
    """Where a fabric has one path per pair, the engines give the old BFS tables
    (shortest path; lowest port on ties never matters)."""
    from ibemu.scenario.read import load_scenario
    import glob
    checked = 0
    for f in sorted(glob.glob("scenarios/*.toml")):
        try:
            scn = load_scenario(f)
        except Exception:
            continue
        sn = subnet_of(scn)
        if any(len(sn.switch_peers(s.name)) > 0 for s in sn.switches()) and _has_cycle(sn):
            continue
        new = scenario_routes(scn)
        old = _old_bfs(scn, sn)
        for s, table in old.items():
            for lid, p in table.items():
                assert new[s][lid] == p, (f, s, lid)
        checked += 1
    assert checked >= 5


def _has_cycle(sn: Subnet) -> bool:
    sws = [s.name for s in sn.switches()]
    edges = sum(len(sn.switch_peers(s)) for s in sws) // 2
    seen, comps = set(), 0
    for s in sws:
        if s in seen:
            continue
        comps += 1
        q = [s]
        seen.add(s)
        while q:
            u = q.pop()
            for _, v, _ in sn.switch_peers(u):
                if v not in seen:
                    seen.add(v)
                    q.append(v)
    return edges > len(sws) - comps


def _old_bfs(scn: Scenario, sn: Subnet) -> dict[str, dict[int, int]]:
    """The pre-issue-15 rule: BFS from each target, lowest port among the closer neighbours."""
    out: dict[str, dict[int, int]] = {s.name: {} for s in sn.switches()}
    for t in sn.nodes.values():
        dist = switch_dist(sn)[t.name]
        for s in sn.switches():
            if s.name == t.name or s.name not in dist:
                continue
            best = min(((dist[v], p) for p, (v, _) in s.peers.items() if v in dist and dist[v] < dist[s.name]),
                       default=None)
            if best:
                out[s.name][t.lid] = best[1]
    return out
