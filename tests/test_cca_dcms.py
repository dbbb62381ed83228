"""Seed 002 §4.2 on the DCMS testbed (ibemu.studies.cca.experiments): the claims of Figures 3
and 4 as relations between runs.  The runs are memoized and shared with
tests/test_reproduce.py, which checks the figures against the paper's numbers."""
import pytest

from ibemu.studies.cca.experiments import run_case
from ibemu.studies.cca.testbed import dcms_testbed


def test_testbed_topology():
    scn = dcms_testbed()
    ports = {(l.a, l.a_port, l.b, l.b_port) for l in scn.links}
    assert ("S1", 15, "S2", 20) in ports and ("S2", 23, "D", 1) in ports
    rates = {l.name: l.params.rate for l in scn.links if l.name}
    assert rates["inter"] == 4 * rates["root"]                      # QDR vs SDR
    assert [f.name for f in sorted(scn.flows, key=lambda f: f.start)] == ["XY", "BD", "CD", "AD"]


def test_marking_rate_2048_makes_x_to_y_a_victim_at_one_third():
    r = run_case(2048, 75)
    assert r["victim"] == pytest.approx(1 / 3, abs=0.04)
    assert r["contributors"] == pytest.approx(1.0, abs=0.03)
    assert r["marks"] < 50                                          # 1 in ~2049 eligible


def test_marking_rate_0_protects_the_victim_at_the_contributors_cost():
    low, high = run_case(0, 75), run_case(2048, 75)
    assert low["victim_early"] > 2 * high["victim"]
    assert low["xy_completion_ms"] < high["xy_completion_ms"] - 3
    assert low["contributors_after"] < 0.6
    assert low["marks"] > 10 * high["marks"]


def test_larger_ccti_timer_lowers_the_contributors():
    a, b = run_case(0, 75), run_case(0, 300)
    assert b["contributors_after"] < a["contributors_after"] - 0.05


def test_default_marking_rate_64_lets_contributors_use_the_port():
    assert run_case(64, 75)["contributors"] > 0.95
    assert run_case(64, 300)["contributors"] > 0.95


def test_port_counters_tell_root_from_victim():
    """§4.2: with Marking_Rate 2048 (S1, 15) waits for credits (PortXmitWait) while
    (S2, 23) is congested; with 0 (S1, 15) never waits and (S2, 23)'s congested time
    (PortXmitTimeCong) is far shorter -- the congestion dissipates."""
    high, low = run_case(2048, 75)["ports"], run_case(0, 75)["ports"]
    assert high["S1:15"]["PortXmitWait"] > 100_000 and low["S1:15"]["PortXmitWait"] == 0
    assert high["S2:23"]["PortXmitTimeCong"] > 3 * low["S2:23"]["PortXmitTimeCong"] > 0
    assert high["S1:15"]["PortXmitTimeCong"] == 0 == low["S1:15"]["PortXmitTimeCong"]
