"""Captures (pcap of ERF records), the ``ibemu decode`` / ``ibemu sample`` commands, and
codec.parse's behaviour on truncated or garbage input (CodecError, never another
exception)."""
from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ibemu.capture.erf import (
    ERF_TYPE_INFINIBAND,
    ERF_TYPE_INFINIBAND_LINK,
    LINKTYPE_ERF,
    PCAP_MAGIC_NS,
    CaptureError,
    ErfPcapWriter,
    erf_time_ns,
    erf_timestamp,
    read_erf_pcap,
)
from ibemu.cli import main
from ibemu.decode import frame_matches
from ibemu.sample import sample_frames
from ibemu.wire import codec
from ibemu.wire.linkpkt import build_link
from ibemu.wire.opcodes import OPCODES
from ibemu.wire.summary import summarize

MAX_TIME_NS = (1 << 32) * 1_000_000_000 - 1     # pcap/ERF seconds are 32 bits


# ----------------------------------------------------------------- ERF writer / reader

def _read_raw_records(path):
    """An independent reading of the file: pcap global header, then per record the pcap
    header, the ERF header and the frame."""
    data = path.read_bytes()
    magic, vmaj, vmin, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", data, 0)
    assert (magic, vmaj, vmin, linktype) == (PCAP_MAGIC_NS, 2, 4, LINKTYPE_ERF)
    off, out = 24, []
    while off < len(data):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", data, off)
        off += 16
        ts, rtype, flags = struct.unpack_from("<QBB", data, off)
        rlen, lctr, wlen = struct.unpack_from(">HHH", data, off + 10)
        frame = data[off + 16: off + incl]
        out.append((sec, nsec, incl, orig, ts, rtype, flags, rlen, lctr, wlen, frame))
        off += incl
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.tuples(st.integers(0, MAX_TIME_NS), st.booleans(),
                                  st.integers(0, 3000), st.integers(0, 2**32 - 1)),
                        max_size=20),
       buffer_bytes=st.sampled_from([1, 100, 5000, 1 << 20]))
def test_erf_round_trip(tmp_path_factory, records, buffer_bytes):
    path = tmp_path_factory.mktemp("erf") / "c.pcap"
    frames = [(t, link, random.Random(seed).randbytes(n)) for t, link, n, seed in records]
    with ErfPcapWriter(path, buffer_bytes=buffer_bytes) as w:
        for t, link, frame in frames:
            w.write(t, frame, link=link)
    assert w.frames == len(frames)
    back = list(read_erf_pcap(path))
    assert back == frames                  # times exact to the ns, link flag, bytes
    raw_recs = _read_raw_records(path)
    assert len(raw_recs) == len(frames)
    for (t, link, frame), (sec, nsec, incl, orig, ts, rtype, flags, rlen, lctr, wlen,
                           rframe) in zip(frames, raw_recs):
        assert (sec, nsec) == divmod(t, 1_000_000_000)
        assert incl == orig == rlen == 16 + len(frame) and wlen == len(frame) and lctr == 0
        assert rtype == (ERF_TYPE_INFINIBAND_LINK if link else ERF_TYPE_INFINIBAND)
        assert flags == 0x04 and rframe == frame
        assert ts >> 32 == sec and erf_time_ns(ts) == t


@settings(max_examples=500, deadline=None)
@given(st.integers(0, MAX_TIME_NS))
def test_erf_timestamp_holds_nanoseconds_exactly(t):
    ts = erf_timestamp(t)
    assert erf_time_ns(ts) == t
    assert ts >> 32 == t // 1_000_000_000


def test_erf_round_trip_edges(tmp_path):
    path = tmp_path / "e.pcap"
    times = [0, 1, 999_999_999, 1_000_000_000, 1_000_000_001, MAX_TIME_NS]
    with ErfPcapWriter(path) as w:
        for i, t in enumerate(times):
            w.write(t, build_link(0, i, 0, 60) if i % 2 else bytes([i]) * 30, link=bool(i % 2))
    got = list(read_erf_pcap(path))
    assert [t for t, _, _ in got] == times
    assert [link for _, link, _ in got] == [bool(i % 2) for i in range(len(times))]
    empty = tmp_path / "empty.pcap"
    ErfPcapWriter(empty).close()
    assert list(read_erf_pcap(empty)) == []


# ----------------------------------------------------------------- capture errors

def _capture(tmp_path, n=3, name="good.pcap"):
    path = tmp_path / name
    with ErfPcapWriter(path) as w:
        for i in range(n):
            w.write(1000 * i, codec.build(dlid=1, slid=2, opcode=0x04, psn=i, payload=bytes(40)))
    return path


def _error(path) -> str:
    with pytest.raises(CaptureError) as e:
        list(read_erf_pcap(path))
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg
    return msg


def test_error_not_a_pcap(tmp_path):
    p = tmp_path / "text.pcap"
    p.write_text("this is not a capture, just some text long enough\n")
    assert "not a pcap capture (magic 0x" in _error(p)


def test_error_wrong_linktype(tmp_path):
    p = tmp_path / "ether.pcap"
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    assert "link type 1, expected ERF (197)" in _error(p)


def test_error_truncated_global_header(tmp_path):
    good = _capture(tmp_path).read_bytes()
    p = tmp_path / "short.pcap"
    p.write_bytes(good[:10])
    assert "not a pcap capture (only 10 bytes)" in _error(p)


def test_error_truncated_record_header(tmp_path):
    good = _capture(tmp_path).read_bytes()
    p = tmp_path / "cut.pcap"
    p.write_bytes(good[:24 + 8])
    assert "truncated in the header of record 1" in _error(p)


def test_error_truncated_record(tmp_path):
    good = _capture(tmp_path).read_bytes()
    p = tmp_path / "cut2.pcap"
    p.write_bytes(good[:-5])
    msg = _error(p)
    assert "truncated in record 3" in msg
    # the records before the cut were delivered
    got = []
    with pytest.raises(CaptureError):
        for rec in read_erf_pcap(p):
            got.append(rec)
    assert len(got) == 2


def test_error_missing_file(tmp_path):
    assert "cannot read" in _error(tmp_path / "nope.pcap")


def test_error_record_too_short_and_wrong_erf_type(tmp_path):
    head = struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, 65535, LINKTYPE_ERF)
    p = tmp_path / "short_rec.pcap"
    p.write_bytes(head + struct.pack("<IIII", 0, 0, 4, 4) + bytes(4))
    assert "too short for an ERF header" in _error(p)
    erf = struct.pack("<QBB", 0, 2, 4) + struct.pack(">HHH", 20, 0, 4) + bytes(4)  # type 2
    p = tmp_path / "eth.pcap"
    p.write_bytes(head + struct.pack("<IIII", 0, 0, 20, 20) + erf)
    assert "ERF type 2, not InfiniBand" in _error(p)


# ----------------------------------------------------------------- ibemu decode

@pytest.fixture
def mixed_capture(tmp_path):
    """Frames with known fields: (time_ns, link, frame)."""
    frames = [
        (1_000, False, codec.build(dlid=5, slid=3, opcode=0x04, psn=1, payload=bytes(100))),
        (2_000, False, codec.build(dlid=5, slid=3, opcode=0x04, psn=2, fecn=1, payload=bytes(9))),
        (3_000, False, codec.build(dlid=3, slid=5, opcode=0x11, psn=2, becn=1,
                                   ext={"AETH": {"syndrome": 0x1F, "msn": 1}})),
        (4_000, True, build_link(0, 10, 0, 60)),
        (5_000, False, codec.build(dlid=7, slid=9, opcode=0x80, destqp=0x65, becn=1)),
        (6_000, False, codec.build(dlid=9, slid=7, opcode=0x64, fecn=1, becn=1,
                                   ext={"DETH": {"q_key": 1, "src_qp": 2}}, payload=b"ud")),
        (7_000, True, build_link(1, 0, 1, 128)),
        (8_500, False, codec.build(dlid=3, slid=5, opcode=0x11, psn=3,
                                   ext={"AETH": {"syndrome": 0x60, "msn": 1}})),
    ]
    path = tmp_path / "mixed.pcap"
    with ErfPcapWriter(path) as w:
        for t, link, f in frames:
            w.write(t, f, link=link)
    return path


def _decode(capsys, *args):
    rc = main(["decode", *map(str, args)])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    return out.splitlines()


def _indices(lines):
    return [int(line.split()[0]) for line in lines]


def test_decode_prints_one_line_per_frame(mixed_capture, capsys):
    lines = _decode(capsys, mixed_capture)
    assert _indices(lines) == list(range(1, 9))
    assert "1.000 us" in lines[0] and "8.500 us" in lines[7]
    assert "BTH RC_SEND_ONLY" in lines[0] and "100 B" in lines[0]
    assert "FECN" in lines[1] and "BECN" in lines[2] and "AETH ACK" in lines[2]
    assert "LINK normal VL0 FCTBS=10 FCCL=60" in lines[3]
    assert "BTH CNP" in lines[4] and "LINK init VL1" in lines[6]
    assert "NAK PSN_SEQUENCE_ERROR" in lines[7]


@pytest.mark.parametrize("args,expect", [
    (["--fecn"], [2, 6]),
    (["--becn"], [3, 5, 6]),
    (["--fecn", "--becn"], [6]),
    (["--opcode", "RC_ACKNOWLEDGE"], [3, 8]),
    (["--opcode", "rc_acknowledge"], [3, 8]),
    (["--opcode", "17"], [3, 8]),
    (["--opcode", "0x11"], [3, 8]),
    (["--opcode", "CNP"], [5]),
    (["--opcode", "0x80"], [5]),
    (["--opcode", "0x23"], []),
    (["--lid", "5"], [1, 2, 3, 8]),
    (["--lid", "9"], [5, 6]),
    (["--lid", "42"], []),
    (["--no-links"], [1, 2, 3, 5, 6, 8]),
    (["--no-links", "--becn", "--lid", "7"], [5, 6]),
])
def test_decode_filters(mixed_capture, capsys, args, expect):
    assert _indices(_decode(capsys, mixed_capture, *args)) == expect


def test_decode_sample_capture_every_opcode_filter(tmp_path, capsys):
    """Every frame of the sample is found by the --opcode filter of its own OpCode."""
    path = tmp_path / "sample.pcap"
    assert main(["sample", "--pcap", str(path)]) == 0
    capsys.readouterr()
    frames = sample_frames()
    for code, (name, _) in OPCODES.items():
        expect = [i for i, (_, link, f) in enumerate(frames, 1)
                  if not link and codec.parse(f).opcode == code]
        assert _indices(_decode(capsys, path, "--opcode", name)) == expect
        assert _indices(_decode(capsys, path, "--opcode", str(code))) == expect


def test_decode_shows_malformed_frames(tmp_path, capsys):
    path = tmp_path / "bad_frames.pcap"
    with ErfPcapWriter(path) as w:
        w.write(10, b"\x00" * 7)
        w.write(20, b"\x01\x02", link=True)
    lines = _decode(capsys, path)
    assert len(lines) == 2 and all("MALFORMED" in line for line in lines)
    assert _decode(capsys, path, "--fecn") == []


@pytest.mark.parametrize("make", ["text", "linktype", "truncated", "missing", "directory"])
def test_decode_bad_file_is_one_line_exit_2(tmp_path, capsys, make):
    path = tmp_path / ("x_" + make)
    if make == "text":
        path.write_text("hello world, not a pcap at all........\n")
    elif make == "linktype":
        path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    elif make == "truncated":
        path.write_bytes(_capture(tmp_path).read_bytes()[:-3])
    elif make == "directory":
        path.mkdir()
    rc = main(["decode", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert len(err.splitlines()) == 1 and err.startswith("ibemu: ") and str(path) in err
    assert "Traceback" not in err + out
    if make == "truncated":
        assert len(out.splitlines()) == 2     # the complete records before the cut


def test_decode_bad_opcode_is_exit_2(mixed_capture, capsys):
    rc = main(["decode", str(mixed_capture), "--opcode", "NOT_AN_OPCODE"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1 and "unknown opcode" in err


def test_sample_writes_a_readable_capture(tmp_path, capsys):
    path = tmp_path / "sample.pcap"
    assert main(["sample", "--pcap", str(path)]) == 0
    out = capsys.readouterr().out
    frames = sample_frames()
    assert "wrote %d frames" % len(frames) in out and str(path) in out
    got = list(read_erf_pcap(path))
    assert [(link, bytes(f)) for _, link, f in got] == [(link, bytes(f)) for _, link, f in frames]
    assert [t for t, _, _ in got] == sorted(t for t, _, _ in got)
    for _, link, f in got:
        assert "MALFORMED" not in summarize(f, link)
        if not link:
            assert codec.vcrc_ok(f) and codec.icrc_ok(f)
    lines = _decode(capsys, path)
    assert len(lines) == len(frames)


def test_main_without_command_prints_help(capsys):
    assert main([]) == 0
    assert "decode" in capsys.readouterr().out


# ----------------------------------------------------------------- codec.parse robustness

def _check_parse(data):
    """parse either succeeds or raises CodecError; the helpers never raise."""
    try:
        f = codec.parse(data)
    except codec.CodecError as e:
        assert str(e)
    else:
        assert f.pktlen * 4 + 2 == len(data) and f.opcode in OPCODES
    assert isinstance(codec.vcrc_ok(data), bool)
    assert isinstance(codec.icrc_ok(data), bool)
    summarize(data, False)
    summarize(data, True)
    frame_matches(data, False, fecn=True)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_parse_random_bytes(data):
    _check_parse(data)


@st.composite
def plausible_frames(draw):
    """Random bytes whose LRH is consistent (LNH 2/3, PktLen matching the length), so
    parse gets past the first checks and into the GRH/BTH/extension header logic."""
    n = draw(st.integers(0, 150)) * 4 + 2
    buf = bytearray(draw(st.binary(min_size=n, max_size=n)))
    if n >= 2 + 8:
        buf[1] = (buf[1] & 0xFC) | draw(st.sampled_from([2, 3]))
        struct.pack_into(">H", buf, 4, (n - 2) // 4)
    if n >= 8 + 40 + 1 and buf[1] & 3 == 3 and draw(st.booleans()):
        buf[8 + 40] = draw(st.sampled_from(sorted(OPCODES)))
    elif n >= 9 and draw(st.booleans()):
        buf[8] = draw(st.sampled_from(sorted(OPCODES)))
    return bytes(buf)


@settings(max_examples=600, deadline=None)
@given(plausible_frames())
def test_parse_plausible_garbage(data):
    _check_parse(data)


@settings(max_examples=100, deadline=None)
@given(opcode=st.sampled_from(sorted(OPCODES)), n=st.integers(0, 64), grh=st.booleans(),
       cut=st.integers(0, 10**6), fix=st.booleans())
def test_parse_truncated_frames(opcode, n, grh, cut, fix):
    g = {"sgid": bytes(16), "dgid": bytes(16)} if grh else None
    full = bytes(codec.build(dlid=1, slid=2, opcode=opcode, payload=bytes(range(n)), grh=g))
    k = cut % len(full)
    part = bytearray(full[:k])
    if not fix:
        with pytest.raises(codec.CodecError):
            codec.parse(bytes(part))
    elif k >= 8:
        # make PktLen agree with the cut: it may then parse (a shorter payload) or not
        struct.pack_into(">H", part, 4, ((k - 2) // 4) & 0x7FF)
        _check_parse(bytes(part))


@pytest.mark.parametrize("bad,reason", [
    (b"", "truncated"),
    (bytes(25), "truncated"),
    (bytes([0, 0x01]) + bytes(24), "LNH 1"),
    (bytes([0, 0x02, 0, 0, 0, 9]) + bytes(20), "PktLen 9 words"),
])
def test_parse_error_messages(bad, reason):
    with pytest.raises(codec.CodecError, match=reason):
        codec.parse(bad)


def test_parse_unknown_opcode_and_pad():
    f = codec.build(dlid=1, slid=2, opcode=0x04)
    f[8] = 0x1F                                   # no such OpCode
    with pytest.raises(codec.CodecError, match="unknown OpCode 0x1f"):
        codec.parse(f)
    f = codec.build(dlid=1, slid=2, opcode=0x04, padcnt=0)
    f[9] |= 0x30                                  # PadCnt 3 with no payload
    with pytest.raises(codec.CodecError, match="PadCnt"):
        codec.parse(f)
    f = codec.build(dlid=1, slid=2, opcode=0x13)  # AtomicETH needs 28 bytes
    cut = f[:8 + 12 + 8] + f[-6:]
    struct.pack_into(">H", cut, 4, (len(cut) - 2) // 4)
    with pytest.raises(codec.CodecError, match="extension headers"):
        codec.parse(cut)
