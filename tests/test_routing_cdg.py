"""ibemu.routing.cdg: the check on arrays (Kahn's layers) refuses exactly the routes whose
channel dependency graph has a cycle (issue 28 made the acyclic case array-only)."""
from __future__ import annotations

import random

import pytest

from ibemu.build import subnet_of
from ibemu.errors import UserError
from ibemu.routing import Routes, Subnet, check_credit_loops, route
from ibemu.routing.cdg import dependencies, find_cycle
from ibemu.scenario.model import HCASpec, LinkSpec, Scenario, SwitchSpec


def ring(n: int) -> Scenario:
    """Switches R0..R(n-1) in a ring (port 2 to the next, port 3 from the previous), host
    H<i> on port 1 of R<i>."""
    sws = [SwitchSpec("R%d" % i) for i in range(n)]
    hcas = [HCASpec("H%d" % i, i + 1) for i in range(n)]
    links = [LinkSpec("H%d" % i, "R%d" % i, 1, 1) for i in range(n)]
    links += [LinkSpec("R%d" % i, "R%d" % ((i + 1) % n), 2, 3) for i in range(n)]
    return Scenario("ring", 1, sws, hcas, links)


def random_routing(seed: int) -> tuple[Subnet, Routes]:
    """A ring of 3 to 6 switches where each switch sends each remote host clockwise (2) or
    anticlockwise (3), at random; some tables have no entry for a host, or send it to port
    0 (no channel)."""
    rng = random.Random(seed)
    sn = subnet_of(ring(rng.randint(3, 6)))
    lfts = {}
    for s in sn.switches():
        i = int(s.name[1:])
        table = {}
        for h in sn.cas():
            if int(h.name[1:]) == i:
                table[h.lid] = 1
            elif rng.random() < 0.9:
                table[h.lid] = rng.choice((2, 3, 2, 3, 0))
        lfts[s.name] = table
    return sn, lfts


@pytest.mark.parametrize("seed", range(40))
def test_refused_exactly_when_the_graph_has_a_cycle(seed):
    sn, lfts = random_routing(seed)
    cyclic = find_cycle(dependencies(sn, lfts)) is not None
    if cyclic:
        with pytest.raises(UserError, match="credit loop"):
            check_credit_loops(sn, lfts, "random")
    else:
        check_credit_loops(sn, lfts, "random")


def test_both_outcomes_are_drawn():
    """The random tables above include cyclic and acyclic ones (else the test proves little)."""
    seen = set()
    for seed in range(40):
        sn, lfts = random_routing(seed)
        seen.add(find_cycle(dependencies(sn, lfts)) is not None)
    assert seen == {True, False}


def test_an_acyclic_engine_passes_and_a_cyclic_one_is_refused():
    sn = subnet_of(ring(5))
    check_credit_loops(sn, route(sn, "updn", ["R0"]), "updn")
    with pytest.raises(UserError, match=r"credit loop .*: R\d:\d -> "):
        check_credit_loops(sn, route(sn, "minhop"), "minhop")
