"""Routes unchanged by the speed work of issue 28: the LFTs (entries and their order) and
the channel dependency graph of every engine, on fat trees of several shapes, hash to
what the implementation before that work produced (commit 97b8cca, recorded in
tests/data/routing_digests.json by running that commit's code on these builders).

This is an identity check against the earlier code, not a physics band: the agreement
with the real OpenSM is tests/test_routing_opensm.py's job."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ibemu.build import subnet_of
from ibemu.routing import route
from ibemu.routing.cdg import dependencies
from ibemu.scenario.builders import fat_tree2, kary_ntree, leaf_spine, xgft

DIGESTS = json.loads((Path(__file__).parent / "data" / "routing_digests.json").read_text())

CASES = {
    "fat_tree2(8, leaves=5)": lambda: fat_tree2(8, leaves=5),
    "fat_tree2(12, leaves=7)": lambda: fat_tree2(12, leaves=7),
    "kary_ntree(3, 3)": lambda: kary_ntree(3, 3),
    "kary_ntree(2, 4)": lambda: kary_ntree(2, 4),
    "xgft([4, 3, 5], [1, 2, 3])": lambda: xgft([4, 3, 5], [1, 2, 3]),
    "xgft([6, 6, 12], [1, 6, 6])": lambda: xgft([6, 6, 12], [1, 6, 6]),
    "leaf_spine(6, 4, 3, uplinks=6)": lambda: leaf_spine(6, 4, 3, uplinks=6),
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("engine", ["ftree", "minhop", "updn"])
def test_routes_and_dependencies_as_before(name, engine):
    sn = subnet_of(CASES[name]())
    lft = route(sn, engine)
    deps = dependencies(sn, lft)
    want = DIGESTS["%s %s" % (name, engine)]
    assert _digest(json.dumps([[s, list(t.items())] for s, t in lft.items()])) == want["lfts"]
    assert _digest(json.dumps(sorted([list(k), sorted(map(list, v))] for k, v in deps.items()))) == want["cdg"]
