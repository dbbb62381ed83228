"""pcapng captures with one interface per directed link, and the snap length (issue 18
items 1 and 2): the writer read back by an independent block parser, a run's frames on
the link they were sent on, the wall clock's merged capture, and tshark on the README
main command's capture (the same scenario and options, a shorter emulated time)."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ibemu.capture.erf import ERF_TYPE_INFINIBAND, ERF_TYPE_INFINIBAND_LINK, LINKTYPE_ERF, read_erf_pcap
from ibemu.capture.pcapng import CaptureError, PcapngWriter, read_capture
from ibemu.run import run_virtual
from ibemu.runtime.merge import merge_captures
from ibemu.scenario import load_scenario
from ibemu.wire import codec

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "layers" / "wireshark" / "ibemu.lua"
ERF = 16


def parse_blocks(path: Path) -> tuple[list[dict], list[dict]]:
    """An independent reading of a little-endian pcapng file (draft-ietf-opsawg-pcapng):
    the interfaces (link type, options) and the enhanced packet blocks."""
    data = path.read_bytes()
    ifaces, packets, off = [], [], 0
    while off < len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        assert blen % 4 == 0 and struct.unpack_from("<I", data, off + blen - 4)[0] == blen
        if btype == 0x0A0D0D0A:
            assert struct.unpack_from("<IHH", data, off + 8) == (0x1A2B3C4D, 1, 0)
        elif btype == 1:
            linktype, _, snap = struct.unpack_from("<HHI", data, off + 8)
            opts, o = {}, off + 16
            while True:
                code, ln = struct.unpack_from("<HH", data, o)
                if code == 0:
                    break
                opts[code] = data[o + 4: o + 4 + ln]
                o += 4 + ln + (-ln % 4)
            ifaces.append({"linktype": linktype, "snaplen": snap, "name": opts[2].decode(), "tsresol": opts[9][0]})
        elif btype == 6:
            iface, hi, lo, cap, orig = struct.unpack_from("<IIIII", data, off + 8)
            body = data[off + 28: off + 28 + cap]
            rtype = body[8]
            rlen, _, wlen = struct.unpack_from(">HHH", body, 10)
            packets.append({"iface": iface, "ns": (hi << 32) | lo, "cap": cap, "orig": orig, "rtype": rtype,
                            "rlen": rlen, "wlen": wlen, "frame": body[ERF:], "block": blen})
        off += blen
    return ifaces, packets


def test_writer_round_trip_with_and_without_snap(tmp_path):
    frames = [(1_000 * i + 5, bytes(range(256)) * (i % 5) + bytes([i]) * (i % 7 + 6), i % 4 == 0, i % 3)
              for i in range(40)]
    for snap in (None, 64):
        p = tmp_path / ("c%s.pcapng" % snap)
        with PcapngWriter(p, ["inter", "L1->B", "B->L1"], snaplen=snap) as w:
            for t, f, link, iface in frames:
                w.write(t, f, link, iface)
        ifaces, packets = parse_blocks(p)
        assert [i["name"] for i in ifaces] == ["inter", "L1->B", "B->L1"]
        assert all(i["linktype"] == LINKTYPE_ERF and i["tsresol"] == 9 for i in ifaces)
        assert all(i["snaplen"] == (0 if snap is None else ERF + snap) for i in ifaces)
        assert len(packets) == len(frames)
        for (t, f, link, iface), pk in zip(frames, packets):
            keep = len(f) if snap is None else min(snap, len(f))
            assert (pk["iface"], pk["ns"]) == (iface, t)
            assert (pk["cap"], pk["orig"]) == (ERF + keep, ERF + len(f))
            assert (pk["rlen"], pk["wlen"]) == (ERF + keep, len(f))
            assert pk["rtype"] & 0x7F == (ERF_TYPE_INFINIBAND_LINK if link else ERF_TYPE_INFINIBAND)
            assert pk["frame"] == f[:keep]
        back = list(read_capture(p))
        assert [(r.time_ns, r.link, r.frame, r.length, r.interface) for r in back] == [
            (t, link, f[:len(f) if snap is None else snap], len(f), ["inter", "L1->B", "B->L1"][i])
            for t, f, link, i in frames]
        assert [(t, lk, fr) for t, lk, fr in read_erf_pcap(p)] == [(r.time_ns, r.link, r.frame) for r in back]


def test_reader_errors_are_one_line(tmp_path):
    p = tmp_path / "x.pcapng"
    with PcapngWriter(p, ["a"]) as w:
        w.write(1, b"\x00" * 30)
    data = p.read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:-6])
    with pytest.raises(CaptureError, match="truncated or bad block"):
        list(read_capture(cut))
    bad = bytearray(data)
    struct.pack_into("<I", bad, len(data) - 80 + 8, 7)          # the EPB (32 + 16 + 30 + 2) names interface 7
    (tmp_path / "bad.pcapng").write_bytes(bytes(bad))
    with pytest.raises(CaptureError, match="names interface 7, which is not declared"):
        list(read_capture(tmp_path / "bad.pcapng"))
    with pytest.raises(CaptureError, match="snap length 0"):
        PcapngWriter(tmp_path / "y.pcapng", ["a"], snaplen=0)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("cap")
    out = {}
    for snap in (None, 64):
        scn = load_scenario(ROOT / "scenarios/quickstart.toml", ['scenario.duration="300us"']
                            + ([] if snap is None else ["output.snaplen=%d" % snap]))
        scn.output.plots = False
        pcap = d / ("q%s.pcapng" % snap)
        run_virtual(scn, out_dir=d / ("out%s" % snap), pcap=pcap, progress=False)
        out[snap] = (scn, pcap, d / ("out%s" % snap))
    return out


def test_each_frame_is_on_the_link_it_was_sent_on(quick_run):
    """The packets (not link packets) on each directed link's interface are exactly the
    PortXmitPkts of the port that sends on it (IBA 16.1.3.5: link packets not counted)."""
    scn, pcap, out = quick_run[None]
    labels = [lab for link in scn.links for lab in link.labels()]
    ifaces, packets = parse_blocks(pcap)
    assert sorted(i["name"] for i in ifaces) == sorted(labels)
    res = json.loads((out / "results.json").read_text())
    per_iface = Counter(ifaces[p["iface"]]["name"] for p in packets if p["rtype"] == ERF_TYPE_INFINIBAND)
    for link in scn.links:
        for label, sender in zip(link.labels(), (link.a, link.b)):
            ports = [k for k in res["ports"] if k.rsplit(":", 1)[0] == sender]
            sent = sum(res["ports"][k]["PortXmitPkts"] for k in ports) if len(ports) == 1 else None
            if sent is not None:                        # an HCA: its one port sends on this link
                assert per_iface[label] == sent > 0, label
    # emulated-time order over the whole file, and each frame's own SLID/DLID
    assert all(a["ns"] <= b["ns"] for a, b in zip(packets, packets[1:]))
    for p in packets:
        if p["rtype"] == ERF_TYPE_INFINIBAND:
            codec.parse(p["frame"])                      # a whole InfiniBand packet


def test_snaplen_shrinks_by_the_expected_factor(quick_run):
    """The snapped capture's size follows from the full capture's frame lengths: each EPB
    is 32 bytes of block, the 16-byte ERF header and min(64, n) bytes padded to 4."""
    _, full, _ = quick_run[None]
    _, snapped, _ = quick_run[64]
    ifaces_f, pk_f = parse_blocks(full)
    ifaces_s, pk_s = parse_blocks(snapped)
    assert [p["orig"] for p in pk_f] == [p["orig"] for p in pk_s]
    header = full.stat().st_size - sum(p["block"] for p in pk_f)
    header_s = snapped.stat().st_size - sum(p["block"] for p in pk_s)
    assert header_s == header                           # the same interfaces (snaplen differs, not the size)

    def block(n: int, snap: int | None) -> int:
        keep = n if snap is None else min(snap, n)
        return 32 + ERF + keep + (-(ERF + keep) % 4)
    lengths = [p["orig"] - ERF for p in pk_f]
    assert full.stat().st_size == header + sum(block(n, None) for n in lengths)
    assert snapped.stat().st_size == header + sum(block(n, 64) for n in lengths)
    factor = full.stat().st_size / snapped.stat().st_size
    assert factor > 5, factor                           # 2 KB data frames stored as 64 bytes


def test_wall_clock_parts_merge_with_their_interfaces(tmp_path):
    a, b = tmp_path / "w0.pcapng", tmp_path / "w1.pcapng"
    with PcapngWriter(a, ["x", "y"]) as w:
        for t in (10, 30, 50):
            w.write(t, bytes([t]) * 30, False, 0)
    with PcapngWriter(b, ["x", "y"]) as w:
        for t in (20, 30, 40):
            w.write(t, bytes([t + 1]) * 30, False, 1)
    with open(b, "ab") as f:                            # a worker killed while writing
        f.write(b"\x06\x00\x00\x00")
    out = tmp_path / "m.pcapng"
    assert merge_captures([a, b, tmp_path / "missing.pcapng"], out) == 6
    got = [(r.time_ns, r.interface, r.frame[0]) for r in read_capture(out)]
    assert got == [(10, "x", 10), (20, "y", 21), (30, "x", 30), (30, "y", 31), (40, "y", 41), (50, "x", 50)]
    other = tmp_path / "w2.pcapng"
    with PcapngWriter(other, ["x", "z"]) as w:
        w.write(5, b"\x00" * 30)
    from ibemu.errors import UserError
    with pytest.raises(UserError, match="differs from the other parts"):
        merge_captures([a, other], tmp_path / "m2.pcapng")


# ------------------------------------------------------------ the README main command

def readme_main_command() -> list[str]:
    """The README's main command's ``ibemu run`` arguments."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```", 2)[1]
    line = next(ln for ln in block.splitlines() if "ibemu run" in ln)
    args = line.split("ibemu run", 1)[1].split("&&")[0].split()
    return args


@pytest.mark.wireshark
def test_readme_main_command_capture_in_tshark(run_tshark, tmp_path):
    args = readme_main_command()
    assert "--snaplen" in args and "--pcap" in args
    snap = int(args[args.index("--snaplen") + 1])
    pcap = tmp_path / Path(args[args.index("--pcap") + 1]).name
    assert pcap.suffix == ".pcapng"
    args[args.index("--pcap") + 1] = str(pcap)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "ibemu", "run", *args, "--duration", "3ms",
                        "--out", str(tmp_path / "run"), "--no-plots", "-q"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    scn = load_scenario(ROOT / args[0])
    labels = sorted(lab for link in scn.links for lab in link.labels())
    records = list(read_capture(pcap))
    assert len(records) > 1000
    # the interface names are the link labels
    out = run_tshark("-r", str(pcap), "-T", "fields", "-e", "frame.interface_name", "-e", "frame.len",
                     "-e", "frame.cap_len", "-e", "erf.types.type", "-e", "infiniband.lrh.dlid",
                     "-e", "infiniband.bth.opcode", "-e", "_ws.malformed")
    rows = [ln.split("\t") for ln in out.splitlines() if ln.strip()]
    assert len(rows) == len(records)
    assert sorted({row[0] for row in rows}) == sorted({rec.interface for rec in records}) \
        and set(row[0] for row in rows) <= set(labels)
    # original lengths kept, the first `snap` bytes stored
    assert [(int(row[1]), int(row[2])) for row in rows] == [(rec.length, min(snap, rec.length)) for rec in records]
    assert any(rec.length > snap for rec in records)
    # stock tshark decodes every InfiniBand packet's headers (LRH, BTH), none malformed
    ib = [row for row, rec in zip(rows, records) if not rec.link]
    assert ib and all(row[4] and row[5] for row in ib)
    assert not any(row[6] for row in ib)
    # the plugin: no malformed frame, no Lua error, link packets decoded, FECN/BECN fields present
    sel = run_tshark("-r", str(pcap), "-X", "lua_script:%s" % PLUGIN, "-Y", "_ws.malformed || _ws.lua.error",
                     "-T", "fields", "-e", "frame.number")
    assert sel.strip() == ""
    fe = run_tshark("-r", str(pcap), "-X", "lua_script:%s" % PLUGIN, "-T", "fields", "-e", "ibemu.fecn",
                    "-e", "ibemu_link.op", "-e", "ibemu.stored")
    frows = [ln.split("\t") for ln in fe.splitlines()]
    assert all(fr[0] in ("0", "1") for fr, rec in zip(frows, records) if not rec.link)
    assert all(fr[1] != "" for fr, rec in zip(frows, records) if rec.link)
    assert [fr[2] for fr in frows] == [str(snap) if rec.length > snap and not rec.link else "" for rec in records]
    # a display filter on one link selects exactly that link's frames
    for label in ("inter", "inter.rev"):
        got = run_tshark("-r", str(pcap), "-Y", 'frame.interface_name == "%s"' % label, "-T", "fields",
                         "-e", "frame.number")
        numbers = [int(n) for n in got.split()]
        assert numbers == [i + 1 for i, rec in enumerate(records) if rec.interface == label] and numbers
    assert re.search(r"^inter\b", "\n".join(labels), re.M)


def test_decode_shows_snapped_frames_headers_and_their_link(quick_run, capsys):
    """``ibemu decode`` of a snapped capture: the same header summaries as of the full one,
    each marked with what was stored, and each frame's link."""
    from ibemu.cli import main
    _, full, _ = quick_run[None]
    _, snapped, _ = quick_run[64]
    assert main(["decode", str(full), "--no-links"]) == 0
    whole = capsys.readouterr().out.splitlines()
    assert main(["decode", str(snapped), "--no-links"]) == 0
    cut = capsys.readouterr().out.splitlines()
    assert len(whole) == len(cut) > 100 and not any("MALFORMED" in ln for ln in cut)
    records = [r for r in read_capture(full) if not r.link]
    for a, b, rec in zip(whole, cut, records):
        assert a.endswith("  (%s)" % rec.interface)
        note = "  [snapped: 64 of %d bytes]" % rec.length if rec.length > 64 else ""
        assert b == a.replace("  (%s)" % rec.interface, note + "  (%s)" % rec.interface)
