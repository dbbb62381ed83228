"""Partitions (ibemu.fabric.pkey; issue 8 item 5): a packet whose P_Key the receiving
port does not hold is dropped and counted in PortRcvConstraintErrors -- at HCAs always,
at switch ports with enforcement on -- and its credit still returns.  (Datagrams from
non-peer addresses and loopback binding belong to the UDP runtime; CC_Key/M_Key checks
wait for management packets, issue 7.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.fabric.integrity import attach, verify
from ibemu.fabric.params import FlowSpec, HCAParams, SwitchParams
from ibemu.fabric.pkey import PKeyTable, pkey_match
from ibemu.scenario import ScenarioError, load_scenario
from ibemu.scenario.model import HCASpec, LinkSpec, Scenario, SwitchSpec
from ibemu.sim.engine import VirtualEngine
from ibemu.testing import assert_no_credit_leak, settle
from ibemu.units import PS_PER_MS


def test_pkey_matching_rule():
    assert pkey_match(0xFFFF, 0xFFFF)
    assert pkey_match(0x8001, 0x0001) and pkey_match(0x0001, 0x8001)   # one full member
    assert not pkey_match(0x0001, 0x0001)                             # both limited
    assert not pkey_match(0x8001, 0x8002)                             # other partition
    assert not pkey_match(0x8000, 0x8000) and not pkey_match(0x0000, 0x8000)   # invalid
    t = PKeyTable([0x8001, 0x0005])
    assert t.allows(0x8001) and t.allows(0x0001) and t.allows(0x8005)
    assert not t.allows(0x0005) and not t.allows(0xFFFF)
    assert PKeyTable().allows(0xFFFF) and PKeyTable().allows(0x7FFF)


def _scn(flow_pkey, a_keys=None, b_keys=None, switch=None, port_pkeys=None):
    sp = SwitchParams(**(switch or {}))
    if port_pkeys:
        sp.port_pkeys = port_pkeys
    return Scenario("p", duration=PS_PER_MS, switches=[SwitchSpec("S", sp)],
                    hcas=[HCASpec("A", 1, HCAParams(pkeys=a_keys)), HCASpec("B", 2, HCAParams(pkeys=b_keys))],
                    links=[LinkSpec("A", "S"), LinkSpec("S", "B")],
                    flows=[FlowSpec("f", "A", "B", pattern="messages", count=5, message_size=3000, pkey=flow_pkey)])


def _run(scn):
    fab = build_fabric(scn)
    check = attach(fab)
    eng = VirtualEngine(fab.nodes.values(), fab.wiring)
    eng.start(0)
    eng.run(200 * 10**6)
    settle(eng, fab)
    return fab, check.export()



def test_pkey_table_answers_each_key_whatever_was_asked_before():
    """allows() keeps the last answer in two fields (issue 28): asked in turns, every
    P_Key still gets its own answer."""
    t = PKeyTable([0x8001, 0x0005])
    asks = [0xFFFF, 0x8001, 0x8001, 0x0001, 0x0005, 0x0005, 0xFFFF, 0x8005, 0x0001]
    assert [t.allows(k) for k in asks] == [any(pkey_match(k, e) for e in t.keys) for k in asks]
    assert [t.allows(k) for k in asks] == [False, True, True, True, False, False, False, True, True]

def test_same_partition_delivers():
    fab, rec = _run(_scn(0x8001, a_keys=[0x8001], b_keys=[0x0001]))    # B a limited member
    assert verify(rec) == [] and len(rec["received"]["f"]) == 5
    assert all("PortRcvConstraintErrors" not in n.counters for n in fab.nodes.values())
    assert_no_credit_leak(fab)


def test_hca_drops_a_partition_it_does_not_hold():
    fab, rec = _run(_scn(0x8001, a_keys=[0x8001], b_keys=[0xFFFF, 0x8002]))
    b = fab.nodes["B"]
    assert rec["received"].get("f", []) == []
    assert b.counters["PortRcvConstraintErrors"] >= 2          # both packets of message 1
    assert b.ports[1].pc.rcv_constraint_errors == b.counters["PortRcvConstraintErrors"]
    assert_no_credit_leak(fab)


def test_two_limited_members_cannot_talk():
    fab, rec = _run(_scn(0x0001, a_keys=[0x0001], b_keys=[0x0001]))
    assert rec["received"].get("f", []) == [] and fab.nodes["B"].counters["PortRcvConstraintErrors"] > 0


def test_switch_enforces_only_when_on():
    # A's port (S port 1) holds only partition 2: with enforcement the switch drops A's packets
    keys = {1: [0x8002], 2: [0x8001]}
    fab, rec = _run(_scn(0x8001, [0x8001], [0x8001], switch={"enforce_pkeys": True}, port_pkeys=keys))
    sw = fab.nodes["S"]
    assert sw.counters["PortRcvConstraintErrors"] > 0 and rec["received"].get("f", []) == []
    assert "PortRcvConstraintErrors" not in fab.nodes["B"].counters
    assert_no_credit_leak(fab)                                 # dropped packets' credits came back
    # without enforcement the same tables change nothing
    fab, rec = _run(_scn(0x8001, [0x8001], [0x8001], switch={"enforce_pkeys": False}, port_pkeys=keys))
    assert len(rec["received"]["f"]) == 5 and "PortRcvConstraintErrors" not in fab.nodes["S"].counters


TOML = """\
[scenario]
duration = "1ms"
[defaults.hca]
pkeys = [0xFFFF, 0x8001]
[[switch]]
name = "S"
enforce_pkeys = true
pkeys = [0xFFFF]
port_pkeys = {{ "1" = [0x8001] }}
[[hca]]
name = "A"
[[hca]]
name = "B"
pkeys = [{bkeys}]
[[link]]
a = "A"
b = "S"
[[link]]
a = "S"
b = "B"
[[flow]]
src = "A"
dst = "B"
pkey = {fkey}
"""


def test_scenario_keys(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text(TOML.format(bkeys="0x8001", fkey="0x8001"))
    s = load_scenario(f)
    assert s.hcas[0].params.pkeys == [0xFFFF, 0x8001] and s.hcas[1].params.pkeys == [0x8001]
    assert s.switches[0].params.enforce_pkeys and s.switches[0].params.port_pkeys == {1: [0x8001]}
    assert s.flows[0].pkey == 0x8001
    fab = build_fabric(s)
    assert fab.nodes["S"].pkey_tables[1].keys == (0x8001,) and fab.nodes["S"].pkey_tables[2].keys == (0xFFFF,)


@pytest.mark.parametrize("bkeys, fkey, key, reason", [
    ("0x8000", "0x8001", "hca[1].pkeys[0]", "0x8000 is the invalid P_Key"),
    ("0x8001", "0x10000", "flow[0].pkey", "must be between 0 and 65535"),
    ("0x8001", '"x"', "flow[0].pkey", "expected an integer"),
])
def test_scenario_key_mistakes(tmp_path, bkeys, fkey, key, reason):
    f = tmp_path / "p.toml"
    f.write_text(TOML.format(bkeys=bkeys, fkey=fkey))
    with pytest.raises(ScenarioError) as e:
        load_scenario(f)
    assert e.value.key == key and reason in e.value.reason
    assert str(e.value).startswith(str(Path(f)) + ": " + key)
