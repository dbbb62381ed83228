"""Issue 14 items 1, 2 and 9 (the hostile peer): authenticated datagrams, the replay
window, the key's hand-over and key files, the FCCL sanity check at the node, and a
wall-clock run under an attacker forging its peers' source addresses from a raw socket.

The wall runs are about 2 s of wall time each plus the workers' start; ports come from
``free_port_block`` above the other tests' ranges.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.errors import UserError
from ibemu.fabric.qp import NAK_PSN_SEQ
from ibemu.runtime.addrmap import assign, key_path, port_keys, read_key, read_map, write_key
from ibemu.runtime.controller import run_wall
from ibemu.runtime.delivery import MAX_AHEAD, REPLAY_WINDOW, SeqCheck
from ibemu.runtime.loop import NodeLoop
from ibemu.runtime.report import format_runtime_line
from ibemu.runtime.sockets import free_port_block
from ibemu.scenario import load_scenario
from ibemu.wire import codec
from ibemu.wire import opcodes as OP
from ibemu.wire.linkpkt import OP_NORMAL, build_link
from ibemu.wire.shim import KIND_LINK, KIND_PACKET, TAG_LEN, link_key, pack_shim, seal, tag, verify

ROOT = Path(__file__).resolve().parent.parent
KEY = bytes(range(32))


# ---------------------------------------------------------------- the MAC

def test_a_tag_authenticates_shim_and_frame_on_one_directed_link_only():
    ab, ba = link_key(KEY, "A:1", "B:1"), link_key(KEY, "B:1", "A:1")
    assert ab != ba and ab != link_key(bytes(32), "A:1", "B:1")
    d = pack_shim(KIND_PACKET, 7, 1000) + bytes(codec.build(dlid=2, slid=1, opcode=OP.RC_SEND_ONLY,
                                                            destqp=2, payload=bytes(64)))
    sealed = seal(ab, d)
    assert len(sealed) == len(d) + TAG_LEN and 8 <= TAG_LEN <= 16 and sealed[-TAG_LEN:] == tag(ab, d)
    assert verify(ab, sealed)
    assert not verify(ba, sealed)                       # recorded on one link, replayed on another
    for i in (0, 5, 17, len(d) - 1, len(sealed) - 1):   # any bit of shim, frame or tag
        bad = bytearray(sealed)
        bad[i] ^= 0x10
        assert not verify(ab, bad), i
    assert not verify(ab, sealed[:TAG_LEN - 1])
    with pytest.raises(ValueError):
        link_key(b"short", "A:1", "B:1")


# ---------------------------------------------------------------- the replay window

def test_replay_window_rejects_replays_and_far_numbers_and_bounds_the_loss_count():
    s = SeqCheck()
    assert all(s.update(q) for q in (1, 2, 3, 6))           # 4 and 5 lost
    assert (s.lost, s.received) == (2, 4)
    assert s.update(5) and (s.lost, s.late) == (1, 1)       # late, once
    assert not s.update(5) and not s.update(3)              # replays
    assert not s.update(6)
    assert not s.update(6 + (1 << 31))                      # defect 2: a seq 2^31 ahead
    assert not s.update(7 + MAX_AHEAD)                      # just past the window ahead
    assert (s.lost, s.late, s.received) == (1, 1, 5)        # nothing of that counted
    assert s.update(7 + MAX_AHEAD - 1)                      # the largest jump accepted
    assert s.lost == 1 + MAX_AHEAD - 1                      # bounded by the window
    top = 7 + MAX_AHEAD - 1
    assert not s.update(top - REPLAY_WINDOW)                # just behind the window
    assert s.update(top - REPLAY_WINDOW + 1)                # the oldest still accepted
    assert not s.update(top - REPLAY_WINDOW + 1)


def test_replay_window_works_across_the_32_bit_wrap():
    s = SeqCheck()
    s.expect = 0xFFFFFFFE
    for q in (0xFFFFFFFE, 0xFFFFFFFF, 0, 2):
        assert s.update(q)
    assert s.lost == 1 and not s.update(0xFFFFFFFF) and s.update(1) and s.lost == 0


# ---------------------------------------------------------------- at the socket

def _port_loop(key):
    """Quickstart's switch S alone in a NodeLoop (the HCAs' addresses are free for the
    test to send from, i.e. the test *is* the peer's address)."""
    scn = load_scenario("scenarios/quickstart.toml")
    fab = build_fabric(scn)
    keys = port_keys(fab)
    amap = assign(fab, lambda n: "127.0.0.1", free_port_block("127.0.0.1", len(keys), 23800))
    loop = NodeLoop([fab.nodes["S"]], fab.wiring, amap, 100, scn.duration, key=key)
    return fab, amap, loop


def test_forged_replayed_and_out_of_window_datagrams_never_reach_the_node():
    fab, amap, loop = _port_loop(KEY)
    try:
        ps = next(p for p in loop.sockets if p.index == 1)
        peer, pport, _ = fab.wiring[(fab.nodes["S"], 1)]
        me, them = "S:1", "%s:%d" % (peer.name, pport)
        good_key = link_key(KEY, them, me)
        fcp = build_link(OP_NORMAL, 0, 0, 4)
        send = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        send.bind(amap[(peer.name, pport)])          # the configured peer's own address
        plan = [
            (seal(good_key, pack_shim(KIND_LINK, 1, 0) + fcp), "delivered"),
            (seal(good_key, pack_shim(KIND_LINK, 1, 0) + fcp), "forged"),          # replay
            (pack_shim(KIND_LINK, 2, 0) + fcp + bytes(TAG_LEN), "forged"),          # no key
            (seal(link_key(KEY, me, them), pack_shim(KIND_LINK, 2, 0) + fcp), "forged"),  # other way
            (seal(link_key(bytes(32), them, me), pack_shim(KIND_LINK, 2, 0) + fcp), "forged"),
            (seal(good_key, pack_shim(KIND_LINK, 2 + (1 << 31), 0) + fcp), "forged"),  # 2^31 ahead
            (b"iB", "forged"),                                                      # too short for a tag
            (seal(good_key, b"xx"), "bad"),                                         # authentic, no shim
            (seal(good_key, pack_shim(KIND_LINK, 3, 0) + fcp), "delivered"),        # 2 lost
        ]
        try:
            for d, _ in plan:
                send.sendto(d, ps.addr)
            time.sleep(0.05)
            heap_before = len(loop.sched.heap)
            assert loop.io.drain(ps, bytearray(65536)) == 2
        finally:
            send.close()
        assert len(loop.sched.heap) - heap_before == 2
        c = loop.io.counters()
        assert c["forged"] == ps.forged == sum(w == "forged" for _, w in plan) == 6
        assert c["forged_by_port"] == {"S:1": 6}
        assert c["bad_datagrams"] == 1 and c["strangers"] == 0
        assert c["datagrams_received"] == 2 and c["datagrams_lost"] == 1    # seq 2 only
    finally:
        loop.close()


def test_unauthenticated_mode_is_for_the_benchmark_only():
    """NO_MAC: no tag sent, none checked (the benchmark's side-by-side figure)."""
    from ibemu.runtime.delivery import NO_MAC
    fab, amap, loop = _port_loop(NO_MAC)
    try:
        assert all(p.tx_key is None and p.rx_key is None for p in loop.sockets)
    finally:
        loop.close()
    _, _, loop = _port_loop(None)                   # default: a fresh key, authenticated
    try:
        assert all(p.tx_key and p.rx_key and p.tx_key != p.rx_key for p in loop.sockets)
    finally:
        loop.close()


# ---------------------------------------------------------------- key files

def test_key_file_is_owner_only_and_others_are_refused(tmp_path):
    k = tmp_path / "run.key"
    write_key(k, KEY)
    assert os.stat(k).st_mode & 0o777 == 0o600
    assert read_key(k) == KEY
    for mode in (0o640, 0o604, 0o620):
        os.chmod(k, mode)
        with pytest.raises(UserError) as e:
            read_key(k)
        assert "owner-only" in str(e.value) and "\n" not in str(e.value)
    os.chmod(k, 0o600)
    k.write_text("not hex\n")
    with pytest.raises(UserError, match="hex digits"):
        read_key(k)
    fifo = tmp_path / "fifo.key"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(UserError, match="not a regular file"):
        read_key(fifo)


def test_ibemu_node_make_map_writes_a_key_and_node_refuses_a_readable_one(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    amap = tmp_path / "map.toml"
    r = subprocess.run([sys.executable, "-m", "ibemu", "node", "quickstart", "--make-map", str(amap)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    kfile = key_path(amap)
    assert os.stat(kfile).st_mode & 0o777 == 0o600 and len(read_key(kfile)) == 32
    os.chmod(kfile, 0o644)
    r = subprocess.run([sys.executable, "-m", "ibemu", "node", "quickstart", "--map", str(amap),
                        "--nodes", "S", "--start-at", "+1"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2                             # a usage error, as for a missing map
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "owner-only" in lines[0] and "Traceback" not in r.stderr, r.stderr


# ---------------------------------------------------------------- FCCL sanity at the node

def test_a_credit_grant_beyond_the_peers_buffer_is_ignored_and_counted():
    fab = build_fabric(load_scenario("scenarios/quickstart.toml"))
    h1 = fab.nodes["H1"]
    sw, sport, _ = fab.wiring[(h1, 1)]
    port = h1.ports[1]
    tx = port.tx[0]
    cap = sw.ports[sport].rx[0].capacity                 # what S's buffer can ever grant
    assert tx.limit == cap
    h1.receive_link(port, build_link(OP_NORMAL, 0, 0, cap), 0)
    assert tx.fccl == cap and not h1.counters
    bogus = (tx.fctbs + cap + 1500) & 0xFFF             # the attack: 1,500 extra blocks
    assert h1.receive_link(port, build_link(OP_NORMAL, 0, 0, bogus), 10) is None
    assert tx.fccl == cap                                # ignored whole
    assert h1.counters == {"PortRcvErrors": 1, "FCCLBeyondBuffer": 1}
    assert h1.receive_link(port, build_link(OP_NORMAL, 0, 0, (cap + 1) & 0xFFF), 20) is None
    assert h1.counters["FCCLBeyondBuffer"] == 2
    tx.sent(cap)                                         # a grant behind FCTBS: in flight, fine
    assert h1.receive_link(port, build_link(OP_NORMAL, 0, 0, cap - 5), 30) == 0
    assert tx.fccl == cap - 5 and h1.counters["FCCLBeyondBuffer"] == 2


# ---------------------------------------------------------------- the attacker (raw socket)

def udp_bound(port: int) -> bool:
    """Is UDP *port* bound on this machine (Linux: /proc/net/udp)?"""
    with open("/proc/net/udp") as f:
        next(f)
        return any(int(line.split()[1].split(":")[1], 16) == port for line in f)


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def forged_udp(src: tuple[str, int], dst: tuple[str, int], payload: bytes) -> bytes:
    """An IPv4 + UDP datagram with source address *src* (for an IPPROTO_RAW socket)."""
    udp = struct.pack("!HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, socket.IPPROTO_UDP, 0,
                     socket.inet_aton(src[0]), socket.inet_aton(dst[0]))
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return ip + udp


def raw_socket():
    """An IPPROTO_RAW socket, or pytest.skip with the reason."""
    if os.geteuid() != 0:
        pytest.skip("forging source addresses needs a raw socket: run as root (CI does)")
    try:
        return socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    except PermissionError as e:
        pytest.skip("no raw socket even as root (%s): a container without CAP_NET_RAW" % e)


def attack_datagrams(fab, key, dlid_of):
    """What the attacker sends to one port: the issue's attacks, each a well-formed
    shim and frame, without the key (a made-up tag): flow-control packets granting
    1,500 extra blocks, NAKs, out-of-sequence SENDs, one seq 2^31 ahead, and a plain
    copy without any tag."""
    out = []
    for i in range(10):
        out.append(pack_shim(KIND_LINK, 100 + i, 0) + build_link(OP_NORMAL, 0, 0, 1500 + i) + os.urandom(TAG_LEN))
        nak = codec.build(dlid=dlid_of, slid=3, opcode=OP.RC_ACKNOWLEDGE, psn=i, destqp=2,
                          ext={"AETH": {"syndrome": NAK_PSN_SEQ, "msn": 0}})
        out.append(pack_shim(KIND_PACKET, 200 + i, 0) + bytes(nak) + os.urandom(TAG_LEN))
        send = codec.build(dlid=dlid_of, slid=1, opcode=OP.RC_SEND_ONLY, destqp=2, psn=5000 + i,
                           payload=bytes(512))
        out.append(pack_shim(KIND_PACKET, 300 + i, 0) + bytes(send) + os.urandom(TAG_LEN))
    out.append(pack_shim(KIND_LINK, 1 << 31, 0) + build_link(OP_NORMAL, 0, 0, 7))
    return out


ALL_LINKS_CUT = [["H1", "H2", "H3"], ["S"]]
"""The quick-start's nodes on two workers so that every link is a cut link: under the
exact clock (the default) only the sockets of cut links are read; a link inside one
worker is routed in memory and its sockets are never read, so a forgery sent to them
would be neither delivered nor counted."""


def _run_quickstart(out, attack=None):
    scn = load_scenario("scenarios/quickstart.toml", ['scenario.duration="2ms"'])
    box = {}

    def target():
        try:
            box["result"] = run_wall(scn, place=ALL_LINKS_CUT, dilation=1000, out_dir=out, keep_parts=True,
                                     progress=False, port_base=free_port_block("127.0.0.1", 16, 24600))
        except BaseException as e:          # noqa: BLE001 - reported by the test
            box["error"] = e
    th = threading.Thread(target=target, daemon=True)
    th.start()
    sent = {}
    try:
        if attack is not None:
            sent = attack(scn, out / "parts" / "addresses.toml", box)
    finally:
        th.join(120)
    assert not th.is_alive() and "error" not in box, box.get("error")
    return box["result"], sent


def test_a_forging_attacker_does_not_change_the_run_and_is_counted(tmp_path):
    """Acceptance: the quick-start scenario on two workers, once undisturbed, once with
    an attacker that forges every port's peer address (raw socket) and sends the
    issue's attacks; the same flow throughputs and every forgery counted at its port."""
    raw = raw_socket()

    def attack(scn, mapfile, box):
        t_end = time.monotonic() + 30
        while not mapfile.exists():
            assert "error" not in box and time.monotonic() < t_end
            time.sleep(0.02)
        time.sleep(0.05)
        amap = read_map(mapfile)
        while not all(udp_bound(a[1]) for a in amap.values()):     # else the kernel drops them
            assert "error" not in box and time.monotonic() < t_end
            time.sleep(0.02)
        fab = build_fabric(scn)
        lids = {n: fab.nodes[n].lid for n in ("H1", "H2", "H3")}
        sent = {}
        for rnd in range(4):                # spread over the first 1.5 s of the 2 s run
            for (node, port), (peer, pport, _) in ((k, v) for k, v in fab.wiring.items()):
                key = (node.name, port)
                dlid = lids.get(node.name, lids["H3"])
                for d in attack_datagrams(fab, None, dlid)[rnd::4]:
                    raw.sendto(forged_udp(tuple(amap[(peer.name, pport)]), tuple(amap[key]), d),
                               (amap[key][0], 0))
                    sent["%s:%d" % key] = sent.get("%s:%d" % key, 0) + 1
            time.sleep(0.35)
        return sent

    try:
        calm, _ = _run_quickstart(tmp_path / "calm")
        hit, sent = _run_quickstart(tmp_path / "hit", attack)
    finally:
        raw.close()
    for r in (calm, hit):
        assert r.completed and r.runtime["datagrams_lost"] == 0     # (greedy flows: buffers stay full)
    rt = hit.runtime
    by_port = {}
    for w in rt["workers"]:
        by_port.update(w["forged_by_port"])
    assert by_port == sent and rt["forged"] == sum(sent.values()) == 6 * 31
    assert rt["strangers"] == 0 and rt["bad_datagrams"] == 0
    assert calm.runtime["forged"] == 0
    assert "%d forged" % rt["forged"] in format_runtime_line(rt)
    res = json.loads((tmp_path / "hit" / "results.json").read_text())
    assert res["extra"]["runtime"]["forged"] == rt["forged"]
    # nothing reached a node: no errors, no overruns, and the same throughputs
    errors = {(n, k): v for n, c in hit.counters.items() for k, v in c.items() if "Err" in k or "Overrun" in k}
    assert not errors, errors
    for f in ("f1", "f2"):
        a, b = calm.metrics.flow_totals(f)[0], hit.metrics.flow_totals(f)[0]
        print("flow %s: %d bytes undisturbed, %d under attack" % (f, a, b))
        assert b == pytest.approx(a, rel=0.25), f
    total = [sum(r.metrics.flow_totals(f)[0] for f in ("f1", "f2")) for r in (calm, hit)]
    assert total[1] == pytest.approx(total[0], rel=0.05)
