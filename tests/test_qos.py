"""Quality of service (seed 004): SL per flow, SL-to-VL tables per switch port, VL
arbitration tables in TOML or OMNeT++ string form -- and emulated runs showing per-VL
credit isolation and the white paper's Figure 7 shares."""
from __future__ import annotations

from pathlib import Path

import pytest

from ibemu.run import run_virtual
from ibemu.scenario import ScenarioError, load_scenario
from ibemu.units import PS_PER_MS

SCEN = Path(__file__).parent.parent / "scenarios"
FIG7_LOW = [(2, 8), (3, 8), (2, 8), (4, 4), (5, 4), (2, 8), (7, 4), (6, 4)]


def window(r, flow):
    return r.summary["flows"][flow]["window"]["normalized"]


def share(r, flow, link="out"):
    """The flow's share of the data on the bottleneck link: VL arbitration divides the
    data packets; the link flow-control packets (one per ACK whose credit returns on
    this link, 6 bytes each; issue 13) go between packets outside the arbitration."""
    return window(r, flow) / r.summary["links"][link]["window"]["data_utilization"]


def link_full(r, link="out"):
    """The bottleneck link carries packets back to back: data plus flow-control packets."""
    return r.summary["links"][link]["window"]["utilization"] > 0.99


def run(path, *overrides, win=(0.3, None)):
    scn = load_scenario(SCEN / path, list(overrides))
    hi = scn.duration if win[1] is None else int(win[1] * PS_PER_MS)
    return scn, run_virtual(scn, window=(int(win[0] * PS_PER_MS), hi))


# ---------------------------------------------------------------- parsing

def test_vlarb_omnet_string_equals_toml_pairs():
    a = load_scenario(SCEN / "qos_vlarb_fig7.toml").switches[0].params.vlarb
    assert a.high == [(0, 1), (1, 1)] and a.low == FIG7_LOW and a.limit_of_high_priority == 255
    b = load_scenario(SCEN / "qos_vlarb_fig7.toml",
                      ["defaults.switch.vlarb.high=[[0, 1], [1, 1]]",
                       "defaults.switch.vlarb.low=[[2,8],[3,8],[2,8],[4,4],[5,4],[2,8],[7,4],[6,4]]"])
    assert b.switches[0].params.vlarb == a


@pytest.mark.parametrize("value,reason", [
    ('"0:1 1"', "cannot read '1' (expected VL:weight pairs"),
    ('"0:1 x:2"', "cannot read 'x:2'"),
    ('"0:1 9:1"', "VL 9 is not a data VL (data_vls = 8)"),
    ('"0:256"', "must be between 0 and 255, got 256"),
])
def test_vlarb_string_errors(value, reason):
    with pytest.raises(ScenarioError) as e:
        load_scenario(SCEN / "qos_vlarb_fig7.toml", ["defaults.switch.vlarb.high=" + value])
    assert "defaults.switch.vlarb.high" in str(e.value) and reason in str(e.value)


def test_per_port_sl2vl_tables():
    zeros, ones = [0] * 16, [1] * 16
    scn = load_scenario(SCEN / "qos_isolation.toml",
                        ['switch[0].sl2vl={"default"=%s, "3"=%s, "1:3"=%s}' % (ones, zeros, ones)])
    p = scn.switches[0].params
    assert p.sl2vl == ones and p.port_sl2vl == {(None, 3): zeros, (1, 3): ones}


@pytest.mark.parametrize("table,where,reason", [
    ('{"9"=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}', "switch[0].sl2vl.9", "switch 'S1' has no link on port 9"),
    ('{"x"=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}', "switch[0].sl2vl.x", "an input:output pair"),
    ('{"3"=[0,0]}', "switch[0].sl2vl.3", "expected an array of 16 VLs"),
    ('{"3"=[2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}', "switch[0].sl2vl.3[0]", "between 0 and 1"),
])
def test_per_port_sl2vl_errors(table, where, reason):
    with pytest.raises(ScenarioError) as e:
        load_scenario(SCEN / "qos_isolation.toml", ["switch[0].sl2vl=" + table])
    assert where in str(e.value) and reason in str(e.value), str(e.value)


# ---------------------------------------------------------------- per-VL credit isolation

def test_congestion_on_vl0_leaves_vl1_at_full_rate():
    scn, r = run("qos_isolation.toml")
    assert window(r, "VY") > 0.97                       # SL 1 -> VL 1: its own credits
    assert window(r, "AD") + window(r, "BD") > 0.97     # the root link stays full
    _, same = run("qos_isolation.toml", "flow[2].sl=0")
    assert window(same, "VY") < 0.6                     # same VL: a victim of A->D's backlog


def test_per_port_sl2vl_can_undo_the_isolation():
    """SL 1 mapped to VL 0 on S1's inter-switch port only: V->Y rides VL 0 across the
    congested link (and VL 1 again to Y), so it is a victim once more."""
    _, r = run("qos_isolation.toml", 'switch[0].sl2vl={"3"=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}')
    assert window(r, "VY") < 0.6


# ---------------------------------------------------------------- Figure 7 in a run

def test_figure7_low_priority_shares():
    _, r = run("qos_vlarb_fig7.toml", "flow[0].start=2ms", "flow[1].start=2ms")
    shares = {f: share(r, f) for f in ("vl2", "vl3", "vl4", "vl5", "vl6", "vl7")}
    assert shares["vl2"] == pytest.approx(0.5, abs=0.01)
    assert shares["vl3"] == pytest.approx(1 / 6, abs=0.01)
    for f in ("vl4", "vl5", "vl6", "vl7"):
        assert shares[f] == pytest.approx(1 / 12, abs=0.01)
    assert sum(shares.values()) == pytest.approx(1, abs=0.005) and link_full(r)


def test_figure7_high_priority_vls_alternate_ahead():
    _, r = run("qos_vlarb_fig7.toml")
    assert share(r, "vl0") == pytest.approx(0.5, abs=0.01)
    assert share(r, "vl1") == pytest.approx(0.5, abs=0.01) and link_full(r)
    assert all(window(r, "vl%d" % v) < 0.01 for v in range(2, 8))


def test_limit_of_high_priority_gives_low_a_turn():
    """Limit of High-Priority 1 (4096 bytes): after about 4 KB of VL0/VL1 packets the
    Low table sends one packet."""
    _, r = run("qos_vlarb_fig7.toml", "defaults.switch.vlarb.limit_of_high_priority=1")
    high = share(r, "vl0") + share(r, "vl1")
    low = sum(share(r, "vl%d" % v) for v in range(2, 8))
    assert 0.85 < high < 0.97 and low > 0.04            # ~15 high packets : 1 low
    assert window(r, "vl0") == pytest.approx(window(r, "vl1"), abs=0.01)


def test_per_port_vlarb_table():
    """A VL arbitration table of its own on the output port only (IBA: one per port)."""
    fig7 = {"high": "0:1 1:1", "low": "2:8 3:8 2:8 4:4 5:4 2:8 7:4 6:4"}
    over = ["defaults.switch.vlarb.high=[]",
            'defaults.switch.vlarb.low="0:255 1:255 2:255 3:255 4:255 5:255 6:255 7:255"',
            'switch[0].port_vlarb={"9"={high="%s", low="%s"}}' % (fig7["high"], fig7["low"])]
    scn = load_scenario(SCEN / "qos_vlarb_fig7.toml", over)
    p = scn.switches[0].params
    assert p.port_vlarb[9].low == FIG7_LOW and p.vlarb.high == []
    r = run_virtual(scn, window=(int(0.3 * PS_PER_MS), scn.duration))
    assert share(r, "vl0") == pytest.approx(0.5, abs=0.01)      # port 9 uses Figure 7
    with pytest.raises(ScenarioError, match=r"switch\[0\].port_vlarb.12: switch 'S' has no link on port 12"):
        load_scenario(SCEN / "qos_vlarb_fig7.toml", ['switch[0].port_vlarb={"12"={high="0:1"}}'])
