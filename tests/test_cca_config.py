"""``[cc.cca]`` and OpenSM options (ibemu.cc.cca.config, ibemu.cc.cca.opensm): spec-named
keys, per-switch / per-port / per-SL / per-HCA layers, OpenSM text inline or from a
file, and one-line errors naming the file, key or option and the reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from ibemu.cc.cca.opensm import OpenSMError, parse_opensm
from ibemu.cc.cca.settings import default_cct
from ibemu.run import run_virtual
from ibemu.scenario import ScenarioError, load_scenario, scenario_from_dict
from ibemu.studies.cca.testbed import dcms_testbed

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
OPENSM = DATA / "opensm_cc.conf"


def small(cca: dict, duration="2ms") -> dict:
    return {
        "scenario": {"name": "t", "duration": duration},
        "defaults": {"switch": {"buffer": "8 packets"}},
        "switch": [{"name": "S"}],
        "hca": [{"name": "H1"}, {"name": "H2"}, {"name": "H3"}],
        "link": [{"a": "H1", "b": "S"}, {"a": "H2", "b": "S"}, {"a": "S", "b": "H3", "name": "root"}],
        "flow": [{"name": "f1", "src": "H1", "dst": "H3"},
                 {"name": "f2", "src": "H2", "dst": "H3", "start": "100us"}],
        "output": {"bin": "20us", "plots": False},
        "cc": {"scheme": "cca", "cca": cca},
    }


def spec(cca: dict):
    return scenario_from_dict(small(cca), label="t.toml").cc.settings["cca"]


def err(cca: dict) -> str:
    with pytest.raises(ScenarioError) as e:
        spec(cca)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("t.toml: ")
    return msg


def test_defaults():
    s = spec({})
    assert s.enabled
    assert (s.switch.Threshold, s.switch.Marking_Rate, s.switch.Packet_Size) == (15, 0, 0)
    assert s.ca.Port_Control == "qp" and s.ca.CCT == default_cct() and s.ca.limit() == 127
    assert (s.ca.sl[0].CCTI_Increase, s.ca.sl[0].CCTI_Timer) == (1, 150)


def test_spec_named_keys_and_layers():
    s = spec({"Threshold": 10, "Marking_Rate": 64, "Packet_Size": 4, "Victim_Mask": [3],
              "CCTI_Timer": 75, "CCTI_Increase": 2, "CCTI_Min": 1, "Trigger_Threshold": 9,
              "Port_Control": "sl", "CCT": "0:0,1:1,2:2,3:3", "CCTI_Limit": 2,
              "sl": {"3": {"CCTI_Timer": 300}},
              "switch": {"S": {"Marking_Rate": 8, "port": {"3": {"Threshold": 15, "Marking_Rate": 0}}}},
              "hca": {"H2": {"CCTI_Increase": 5, "sl": {"1": {"CCTI_Min": 2}}}}})
    assert (s.switch.Threshold, s.switch.Marking_Rate, s.switch.Packet_Size) == (10, 64, 4)
    assert s.switch.Victim_Mask == {3}
    sw = s.switch_setting("S")
    assert sw.port(1) == (10, 8, 4, False)
    assert sw.port(3) == (15, 0, 4, True)
    assert s.ca.CCT == [(0, 0), (1, 1), (2, 2), (3, 3)] and s.ca.limit() == 2
    assert [s.ca.sl[i].CCTI_Timer for i in (0, 3)] == [75, 300]
    assert s.ca.sl[0].CCTI_Min == 1 and s.ca.Port_Control == "sl"
    h2 = s.ca_setting("H2")
    assert h2.sl[0].CCTI_Increase == 5 and h2.sl[1].CCTI_Min == 2 and h2.sl[3].CCTI_Timer == 300
    assert s.ca_setting("H1").sl[0].CCTI_Increase == 2


@pytest.mark.parametrize("mask,ports", [([1, 4], {1, 4}), ("0x12", {1, 4}), (18, {1, 4})])
def test_victim_mask_forms(mask, ports):
    assert spec({"Victim_Mask": mask}).switch.Victim_Mask == ports


def test_cct_as_toml_pairs():
    assert spec({"CCT": [[0, 0], [2, 10]]}).ca.CCT == [(0, 0), (2, 10)]


@pytest.mark.parametrize("cca,where,reason", [
    ({"Treshold": 3}, "cc.cca.Treshold", "did you mean 'Threshold'"),
    ({"Threshold": 16}, "cc.cca.Threshold", "between 0 and 15"),
    ({"Marking_Rate": -1}, "cc.cca.Marking_Rate", "between 0 and 65535"),
    ({"Port_Control": "qp1"}, "cc.cca.Port_Control", "expected 'qp' or 'sl'"),
    ({"CCT": "1:2,3"}, "cc.cca.CCT", "expected shift:mult"),
    ({"CCT": "4:1"}, "cc.cca.CCT", "between 0 and 3"),
    ({"CCT": "0:0,0:1", "CCTI_Limit": 5}, "cc.cca.CCTI_Limit", "beyond the table's last entry (1)"),
    ({"switch": {"H1": {}}}, "cc.cca.switch.H1", "is an HCA, not a switch"),
    ({"switch": {"SS": {}}}, "cc.cca.switch.SS", "did you mean 'S'"),
    ({"switch": {"S": {"port": {"3": {"Victim_Mask": 1}}}}}, "cc.cca.switch.S.port.3.Victim_Mask", "unknown key"),
    ({"hca": {"H1": {"Threshold": 3}}}, "cc.cca.hca.H1.Threshold", "unknown key"),
    ({"sl": {"16": {}}}, "cc.cca.sl.16", "unknown key"),
    ({"opensm": "x", "opensm_file": "y"}, "cc.cca.opensm_file", "not both"),
])
def test_errors_name_the_key(cca, where, reason):
    msg = err(cca)
    assert where in msg and reason in msg, msg


def test_opensm_text_parsed_with_spec_names():
    got = parse_opensm(OPENSM.read_text())
    assert got["enabled"] is True
    assert got["switch"] == {"Threshold": 15, "Marking_Rate": 0, "Packet_Size": 0, "Victim_Mask": 0,
                             "Control_Map": 0x1F}
    assert got["ca"]["Port_Control"] == "qp" and len(got["ca"]["CCT"]) == 32
    assert got["sl"] == {0: {"CCTI_Timer": 150, "CCTI_Increase": 2, "Trigger_Threshold": 12, "CCTI_Min": 0}}


@pytest.mark.parametrize("text,reason", [
    ("cc_sw_cong_setting_treshold 3", "line 1: cc_sw_cong_setting_treshold: unknown option (did you mean 'cc_sw_cong_setting_threshold'?)"),
    ("\n\nfrobnicate 2", "line 3: frobnicate: unknown option (not an option of OpenSM 3.3.23's opensm.conf)"),
    ("cc_sw_cong_setting_threshold 16", "line 1: cc_sw_cong_setting_threshold: must be between 0 and 15, got 16"),
    ("cc_sw_cong_setting_marking_rate fast", "line 1: cc_sw_cong_setting_marking_rate: expected a Marking_Rate, got 'fast'"),
    ("cc_ca_cong_setting_ccti_timer 150", "line 1: cc_ca_cong_setting_ccti_timer: expected '<SL> <value>', got '150'"),
    ("cc_ca_cong_setting_ccti_min 16 1", "line 1: cc_ca_cong_setting_ccti_min: must be between 0 and 15, got 16"),
    ("congestion_control maybe", "line 1: congestion_control: expected TRUE or FALSE, got 'maybe'"),
    ("cc_cct 0:1,0:x", "line 1: cc_cct: expected a CCT_Multiplier, got 'x'"),
    ("cc_cct " + ",".join(["0:1"] * 129), "line 1: cc_cct: at most 128 entries (OpenSM), got 129"),
    ("cc_sw_cong_setting_packet_size", "line 1: cc_sw_cong_setting_packet_size: missing value"),
])
def test_opensm_errors_name_line_and_option(text, reason):
    with pytest.raises(OpenSMError) as e:
        parse_opensm(text)
    assert str(e.value) == reason


def test_opensm_error_in_scenario_is_one_line():
    msg = err({"opensm": "congestion_control TRUE\ncc_sw_cong_setting_markingrate 8\n"})
    assert msg == ("t.toml: cc.cca.opensm: line 2: cc_sw_cong_setting_markingrate: unknown option "
                   "(did you mean 'cc_sw_cong_setting_marking_rate'?)")


def test_opensm_congestion_control_defaults_to_false_like_opensm():
    assert not spec({"opensm": "cc_sw_cong_setting_threshold 4"}).enabled
    assert spec({"opensm": "cc_sw_cong_setting_threshold 4", "enabled": True}).enabled


def test_toml_keys_override_opensm():
    s = spec({"opensm": OPENSM.read_text(), "Marking_Rate": 64, "CCTI_Timer": 20})
    assert s.switch.Marking_Rate == 64 and s.ca.sl[0].CCTI_Timer == 20
    assert s.ca.sl[0].CCTI_Increase == 2                  # from the OpenSM text


def test_opensm_file_missing_is_one_line(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[scenario]\nduration = "1ms"\n[[hca]]\nname = "a"\n[[hca]]\nname = "b"\n'
                 '[[link]]\na = "a"\nb = "b"\n[cc]\nscheme = "cca"\n[cc.cca]\nopensm_file = "nope.conf"\n')
    with pytest.raises(ScenarioError) as e:
        load_scenario(f)
    assert str(e.value).startswith("%s: cc.cca.opensm_file: cannot read %s" % (f, tmp_path / "nope.conf"))


def test_opensm_file_loads_and_drives_a_run(tmp_path):
    """The acceptance test: an opensm.conf-style file configures the run."""
    raw = small({"opensm_file": str(OPENSM)}, duration="3ms")
    raw["output"]["plots"] = True
    scn = scenario_from_dict(raw, label=str(tmp_path / "s.toml"))
    s = scn.cc.settings["cca"]
    assert s.ca.sl[0].CCTI_Increase == 2 and s.ca.sl[0].CCTI_Timer == 150 and len(s.ca.CCT) == 32
    r = run_virtual(scn, out_dir=tmp_path / "out")
    marks = r.counters["S"]["FECN_marked:port3"]
    assert marks > 20
    assert r.counters["H1"]["becn_received"] + r.counters["H2"]["becn_received"] == marks
    ccti = r.metrics.traces[("CCTI", "f1")]
    assert max(v for _, v in ccti) <= 31 and all(v % 1 == 0 for _, v in ccti)
    assert any(v >= 12 for _, v in ccti) and r.metrics.events          # Trigger_Threshold 12
    assert r.summary["links"]["root"]["data_utilization"] < 0.9       # throttled
    import json
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {"CCTI", "injection_rate", "FECN_marks"} <= set(res["traces"])
    assert "Trigger_Threshold" in res["events"][0]["text"]
    assert (tmp_path / "out" / "cc.png").exists() and (tmp_path / "out" / "traces.csv").exists()


def test_scenario_file_with_opensm_file_runs():
    scn = load_scenario(ROOT / "scenarios" / "cca_opensm.toml", ["scenario.duration=1ms"])
    r = run_virtual(scn)
    assert r.counters["S"]["FECN_marked:port4"] > 0
    assert r.counters["H3"].get("cnp_received", 0) > 0                # the UD flow's CNPs


def test_testbed_toml_equals_builder():
    a = load_scenario(ROOT / "scenarios" / "cca_dcms_testbed.toml")
    b = dcms_testbed(marking_rate=2048, ccti_timer=75)
    for attr in ("duration", "switches", "hcas", "links", "flows", "seed", "output"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert a.cc.settings["cca"] == b.cc.settings["cca"]


def test_threshold_zero_disables_marking():
    r = run_virtual(scenario_from_dict(small({"Threshold": 0}), label="t"))
    assert not any(k.startswith("FECN_marked") for c in r.counters.values() for k in c)
    r = run_virtual(scenario_from_dict(small({}), label="t"))
    assert r.counters["S"]["FECN_marked:port3"] > 0


def test_missing_port_in_per_port_setting_is_reported():
    from ibemu.errors import UserError
    scn = scenario_from_dict(small({"switch": {"S": {"port": {"9": {"Threshold": 1}}}}}), label="t")
    with pytest.raises(UserError, match="cc.cca.switch.S.port.9: switch 'S' has no link on port 9"):
        run_virtual(scn)
