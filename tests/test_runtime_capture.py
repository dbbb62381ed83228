"""Live capture of a running emulation on the loopback interface (issue 4 item 3): tshark
with the ibemu Lua plugin decodes the workers' datagrams as InfiniBand data packets,
ACKs and link flow-control packets.  Skips, saying why, where capturing is not allowed."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.wireshark

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "layers" / "wireshark" / "ibemu.lua"
PORT_BASE = 19400          # away from the default, so that nothing else lands in the capture
NO_PERMISSION = ("permission", "not permitted", "couldn't run dumpcap", "no interfaces",
                 "no such device", "capabilit", "you don't have")
RC_SEND_ONLY, RC_ACKNOWLEDGE = 4, 17


def start_capture(tshark, out: Path, err: Path, ports: str):
    cmd = [tshark, "-i", "lo", "-f", "udp and portrange %s" % ports, "-a", "duration:30",
           "-w", str(out)]
    with open(err, "w") as errf:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
    deadline = time.monotonic() + 8
    while not (out.exists() and out.stat().st_size > 0):       # dumpcap has opened lo
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        reason = err.read_text().strip()
        why = [ln.strip() for ln in reason.splitlines() if any(k in ln.lower() for k in NO_PERMISSION)]
        if why:
            pytest.skip("live capture on lo not permitted here: %s" % why[0])
        pytest.fail("tshark -i lo failed: %s" % reason)
    if not out.exists():
        proc.kill()
        pytest.skip("tshark did not start capturing on lo within 8 s: %s" % err.read_text().strip())
    time.sleep(0.3)
    return proc


def test_live_capture_of_a_wall_run_is_decoded(tshark, run_tshark, tmp_path):
    cap, err = tmp_path / "live.pcapng", tmp_path / "tshark.err"
    proc = start_capture(tshark, cap, err, "%d-%d" % (PORT_BASE, PORT_BASE + 19))
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        run = subprocess.run([sys.executable, "-m", "ibemu", "run", "scenarios/quickstart.toml",
                              "--clock", "wall", "--workers", "2", "--dilation", "200",
                              "--duration", "200us", "--port-base", str(PORT_BASE),
                              "--out", str(tmp_path / "run"), "--no-plots", "-q"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    out = run_tshark("-r", str(cap), "-X", "lua_script:%s" % PLUGIN, "-T", "fields",
                     "-e", "ibemu.kind", "-e", "infiniband.bth.opcode", "-e", "ibemu_link.op",
                     "-e", "_ws.malformed", timeout=60)
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    assert len(rows) > 100
    opcodes = [r[1] for r in rows if r[0] == "0"]
    links = [r for r in rows if r[0] == "1"]
    assert opcodes.count(str(RC_SEND_ONLY)) > 20, "no data packets decoded"
    assert opcodes.count(str(RC_ACKNOWLEDGE)) > 20, "no ACKs decoded"
    assert len(links) > 20 and all(r[2] in ("0", "1") for r in links), "no link packets decoded"
    assert not any(r[3] for r in rows), "malformed packets"
