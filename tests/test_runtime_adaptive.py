"""Adaptive routing on the wall clock (issue 31): the switches' choices read only their
own state, their own random stream and the notifications that reach them as link packets
(ibemu.fabric.arn), so the wall clock synchronised exactly gives the virtual clock's
results.json and capture, byte for byte, as for every static scenario
(tests/test_runtime_exact.py)."""
from __future__ import annotations

from test_adaptive import fat_tree
from test_runtime_exact import same

from ibemu.resources import scenario_source
from ibemu.run import run_virtual
from ibemu.runtime.controller import run_wall
from ibemu.scenario import load_scenario, scenario_from_dict
from ibemu.studies.adaptive import SPEEDUP

SETTINGS = ['scenario.duration="30us"', "routing.adaptive=true", 'routing.adaptive_policy="random"']


def test_adaptive_fat_tree_on_the_wall_clock_is_the_virtual_clock(tmp_path):
    scn = load_scenario(scenario_source("fat_tree_128"), SETTINGS)
    v = (tmp_path / "virtual", tmp_path / "virtual.pcapng")
    res = run_virtual(scn, out_dir=v[0], pcap=v[1])
    assert sum(c.get("adaptive_rerouted", 0) for c in res.counters.values()) > 0     # the choice was exercised
    scn = load_scenario(scenario_source("fat_tree_128"), SETTINGS)
    w = run_wall(scn, out_dir=tmp_path / "wall", pcap=tmp_path / "wall.pcapng", workers=2, dilation=50,
                 port_base=47300)
    same(v, (tmp_path / "wall", tmp_path / "wall.pcapng", w), "fat_tree_128 with adaptive routing, 2 workers")


def test_notifications_on_the_wall_clock_are_the_virtual_clock(tmp_path):
    """A CI-size permutation, routed as the adaptive study routes (credits and
    notifications): the spines' notifications cross between processes as link packets."""
    raw = fat_tree("permutation", True, duration="20us", speedup=SPEEDUP, arn=True)
    v = (tmp_path / "virtual", tmp_path / "virtual.pcapng")
    res = run_virtual(scenario_from_dict(raw, label="t"), out_dir=v[0], pcap=v[1], progress=False)
    assert sum(c.get("arn_heeded", 0) for c in res.counters.values()) > 0
    w = run_wall(scenario_from_dict(raw, label="t"), out_dir=tmp_path / "wall", pcap=tmp_path / "wall.pcapng",
                 workers=2, dilation=50, port_base=47340)
    same(v, (tmp_path / "wall", tmp_path / "wall.pcapng", w), "a permutation with notifications, 2 workers")
