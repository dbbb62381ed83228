"""Adaptive routing groups (ibemu.routing.groups) and the credit-loop check over them
(ibemu.routing.cdg; issue 31 Deliver 3)."""
from __future__ import annotations

import pytest
from test_routing_engines import ring, two_level

from ibemu.build import scenario_routing, subnet_of
from ibemu.errors import UserError
from ibemu.routing import check_credit_loops, route
from ibemu.routing.cdg import dependencies, find_cycle
from ibemu.routing.groups import merge_groups, minimal_groups


def test_fat_tree_groups_are_the_up_ports_on_minimal_paths():
    # 3 leaves of 2 hosts, 4 spines: leaf port 3+j goes to spine j, spine port 1+i to leaf i
    scn = two_level(3, 4, 2, engine="ftree")
    sn = subnet_of(scn)
    lfts = route(sn, "ftree")
    groups = minimal_groups(sn, lfts)
    for leaf in ("L0", "L1", "L2"):
        for ca in sn.cas():
            if ca.name[1] == leaf[1]:
                assert ca.lid not in groups.get(leaf, {})     # below: the LFT's down port alone
            else:
                assert groups[leaf][ca.lid] == (3, 4, 5, 6)    # every up port: all spines are minimal
                assert lfts[leaf][ca.lid] in groups[leaf][ca.lid]
    for spine in ("S0", "S1", "S2", "S3"):
        assert spine not in groups                             # one down port per destination: no choice


def test_explicit_groups_win_lid_by_lid():
    derived = {"L0": {5: (3, 4, 5)}}
    merged = merge_groups(derived, {"L0": {5: [3, 4]}, "L1": {7: [9, 10]}})
    assert merged == {"L0": {5: (3, 4)}, "L1": {7: (9, 10)}}
    assert derived == {"L0": {5: (3, 4, 5)}}                   # not changed in place


def test_group_walk_equals_the_array_walk_without_choices():
    """The LID-by-LID walk used with groups finds exactly the edges of the array walk
    when every group is the LFT's one port (an empty group table for one switch forces it)."""
    for scn, engine in ((two_level(3, 4, 2, engine="ftree"), "ftree"), (ring(5), "minhop")):
        sn = subnet_of(scn)
        lfts = route(sn, engine)
        assert dependencies(sn, lfts, None, {"none": {}}) == dependencies(sn, lfts)


def test_fat_tree_groups_pass_the_credit_loop_check():
    """Minimal up*/down* paths of a fat tree: every port of every group, still no cycle."""
    scn = two_level(4, 4, 2, engine="ftree")
    scn.routing.adaptive = True
    lfts, groups = scenario_routing(scn)
    assert groups and all(len(p) == 4 for g in groups.values() for p in g.values())
    sn = subnet_of(scn)
    edges = dependencies(sn, lfts, None, groups)
    assert len(edges) > len(dependencies(sn, lfts))            # the groups add channels (other spines)
    assert find_cycle(edges) is None


def test_cyclic_groups_are_refused_naming_the_cycle():
    """A 4-ring routed by updn has no credit loop; its minimal-path groups let a packet
    two hops away go either way round, which closes the ring: refused, cycle named."""
    scn = ring(4)
    scn.routing.engine = "updn"
    scenario_routing(scn)                                     # static: accepted
    scn.routing.adaptive = True
    with pytest.raises(UserError) as e:
        scenario_routing(scn)
    msg = str(e.value)
    assert "\n" not in msg and "credit loop" in msg and "adaptive routing groups" in msg
    cyc = msg.split(": ", 1)[1].split(" -> ")
    assert cyc[0] == cyc[-1] and len(cyc) >= 3 and all(c.startswith("R") for c in cyc)
    # explicit groups on a tree that allow a down-then-up turn are refused the same way
    scn = two_level(2, 2, 1, engine="ftree")
    sn = subnet_of(scn)
    lfts = route(sn, "ftree")
    h1 = next(c.lid for c in sn.cas() if c.name == "H1_0")
    # the spines may send H1_0's packets back down to L0 (port 1), which sends them up
    # again (ports 2, 3): L0:2 -> S0:1 -> L0:3 -> S1:1 -> L0:2
    bad = {"S0": {h1: (1, 2)}, "S1": {h1: (1, 2)}, "L0": {h1: (2, 3)}}
    with pytest.raises(UserError, match="credit loop") as e:
        check_credit_loops(sn, lfts, "ftree", None, bad)
    assert "L0:2" in str(e.value) and "S0:1" in str(e.value)
