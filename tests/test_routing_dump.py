"""LFT dump files (REFERENCE-FABRICS §2): round trip, ibroute parsing, errors; the
[routing] table; an LMC run end to end."""
from __future__ import annotations

import pytest

from ibemu.build import build_fabric, scenario_routes, subnet_of
from ibemu.errors import UserError
from ibemu.routing import read_lfts, route, write_ibroute, write_opensm
from ibemu.scenario.read import scenario_from_dict
from ibemu.validate import ScenarioError

from test_routing_engines import two_level


@pytest.mark.parametrize("lmc", [0, 1])
def test_opensm_dump_round_trips_and_format(lmc):
    sn = subnet_of(two_level(3, 2, 2, lmc=lmc))
    lfts = route(sn, "minhop")
    text = write_opensm(sn, lfts)
    assert read_lfts(text, sn, "x.dump") == lfts
    assert read_lfts(write_ibroute(sn, lfts), sn) == lfts
    lines = text.splitlines()
    s0 = sn.nodes["L0"]
    assert lines[0] == "Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('L0'):" % (sn.max_lid(), s0.lid, s0.guid)
    h = sn.nodes["H0_0"]
    assert "0x%04x 001 # Channel Adapter portguid 0x%016x: 'H0_0'" % (h.lid, h.guid + 1) in lines
    assert "0x%04x 000 # Switch portguid 0x%016x: 'L0'" % (s0.lid, s0.guid) in lines
    assert lines.count("%d lids dumped" % sn.max_lid()) == len(sn.switches())


def test_ibroute_text_parses():
    sn = subnet_of(two_level(2, 1, 1))
    l0 = sn.nodes["L0"]
    h0, h1 = sn.nodes["H0_0"], sn.nodes["H1_0"]
    text = ("Unicast lids [0x0-0x%x] of switch Lid %d guid 0x%016x (L0):\n"
            "  Lid  Out   Destination\n"
            "       Port     Info \n"
            "0x%04x 001 : (Channel Adapter portguid 0x%016x: 'H0_0')\n"
            "0x%04x 002 : (Channel Adapter portguid 0x%016x: 'H1_0')\n"
            "2 valid lids dumped \n") % (h1.lid, l0.lid, l0.guid, h0.lid, h0.port_guid, h1.lid, h1.port_guid)
    assert read_lfts(text, sn) == {"L0": {h0.lid: 1, h1.lid: 2}}


@pytest.mark.parametrize("bad,reason", [
    ("0x0001 001 # x\n", ":1: an LFT entry outside"),
    ("Unicast lids [0-4] of switch Lid 99 guid 0x00000000000000ff ('z'):\n", ":1: switch guid"),
    ("HEAD\nbogus line\n", ":2: not an LFT line"),
    ("HEAD\n0x0002 017 # x\n", ":2: port 17 of switch L0 has no link"),
])
def test_malformed_dump_lines(bad, reason):
    sn = subnet_of(two_level(2, 1, 1))
    l0 = sn.nodes["L0"]
    bad = bad.replace("HEAD", "Unicast lids [0-4] of switch Lid %d guid 0x%016x ('L0'):" % (l0.lid, l0.guid))
    with pytest.raises(UserError) as e:
        read_lfts(bad, sn, "f.dump")
    assert str(e.value).startswith("f.dump:") and reason in str(e.value) and "\n" not in str(e.value)


def _raw(routing=None, hca_lids=True):
    raw = {"scenario": {"duration": "20us"},
           "switch": [{"name": "L0"}, {"name": "L1"}, {"name": "S0"}, {"name": "S1"}],
           "hca": [{"name": "A", **({"lid": 4} if hca_lids else {})}, {"name": "B", **({"lid": 8} if hca_lids else {})}],
           "link": [{"a": "A", "b": "L0"}, {"a": "B", "b": "L1"}, {"a": "L0", "b": "S0"}, {"a": "L0", "b": "S1"},
                    {"a": "L1", "b": "S0"}, {"a": "L1", "b": "S1"}],
           "flow": [{"src": "A", "dst": "B", "pattern": "messages", "count": 2, "message_size": 256},
                    {"src": "A", "dst": "B", "pattern": "messages", "count": 2, "message_size": 256}],
           "output": {"plots": False}}
    if routing is not None:
        raw["routing"] = routing
    return raw


def test_routing_table_parsed_and_errors():
    scn = scenario_from_dict(_raw({"engine": "updn", "lmc": 2, "roots": ["S1"]}))
    assert (scn.routing.engine, scn.routing.lmc, scn.routing.roots) == ("updn", 2, ["S1"])
    assert scenario_from_dict(_raw()).routing.engine == "minhop"
    for routing, where in [({"engine": "dor"}, "routing.engine"), ({"lmc": 8}, "routing.lmc"),
                           ({"engine": "updn", "roots": ["A"]}, "routing.roots[0]"),
                           ({"engine": "file"}, "routing.lft_file"), ({"lmc": 3}, "hca[0].lid"),
                           ({"bogus": 1}, "routing.bogus")]:
        with pytest.raises(ScenarioError) as e:
            scenario_from_dict(_raw(routing))
        assert where in str(e.value) and "\n" not in str(e.value), (routing, str(e.value))
    auto = scenario_from_dict(_raw({"lmc": 2}, hca_lids=False))
    assert [h.lid for h in auto.hcas] == [4, 8]          # aligned blocks, LID 0's block skipped


def test_lmc_run_uses_distinct_paths(tmp_path):
    raw = _raw({"lmc": 1})
    raw["flow"][1]["path"] = 1
    scn = scenario_from_dict(raw)
    fab = build_fabric(scn)
    (s0, _r0), (s1, r1) = fab.qps["flow0"], fab.qps["flow1"]
    assert (s0.dlid, s1.dlid) == (8, 9) and (r1.dlid, r1.slid) == (5, 9)
    lfts = scenario_routes(scn)
    assert lfts["L0"][8] != lfts["L0"][9]               # two spines
    from ibemu.run import run_virtual
    res = run_virtual(scn, out_dir=tmp_path, progress=False)
    for name in ("flow0", "flow1"):                      # both paths deliver every message (ACKs accepted)
        f = res.summary["flows"][name]
        assert f["rx_bytes"] == 2 * 256 and f["messages"] == 2 and f["completion_ps"] is not None


def test_file_engine_loads_dump(tmp_path):
    scn = scenario_from_dict(_raw())
    sn = subnet_of(scn)
    lfts = route(sn, "updn", ["S1"])
    (tmp_path / "lfts.dump").write_text(write_opensm(sn, lfts))
    (tmp_path / "s.toml").write_text("")
    scn2 = scenario_from_dict(_raw({"engine": "file", "lft_file": "lfts.dump"}), source=str(tmp_path / "s.toml"))
    assert scenario_routes(scn2) == lfts
