"""``ibemu perfquery``: infiniband-diags perfquery text for a finished run."""
from __future__ import annotations

import json
import re

import pytest

from ibemu.cli import main
from ibemu.perfquery import field_line, format_counters, views_from_totals
from ibemu.run import run_virtual
from ibemu.scenario import load_scenario

LINE = re.compile(r"^([A-Za-z0-9]+):(\.*)(\S+)$")


def test_field_line_pads_name_colon_and_dots_to_33_columns():
    assert field_line("PortXmitData", 1234) == "PortXmitData:....................1234"
    assert field_line("CounterSelect", 0) == "CounterSelect:...................0x0000"
    assert field_line("CounterSelect2", 0) == "CounterSelect2:..................0x00"
    for name in ("PortSelect", "ExcessiveBufferOverrunErrors", "PortMulticastXmitPkts"):
        assert len(field_line(name, 7)) == 33 + 1


def test_views_saturate_basic_and_wrap_extended():
    totals = {"PortXmitData": 2**33, "PortRcvErrors": 10**6, "PortXmitPkts": 5}
    basic, ext = views_from_totals(totals)
    assert basic["PortXmitData"] == 2**32 - 1 and basic["PortRcvErrors"] == 2**16 - 1
    assert ext["PortXmitData"] == 2**33 and ext["PortUnicastXmitPkts"] == 5
    text = format_counters(3, 2, basic)
    lines = text.splitlines()
    assert lines[0] == "# Port counters: Lid 3 port 2 (CapMask: 0x1600)"
    assert all(LINE.match(l) for l in lines[1:])
    assert [LINE.match(l)[1] for l in lines[1:]][-6:] == ["VL15Dropped", "PortXmitData", "PortRcvData",
                                                          "PortXmitPkts", "PortRcvPkts", "PortXmitWait"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("pq")
    scn = load_scenario("scenarios/quickstart.toml")
    scn.output.plots = False
    run_virtual(scn, out_dir=out, progress=False)
    return out


def test_perfquery_of_a_finished_run_matches_results(run_dir, capsys):
    res = json.loads((run_dir / "results.json").read_text())
    lids = res["extra"]["lids"]
    node, lid = sorted(lids.items(), key=lambda kv: kv[1])[0]
    assert main(["perfquery", str(run_dir), str(lid)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# Port counters: Lid %d port 1 (CapMask: 0x1600)" % lid
    got = {LINE.match(l)[1]: LINE.match(l)[3] for l in out[1:]}
    tot = res["ports"]["%s:1" % node]
    assert int(got["PortXmitPkts"]) == tot["PortXmitPkts"] > 0
    assert int(got["PortXmitData"]) == tot["PortXmitData"]
    assert main(["perfquery", str(run_dir), node, "1", "-x"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# Port extended counters: Lid %d port 1" % lid)
    assert len(out) == 11


@pytest.mark.parametrize("args, msg", [
    (["nosuch"], "no node 'nosuch'"), (["999"], "LID 999 is not in this run"), (["S", "77"], "S has no port 77")])
def test_perfquery_bad_target_is_one_line(run_dir, capsys, args, msg):
    assert main(["perfquery", str(run_dir)] + args) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1


def test_perfquery_without_results(tmp_path, capsys):
    assert main(["perfquery", str(tmp_path), "1"]) == 2
    assert "no results.json" in capsys.readouterr().err
