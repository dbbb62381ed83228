"""ibemu's captures as the real tshark decodes them, with and without the Lua plugin.

Expected values are never hard-coded: every frame of :func:`ibemu.sample.sample_frames`
is parsed back with :func:`ibemu.wire.codec.parse` (or :func:`parse_link`) and the
fields tshark prints are compared with that.  The tests skip without tshark (fail under
IBEMU_REQUIRE_TSHARK=1, see conftest.py); the live-capture test also skips, saying
why, when capturing on ``lo`` is not permitted here.
"""
from __future__ import annotations

import ipaddress
import random
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ibemu.capture.erf import ErfPcapWriter
from ibemu.sample import sample_frames, write_sample
from ibemu.wire.codec import parse
from ibemu.wire.linkpkt import build_link, parse_link
from ibemu.runtime.syncproto import PHASE_A, PHASE_B, encode
from ibemu.wire.shim import (
    DEFAULT_PORT_BASE,
    KIND_LINK,
    KIND_PACKET,
    KIND_SYNC,
    MAX_SHIM_DEPTH,
    VERSION,
    pack_shim,
    seal,
)

pytestmark = pytest.mark.wireshark

PLUGIN = Path(__file__).resolve().parents[1] / "layers" / "wireshark" / "ibemu.lua"
LUA = ("-X", "lua_script:%s" % PLUGIN)
TIMEOUT = 20          # seconds, for every tshark run
START_NS, GAP_NS = 1_000, 2_068   # write_sample's defaults, reused for the UDP shim times
PS_PER_NS = 1_000                 # the shim carries picoseconds (version 2, issue 27)

OP_CNP = 0x80         # tshark 4.0 does not know it: no ICRC/VCRC fields for it


# ------------------------------------------------------------------ expected values

def _bswap(value: int, nbytes: int) -> int:
    return int.from_bytes(value.to_bytes(nbytes, "little"), "big")


def ib_expected(frame) -> dict:
    """tshark field -> expected value for an IB packet, from the codec's parse.

    A field whose header is absent maps to None (tshark prints nothing for it)."""
    f = parse(frame)
    aeth, reth, deth = f.ext.get("AETH"), f.ext.get("RETH"), f.ext.get("DETH")
    imm, grh = f.ext.get("ImmDt"), f.grh
    known = f.opcode != OP_CNP
    return {
        "infiniband.lrh.vl": f.vl,
        "infiniband.lrh.lver": f.lver,
        "infiniband.lrh.sl": f.sl,
        "infiniband.lrh.lnh": f.lnh,
        "infiniband.lrh.dlid": f.dlid,
        "infiniband.lrh.pktlen": f.pktlen,
        "infiniband.lrh.slid": f.slid,
        "infiniband.grh.ipver": grh and grh["ipver"],
        "infiniband.grh.tclass": grh and grh["tclass"],
        "infiniband.grh.flowlabel": grh and grh["flowlabel"],
        "infiniband.grh.paylen": grh and grh["paylen"],
        "infiniband.grh.nxthdr": grh and grh["nxthdr"],
        "infiniband.grh.hoplmt": grh and grh["hoplmt"],
        "infiniband.grh.sgid": grh and ipaddress.IPv6Address(grh["sgid"]),
        "infiniband.grh.dgid": grh and ipaddress.IPv6Address(grh["dgid"]),
        "infiniband.bth.opcode": f.opcode,
        "infiniband.bth.se": f.se,
        "infiniband.bth.m": f.m,
        "infiniband.bth.padcnt": f.padcnt,
        "infiniband.bth.tver": f.tver,
        "infiniband.bth.p_key": f.pkey,
        "infiniband.bth.destqp": f.destqp,
        "infiniband.bth.a": f.ackreq,
        "infiniband.bth.psn": f.psn,
        "infiniband.aeth.syndrome": aeth and aeth["syndrome"],
        "infiniband.aeth.msn": aeth and aeth["msn"],
        "infiniband.reth.va": reth and reth["va"],
        "infiniband.reth.r_key": reth and reth["r_key"],
        "infiniband.reth.dmalen": reth and reth["dma_len"],
        "infiniband.deth.q_key": deth and deth["q_key"],
        "infiniband.deth.srcqp": deth and deth["src_qp"],
        "infiniband.immdt": imm and imm["immdt"],
        # ICRC and VCRC go least significant byte first; tshark reads them the other way
        "infiniband.invariant.crc": _bswap(f.icrc, 4) if known else None,
        "infiniband.variant.crc": _bswap(f.vcrc, 2) if known else None,
    }


def cn_expected(frame) -> dict:
    f = parse(frame)
    return {"ibemu.fecn": f.fecn, "ibemu.becn": f.becn}


def link_expected(frame) -> dict:
    op, fctbs, vl, fccl, crc = parse_link(frame)
    return {"ibemu_link.op": op, "ibemu_link.fctbs": fctbs, "ibemu_link.vl": vl,
            "ibemu_link.fccl": fccl, "ibemu_link.lpcrc": crc, "ibemu_link.lpcrc_ok": 1}


IB_FIELDS = list(ib_expected(sample_frames()[0][2]))
CN_FIELDS = ["ibemu.fecn", "ibemu.becn"]
LINK_FIELDS = ["ibemu_link.op", "ibemu_link.fctbs", "ibemu_link.vl", "ibemu_link.fccl",
               "ibemu_link.lpcrc", "ibemu_link.lpcrc_ok"]
SHIM_FIELDS = ["ibemu.version", "ibemu.kind", "ibemu.depth", "ibemu.seq", "ibemu.time_ps"]
SYNC_FIELDS = ["ibemu.sync.phase", "ibemu.sync.step", "ibemu.sync.round", "ibemu.sync.a",
               "ibemu.sync.b", "ibemu.sync.c"]


def _value(field: str, text: str):
    """A value of tshark -T fields output, as the Python value the codec gives."""
    if text == "":
        return None
    if field.endswith("gid"):
        return ipaddress.IPv6Address(text)
    if field == "infiniband.immdt":      # FT_BYTES, printed as hex digits
        return int(text.replace(":", ""), 16)
    if field == "ibemu.tag":             # FT_BYTES too
        return bytes.fromhex(text.replace(":", ""))
    return int(text, 0)                  # decimal, 0x-hex, booleans as 0/1


# ------------------------------------------------------------------ tshark helpers

def fields(run_tshark, pcap, names, *extra) -> list[dict]:
    """One dict per frame: {"frame.number", "frame.protocols", name: value ...}."""
    args = ["-r", str(pcap), *extra, "-T", "fields", "-E", "occurrence=f",
            "-e", "frame.number", "-e", "frame.protocols"]
    for n in names:
        args += ["-e", n]
    rows = []
    for line in run_tshark(*args, timeout=TIMEOUT).splitlines():
        cols = line.split("\t")
        row = {"frame.number": int(cols[0]), "frame.protocols": cols[1].split(":")}
        row.update({n: _value(n, c) for n, c in zip(names, cols[2:])})
        rows.append(row)
    return rows


def selected(run_tshark, pcap, dfilter, *extra) -> set[int]:
    """Frame numbers matching a display filter."""
    out = run_tshark("-r", str(pcap), *extra, "-Y", dfilter, "-T", "fields",
                     "-e", "frame.number", timeout=TIMEOUT)
    return {int(x) for x in out.split()}


def numbered(sample):
    """[(frame number, label, link, frame)] -- tshark numbers frames from 1."""
    return [(i + 1, label, link, frame) for i, (label, link, frame) in enumerate(sample)]


def shim_time_ps(i: int) -> int:
    """The shim time of the sample's frame *i*: write_sample's time, in picoseconds, plus
    *i* ps so that a reading in ns (the old version) or a dropped digit shows."""
    return (START_NS + i * GAP_NS) * PS_PER_NS + i


def shim_depth(i: int) -> int:
    """The depth the sample's frame *i* carries: every value of the 6 bits in turn."""
    return (i * 7) % (MAX_SHIM_DEPTH + 1)


def udp_datagrams(sample):
    """(shim + frame) payloads, one per sample frame: seq = index, time as write_sample."""
    return [pack_shim(KIND_LINK if link else KIND_PACKET, i, shim_time_ps(i), depth=shim_depth(i))
            + bytes(frame) for i, (_, link, frame) in enumerate(sample)]


def write_udp_pcap(path, sample, sport=DEFAULT_PORT_BASE, dport=DEFAULT_PORT_BASE + 1):
    """A loopback-style capture (Ethernet/IPv4/UDP) of the sample's datagrams."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap
    pkts = []
    for i, payload in enumerate(udp_datagrams(sample)):
        p = (Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00")
             / IP(src="127.0.0.1", dst="127.0.0.1") / UDP(sport=sport, dport=dport) / Raw(payload))
        p.time = 1 + i * 1e-6
        pkts.append(p)
    wrpcap(str(path), pkts)


def check_plugin_rows(rows, sample, shim: bool):
    """Every frame decoded by the plugin as the codec built it."""
    assert len(rows) == len(sample)
    for (num, label, link, frame), row in zip(numbered(sample), rows):
        assert row["frame.number"] == num
        protos = row["frame.protocols"]
        if link:
            assert protos[-1] == "ibemu_link", (label, protos)
            got = {k: row[k] for k in LINK_FIELDS}
            assert got == link_expected(frame), label
            assert all(row[k] is None for k in IB_FIELDS + CN_FIELDS), label
        else:
            assert "infiniband" in protos, (label, protos)
            want = {**ib_expected(frame), **cn_expected(frame)}
            assert {k: row[k] for k in want} == want, label
        if shim:
            i = num - 1
            assert "ibemu" in protos, (label, protos)
            assert {k: row[k] for k in SHIM_FIELDS} == {
                "ibemu.version": VERSION, "ibemu.kind": KIND_LINK if link else KIND_PACKET,
                "ibemu.depth": shim_depth(i), "ibemu.seq": i, "ibemu.time_ps": shim_time_ps(i)}, label


def check_cn_filters(run_tshark, pcap, sample, *extra):
    ib = [(n, parse(fr)) for n, _, link, fr in numbered(sample) if not link]
    fecn = {n for n, f in ib if f.fecn}
    becn = {n for n, f in ib if f.becn}
    assert fecn and becn, "the sample should hold FECN- and BECN-marked frames"
    assert selected(run_tshark, pcap, "ibemu.fecn == 1", *LUA, *extra) == fecn
    assert selected(run_tshark, pcap, "ibemu.becn == 1", *LUA, *extra) == becn
    assert selected(run_tshark, pcap, "ibemu.fecn == 0", *LUA, *extra) == {n for n, _ in ib} - fecn


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def erf_sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("ws") / "sample.pcap"
    return path, write_sample(path)


@pytest.fixture(scope="module")
def udp_sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("ws") / "udp.pcap"
    sample = sample_frames()
    write_udp_pcap(path, sample)
    return path, sample


# ------------------------------------------------------------------ stock tshark

def test_stock_tshark_decodes_ib_packets(run_tshark, erf_sample):
    pcap, sample = erf_sample
    rows = fields(run_tshark, pcap, IB_FIELDS)
    assert len(rows) == len(sample)
    checked = set()
    for (num, label, link, frame), row in zip(numbered(sample), rows):
        if link:
            continue
        assert "infiniband" in row["frame.protocols"], label
        want = ib_expected(frame)
        assert {k: row[k] for k in want} == want, label
        checked.add(label)
    # the sample exercises every extension header checked above
    for name in ("AETH", "RETH", "DETH", "ImmDt"):
        assert any(name in parse(fr).ext for _, link, fr in sample if not link), name
    assert any(parse(fr).grh for _, link, fr in sample if not link)
    assert len(checked) == sum(1 for _, link, _ in sample if not link)


def test_stock_tshark_no_malformed_ib_packet(run_tshark, erf_sample):
    pcap, sample = erf_sample
    links = {n for n, _, link, _ in numbered(sample) if link}
    # tshark 4.0's infiniband_link reports link packets malformed; IB packets never are
    assert selected(run_tshark, pcap, "_ws.malformed") <= links
    assert selected(run_tshark, pcap, "_ws.expert.severity == error") <= links


# ------------------------------------------------------------------ plugin, ERF capture

def test_plugin_loads_cleanly(tshark, erf_sample):
    pcap, _ = erf_sample
    r = subprocess.run([tshark, *LUA, "-r", str(pcap), "-q"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert "lua" not in r.stderr.lower(), r.stderr


def test_plugin_erf_fields(run_tshark, erf_sample):
    pcap, sample = erf_sample
    rows = fields(run_tshark, pcap, IB_FIELDS + CN_FIELDS + LINK_FIELDS, *LUA)
    check_plugin_rows(rows, sample, shim=False)


def test_plugin_erf_no_malformed(run_tshark, erf_sample):
    pcap, sample = erf_sample
    assert selected(run_tshark, pcap, "_ws.malformed || _ws.lua.error", *LUA) == set()
    assert selected(run_tshark, pcap, "_ws.expert.severity >= warning", *LUA) == set()
    links = {n for n, _, link, _ in numbered(sample) if link}
    assert selected(run_tshark, pcap, "ibemu_link", *LUA) == links
    assert selected(run_tshark, pcap, "infiniband_link", *LUA) == set()


def test_plugin_names_the_adaptive_routing_notification(run_tshark, erf_sample):
    """ibemu's own link packet (op 2, issue 31): the Info column names it and its DLID."""
    pcap, sample = erf_sample
    arn = {n for n, label, link, _ in numbered(sample) if link and label.startswith("LINK arn")}
    assert len(arn) == 1
    assert selected(run_tshark, pcap, "ibemu_link.op == 2", *LUA) == arn
    out = run_tshark("-r", str(pcap), *LUA, "-Y", "ibemu_link.op == 2", timeout=TIMEOUT)     # summary lines
    assert len(out.strip().splitlines()) == 1, out
    assert out.rstrip().endswith("Adaptive Routing Notification, DLID %d" % 0x1234), out


def test_plugin_erf_fecn_becn_filters(run_tshark, erf_sample):
    pcap, sample = erf_sample
    check_cn_filters(run_tshark, pcap, sample)


def test_plugin_link_crc_and_length(run_tshark, tmp_path):
    """A wrong LPCRC is flagged (not malformed); a truncated link packet is malformed."""
    good = build_link(0, 7, 2, 99)
    bad = build_link(0, 7, 2, 99, crc=0x1234)
    pcap = tmp_path / "links.pcap"
    with ErfPcapWriter(pcap) as w:
        w.write(1000, good, link=True)
        w.write(2000, bad, link=True)
        w.write(3000, good[:4], link=True)
    rows = fields(run_tshark, pcap, LINK_FIELDS, *LUA)
    assert [r["ibemu_link.lpcrc_ok"] for r in rows[:2]] == [1, 0]
    assert rows[1]["ibemu_link.lpcrc"] == 0x1234
    assert selected(run_tshark, pcap, "_ws.expert.group == checksum", *LUA) == {2}
    assert selected(run_tshark, pcap, "_ws.malformed", *LUA) == {3}
    assert selected(run_tshark, pcap, "_ws.lua.error", *LUA) == set()


# ------------------------------------------------------------------ plugin, UDP capture

def test_plugin_udp_heuristic(run_tshark, udp_sample):
    pcap, sample = udp_sample
    rows = fields(run_tshark, pcap, IB_FIELDS + CN_FIELDS + LINK_FIELDS + SHIM_FIELDS, *LUA)
    check_plugin_rows(rows, sample, shim=True)
    assert selected(run_tshark, pcap, "_ws.malformed || _ws.lua.error", *LUA) == set()
    check_cn_filters(run_tshark, pcap, sample)


def test_plugin_udp_decode_as_and_rejects_others(run_tshark, tmp_path):
    """Decode As selects the shim on a port a built-in dissector owns (DNP3's 20000);
    a datagram without the shim's magic is left to the others, with or without it."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap
    sample = sample_frames()[:2]
    port = 20000
    payloads = udp_datagrams(sample) + [b"iX" + bytes(30)]
    pkts = [Ether() / IP(src="127.0.0.1", dst="127.0.0.1") / UDP(sport=port, dport=port) / Raw(d)
            for d in payloads]
    pcap = tmp_path / "decode_as.pcap"
    wrpcap(str(pcap), pkts)
    for extra in ((), ("-d", "udp.port==%d,ibemu" % port)):
        assert selected(run_tshark, pcap, "ibemu", *LUA, *extra) == {1, 2}, extra
        rows = fields(run_tshark, pcap, CN_FIELDS, *LUA, *extra)
        assert [r["ibemu.fecn"] for r in rows] == [0, 1, None], extra
        assert selected(run_tshark, pcap, "_ws.malformed && ibemu", *LUA, *extra) == set()


def test_plugin_udp_sync_messages(run_tshark, tmp_path):
    """Kind 2, the exact clock's synchronisation messages: shown as ibemu.sync.* with
    the values syncproto encoded, never handed to the InfiniBand dissector, with or
    without the MAC tag; a version-1 shim is no longer taken for ibemu's."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap
    key = bytes(range(32))
    msgs = [(PHASE_A, 0, 3, 17, 0, 0), (PHASE_B, 2, 3, 123_456_789, 42, 0b1011)]
    payloads = [pack_shim(KIND_SYNC, 0, 0) + encode(ph, rnd, a, b, c, step)
                for ph, step, rnd, a, b, c in msgs]
    payloads.append(seal(key, payloads[1]))                         # as the runtime sends it
    v1 = bytearray(pack_shim(KIND_PACKET, 5, 6) + bytes(sample_frames()[0][2]))
    v1[2] = 1
    payloads.append(bytes(v1))
    pkts = [Ether() / IP(src="127.0.0.1", dst="127.0.0.1")
            / UDP(sport=DEFAULT_PORT_BASE, dport=DEFAULT_PORT_BASE + 1) / Raw(d) for d in payloads]
    pcap = tmp_path / "sync.pcap"
    wrpcap(str(pcap), pkts)
    rows = fields(run_tshark, pcap, ["ibemu.kind", "ibemu.tag", "infiniband.lrh.vl"] + SYNC_FIELDS, *LUA)
    assert len(rows) == 4
    for row, (ph, step, rnd, a, b, c) in zip(rows, msgs + [msgs[1]]):
        assert "ibemu" in row["frame.protocols"], row
        assert "infiniband" not in row["frame.protocols"], row
        assert row["ibemu.kind"] == KIND_SYNC and row["infiniband.lrh.vl"] is None, row
        assert [row[k] for k in SYNC_FIELDS] == [ph, step, rnd, a, b, c], row
    assert [r["ibemu.tag"] is not None for r in rows[:3]] == [False, False, True]
    assert selected(run_tshark, pcap, "ibemu", *LUA) == {1, 2, 3}       # not the version-1 one
    assert selected(run_tshark, pcap, "_ws.malformed || _ws.lua.error", *LUA) == set()
    assert selected(run_tshark, pcap, "_ws.expert.severity >= warning", *LUA) == set()


def test_scapy_dissects_udp_capture(udp_sample):
    from scapy.layers.inet import IP, UDP
    from scapy.utils import rdpcap

    from ibemu.layers import BTH, GRH, LRH, IBEmu, IBLink
    pcap, sample = udp_sample
    pkts = rdpcap(str(pcap))
    assert len(pkts) == len(sample)
    for i, (p, (label, link, frame)) in enumerate(zip(pkts, sample)):
        assert IP in p and UDP in p and IBEmu in p, label
        shim = p[IBEmu]
        assert (shim.magic, shim.version, shim.kind, shim.depth, shim.seq, shim.time_ps) == \
            (b"iB", VERSION, int(link), shim_depth(i), i, shim_time_ps(i)), label
        if link:
            op, fctbs, vl, fccl, crc = parse_link(frame)
            lp = p[IBLink]
            assert (lp.op, lp.fctbs, lp.vl, lp.fccl, lp.lpcrc) == (op, fctbs, vl, fccl, crc), label
            continue
        f = parse(frame)
        lrh, bth = p[LRH], p[BTH]
        assert bytes(lrh) == bytes(frame), label
        assert (lrh.dlid, lrh.slid, lrh.lnh, lrh.pktlen, lrh.vcrc) == \
            (f.dlid, f.slid, f.lnh, f.pktlen, f.vcrc), label
        assert (bth.opcode, bth.destqp, bth.psn, bth.fecn, bth.becn, bth.icrc) == \
            (f.opcode, f.destqp, f.psn, f.fecn, f.becn, f.icrc), label
        assert (GRH in p) == (f.grh is not None), label


# ------------------------------------------------------------------ live capture on lo

_NO_PERMISSION = ("permission", "not permitted", "couldn't run dumpcap", "no interfaces",
                  "no such device", "capabilit", "you don't have")


def _bind_pair():
    """Two UDP sockets on 127.0.0.1, on free ports of ibemu's range that no built-in
    dissector claims (18600-18999)."""
    socks = []
    for port in random.sample(range(DEFAULT_PORT_BASE, 19000), 40):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        socks.append(s)
        if len(socks) == 2:
            return socks
    for s in socks:
        s.close()
    pytest.skip("no free UDP port pair in %d-18999" % DEFAULT_PORT_BASE)


def test_live_loopback_capture(tshark, run_tshark, tmp_path):
    sample = sample_frames()
    tx, rx = _bind_pair()
    rx.settimeout(5)
    out, err = tmp_path / "live.pcapng", tmp_path / "tshark.err"
    sport, dport = tx.getsockname()[1], rx.getsockname()[1]
    cmd = [tshark, "-i", "lo", "-f", "udp and src port %d and dst port %d" % (sport, dport),
           "-c", str(len(sample)), "-a", "duration:10", "-w", str(out)]
    try:
        with open(err, "w") as errf:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errf)
        try:
            # dumpcap creates the file once the device is open and the filter set
            deadline = time.monotonic() + 8
            while not (out.exists() and out.stat().st_size > 0):
                if proc.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if proc.poll() is not None and proc.returncode != 0:
                reason = err.read_text().strip()
                why = [ln.strip() for ln in reason.splitlines()
                       if any(k in ln.lower() for k in _NO_PERMISSION)]
                if why:
                    why.sort(key=lambda ln: "permission" not in ln.lower())
                    pytest.skip("live capture on lo not permitted here: %s" % why[0])
                pytest.fail("tshark -i lo failed: %s" % reason)
            assert out.exists(), "tshark did not start capturing: %s" % err.read_text()
            time.sleep(0.2)
            for payload in udp_datagrams(sample):
                tx.sendto(payload, rx.getsockname())
            got = [rx.recv(65535) for _ in sample]   # the datagrams really went through lo
            assert got == udp_datagrams(sample)
            proc.wait(timeout=12)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        tx.close()
        rx.close()
    rows = fields(run_tshark, out, IB_FIELDS + CN_FIELDS + LINK_FIELDS + SHIM_FIELDS, *LUA)
    check_plugin_rows(rows, sample, shim=True)
    assert selected(run_tshark, out, "_ws.malformed || _ws.lua.error", *LUA) == set()
