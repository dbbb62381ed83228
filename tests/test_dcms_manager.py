"""The DCMS manager node end to end (ibemu/cc/dcms/manager.py): sweeps in band, every
answer back within τ, the Low decision sent as a SwitchPortCongestionSetting Set MAD that
changes the running switch, decisions logged and traced, and the [cc.dcms] table checked.
Experiment II's two scenarios are in the reproduction table (dcms_fig5, dcms_fig6),
run by tests/test_reproduce.py."""
from __future__ import annotations

import pytest

from ibemu.build import build_fabric
from ibemu.errors import UserError
from ibemu.fabric.recorder import Recorder
from ibemu.scenario import scenario_from_dict
from ibemu.sim.engine import VirtualEngine
from ibemu.studies.dcms.testbed import experiment2, experiment2_dict
from ibemu.units import PS_PER_MS


class Rec(Recorder):
    def __init__(self):
        self.events, self.traces = [], {}

    def event(self, t, source, text):
        self.events.append((t, source, text))

    def trace(self, kind, key, t, value):
        self.traces.setdefault((kind, key), []).append((t, value))


def run(until_s, **kw):
    """Experiment II at 1 paper-s = 1 ms, run to *until_s*; returns (fabric, recorder)."""
    rec = Rec()
    fab = build_fabric(experiment2(scale_ms_per_s=1.0, duration_s=until_s, **kw), rec)
    eng = VirtualEngine(fab.nodes.values(), fab.wiring)
    eng.start(0)
    eng.run(int(until_s * PS_PER_MS))
    return fab, rec


@pytest.fixture(scope="module")
def to_9s():
    return run(9.5)


def test_manager_sweeps_every_port_in_band(to_9s):
    fab, _ = to_9s
    m = fab.nodes["M"]
    assert m.sweeps_done == 9                              # one per τ = 1 ms, all answered
    assert "DCMS_late_sweeps" not in m.counters and "DCMS_bad_responses" not in m.counters
    watched = {k for k in m.targets}
    assert watched == {("S1", 11), ("S1", 12), ("S1", 15), ("S2", 20), ("S2", 21), ("S2", 22),
                       ("S2", 23), ("S2", 24), ("S2", 25)}
    # 3 Gets per port and sweep (at 1, 2, ..., 9 ms), plus the one Set, all taken by the switches
    got = fab.nodes["S1"].counters["MADs_received"] + fab.nodes["S2"].counters["MADs_received"]
    assert got == 3 * len(watched) * 9 + 1                 # + the Set below
    assert m.port.pc.extended(int(9.5 * PS_PER_MS))["PortRcvPkts"] >= 3 * len(watched) * 9


def test_low_decision_reaches_the_switch_as_a_set_mad(to_9s):
    fab, rec = to_9s
    lows = [e for e in rec.events if e[1] == "M" and "Marking_Rate 0 " in e[2]]
    assert len(lows) == 1 and lows[0][2].startswith("S2:23 ")
    assert 7 * PS_PER_MS < lows[0][0] <= 9 * PS_PER_MS   # A→D starts at 7 s; a sweep later
    assert "victim S1:15" in lows[0][2]
    s2 = fab.nodes["S2"]
    assert s2.counters["CC_settings_set"] == 1
    assert s2.marker.ports[23].marking_rate == 0            # changed in band ...
    assert s2.marker.ports[21].marking_rate == 128           # ... on that port only
    assert fab.nodes["S1"].marker.ports[15].marking_rate == 128
    assert rec.traces[("Marking_Rate", "S2:23")] == [(lows[0][0], 0)]


def test_growth_rates_traced_as_dcms_saw_them(to_9s):
    _, rec = to_9s
    w = dict(rec.traces[("DCMS_dW", "S1:15")])
    d = dict(rec.traces[("DCMS_dD", "S1:15")])
    t6, t8 = 6 * PS_PER_MS, 8 * PS_PER_MS
    near = lambda tr, t: next(v for tt, v in sorted(tr.items()) if tt >= t)     # noqa: E731
    assert near(w, t6) < 0.05 and near(w, t8) > 0.6        # S1:15 starved once A→D shares S2:20
    # X→Y alone: ΔD ≈ 1 GB/s of a 4 GB/s QDR port
    assert 0.22 < near(d, t6) < 0.28


def test_no_manager_no_decisions_fixed_rate():
    raw = experiment2_dict(1, dcms=False, marking_rate=0, duration_s=1)
    scn = scenario_from_dict(raw)
    assert scn.cc is not None and "dcms" not in scn.cc.settings and "M" not in {h.name for h in scn.hcas}


def test_dcms_table_is_checked():
    raw = experiment2_dict(1, duration_s=1)
    raw["cc"]["dcms"]["manager"] = "S1"
    with pytest.raises(UserError, match="manager"):
        scenario_from_dict(raw)
    raw = experiment2_dict(1, duration_s=1)
    raw["cc"]["dcms"]["T_W"] = 27.4e6                       # ticks: the thresholds are fractions
    with pytest.raises(UserError, match="T_W"):
        scenario_from_dict(raw)
    raw = experiment2_dict(1, duration_s=1)
    raw["cc"]["scheme"] = "hp"
    with pytest.raises(UserError, match="cca"):
        scenario_from_dict(raw)


def test_wrong_cc_key_leaves_the_switch_alone():
    raw = experiment2_dict(1, duration_s=9.5, scale_ms_per_s=1.0)
    scn = scenario_from_dict(raw)
    fab = build_fabric(scn, Rec())
    fab.nodes["S2"].cc_key = 0xBAD                          # the manager does not know it
    eng = VirtualEngine(fab.nodes.values(), fab.wiring)
    eng.start(0)
    eng.run(int(9.5 * PS_PER_MS))
    assert fab.nodes["S2"].counters["CC_Key_violations"] == 1
    assert fab.nodes["S2"].marker.ports[23].marking_rate == 128
    assert fab.nodes["M"].counters.get("DCMS_set_rejected", 0) == 0   # dropped: no answer at all


def test_scenario_file_is_experiment2():
    from pathlib import Path

    from ibemu.scenario import load_scenario
    path = Path(__file__).resolve().parent.parent / "scenarios" / "dcms_experiment2.toml"
    import dataclasses
    from_file = dataclasses.replace(load_scenario(path), source=None)
    assert from_file == scenario_from_dict(experiment2_dict(1, duration_s=30, name="dcms_experiment2"))


def test_tshark_decodes_the_managers_sweep(run_tshark, tmp_path):
    from ibemu.run import run_virtual
    pcap = tmp_path / "dcms.pcap"
    run_virtual(experiment2(scale_ms_per_s=1.0, duration_s=2.5), pcap=pcap, progress=False)
    out = run_tshark("-r", str(pcap), "-Y", "infiniband.portcounters && infiniband.mad.method == 0x81",
                     "-T", "fields", "-e", "infiniband.lrh.slid", "-e", "infiniband.lrh.dlid",
                     "-e", "infiniband.lrh.vl", "-e", "infiniband.portcounters.portselect")
    rows = [tuple(int(x, 0) for x in line.split("\t")) for line in out.strip().splitlines()]
    # GetResps of S2 (LID 9) and S1 (LID 8) to the manager (LID 7), on VL15, for every port
    assert {r[3] for r in rows if r[:3] == (9, 7, 15)} == {20, 21, 22, 23, 24, 25}
    assert {r[3] for r in rows if r[:3] == (8, 7, 15)} == {11, 12, 15}
    assert all(r[2] == 15 for r in rows)
    assert "Malformed" not in run_tshark("-r", str(pcap), "-Y", "infiniband.mad")
