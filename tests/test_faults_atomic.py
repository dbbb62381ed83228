"""Failing cleanly (issue 8 item 8): results, series and captures are written
atomically -- a run killed at any moment never leaves a half-written results.json or an
unreadable pcap.  Each case kills a real process (``os._exit``) at the worst moment."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from ibemu.atomic import atomic_open, atomic_write_text
from ibemu.capture.erf import ErfPcapWriter, read_erf_pcap

RUN = textwrap.dedent("""
    import os, sys
    import ibemu.atomic, ibemu.capture.erf as erf
    from ibemu.run import run_virtual
    from ibemu.scenario import load_scenario
    where = sys.argv[3]
    if where == "capture":                      # killed in the middle of the run
        real = erf.ErfPcapWriter.flush
        def flush(self):
            real(self)
            os._exit(9)
        erf.ErfPcapWriter.flush = flush
    elif where == "results":                    # killed with results.json half written
        def fsync(fd):
            os._exit(9)
        ibemu.atomic.os.fsync = fsync
    scn = load_scenario("scenarios/quickstart.toml", ['scenario.duration="1ms"'])
    scn.output.plots = False
    run_virtual(scn, out_dir=sys.argv[1], pcap=sys.argv[2], progress=False)
""")


def _run(tmp_path, where):
    out, pcap = tmp_path / "out", tmp_path / "cap.pcap"
    r = subprocess.run([sys.executable, "-c", RUN, str(out), str(pcap), where], capture_output=True,
                       text=True, timeout=300)
    return r, out, pcap


def test_killed_while_capturing_leaves_no_broken_pcap(tmp_path):
    r, out, pcap = _run(tmp_path, "capture")
    assert r.returncode == 9
    assert not pcap.exists()                                    # never a half-written capture
    assert not (out / "results.json").exists()
    partial = tmp_path / "cap.pcap.partial"
    assert partial.exists() and partial.stat().st_size > 0      # what was captured, for a post-mortem


def test_killed_while_writing_results_keeps_the_old_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text('{"old": true}\n')
    r, out, pcap = _run(tmp_path, "results")
    assert r.returncode == 9
    assert json.loads((out / "results.json").read_text()) == {"old": True}
    for f in out.iterdir():                                     # every file there is whole
        if f.suffix == ".json":
            json.loads(f.read_text())


def test_normal_run_writes_everything(tmp_path):
    r, out, pcap = _run(tmp_path, "none")
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "results.json").read_text())["summary"]
    assert sum(1 for _ in read_erf_pcap(pcap)) > 100
    assert not list(tmp_path.glob("*.partial")) and not list(out.glob(".*.tmp"))


def test_atomic_open_on_error_leaves_nothing(tmp_path):
    p = tmp_path / "x.csv"
    atomic_write_text(p, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(p) as fh:
            fh.write("half")
            raise RuntimeError("boom")
    assert p.read_text() == "old\n" and [f.name for f in tmp_path.iterdir()] == ["x.csv"]


def test_erf_writer_renames_on_close(tmp_path):
    p = tmp_path / "c.pcap"
    w = ErfPcapWriter(p)
    w.write(1000, b"\x00" * 30)
    assert not p.exists() and (tmp_path / "c.pcap.partial").exists()
    w.close()
    assert p.exists() and not (tmp_path / "c.pcap.partial").exists()
    assert len(list(read_erf_pcap(p))) == 1
