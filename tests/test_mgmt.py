"""perfquery and ibccconfig against the fabric (ibemu/mgmt.py): the sans-I/O client on the
virtual-time engine, and ``ibemu perfquery --live`` / ``ibemu ccconfig`` against a
running wall-clock emulation (ibemu/runtime/mgmt.py), checked against perfquery's format."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.errors import UserError
from ibemu.mgmt import ManagementClient, cc_set, cc_text, perf_get, perf_text
from ibemu.sim.engine import VirtualEngine
from ibemu.studies.cca.testbed import dcms_testbed
from ibemu.units import PS_PER_US

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^([A-Za-z0-9]+):(\.*)(\S+)$")


def assert_perfquery_format(text: str, lid: int, port: int, extended: bool) -> dict:
    lines = text.splitlines()
    if extended:        # perfquery.c: "(CapMask: 0x%02X CapMask2: 0x%07X)" (issue 18 item 8)
        assert lines[0] == "# Port extended counters: Lid %d port %d (CapMask: 0x1600 CapMask2: 0x0000000)" % (lid, port)
    else:
        assert lines[0] == "# Port counters: Lid %d port %d (CapMask: 0x1600)" % (lid, port)
    values = {}
    for ln in lines[1:]:
        m = LINE.match(ln)
        assert m, ln
        assert len(m.group(1)) + 1 + len(m.group(2)) == max(33, len(m.group(1)) + 1), ln   # dots to column 33
        values[m.group(1)] = m.group(3)
    assert values["PortSelect"] == str(port)
    assert re.fullmatch(r"0x[0-9a-f]{4}", values["CounterSelect"])
    return values


def test_client_on_the_virtual_engine_reads_and_sets():
    scn = dcms_testbed(marking_rate=2048, duration_ms=1.0)
    fab = build_fabric(scn)
    eng = VirtualEngine(fab.nodes.values(), fab.wiring)
    got = {}
    a = fab.nodes["A"]
    client = ManagementClient(a, lambda tid, mad: got.setdefault(tid, mad))
    s2 = fab.nodes["S2"]
    a.at(300 * PS_PER_US, client.send, s2.lid, perf_get(24), 1)
    a.at(300 * PS_PER_US, client.send, s2.lid, cc_set("SP", ["23", "1", "0", "15", "0", "0"]), 2)
    a.at(300 * PS_PER_US, client.send, a.lid, perf_get(1, extended=True), 3)        # its own counters
    eng.start(0)
    eng.run(400 * PS_PER_US)
    v = assert_perfquery_format(perf_text(got[1], s2.lid, 24), s2.lid, 24, False)
    assert int(v["PortXmitData"]) > 250_000 // 4 and int(v["PortXmitWait"]) == 0
    assert s2.marker.ports[23].marking_rate == 0
    assert "Marking_Rate:....................0" in cc_text(got[2], 23)
    assert_perfquery_format(perf_text(got[3], a.lid, 1, True), a.lid, 1, True)
    assert "MADs_received" not in fab.nodes["X"].counters      # X's QP1 saw nothing


def test_ccconfig_arguments_are_checked():
    with pytest.raises(UserError, match="needs 6 values"):
        cc_set("SP", ["23", "1"])
    with pytest.raises(UserError, match="unknown operation"):
        cc_set("XX", ["1"])
    with pytest.raises(UserError, match="must be a number"):
        cc_set("SS", ["x"] * 8)
    with pytest.raises(UserError, match="does not fit"):
        cc_set("SP", ["23", "1", "0", "16", "0", "0"])          # Threshold is 4 bits


def ibemu(*args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ibemu", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, **kw)


def test_live_perfquery_and_ccconfig(tmp_path):
    from ibemu.runtime.mgmt import live_ccconfig, live_perfquery
    out = tmp_path / "live"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.Popen([sys.executable, "-m", "ibemu", "run", "scenarios/cca_dcms_testbed.toml",
                            "--clock", "wall", "--dilation", "1000", "--duration", "8ms", "--out", str(out),
                            "-q", "--workers", "2"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sock = out / "parts" / "mgmt.sock"
        for _ in range(200):
            if sock.exists() or run.poll() is not None:
                break
            time.sleep(0.05)
        assert sock.exists(), "no management socket"
        # asked while the workers may still be starting: the command waits for the start
        r1 = ibemu("perfquery", str(out), "S2", "24", "--live")
        assert r1.returncode == 0, r1.stderr
        v1 = assert_perfquery_format(r1.stdout, 8, 24, False)   # S2 is LID 8 (after HCAs 1-6)
        time.sleep(0.3)
        v2 = assert_perfquery_format(live_perfquery(out, "8", 24, extended=True), 8, 24, True)
        assert int(v2["PortXmitData"]) > int(v1["PortXmitData"])      # X->Y runs from 0: it grows
        text = live_ccconfig(out, "SP", "S2", ["23", "1", "0", "15", "0", "0"])
        assert "# port 23" in text and "Marking_Rate:....................0" in text
        text = live_ccconfig(out, "CS", "B", ["0", "1", "300", "1", "0", "0"], via="Y")
        assert "SL0: CCTI_Timer=300" in text and "SL1: CCTI_Timer=75" in text
        with pytest.raises(UserError, match="no node 'Q'"):
            live_perfquery(out, "Q", None)
        with pytest.raises(UserError, match="no HCA 'S1'"):
            live_perfquery(out, "S2", 24, via="S1")
    finally:
        stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 0, stderr
    assert not (out / "parts").exists()
    r6 = ibemu("perfquery", str(out), "S2", "24", "--live")
    assert r6.returncode == 2 and "no running emulation" in r6.stderr
