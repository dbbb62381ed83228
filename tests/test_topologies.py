"""Fat-tree generators (issue 15 Deliver 1, ibemu.scenario.topologies): structure of the
k-ary n-tree, XGFT, two-level radix fat tree and leaf-spine -- node and link counts, up
and down ports per switch and their numbering, LIDs, link levels -- and bisection
bandwidth computed by max-flow (REFERENCE-FABRICS §5), not asserted from counts."""
from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections import deque
from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.run import run_virtual
from ibemu.scenario import ScenarioError, load_scenario, scenario_from_dict
from ibemu.scenario.builders import fat_tree2, kary_ntree, leaf_spine, xgft
from ibemu.scenario.model import Scenario
from ibemu.scenario.templates import apply_template
from ibemu.units import PS_PER_US, ib_rate, parse_time
from ibemu.validate import Checker
from ibemu.wire.layout import MAX_HEADERS

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def level_of(name: str) -> int:
    """A node's level from its documented name (docs/fabrics.md)."""
    if re.fullmatch(r"h\d+", name):
        return 0
    if re.fullmatch(r"L\d+", name):
        return 1
    if re.fullmatch(r"S\d+", name):
        return 2
    m = re.fullmatch(r"sw(\d+)_\d+", name)
    assert m, name
    return int(m[1])


def ports(scn: Scenario):
    """{switch: (down ports, up ports)} from the links (a is the lower end)."""
    out = {s.name: ([], []) for s in scn.switches}
    for ln in scn.links:
        if ln.a in out:
            out[ln.a][1].append(ln.a_port)
        out[ln.b][0].append(ln.b_port)
    return out


def check_structure(scn: Scenario, hosts: int, per_level: list[int], down: list[int], up: list[int],
                    lmc: int = 0) -> None:
    """Counts per level, ports (down 1..m, then up), levels and LIDs as documented."""
    h = len(per_level)
    assert [h_.name for h_ in scn.hcas] == ["h%d" % i for i in range(hosts)]
    assert [x.lid for x in scn.hcas] == [(i + 1) * 2**lmc for i in range(hosts)]
    counts = [0] * (h + 1)
    for s in scn.switches:
        counts[level_of(s.name)] += 1
    assert counts[1:] == per_level
    for ln in scn.links:
        la, lb = level_of(ln.a), level_of(ln.b)
        assert lb == la + 1, (ln.a, ln.b)
        assert ln.levels == ("up%d" % lb, "down%d" % lb)
        if la == 0:
            assert ln.a_port == 1
    # links per level: every node below level i has up[i-1] parents (hosts: one link)
    nodes = [hosts] + per_level
    for i in range(1, h + 1):
        n_links = sum(1 for ln in scn.links if level_of(ln.b) == i)
        assert n_links == nodes[i - 1] * (1 if i == 1 else up[i - 2]) == nodes[i] * down[i - 1]
    for sw, (dn, upp) in ports(scn).items():
        lvl = level_of(sw)
        m, w = down[lvl - 1], up[lvl - 1]
        assert sorted(dn) == list(range(1, m + 1)), sw
        assert sorted(upp) == list(range(m + 1, m + w + 1)), sw


# ---------------------------------------------------------------- structure

@pytest.mark.parametrize("k,n", [(2, 1), (2, 3), (4, 2), (3, 3)])
def test_kary_ntree_structure(k, n):
    scn = kary_ntree(k, n)
    # Petrini & Vanneschi: k^n nodes, n k^(n-1) switches, k down and k up (roots: k down)
    check_structure(scn, k**n, [k ** (n - 1)] * n, [k] * n, [k] * (n - 1) + [0])
    assert len(scn.links) == n * k**n


def test_kary_ntree_connects_as_petrini():
    """Petrini & Vanneschi: switch <w,l>, w in {0..k-1}^(n-1), l = 0 (roots) .. n-1
    (leaves); <w,l> -- <w',l+1> iff w_q = w'_q for all q != l.  The generator's level-i
    switch index j has base-k digits d_1..d_{n-1} (d_0 = y_1 = 0 for w1 = 1, so j's
    lowest digit counts from d_1); Petrini's w_q = d_{n-1-q}, l = n - i."""
    k, n = 3, 3
    scn = kary_ntree(k, n)

    def petrini(name):
        lvl, j = level_of(name), int(name.split("_")[1])
        d = [0] + [(j // k**e) % k for e in range(n - 1)]
        return tuple(d[n - 1 - q] for q in range(n - 1)), n - lvl

    have = {frozenset((petrini(ln.a), petrini(ln.b))) for ln in scn.links if level_of(ln.a) > 0}
    sw = [(w, l_) for l_ in range(n) for w in itertools.product(range(k), repeat=n - 1)]
    assert sorted(petrini(s.name) for s in scn.switches) == sorted(sw)
    want = {frozenset((a, b)) for a, b in itertools.product(sw, sw)
            if b[1] == a[1] + 1 and all(a[0][q] == b[0][q] for q in range(n - 1) if q != a[1])}
    assert have == want and len(want) == (n - 1) * k**n
    # node (p0..p_{n-1}) on leaf <p0..p_{n-2}, n-1>: hosts of a leaf share all digits but the last
    for ln in scn.links:
        if level_of(ln.a) == 0:
            i = int(ln.a[1:])
            assert petrini(ln.b) == (tuple((i // k ** (n - 1 - q)) % k for q in range(n - 1)), n - 1)


@pytest.mark.parametrize("m,w", [([4, 4], [1, 2]), ([2, 3, 2], [1, 2, 3]), ([3, 2], [1, 1]), ([2, 2, 2], [1, 2, 1])])
def test_xgft_structure(m, w):
    scn = xgft(m, w)
    h = len(m)
    per_level = [prod(m[i:]) * prod(w[:i]) for i in range(1, h + 1)]     # N_i (Öhring et al.)
    check_structure(scn, prod(m), per_level, m, list(w[1:]) + [0])


def test_xgft_links_differ_in_one_digit():
    """Linked iff all digits but digit i+1 agree (REFERENCE-FABRICS §5), labels decoded
    from the documented mixed-radix index (y_1 lowest)."""
    m, w = [2, 3, 2], [1, 2, 3]
    scn = xgft(m, w)
    h = len(m)

    def digits(name):
        lvl = level_of(name)
        j = int(name[1:]) if lvl == 0 else int(name.split("_")[1])
        radices = list(w[:lvl]) + list(m[lvl:])
        out = []
        for r in radices:
            out.append(j % r)
            j //= r
        return lvl, out

    have = set()
    for ln in scn.links:
        (la, da), (lb, db) = digits(ln.a), digits(ln.b)
        assert lb == la + 1
        assert all(da[d] == db[d] for d in range(h) if d != la)
        assert da[la] + 1 == ln.b_port                      # the parent's down port: child digit + 1
        if la > 0:
            assert ln.a_port == m[la - 1] + db[la] + 1      # the child's up port: m + parent digit + 1
        have.add((ln.a, ln.b))
    assert len(have) == len(scn.links)


def test_fat_tree2_radix():
    for r, leaves in ((16, 16), (8, 3), (36, 36)):
        scn = fat_tree2(r, leaves)
        check_structure(scn, leaves * r // 2, [leaves, r // 2], [r // 2, leaves], [r // 2, 0])
        assert all(s.ports == r for s in scn.switches)
        assert [s.name for s in scn.switches] == ["L%d" % i for i in range(leaves)] + ["S%d" % i for i in range(r // 2)]
    assert len(fat_tree2(36).hcas) == 648
    # host i on leaf i div (r/2), port i mod (r/2) + 1
    scn = fat_tree2(16)
    for ln in scn.links[:128]:
        i = int(ln.a[1:])
        assert (ln.b, ln.b_port) == ("L%d" % (i // 8), i % 8 + 1)


def test_leaf_spine_oversubscription():
    scn = leaf_spine(4, 8, 2, oversubscription=2)            # 8 hosts, 4 up: 2:1, 2 links to each spine
    assert same_scn(scn, leaf_spine(4, 8, 2, uplinks=4))
    pts = ports(scn)
    for i in range(4):
        dn, upp = pts["L%d" % i]
        assert sorted(dn) == list(range(1, 9)) and sorted(upp) == list(range(9, 13))
        assert len(dn) / len(upp) == 2
    for s in range(2):
        dn, upp = pts["S%d" % s]
        assert sorted(dn) == list(range(1, 9)) and upp == []
    # uplink u of leaf l goes to spine u mod 2, its j = u div 2 link: spine port l*2 + j + 1
    for ln in scn.links[32:]:
        leaf, u = int(ln.a[1:]), ln.a_port - 9
        assert (ln.b, ln.b_port) == ("S%d" % (u % 2), leaf * 2 + u // 2 + 1)
    assert scn.resolved["template"]["uplinks"] == 4


def same_scn(a: Scenario, b: Scenario) -> bool:
    strip = {"resolved": {}, "source": None, "name": "x"}
    return dataclasses.replace(a, **strip) == dataclasses.replace(b, **strip)


# ---------------------------------------------------------------- bisection by max-flow

def max_flow(scn: Scenario, src: set[str], dst: set[str]) -> int:
    """Max flow from hosts *src* to hosts *dst* (Edmonds-Karp); every link full duplex:
    one arc each way of its rate."""
    cap: dict[str, dict[str, int]] = {}

    def arc(u, v, c):
        cap.setdefault(u, {}).setdefault(v, 0)
        cap.setdefault(v, {}).setdefault(u, 0)
        cap[u][v] += c

    for ln in scn.links:
        arc(ln.a, ln.b, ln.params.rate)
        arc(ln.b, ln.a, ln.params.rate)
    big = 10**18
    for h in src:
        arc("SRC", h, big)
    for h in dst:
        arc(h, "SNK", big)
    flow = 0
    while True:
        prev = {"SRC": None}
        q = deque(["SRC"])
        while q and "SNK" not in prev:
            u = q.popleft()
            for v, c in cap[u].items():
                if c > 0 and v not in prev:
                    prev[v] = u
                    q.append(v)
        if "SNK" not in prev:
            return flow
        path, v = [], "SNK"
        while prev[v] is not None:
            path.append((prev[v], v))
            v = prev[v]
        f = min(cap[u][v] for u, v in path)
        for u, v in path:
            cap[u][v] -= f
            cap[v][u] += f
        flow += f


def bisection(scn: Scenario, samples: int | None = None) -> int:
    """The least max-flow between a half of the hosts and the rest: over every half
    (samples None) or over *samples* seeded random halves plus the contiguous split."""
    names = [h.name for h in scn.hcas]
    n = len(names)
    if samples is None:
        halves = [set(c) for c in itertools.combinations(names[1:], n // 2 - 1)]
        halves = [c | {names[0]} for c in halves]     # with h0: each split once
    else:
        rng = random.Random(15)
        halves = [set(names[:n // 2])] + [set(rng.sample(names, n // 2)) for _ in range(samples)]
    return min(max_flow(scn, s, set(names) - s) for s in halves)


RATE = ib_rate("4x_sdr")      # the default link rate


@pytest.mark.parametrize("make,exhaustive", [
    (lambda: kary_ntree(2, 3), True),
    (lambda: fat_tree2(4), True),                      # 4 leaves x 2 hosts, 2 spines
    (lambda: kary_ntree(4, 2), False),
    (lambda: xgft([2, 2, 2], [1, 2, 2]), True),
    (lambda: leaf_spine(4, 4, 2, uplinks=4), False),   # parallel links: 2 to each spine
])
def test_full_bisection(make, exhaustive):
    scn = make()
    n = len(scn.hcas)
    assert bisection(scn, None if exhaustive else 25) == n // 2 * RATE


@pytest.mark.parametrize("make,ratio,exhaustive", [
    (lambda: xgft([4, 2], [1, 2]), 2, True),            # leaf: 4 down, 2 up
    (lambda: xgft([2, 2, 2], [1, 2, 1]), 2, True),      # level 2: 2 down, 1 up
    (lambda: xgft([4, 4], [1, 2]), 2, False),
    (lambda: leaf_spine(4, 4, 1, oversubscription=4), 4, False),
    (lambda: leaf_spine(2, 6, 2, oversubscription=1.5), 1.5, True),
])
def test_slimmed_bisection(make, ratio, exhaustive):
    """Oversubscription down:up = ratio cuts the bisection to N/2 / ratio (the worst half
    takes whole subtrees, whose uplinks carry everything that leaves them)."""
    scn = make()
    n = len(scn.hcas)
    assert bisection(scn, None if exhaustive else 25) == round(n / 2 / ratio) * RATE
    # and the contiguous half is no better than that
    names = [h.name for h in scn.hcas]
    assert max_flow(scn, set(names[:n // 2]), set(names[n // 2:])) == round(n / 2 / ratio) * RATE


# ---------------------------------------------------------------- LIDs, rates, levels

def test_lmc_spaces_lids_and_writes_routing():
    scn = kary_ntree(2, 2, lmc=2)
    assert [h.lid for h in scn.hcas] == [4, 8, 12, 16]
    assert scn.resolved["routing"] == {"lmc": 2}
    assert "routing" not in kary_ntree(2, 2).resolved


def test_rates_and_propagations_per_level():
    scn = fat_tree2(4, rates=["4x_qdr", "4x_edr"], propagations=["5ns", "20ns"])
    for ln in scn.links:
        lvl = level_of(ln.b)
        assert ln.params.rate == ib_rate(("4x_qdr", "4x_edr")[lvl - 1])
        assert ln.params.propagation == parse_time(("5ns", "20ns")[lvl - 1])
    one = kary_ntree(2, 3, rates="1x_sdr", propagations="7ns")
    assert {(ln.params.rate, ln.params.propagation) for ln in one.links} == {(ib_rate("1x_sdr"), 7000)}
    # no rates: [defaults.link] applies to every link
    d = fat_tree2(4, sections={"defaults": {"link": {"rate": "4x_fdr"}}})
    assert {ln.params.rate for ln in d.links} == {ib_rate("4x_fdr")}


def test_levels_key_on_plain_links():
    base = {"scenario": {"duration": "1us"}, "switch": [{"name": "S"}], "hca": [{"name": "A"}],
            "link": [{"a": "A", "b": "S", "levels": ["up1", "down1"]}]}
    assert scenario_from_dict(base).links[0].levels == ("up1", "down1")
    for bad, reason in ((["up1", "down2"], "link[0].levels: the two directions must be up<i> and down<i> of one "
                                           "level i, got 'up1', 'down2'"),
                        (["sideways", "down1"], "link[0].levels[0]: bad level 'sideways'"),
                        ("up1", "link[0].levels: expected two level names")):
        base["link"][0]["levels"] = bad
        with pytest.raises(ScenarioError) as e:
            scenario_from_dict(base, label="scen.toml")
        assert str(e.value).startswith("scen.toml: " + reason) and "\n" not in str(e.value)


# ---------------------------------------------------------------- bad parameters

BAD = [
    ({"name": "kary_ntree", "k": "4", "n": 2}, "template.k: expected an integer, got '4'"),
    ({"name": "kary_ntree", "k": 1, "n": 2}, "template.k: must be between 2 and 127, got 1"),
    ({"name": "kary_ntree", "k": 4}, "template.n: missing (required)"),
    ({"name": "kary_ntree", "k": 64, "n": 3}, "template.n: 262144 hosts"),
    ({"name": "kary_ntree", "k": 2, "n": 2, "kk": 3}, "template.kk: unknown key (did you mean 'k'?)"),
    ({"name": "xgft", "m": [4, 4], "w": [1]}, "template.w: has 1 values but m has 2"),
    ({"name": "xgft", "m": [4, 4], "w": [2, 4]}, "template.w[0]: must be 1: a host (HCA) has one port"),
    ({"name": "xgft", "h": 3, "m": [4, 4], "w": [1, 4]}, "template.m: has 2 values but h = 3"),
    ({"name": "xgft", "m": [200, 2], "w": [1, 100]}, "template.m[0]: a level-1 switch (200 down + 100 up) "
                                                     "would need 300 ports"),
    ({"name": "xgft", "m": [4, 1.5], "w": [1, 2]}, "template.m[1]: expected an integer, got 1.5"),
    ({"name": "xgft", "m": 4, "w": [1]}, "template.m: expected a non-empty array of integers"),
    ({"name": "fat_tree2", "radix": 15}, "template.radix: must be even"),
    ({"name": "fat_tree2", "radix": 16, "leaves": 17}, "template.leaves: must be between 1 and 16, got 17"),
    ({"name": "fat_tree2", "radx": 16}, "template.radx: unknown key (did you mean 'radix'?)"),
    ({"name": "fat_tree2", "radix": 16, "lmc": 8}, "template.lmc: must be between 0 and 7, got 8"),
    ({"name": "fat_tree2", "radix": 254, "lmc": 2}, "template.lmc: 32258 hosts (4 LIDs each, LMC 2)"),
    ({"name": "fat_tree2", "radix": 16, "rates": ["4x_qdr"]}, "template.rates: expected one value or 2"),
    ({"name": "fat_tree2", "radix": 16, "rates": "fast"}, "template.rates: cannot read rate 'fast'"),
    ({"name": "fat_tree2", "radix": 16, "propagations": ["1ns", "-1ns"]},
     "template.propagations[1]: must not be negative"),
    ({"name": "leaf_spine", "leaves": 4, "hosts_per_leaf": 8, "spines": 2, "uplinks": 3},
     "template.uplinks: 3 uplinks per leaf do not spread evenly over 2 spines"),
    ({"name": "leaf_spine", "leaves": 4, "hosts_per_leaf": 8, "spines": 2, "oversubscription": 3},
     "template.oversubscription: 8 hosts per leaf / 3 is not a whole number of uplinks"),
    ({"name": "leaf_spine", "leaves": 4, "hosts_per_leaf": 8, "spines": 2, "oversubscription": 2, "uplinks": 4},
     "template.oversubscription: conflicts with uplinks; set only one"),
    ({"name": "leaf_spine", "leaves": 4, "hosts_per_leaf": 8}, "template.spines: missing (required)"),
]


@pytest.mark.parametrize("tpl,msg", BAD, ids=[m.split(":")[0] + "-" + str(i) for i, (_, m) in enumerate(BAD)])
def test_bad_parameters(tpl, msg):
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict({"template": tpl, "scenario": {"duration": "1us"}}, label="scen.toml")
    text = str(e.value)
    assert text.startswith("scen.toml: " + msg) and "\n" not in text


def test_routing_table_merges_with_template():
    """The file's [routing] joins the template's {lmc} (apply_template directly: the
    reader's [routing] table is another module's); a different lmc is refused."""
    raw = {"template": {"name": "fat_tree2", "radix": 4, "lmc": 1}, "routing": {"engine": "ftree"}}
    gen = apply_template(Checker("scen.toml"), raw)
    assert gen["routing"] == {"lmc": 1, "engine": "ftree"}
    assert [h["lid"] for h in gen["hca"]] == [2 * (i + 1) for i in range(8)]
    with pytest.raises(ScenarioError) as e:
        apply_template(Checker("scen.toml"), {"template": {"name": "fat_tree2", "radix": 4, "lmc": 1},
                                              "routing": {"lmc": 2}})
    assert str(e.value).startswith("scen.toml: routing.lmc: conflicts with template.lmc = 1")


# ---------------------------------------------------------------- files, builders, runs

def test_example_file_equals_builder():
    s = load_scenario(SCENARIOS / "fat_tree_128.toml")
    p = fat_tree2(16, 16, duration="200us", name="fat_tree_128",
                  flows=[{"name": "cross0", "src": "h0", "dst": "h64"},
                         {"name": "cross1", "src": "h1", "dst": "h127", "start": "10us"}],
                  sections={"defaults": {"link": {"rate": "4x_sdr", "propagation": "10ns"},
                                         "switch": {"buffer": "4 packets"}},
                            "output": {"bin": "10us", "window": "50us", "plot_links": ["h0->L0", "h1->L0"]}})
    assert dataclasses.replace(s, source=None, resolved={}) == dataclasses.replace(p, resolved={})
    assert len(s.hcas) == 128 and len(s.switches) == 24 and len(s.links) == 256
    # --set changes the fabric
    s32 = load_scenario(SCENARIOS / "fat_tree_128.toml", ["template.leaves=4", 'flow[0].dst="h16"', 'flow[1].dst="h31"'])
    assert len(s32.hcas) == 32 and len(s32.switches) == 12


def test_faults_survive_a_template():
    scn = scenario_from_dict({"template": {"name": "fat_tree2", "radix": 4}, "scenario": {"duration": "1us"},
                              "faults": {"loss": 0.1}})
    assert scn.faults is not None


def test_128_hosts_run():
    """A 128-host fat tree builds and runs 50 us: two greedy flows on paths that share no
    link under any up/down routing (different source and destination leaves) each get
    their link's rate, less the pipeline fill of four hops."""
    dur = 50 * PS_PER_US
    scn = fat_tree2(16, 16, duration="50us", flows=[{"name": "a", "src": "h0", "dst": "h64"},
                                                    {"name": "b", "src": "h9", "dst": "h127"}])
    fab = build_fabric(scn)
    assert len(fab.nodes) == 128 + 24
    r = run_virtual(scn, progress=False)
    pkt_ps = (2048 + MAX_HEADERS) * 10**12 // RATE + 1          # a packet's time on a 1 GB/s link, at most
    least = (dur - 4 * pkt_ps) // pkt_ps
    for f in ("a", "b"):
        assert r.summary["flows"][f]["rx_packets"] >= least


def test_648_hosts_build():
    """Radix 36: 648 hosts; the reader's checks (time-bin memory at the default limit) take
    it with a 1 ms run, and the fabric builds."""
    scn = fat_tree2(36, duration="1ms", flows=[{"src": "h%d" % i, "dst": "h%d" % (647 - i)} for i in range(8)])
    fab = build_fabric(scn)
    assert len(fab.nodes) == 648 + 36 + 18
    assert len(scn.links) == 648 * 2
