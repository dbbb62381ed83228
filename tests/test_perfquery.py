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


# The failures of infiniband-diags' perfquery (rdma-core perfquery.c main/dump_perfcounters;
# ibdiag_common.c ibexit): "<prog>: iberror: failed: <what>" on standard output, exit(-1).
@pytest.mark.parametrize("args, msg, tool", [
    (["nosuch"], "no node 'nosuch'", "can't resolve destination port nosuch"),
    (["999"], "LID 999 is not in this run", "classportinfo query"),
    (["S", "77"], "S has no port 77", "perfquery"),
    (["S", "77", "-x"], "S has no port 77", "perfextquery")])
def test_perfquery_bad_target_as_the_real_tool(run_dir, capsys, args, msg, tool):
    assert main(["perfquery", str(run_dir)] + args) == 255          # exit(-1)
    got = capsys.readouterr()
    assert got.out == "perfquery: iberror: failed: %s\n" % tool
    assert msg in got.err and len(got.err.strip().splitlines()) == 1


# Reference texts in the format of infiniband-diags 44's perfquery, written from its
# sources (perfquery.c's printf formats, libibmad's field names and _dump_fields'
# "%s:%s%s" with dots to column 33; mad_dump_perfcounters puts QP1Dropped between
# ExcessiveBufferOverrunErrors and VL15Dropped), for a port whose every counter is
# distinct, so that any field out of place shows.
REFERENCE_BASIC = """\
# Port counters: Lid 7 port 3 (CapMask: 0x1600)
PortSelect:......................3
CounterSelect:...................0x0000
SymbolErrorCounter:..............1
LinkErrorRecoveryCounter:........2
LinkDownedCounter:...............3
PortRcvErrors:...................4
PortRcvRemotePhysicalErrors:.....5
PortRcvSwitchRelayErrors:........6
PortXmitDiscards:................7
PortXmitConstraintErrors:........8
PortRcvConstraintErrors:.........9
CounterSelect2:..................0x00
LocalLinkIntegrityErrors:........10
ExcessiveBufferOverrunErrors:....11
QP1Dropped:......................12
VL15Dropped:.....................13
PortXmitData:....................14
PortRcvData:.....................15
PortXmitPkts:....................16
PortRcvPkts:.....................17
PortXmitWait:....................18"""

REFERENCE_EXTENDED = """\
# Port extended counters: Lid 7 port 3 (CapMask: 0x1600 CapMask2: 0x0000000)
PortSelect:......................3
CounterSelect:...................0x0000
PortXmitData:....................21
PortRcvData:.....................22
PortXmitPkts:....................23
PortRcvPkts:.....................24
PortUnicastXmitPkts:.............25
PortUnicastRcvPkts:..............26
PortMulticastXmitPkts:...........27
PortMulticastRcvPkts:............28"""


def _values(text):
    return {LINE.match(l)[1]: int(LINE.match(l)[3], 0) for l in text.splitlines()[1:]}


def test_basic_form_line_for_line():
    values = {k: v for k, v in _values(REFERENCE_BASIC).items() if k not in ("PortSelect",)}
    assert format_counters(7, 3, values) == REFERENCE_BASIC


def test_extended_form_line_for_line():
    values = {k: v for k, v in _values(REFERENCE_EXTENDED).items() if k not in ("PortSelect",)}
    assert format_counters(7, 3, values, extended=True) == REFERENCE_EXTENDED


def test_run_output_has_the_reference_lines(run_dir, capsys):
    """A finished run's output has the reference's lines, in its order, for both forms."""
    res = json.loads((run_dir / "results.json").read_text())
    node, lid = sorted(res["extra"]["lids"].items(), key=lambda kv: kv[1])[0]
    for extra, ref in (([], REFERENCE_BASIC), (["-x"], REFERENCE_EXTENDED)):
        assert main(["perfquery", str(run_dir), str(lid), "1"] + extra) == 0
        out = capsys.readouterr().out.splitlines()
        assert [LINE.match(l)[1] for l in out[1:]] == [LINE.match(l)[1] for l in ref.splitlines()[1:]]
        head = ref.splitlines()[0].replace("Lid 7 port 3", "Lid %d port 1" % lid)
        assert out[0] == head


def test_perfquery_without_results(tmp_path, capsys):
    assert main(["perfquery", str(tmp_path), "1"]) == 2
    assert "no results.json" in capsys.readouterr().err
