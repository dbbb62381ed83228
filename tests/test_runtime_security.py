"""Security and fuzzing of the running wall-clock emulation (issue 8 items 5 and 6):
sockets on loopback unless the address map says otherwise; datagrams from any address
that is not the port's configured peer dropped and counted; a hostile peer
(:mod:`ibemu.runtime.fuzzpeer`, another process) sending garbage, bad shims, frames with
bad CRCs, truncated, wrong PktLen, wrong VL, bad link packets, unroutable and
wrong-P_Key packets at a running emulation, which must count every one and deliver its
flows exactly as without them.

Each wall run is 2-3 s of wall time plus the workers' start; all processes are reaped
by ``run_wall`` (and the fuzzer by the test) whatever happens.
"""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.fabric.integrity import verify
from ibemu.fabric.params import FlowSpec
from ibemu.runtime import fuzzpeer
from ibemu.runtime.addrmap import assign, port_keys, read_map
from ibemu.runtime.controller import run_wall
from ibemu.runtime.loop import NodeLoop
from ibemu.runtime.report import format_runtime_line
from ibemu.runtime.sockets import free_port_block
from ibemu.scenario import HCASpec, LinkSpec, Scenario, SwitchSpec, load_scenario
from ibemu.units import PS_PER_MS
from ibemu.wire import codec
from ibemu.wire import opcodes as OP
from ibemu.wire.shim import pack_shim, unpack_shim

ROOT = Path(__file__).resolve().parent.parent


def udp_bound(port: int) -> bool:
    """Is UDP *port* bound on this machine (Linux: /proc/net/udp)?"""
    with open("/proc/net/udp") as f:
        next(f)
        return any(int(line.split()[1].split(":")[1], 16) == port for line in f)


def _start_run(kwargs):
    """run_wall in a thread (the test's main thread plays the attacker); returns
    (thread, box) -- box gets "result" or "error"."""
    box = {}

    def target():
        try:
            box["result"] = run_wall(**kwargs)
        except BaseException as e:          # noqa: BLE001 - reported by the test
            box["error"] = e
    th = threading.Thread(target=target, daemon=True)
    th.start()
    return th, box


def _wait_map(path: Path, box, timeout=30.0):
    t_end = time.monotonic() + timeout
    while not path.exists():
        assert "error" not in box, box.get("error")
        assert time.monotonic() < t_end, "no address map written"
        time.sleep(0.02)
    time.sleep(0.05)                        # written in one go; let the write finish
    return read_map(path)


# ---------------------------------------------------------------- binding

def test_sockets_bind_to_loopback_by_default_and_are_not_connected(tmp_path):
    scn = load_scenario("scenarios/quickstart.toml")
    fab = build_fabric(scn)
    keys = port_keys(fab)
    amap = assign(fab, lambda n: "127.0.0.1", free_port_block("127.0.0.1", len(keys), 22600))
    loop = NodeLoop(fab.nodes.values(), fab.wiring, amap, 100, scn.duration)
    try:
        assert len(loop.sockets) == len(keys) == 6
        for ps in loop.sockets:
            assert ps.sock.getsockname() == ("127.0.0.1", amap[(ps.node.name, ps.index)][1])
            with pytest.raises(OSError):
                ps.sock.getpeername()                   # unconnected: strangers reach us, counted
    finally:
        loop.close()
    # the defaults: `ibemu node --make-map` without --place, and run_wall's host
    r = subprocess.run([sys.executable, "-m", "ibemu", "node", "scenarios/quickstart.toml", "--make-map",
                        str(tmp_path / "map.toml")], cwd=ROOT, capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert {host for host, _ in read_map(tmp_path / "map.toml").values()} == {"127.0.0.1"}
    import inspect
    assert inspect.signature(run_wall).parameters["host"].default == "127.0.0.1"


# ---------------------------------------------------------------- strangers

def _stranger_datagrams(rng, amap):
    """Datagrams a stranger sends to one port: copies of plausible traffic (a valid shim
    and a well-formed frame, a flow-control packet) and garbage."""
    frame = bytes(codec.build(dlid=3, slid=1, opcode=OP.RC_SEND_ONLY, destqp=2, payload=bytes(256)))
    out = []
    for i in range(12):
        kind = i % 3
        if kind == 0:
            out.append(pack_shim(0, i + 1, 0) + frame)
        elif kind == 1:
            out.append(pack_shim(1, i + 1, 0) + bytes(6))
        else:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 100))))
    return out


def test_datagrams_from_strangers_are_counted_and_do_not_disturb_the_run(tmp_path):
    scn = load_scenario("scenarios/quickstart.toml", [
        'scenario.duration="2ms"', 'flow[0].pattern="messages"', "flow[0].count=300",
        'flow[1].pattern="messages"', "flow[1].count=200"])
    out = tmp_path / "run"
    # every link a cut link: under the exact clock (the default) a link inside one worker
    # is routed in memory and its sockets are not read, so strangers there go uncounted
    th, box = _start_run(dict(scn=scn, place=[["H1", "H2", "H3"], ["S"]], dilation=1000, out_dir=out,
                              keep_parts=True, progress=False, integrity=True))
    sent = {}
    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        amap = _wait_map(out / "parts" / "addresses.toml", box)
        t_end = time.monotonic() + 30
        while not all(udp_bound(a[1]) for a in amap.values()):
            assert time.monotonic() < t_end and "error" not in box
            time.sleep(0.02)
        stranger.bind(("127.0.0.1", 0))
        rng = random.Random(5)
        # spread over the first second (the run lasts 2 s once started; datagrams that
        # arrive before it starts wait in the socket and are read at its start)
        for rnd in range(4):
            for key, addr in amap.items():
                for d in _stranger_datagrams(rng, amap)[rnd * 3:(rnd + 1) * 3]:
                    stranger.sendto(d, addr)
                    sent[key] = sent.get(key, 0) + 1
            time.sleep(0.25)
    finally:
        stranger.close()
        th.join(120)
    assert not th.is_alive()
    assert "error" not in box, box.get("error")
    r = box["result"]
    assert r.completed
    rt = r.runtime
    assert rt["strangers"] == sum(sent.values()) == 6 * 12
    by_port = {}
    for w in rt["workers"]:
        by_port.update(w["strangers_by_port"])
    assert by_port == {"%s:%d" % k: n for k, n in sent.items()}
    assert rt["bad_datagrams"] == 0 and rt["datagrams_lost"] == 0       # nothing got through
    assert rt["datagrams_sent"] == rt["datagrams_received"]
    assert "72 datagrams from addresses that are not the port's peer, 0 forged" in format_runtime_line(rt)
    assert verify(r.integrity) == []                                    # every message, intact
    assert [len(r.integrity["received"][f]) for f in ("f1", "f2")] == [300, 200]
    assert r.credit_problems == []
    errors = {k: v for c in r.counters.values() for k, v in c.items() if "Err" in k}
    assert not errors, errors
    res = json.loads((out / "results.json").read_text())
    assert res["extra"]["runtime"]["strangers"] == 72


# ---------------------------------------------------------------- a hostile peer

def fuzz_scenario() -> Scenario:
    """One switch; A, B, C run by the workers, X by nobody: the fuzzer takes its place."""
    flows = [FlowSpec("ab", "A", "B", pattern="messages", count=300, message_size=4096),
             FlowSpec("ca", "C", "A", op="write", pattern="messages", count=200, message_size=6000, window=4),
             FlowSpec("bc", "B", "C", transport="ud", pattern="messages", count=200, message_size=1000,
                      rate=2e8)]
    return Scenario("fuzzpeer", duration=12 * PS_PER_MS, switches=[SwitchSpec("S")],
                    hcas=[HCASpec("A", 1), HCASpec("B", 2), HCASpec("C", 3), HCASpec("X", 4)],
                    links=[LinkSpec("A", "S"), LinkSpec("B", "S"), LinkSpec("C", "S"), LinkSpec("X", "S")],
                    flows=flows, seed=3)


def test_fuzz_frames_are_each_counted_where_expected():
    """Every kind of datagram the fuzzer sends lands in the counter :data:`EXPECT`
    names (checked on the sans-I/O switch and HCA, so the wall test can count exactly)."""
    fab = build_fabric(fuzz_scenario())
    sw, b = fab.nodes["S"], fab.nodes["B"]
    px = next(p for (n, p), (peer, _, _) in fab.wiring.items() if n is sw and peer.name == "X")
    rng = random.Random(2)
    for kind in fuzzpeer.KINDS:
        for i in range(30):
            d = fuzzpeer.make(rng, kind, i + 1, dlid=2, slid=4)
            where = fuzzpeer.EXPECT[kind]
            if where == "bad_datagrams":
                with pytest.raises(ValueError):         # not an ibemu datagram
                    unpack_shim(d)
                continue
            before = dict(sw.counters), dict(b.counters)
            sw.outbox.clear()
            sw.receive(px, bytearray(d[16:]), d[3] == 1, 1000 * i)
            if where.endswith("@dlid"):
                assert sw.counters == before[0], kind
                fwd = [f for _, f, lk, _ in sw.outbox if not lk] or \
                    [e.frame for q in sw.queues.values() for vq in q for e in vq]
                assert fwd, kind
                b.receive(1, bytearray(fwd[-1]), False, 1000 * i)
                b.wake(1000 * i + 10**7)
                grown = {k: v - before[1].get(k, 0) for k, v in b.counters.items() if v != before[1].get(k, 0)}
                assert grown == {where.split("@")[0]: 1}, (kind, grown)
                sw.clear_queues()
            else:
                grown = {k: v - before[0].get(k, 0) for k, v in sw.counters.items() if v != before[0].get(k, 0)}
                assert grown == {where: 1}, (kind, grown)


def test_a_hostile_peer_cannot_disturb_a_running_emulation(tmp_path):
    scn = fuzz_scenario()
    out = tmp_path / "run"
    # sync="free": the fuzzer does not speak the exact clock's protocol (an external
    # peer that does not must run free: the exact workers would wait for its promises)
    th, box = _start_run(dict(scn=scn, workers=2, dilation=250, out_dir=out, keep_parts=True,
                              progress=False, integrity=True, external=["X"], sync="free"))
    fuzzer = None
    try:
        amap = _wait_map(out / "parts" / "addresses.toml", box)
        fab = build_fabric(scn)
        sw = fab.nodes["S"]
        px = next(p for (n, p), (peer, _, _) in fab.wiring.items() if n is sw and peer.name == "X")
        bind, to = amap[("X", 1)], amap[("S", px)]
        fuzzer = subprocess.Popen(
            [sys.executable, "-m", "ibemu.runtime.fuzzpeer", "--bind", "%s:%d" % bind, "--to", "%s:%d" % to,
             "--dlid", "2", "--slid", "4", "--per-kind", "20", "--seed", "7", "--spacing", "0.002",
             "--key", str(out / "parts" / "key"), "--link", "X:1,S:%d" % px],
            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        stdout, stderr = fuzzer.communicate(timeout=60)
        assert fuzzer.returncode == 0, (stderr, th.join(60), box)
        report = json.loads(stdout)
    finally:
        if fuzzer is not None and fuzzer.poll() is None:
            fuzzer.kill()
            fuzzer.wait()
        th.join(120)
    assert not th.is_alive()
    assert "error" not in box, box.get("error")
    r = box["result"]
    assert r.completed and r.error is None                  # no worker crashed
    sent, expect = report["sent"], report["expect"]
    assert sum(sent.values()) == 20 * len(fuzzpeer.KINDS)
    print("fuzz datagrams sent at the running emulation: %s" % sent)

    # every bad datagram counted, where it belongs
    rt, c = r.runtime, r.counters
    assert rt["bad_datagrams"] == expect["bad_datagrams"]
    assert c["S"].get("PortRcvErrors", 0) == expect["PortRcvErrors"]
    assert c["S"].get("PortRcvSwitchRelayErrors", 0) == expect["PortRcvSwitchRelayErrors"]
    assert c["B"].get("PortRcvConstraintErrors", 0) == expect["PortRcvConstraintErrors@dlid"]
    for node in ("A", "C"):
        assert not {k: v for k, v in c.get(node, {}).items() if "Err" in k}, (node, c.get(node))
    ports = r.metrics.port_totals()
    label = "S:%d" % px
    assert ports[label]["PortRcvErrors"] == expect["PortRcvErrors"], ports[label]

    # ... and the flows delivered what they should, as if the fuzzer were not there
    assert verify(r.integrity, ud_flows={"bc"}) == []
    got = {f: len(r.integrity["received"][f]) for f in ("ab", "ca", "bc")}
    assert got == {"ab": 300, "ca": 200, "bc": 200}, got
    assert rt["datagrams_lost"] == 0 and rt["strangers"] == 0 and rt["forged"] == 0
    assert r.credit_problems == []
