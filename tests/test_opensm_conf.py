"""A whole opensm.conf (issue 18 item 9): OpenSM 3.3's complete option file, written by the
project itself (ibemu.cc.cca.opensm_options.default_conf, from its list of OpenSM 3.3.23's
options and defaults), is accepted: the congestion-control options applied as before, the
routing options applied (tests/test_opensm_routing.py), every other option listed once as not modelled, a misspelt
option an error naming the closest valid one."""
from __future__ import annotations

import re

import pytest

from ibemu.cc.cca.opensm import OPTIONS, OpenSMError, parse_opensm
from ibemu.cc.cca.opensm_options import DEFAULTS, OPTION_NAMES, ROUTING_OPTIONS, default_conf
from ibemu.cli.run import opensm_note
from ibemu.scenario import ScenarioError, scenario_from_dict

LINE = re.compile(r"^([a-z0-9_]+) (\S.*)$")


def small(opensm_file: str) -> dict:
    return {
        "scenario": {"name": "t", "duration": "1ms"},
        "switch": [{"name": "S"}],
        "hca": [{"name": "H1"}, {"name": "H2"}],
        "link": [{"a": "H1", "b": "S"}, {"a": "S", "b": "H2"}],
        "flow": [{"name": "f1", "src": "H1", "dst": "H2"}],
        "output": {"plots": False},
        "cc": {"scheme": "cca", "cca": {"opensm_file": opensm_file}},
    }


def test_the_generated_file_is_in_opensm_format_and_complete():
    text = default_conf()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert all(LINE.match(ln) for ln in lines)
    names = [LINE.match(ln)[1] for ln in lines]
    assert names == [n for n, _ in DEFAULTS] and len(set(names)) == len(names) > 150
    # the CC options ibemu applies and the routing options are all OpenSM options
    assert set(OPTIONS) <= OPTION_NAMES and set(ROUTING_OPTIONS) <= OPTION_NAMES


def test_whole_default_file_parses():
    got = parse_opensm(default_conf())
    assert got["enabled"] is False                      # OpenSM's default
    assert got["routing"] == {"lmc": "0"}               # routing_engine and root_guid_file are (null)
    others = [n for n, _ in DEFAULTS if n not in OPTIONS and n not in ROUTING_OPTIONS]
    assert got["not_modelled"] == others                 # each once, in file order
    assert "guid" in others and "sweep_interval" in others and "qos" in others


def test_repeated_options_listed_once():
    text = default_conf({"guid": "0x1\n0x2", "qos": "TRUE"})
    got = parse_opensm(text)
    assert got["not_modelled"].count("guid") == 1


def test_cc_options_of_a_whole_file_applied(tmp_path):
    conf = default_conf({
        "congestion_control": "TRUE",
        "cc_sw_cong_setting_threshold": "0x0f",
        "cc_sw_cong_setting_marking_rate": "0x0010",
        "cc_sw_cong_setting_control_map": "0x0000001f",
        "cc_ca_cong_setting_ccti_timer": "0 150\n1 75",
        "cc_ca_cong_setting_ccti_increase": "0 2",
        "cc_cct": ",".join("0:%d" % m for m in range(1, 9)),
        "routing_engine": "ftree",
        "root_guid_file": "roots.guid",
        "lmc": "1",
    })
    (tmp_path / "roots.guid").write_text("0x0002c90000000001\n")     # switch S's default GUID
    f = tmp_path / "opensm.conf"
    f.write_text(conf)
    scn = scenario_from_dict(small(str(f)), label=str(tmp_path / "t.toml"))
    cca = scn.cc.settings["cca"]
    assert cca.enabled is True
    assert cca.switch.Threshold == 15 and cca.switch.Marking_Rate == 16
    assert cca.ca.sl[0].CCTI_Timer == 150 and cca.ca.sl[1].CCTI_Timer == 75 and cca.ca.sl[0].CCTI_Increase == 2
    assert cca.ca.CCT == [(0, m) for m in range(1, 9)]
    assert cca.opensm_routing == {"routing_engine": "ftree", "root_guid_file": "roots.guid", "lmc": "1"}
    assert (scn.routing.engine, scn.routing.fallback, scn.routing.lmc, scn.routing.roots) == ("ftree", ["minhop"], 1, ["S"])
    n_other = len(DEFAULTS) - len([n for n, _ in DEFAULTS if n in OPTIONS or n in ROUTING_OPTIONS])
    assert len(cca.opensm_not_modelled) == n_other
    note = opensm_note(scn)
    assert note is not None and note.count("\n") == 0
    assert "routing: engine ftree then minhop, lmc 1, roots S (root_guid_file %s)" % (tmp_path / "roots.guid") in note
    assert "%d options not modelled: guid, m_key," % n_other in note


@pytest.mark.parametrize("bad, closest", [
    ("sweep_intervall 10", "sweep_interval"),
    ("routing_engin minhop", "routing_engine"),
    ("qos_vlarb_hihg 0:64", "qos_vlarb_high"),
    ("cc_sw_cong_setting_treshold 3", "cc_sw_cong_setting_threshold"),
])
def test_misspelt_option_is_an_error_with_the_closest_name(tmp_path, bad, closest):
    text = default_conf() + "\n" + bad + "\n"
    line = text.count("\n")
    with pytest.raises(OpenSMError) as e:
        parse_opensm(text)
    name = bad.split()[0]
    assert str(e.value) == "line %d: %s: unknown option (did you mean %r?)" % (line, name, closest)
    f = tmp_path / "opensm.conf"
    f.write_text(text)
    with pytest.raises(ScenarioError) as se:
        scenario_from_dict(small(str(f)), label=str(tmp_path / "t.toml"))
    assert "did you mean %r" % closest in str(se.value) and len(str(se.value).splitlines()) == 1
