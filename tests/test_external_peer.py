"""An external peer takes part in an exact run (issue 27 Deliver 6; docs/sync-protocol.md).

tests/peers/sink_peer.py is a plain script, written from the protocol's documentation
with the standard library alone (no ibemu import: its shim, tags, link keys, CRCs,
flow-control packets, event keys and synchronisation messages are its own), that plays
the sink HCA X of a small fabric::

    A (sender) --> S (switch) --> X (the external sink)      UD flow f: A -> X

``run_wall(..., external=["X"], transport="net")`` runs A and S in one worker; the peer
binds X's address from the run's address map and speaks the exact clock's protocol
with the worker over the link's own datagrams (2 processes: one phase-B step a round).

Bounded everywhere: the peer gives up after 30 s without its worker, a worker after 60 s
without its peer (:data:`ibemu.runtime.exact.STALL`), and the test waits at most 150 s
for either; the peer process is killed and the run's thread joined whatever happens.
The two tests take about 6 s of wall time together on the 2-core machine (three wall
runs of 0.2 ms at dilation 20, about a hundred rounds each).
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

from ibemu.build import build_fabric
from ibemu.run import run_virtual
from ibemu.runtime.controller import run_wall
from ibemu.scenario import Scenario, scenario_from_dict

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / "tests" / "peers" / "sink_peer.py"

COUNT = 40
SCENARIO = """
[scenario]
name = "external_sink"
duration = "200us"
[defaults.link]
fc_period = "20us"            # periodic flow-control packets once the flow is over
[[switch]]
name = "S"
[[hca]]
name = "A"
lid = 1
[[hca]]
name = "X"
lid = 2
[[link]]
a = "A"
b = "S"
[[link]]
a = "S"
b = "X"
name = "tox"
%(tox)s
[[flow]]
name = "f"
src = "A"
dst = "X"
transport = "ud"              # no ACKs: the sink only returns credits
pattern = "messages"
count = %(count)d
message_size = 2048
[output]
plots = false
"""


def scenario(tox: str = "") -> Scenario:
    """The fabric; *tox*: more keys of the link S -> X."""
    return scenario_from_dict(tomllib.loads(SCENARIO % {"count": COUNT, "tox": tox}), label="external_sink")


def peer_command(scn: Scenario, parts: Path, report: Path) -> list[str]:
    """The peer's arguments, from the fabric: X's one port and what the doc says a peer
    needs to know (its node index, the run's processes, the end, the link)."""
    fab = build_fabric(scn)
    x = fab.nodes["X"]
    peer, pport, prop = fab.wiring[(x, 1)]
    port = x.ports[1]
    return [sys.executable, str(PEER), "--map", str(parts / "addresses.toml"), "--key", str(parts / "key"),
            "--port", "X:1", "--peer", "%s:%d" % (peer.name, pport), "--node-index", str(x.sched_id),
            "--processes", "2", "--duration", str(scn.duration), "--propagation", str(prop),
            "--rate", str(port.rate), "--vls", str(len(port.rx)), "--buffer-blocks", str(port.rx[0].capacity),
            "--fc-period", str(port.fc_period), "--flow-control", "wire" if port.fcp_time else "ideal",
            "--wait", "30", "--report", str(report)]


def run_with_peer(scn: Scenario, out: Path) -> tuple[Any, dict[str, Any]]:
    """run_wall with X external (in a thread) and the peer (a process), started as soon
    as the address map and the key exist: before the worker has even imported ibemu, so
    its socket is bound long before the worker's first datagram (the peer then waits for
    that datagram before it sends anything)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = run_wall(scn, out_dir=out, workers=1, dilation=20, external=["X"],
                                     transport="net", keep_parts=True, progress=False, watchdog=30)
        except BaseException as e:          # noqa: BLE001 - reported below
            box["error"] = e
    th = threading.Thread(target=target, daemon=True)
    th.start()
    parts, report = out / "parts", out.parent / (out.name + "-peer.json")
    peer = None
    try:
        t_end = time.monotonic() + 60
        while not ((parts / "addresses.toml").exists() and (parts / "key").exists()):
            assert "error" not in box, box["error"]
            assert time.monotonic() < t_end, "run_wall wrote no address map and key"
            time.sleep(0.005)
        peer = subprocess.Popen(peer_command(scn, parts, report), cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        _, err = peer.communicate(timeout=150)
        assert peer.returncode == 0, err
    finally:
        if peer is not None and peer.poll() is None:
            peer.kill()
            peer.communicate()
        th.join(150)
    assert not th.is_alive(), "run_wall did not return"
    assert "error" not in box, box.get("error")
    return box["result"], json.loads(report.read_text())


def results(out: Path) -> dict[str, Any]:
    d = json.loads((out / "results.json").read_text())
    d.pop("extra")
    return d


def check(scn: Scenario, r: Any, peer: dict[str, Any], wire: bool) -> None:
    """What an exact run with the sink peer must show (*wire*: its flow-control packets
    take link time, so they are in the link counters)."""
    # the run completed, exact and valid, and nothing was dropped on either side
    assert r.completed and r.error is None
    assert r.validity["valid"], r.validity
    rt = r.runtime
    assert rt["sync"] == "exact" and rt["slips"] == 0
    assert rt["datagrams_lost"] == rt["forged"] == rt["strangers"] == rt["bad_datagrams"] == 0
    assert [w["stray_messages"] for w in rt["workers"]] == [0]
    dropped = ("strays", "forged", "strangers", "bad", "lost", "bad_frames")
    assert {k: peer[k] for k in dropped} == dict.fromkeys(dropped, 0)
    assert r.credit_problems == []          # S's credits to X all back: the peer returned them

    # the peer received every data packet the switch sent it (the link S -> X, "tox")
    tox = r.summary["links"]["tox"]
    assert peer["packets"] == tox["data_packets"] == r.metrics.port_totals()["S:2"]["PortXmitPkts"]
    assert peer["wire_bytes"] == tox["data_bytes"]
    assert peer["frames_received"] == peer["packets"] + peer["fcp_received"]

    # first principles: COUNT messages of 2048 bytes are COUNT UD packets of one MTU
    # (2048) each, a frame of LRH 8 + BTH 12 + DETH 8 + 2048 + ICRC 4 + VCRC 2 = 2082
    # bytes; at 1 GB/s they take 83.28 us, well inside the 200 us run, on links without
    # faults, and UD never retransmits: every byte the source sent arrives once
    assert peer["packets"] == COUNT
    assert peer["payload_bytes"] == COUNT * 2048 == r.summary["flows"]["f"]["tx_bytes"]
    assert peer["wire_bytes"] == COUNT * (8 + 12 + 8 + 2048 + 4 + 2)
    assert COUNT * 2082 * 1000 < peer["last_tail_ps"] < scn.duration

    # the peer behaved exactly as ibemu's HCA does: the virtual clock, with X a real
    # HCA, has the same links and ports on the workers' side, the same flow-control
    # packets from X (6 bytes each on a "wire" link) and the last packet's tail at the
    # same picosecond
    v = run_virtual(scn)
    assert {k: r.summary["links"][k] for k in ("A->S", "S->A", "tox")} == \
        {k: v.summary["links"][k] for k in ("A->S", "S->A", "tox")}
    assert {k: p for k, p in r.metrics.port_totals().items() if not k.startswith("X:")} == \
        {k: p for k, p in v.metrics.port_totals().items() if not k.startswith("X:")}
    if wire:
        assert peer["fcp_sent"] * 6 == v.summary["links"]["tox.rev"]["bytes"]
    vf = v.summary["flows"]["f"]
    assert (peer["packets"], peer["payload_bytes"], peer["wire_bytes"]) == \
        (vf["rx_packets"], vf["rx_bytes"], vf["rx_wire_bytes"])
    assert peer["last_tail_ps"] == int(v.metrics.latencies("f")[1].max())


def test_an_external_sink_peer_takes_part_in_an_exact_run(tmp_path):
    """No propagation on X's link (promises one depth deeper at the same instant), link
    packets on the wire; twice, with the same results."""
    scn = scenario()
    r, peer = run_with_peer(scn, tmp_path / "run1")
    check(scn, r, peer, wire=True)
    r2, peer2 = run_with_peer(scn, tmp_path / "run2")
    assert r2.validity["valid"] and r2.runtime["slips"] == 0
    assert results(tmp_path / "run2") == results(tmp_path / "run1")      # apart from "extra"
    assert peer2 == peer


def test_the_sink_peer_over_a_link_with_propagation(tmp_path):
    """100 ns of propagation (promises 100 ns later) and ideal link packets."""
    scn = scenario('propagation = "100ns"\nflow_control = "ideal"')
    r, peer = run_with_peer(scn, tmp_path / "run")
    check(scn, r, peer, wire=False)
