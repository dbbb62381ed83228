"""Property tests: the struct codec (ibemu.wire) and the Scapy layers (layers/) are the
same wire format, byte for byte, in both directions (../shared/DESIGN.md §2).

Direction 1: the codec and Scapy build the same bytes from the same field values.
Direction 2: Scapy dissects codec bytes into the fields codec.parse() reads, and the
dissected Scapy packet rebuilds to the identical bytes.

Also: in-place marking (set_fecn/set_becn/set_vl) equals a fresh build; forced bad CRCs
are caught by the codec checks and by a Scapy-side recomputation; link packets and the
UDP shim.  Every OpCode of OPCODES is exercised (parametrized), with and without GRH.
"""
from __future__ import annotations

import ipaddress
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import UDP
from scapy.packet import Raw, raw

from ibemu.layers import BTH, EXT_LAYERS, GRH, LRH, IBEmu, IBEmuSync, IBLink
from ibemu.runtime.syncproto import FOREVER, PHASE_A, PHASE_B, decode, encode
from ibemu.wire import codec
from ibemu.wire.linkpkt import build_link, link_crc_ok, parse_link
from ibemu.wire.opcodes import OPCODES
from ibemu.wire.shim import (
    DEFAULT_PORT_BASE,
    KIND_LINK,
    KIND_PACKET,
    KIND_SYNC,
    MAX_SHIM_DEPTH,
    SHIM_LEN,
    VERSION,
    pack_shim,
    shim_depth,
    unpack_shim,
)

ALL_OPCODES = sorted(OPCODES)

# Field widths of every extension header (IBA 9.3), written out here independently of
# the codec's table so that a wrong field list on either side is noticed.
EXT_FIELDS = {
    "RDETH": {"ee_context": 24},
    "DETH": {"q_key": 32, "src_qp": 24},
    "RETH": {"va": 64, "r_key": 32, "dma_len": 32},
    "AtomicETH": {"va": 64, "r_key": 32, "swap_data": 64, "cmp_data": 64},
    "AETH": {"syndrome": 8, "msn": 24},
    "AtomicAckETH": {"orig_rem_data": 64},
    "ImmDt": {"immdt": 32},
    "IETH": {"r_key": 32},
}
EXT_BYTES = {"RDETH": 4, "DETH": 8, "RETH": 16, "AtomicETH": 28, "AETH": 4,
             "AtomicAckETH": 8, "ImmDt": 4, "IETH": 4}

SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bits(n):
    return st.integers(0, (1 << n) - 1)


# payload lengths: the whole range, with the edges and every residue mod 4 likely
payload_len = st.one_of(
    st.integers(0, 4096),
    st.integers(0, 16),
    st.sampled_from([4093, 4094, 4095, 4096, 2045, 2046, 2047, 2048]),
)


@st.composite
def payloads(draw):
    n = draw(payload_len)
    seed = draw(st.integers(0, 2**32 - 1))
    return random.Random(seed).randbytes(n)


@st.composite
def grhs(draw):
    return {
        "tclass": draw(bits(8)),
        "flowlabel": draw(bits(20)),
        "hoplmt": draw(bits(8)),
        "sgid": draw(st.binary(min_size=16, max_size=16)),
        "dgid": draw(st.binary(min_size=16, max_size=16)),
    }


@st.composite
def packet_fields(draw, opcode):
    """Every field a caller sets: LRH, BTH, extension headers, payload, optional GRH."""
    f = {
        "opcode": opcode,
        "vl": draw(bits(4)), "lver": draw(bits(4)), "sl": draw(bits(4)),
        "dlid": draw(bits(16)), "slid": draw(bits(16)),
        "se": draw(bits(1)), "m": draw(bits(1)), "tver": draw(bits(4)),
        "pkey": draw(bits(16)), "fecn": draw(bits(1)), "becn": draw(bits(1)),
        "destqp": draw(bits(24)), "ackreq": draw(bits(1)), "psn": draw(bits(24)),
    }
    f["ext"] = {name: {fld: draw(bits(w)) for fld, w in EXT_FIELDS[name].items()}
                for name in OPCODES[opcode][1]}
    f["payload"] = draw(payloads())
    f["grh"] = draw(st.one_of(st.none(), grhs()))
    return f


def codec_build(f, **over):
    kw = dict(f)
    kw.update(over)
    return codec.build(**kw)


def _gid(b: bytes) -> str:
    return str(ipaddress.IPv6Address(b))


def scapy_packet(f, icrc=None, vcrc=None):
    """The same packet composed from Scapy layers: LRH()/[GRH()]/BTH()/ext.../Raw."""
    pkt = LRH(vl=f["vl"], lver=f["lver"], sl=f["sl"], dlid=f["dlid"], slid=f["slid"],
              vcrc=vcrc)
    g = f["grh"]
    if g is not None:
        pkt = pkt / GRH(tclass=g["tclass"], flowlabel=g["flowlabel"], hoplmt=g["hoplmt"],
                        sgid=_gid(g["sgid"]), dgid=_gid(g["dgid"]))
    pkt = pkt / BTH(opcode=f["opcode"], se=f["se"], m=f["m"], tver=f["tver"], pkey=f["pkey"],
                    fecn=f["fecn"], becn=f["becn"], destqp=f["destqp"], ackreq=f["ackreq"],
                    psn=f["psn"], icrc=icrc)
    for name in OPCODES[f["opcode"]][1]:
        pkt = pkt / EXT_LAYERS[name](**f["ext"][name])
    if f["payload"]:
        pkt = pkt / Raw(f["payload"])
    return pkt


def assert_scapy_matches_parse(data: bytes):
    """Direction 2: Scapy's dissection of *data* has exactly codec.parse()'s fields."""
    fr = codec.parse(data)
    s = LRH(data)
    assert (s.vl, s.lver, s.sl, s.lnh, s.dlid, s.pktlen, s.slid, s.vcrc) == \
        (fr.vl, fr.lver, fr.sl, fr.lnh, fr.dlid, fr.pktlen, fr.slid, fr.vcrc)
    assert s.rsvd1 == 0 and s.rsvd2 == 0
    if fr.grh is None:
        assert fr.lnh == 2 and GRH not in s
    else:
        assert fr.lnh == 3
        g = s[GRH]
        assert g.ipver == fr.grh["ipver"] == 6
        assert (g.tclass, g.flowlabel, g.paylen, g.nxthdr, g.hoplmt) == \
            (fr.grh["tclass"], fr.grh["flowlabel"], fr.grh["paylen"], fr.grh["nxthdr"],
             fr.grh["hoplmt"])
        assert ipaddress.IPv6Address(g.sgid).packed == fr.grh["sgid"]
        assert ipaddress.IPv6Address(g.dgid).packed == fr.grh["dgid"]
    b = s[BTH]
    assert (b.opcode, b.se, b.m, b.padcnt, b.tver, b.pkey, b.fecn, b.becn, b.destqp,
            b.ackreq, b.psn, b.icrc) == \
        (fr.opcode, fr.se, fr.m, fr.padcnt, fr.tver, fr.pkey, fr.fecn, fr.becn, fr.destqp,
         fr.ackreq, fr.psn, fr.icrc)
    # extension headers: the same ones, in the same order, with the same fields
    layer, names = b.payload, []
    while layer is not None and type(layer).__name__ in EXT_LAYERS:
        name = type(layer).__name__
        names.append(name)
        for fld in EXT_FIELDS[name]:
            assert getattr(layer, fld) == fr.ext[name][fld], (name, fld)
        layer = layer.payload if layer.payload else None
    assert tuple(names) == OPCODES[fr.opcode][1] == tuple(fr.ext)
    # payload: Scapy's Raw holds payload + pad, codec's payload excludes the pad
    load = bytes(s[Raw].load) if Raw in s else b""
    assert load[:len(load) - fr.padcnt] == fr.payload
    assert load[len(load) - fr.padcnt:] == bytes(fr.padcnt)
    # and the dissected packet rebuilds to the identical bytes
    assert raw(s) == data
    return s


# ----------------------------------------------------------------- Scapy-side CRC checks

def scapy_icrc_ok(data: bytes) -> bool:
    """Recompute with Scapy: dissect, let post_build recompute the ICRC, compare."""
    s = LRH(data)
    s[BTH].icrc = None
    return raw(s)[:-2] == data[:-2]


def scapy_vcrc_ok(data: bytes) -> bool:
    s = LRH(data)
    s.vcrc = None
    return raw(s) == data


def scapy_lpcrc_ok(data: bytes) -> bool:
    s = IBLink(data)
    s.lpcrc = None
    return raw(s) == data


# ----------------------------------------------------------------- transport packets

@pytest.mark.parametrize("opcode", ALL_OPCODES, ids=lambda c: OPCODES[c][0])
@SETTINGS
@given(data=st.data())
def test_build_and_dissect_agree(opcode, data):
    f = data.draw(packet_fields(opcode))
    c = bytes(codec_build(f))
    # direction 1: same bytes from both builders
    s = raw(scapy_packet(f))
    assert s == c
    # the lengths the builders compute
    ext_len = sum(EXT_BYTES[n] for n in OPCODES[opcode][1])
    pad = (-len(f["payload"])) & 3
    body = 12 + ext_len + len(f["payload"]) + pad + 4
    assert len(c) == 8 + (40 if f["grh"] else 0) + body + 2
    # direction 2: dissect codec bytes with Scapy, compare fields, rebuild identically
    fr = codec.parse(c)
    assert fr.payload == f["payload"] and fr.padcnt == pad
    assert fr.pktlen * 4 == len(c) - 2
    if f["grh"]:
        assert fr.grh["paylen"] == body
    for k in ("vl", "lver", "sl", "dlid", "slid", "opcode", "se", "m", "tver", "pkey",
              "fecn", "becn", "destqp", "ackreq", "psn"):
        assert getattr(fr, k) == f[k], k
    assert fr.ext == f["ext"]
    assert_scapy_matches_parse(c)
    assert codec.vcrc_ok(c) and codec.icrc_ok(c)
    assert scapy_icrc_ok(c) and scapy_vcrc_ok(c)


@pytest.mark.parametrize("opcode", ALL_OPCODES, ids=lambda c: OPCODES[c][0])
@FEW
@given(data=st.data(), n=st.one_of(st.integers(0, 4200), st.integers(0, 8), st.sampled_from([2045, 2048, 4093, 4096])))
def test_zero_payload_builds_the_same_bytes(opcode, data, n):
    """A payload of :func:`codec.zero_payload`, whose CRCs build() carries over by table
    (issue 28), gives the same bytes as a fresh ``bytes(n)``, which it reads, and as the
    Scapy layers; also with PadCnt, PktLen, ICRC or VCRC forced (padding from none to 3
    bytes, LNH 2 and 3)."""
    f = data.draw(packet_fields(opcode))
    f["payload"] = codec.zero_payload(n)
    fresh = bytes(n)
    assert f["payload"] == fresh and (n == 0 or f["payload"] is not fresh)
    fast = bytes(codec_build(f))
    assert codec.zero_payload(n) is f["payload"]      # so build() took the table path
    assert fast == bytes(codec_build(f, payload=fresh)) == raw(scapy_packet(dict(f, payload=fresh)))
    assert codec.vcrc_ok(fast) and codec.icrc_ok(fast)
    forced = data.draw(st.fixed_dictionaries({}, optional={
        "padcnt": st.integers(0, 3), "pktlen": bits(11), "icrc": bits(32), "vcrc": bits(16)}))
    assert bytes(codec_build(f, **forced)) == bytes(codec_build(f, payload=fresh, **forced))


def test_zero_payload_is_one_object_per_length():
    """build() knows the zero payload by identity, so a length asked for again is the same
    object, also after more lengths than are kept have been asked for."""
    assert codec.zero_payload(5) == bytes(5) and codec.zero_payload(0) == b""
    for n in range(1000, 1000 + 3 * codec.ZERO_PAYLOADS_CACHED):
        z = codec.zero_payload(n)
        assert z == bytes(n) and codec.zero_payload(n) is z
    assert codec.zero_payload(10_000) == bytes(10_000)     # a length never kept: plain zeros


@pytest.mark.parametrize("opcode", ALL_OPCODES, ids=lambda c: OPCODES[c][0])
@FEW
@given(data=st.data())
def test_marking_in_place_equals_fresh_build(opcode, data):
    f = data.draw(packet_fields(opcode))
    fecn, becn, vl = data.draw(bits(1)), data.draw(bits(1)), data.draw(bits(4))
    buf = codec_build(f)
    icrc_before = bytes(buf[-6:-2])
    order = data.draw(st.permutations(["fecn", "becn", "vl"]))
    for what in order:
        if what == "fecn":
            codec.set_fecn(buf, fecn)
        elif what == "becn":
            codec.set_becn(buf, becn)
        else:
            codec.set_vl(buf, vl)
    fresh = codec_build(f, fecn=fecn, becn=becn, vl=vl)
    assert buf == fresh
    assert bytes(buf[-6:-2]) == icrc_before       # the ICRC never changes
    g = dict(f, fecn=fecn, becn=becn, vl=vl)
    assert bytes(buf) == raw(scapy_packet(g))
    assert codec.vcrc_ok(buf) and codec.icrc_ok(buf)
    assert (codec.get_fecn(buf), codec.get_becn(buf), codec.get_vl(buf)) == (fecn, becn, vl)
    assert (codec.get_dlid(buf), codec.get_slid(buf), codec.get_sl(buf)) == \
        (f["dlid"], f["slid"], f["sl"])


@pytest.mark.parametrize("opcode", ALL_OPCODES, ids=lambda c: OPCODES[c][0])
@FEW
@given(data=st.data())
def test_forced_bad_crcs_are_detected(opcode, data):
    f = data.draw(packet_fields(opcode))
    good = bytes(codec_build(f))
    good_icrc = struct.unpack_from("<I", good, len(good) - 6)[0]
    good_vcrc = struct.unpack_from("<H", good, len(good) - 2)[0]
    bad_icrc = good_icrc ^ data.draw(st.integers(1, 2**32 - 1))
    bad_vcrc = good_vcrc ^ data.draw(st.integers(1, 2**16 - 1))

    # wrong ICRC (the VCRC computed over it, so only the ICRC is wrong)
    c = bytes(codec_build(f, icrc=bad_icrc))
    assert c == raw(scapy_packet(f, icrc=bad_icrc))
    assert not codec.icrc_ok(c) and codec.vcrc_ok(c)
    assert not scapy_icrc_ok(c) and scapy_vcrc_ok(c)
    assert_scapy_matches_parse(c)

    # wrong VCRC
    c = bytes(codec_build(f, vcrc=bad_vcrc))
    assert c == raw(scapy_packet(f, vcrc=bad_vcrc))
    assert codec.icrc_ok(c) and not codec.vcrc_ok(c)
    assert scapy_icrc_ok(c) and not scapy_vcrc_ok(c)
    assert_scapy_matches_parse(c)

    # both wrong
    c = bytes(codec_build(f, icrc=bad_icrc, vcrc=bad_vcrc))
    assert c == raw(scapy_packet(f, icrc=bad_icrc, vcrc=bad_vcrc))
    assert not codec.icrc_ok(c) and not codec.vcrc_ok(c)
    assert not scapy_icrc_ok(c) and not scapy_vcrc_ok(c)

    # a bit flipped on the wire (not in the variant FECN/BECN byte) breaks both CRCs
    flip = bytearray(good)
    bth_off = 8 + (40 if f["grh"] else 0)
    pos = data.draw(st.integers(bth_off + 5, len(good) - 7))   # BTH DestQP .. payload/pad
    flip[pos] ^= 1 << data.draw(st.integers(0, 7))
    assert not codec.vcrc_ok(flip) and not codec.icrc_ok(flip)
    assert not scapy_vcrc_ok(bytes(flip)) and not scapy_icrc_ok(bytes(flip))


@pytest.mark.parametrize("opcode", ALL_OPCODES, ids=lambda c: OPCODES[c][0])
def test_defaults_agree(opcode):
    """Fields left out take the same defaults on both sides (P_Key 0xFFFF, GRH IPVer 6
    and NxtHdr 0x1B, everything else 0)."""
    for grh in (None, {}):
        pkt = LRH(dlid=5, slid=3)
        if grh is not None:
            pkt = pkt / GRH()
        pkt = pkt / BTH(opcode=opcode)
        for name in OPCODES[opcode][1]:
            pkt = pkt / EXT_LAYERS[name]()
        pkt = pkt / Raw(b"abc")
        c = bytes(codec.build(dlid=5, slid=3, opcode=opcode, payload=b"abc", grh=grh))
        assert raw(pkt) == c
        assert_scapy_matches_parse(c)


@SETTINGS
@given(data=st.data())
def test_variant_fields_do_not_change_the_icrc(data):
    """The whole LRH, GRH TClass/FlowLabel/HopLmt and the FECN/BECN byte are variant:
    changing them changes the VCRC only (both implementations)."""
    opcode = data.draw(st.sampled_from(ALL_OPCODES))
    f = data.draw(packet_fields(opcode))
    f["grh"] = data.draw(st.one_of(st.none(), grhs()))
    g = dict(f, vl=data.draw(bits(4)), lver=data.draw(bits(4)), sl=data.draw(bits(4)),
             dlid=data.draw(bits(16)), slid=data.draw(bits(16)),
             fecn=data.draw(bits(1)), becn=data.draw(bits(1)))
    if f["grh"] is not None:
        g["grh"] = dict(f["grh"], tclass=data.draw(bits(8)), flowlabel=data.draw(bits(20)),
                        hoplmt=data.draw(bits(8)))
    a, b = codec_build(f), codec_build(g)
    assert a[-6:-2] == b[-6:-2]
    assert raw(scapy_packet(f))[-6:-2] == raw(scapy_packet(g))[-6:-2] == bytes(a[-6:-2])
    # an invariant field (P_Key here) does change it
    h = dict(f, pkey=f["pkey"] ^ 1)
    assert codec_build(h)[-6:-2] != a[-6:-2]


# ----------------------------------------------------------------- link packets

@settings(max_examples=200, deadline=None)
@given(op=bits(4), fctbs=bits(12), vl=bits(4), fccl=bits(12))
def test_link_packets_agree(op, fctbs, vl, fccl):
    c = build_link(op, fctbs, vl, fccl)
    assert len(c) == 6
    assert raw(IBLink(op=op, fctbs=fctbs, vl=vl, fccl=fccl)) == c
    s = IBLink(c)
    assert parse_link(c) == (op, fctbs, vl, fccl, s.lpcrc)
    assert (s.op, s.fctbs, s.vl, s.fccl) == (op, fctbs, vl, fccl)
    assert raw(s) == c
    assert link_crc_ok(c) and scapy_lpcrc_ok(c)


@settings(max_examples=200, deadline=None)
@given(op=bits(4), fctbs=bits(12), vl=bits(4), fccl=bits(12), delta=st.integers(1, 0xFFFF))
def test_link_packet_bad_lpcrc_is_detected(op, fctbs, vl, fccl, delta):
    good = build_link(op, fctbs, vl, fccl)
    bad_crc = struct.unpack("<H", good[4:])[0] ^ delta
    c = build_link(op, fctbs, vl, fccl, crc=bad_crc)
    assert raw(IBLink(op=op, fctbs=fctbs, vl=vl, fccl=fccl, lpcrc=bad_crc)) == c
    assert parse_link(c)[4] == IBLink(c).lpcrc == bad_crc
    assert not link_crc_ok(c) and not scapy_lpcrc_ok(c)


def test_link_packet_wrong_length():
    with pytest.raises(ValueError):
        parse_link(bytes(5))
    assert not link_crc_ok(bytes(7))


# ----------------------------------------------------------------- UDP shim

@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from([KIND_PACKET, KIND_LINK, KIND_SYNC]), seq=bits(32), time_ps=bits(64),
       depth=st.integers(0, MAX_SHIM_DEPTH))
def test_shim_agrees(kind, seq, time_ps, depth):
    c = pack_shim(kind, seq, time_ps, depth=depth)
    assert len(c) == SHIM_LEN
    assert raw(IBEmu(kind=kind, depth=depth, seq=seq, time_ps=time_ps)) == c
    s = IBEmu(c)
    assert (s.magic, s.version, s.depth, s.kind, s.seq, s.time_ps) == \
        (b"iB", VERSION, depth, kind, seq, time_ps)
    assert VERSION == 2
    assert unpack_shim(c) == (kind, seq, time_ps)
    assert shim_depth(c) == depth
    assert raw(s) == c


def test_shim_depth_is_capped_and_leaves_the_kind_alone():
    c = pack_shim(KIND_LINK, 1, 2, depth=MAX_SHIM_DEPTH + 10)
    assert shim_depth(c) == MAX_SHIM_DEPTH == IBEmu(c).depth
    assert unpack_shim(c)[0] == KIND_LINK == IBEmu(c).kind
    assert c[3] == (MAX_SHIM_DEPTH << 2) | KIND_LINK      # flags = depth << 2 | kind


@settings(max_examples=40, deadline=None)
@given(data=st.data(), seq=bits(32), time_ps=bits(64), depth=st.integers(0, MAX_SHIM_DEPTH))
def test_shim_datagrams_dissect_to_the_frame(data, seq, time_ps, depth):
    """UDP / IBEmu / LRH ... or IBLink: the layers the Scapy bindings give a datagram."""
    if data.draw(st.booleans()):
        opcode = data.draw(st.sampled_from(ALL_OPCODES))
        f = data.draw(packet_fields(opcode))
        frame, kind, inner = bytes(codec_build(f)), KIND_PACKET, LRH
        built = IBEmu(kind=kind, depth=depth, seq=seq, time_ps=time_ps) / scapy_packet(f)
    else:
        link = (data.draw(bits(4)), data.draw(bits(12)), data.draw(bits(4)), data.draw(bits(12)))
        frame, kind, inner = build_link(*link), KIND_LINK, IBLink
        built = IBEmu(depth=depth, seq=seq, time_ps=time_ps) / IBLink(
            op=link[0], fctbs=link[1], vl=link[2], fccl=link[3])
    dgram = pack_shim(kind, seq, time_ps, depth=depth) + frame
    assert raw(built) == dgram        # the IBEmu->inner binding sets kind
    s = IBEmu(dgram)
    assert inner in s and raw(s[inner]) == frame
    u = UDP(raw(UDP(sport=DEFAULT_PORT_BASE + 1, dport=DEFAULT_PORT_BASE + 7) / dgram))
    assert IBEmu in u and inner in u and raw(u[inner]) == frame
    assert unpack_shim(dgram) == (kind, seq, time_ps)
    assert shim_depth(dgram) == depth


@settings(max_examples=100, deadline=None)
@given(phase=st.sampled_from([PHASE_A, PHASE_B]), step=bits(8), rnd=bits(64), a=bits(64),
       b=bits(64), c=bits(64))
def test_sync_datagrams_dissect_to_the_message(phase, step, rnd, a, b, c):
    """A kind-2 datagram carries one exact-clock message and no frame: UDP / IBEmu /
    IBEmuSync, with the fields :func:`ibemu.runtime.syncproto.decode` reads."""
    msg = encode(phase, rnd, a, b, c, step)
    dgram = pack_shim(KIND_SYNC, 0, 0) + msg
    built = IBEmu() / IBEmuSync(phase=phase, step=step, round=rnd, a=a, b=b, c=c)
    assert raw(built) == dgram        # the IBEmu->IBEmuSync binding sets kind 2
    u = UDP(raw(UDP(sport=DEFAULT_PORT_BASE + 1, dport=DEFAULT_PORT_BASE + 7) / dgram))
    assert IBEmu in u and IBEmuSync in u and LRH not in u and IBLink not in u
    m = u[IBEmuSync]
    assert (m.phase, m.step, m.round, m.a, m.b, m.c) == decode(msg) == (
        phase, step, rnd, min(a, FOREVER), b, c)
    assert unpack_shim(dgram) == (KIND_SYNC, 0, 0)


def test_shim_rejects_foreign_datagrams():
    for bad in (b"xx" + bytes(14), pack_shim(KIND_PACKET, 1, 2)[:15],
                b"iB\x01\x00" + bytes(12),             # version 1 (time in ns) is not read
                b"iB\x03\x00" + bytes(12),             # nor a version to come
                b"iB\x02\x03" + bytes(12),             # kind 3 is none
                b"iB\x02\xff" + bytes(12)):
        with pytest.raises(ValueError):
            unpack_shim(bad)
    assert unpack_shim(b"iB\x02\xfe" + bytes(12))[0] == KIND_SYNC   # depth 63, kind 2
    assert not isinstance(IBEmu(b"xx" + bytes(14)), IBEmu)   # stays Raw without the magic


# ----------------------------------------------------------------- accessors (issue 12)

@pytest.mark.parametrize("opcode", ALL_OPCODES, ids=lambda c: OPCODES[c][0])
@FEW
@given(data=st.data())
def test_accessors_read_what_parse_reads(opcode, data):
    """Every codec accessor returns the field the builder wrote (the plain ones on LNH-2
    packets, the ``*_any`` and FECN/BECN ones on LNH 2 and 3), and set_ackreq equals a
    fresh build with AckReq set."""
    f = data.draw(packet_fields(opcode))
    c = codec_build(f)
    assert (codec.get_vl(c), codec.get_lver(c), codec.get_sl(c), codec.get_dlid(c),
            codec.get_slid(c)) == (f["vl"], f["lver"], f["sl"], f["dlid"], f["slid"])
    assert codec.get_lnh(c) == (3 if f["grh"] else 2)
    assert codec.get_pktlen(c) * 4 == len(c) - 2
    assert (codec.get_opcode_any(c), codec.get_pkey_any(c), codec.get_fecn(c), codec.get_becn(c)) == \
        (opcode, f["pkey"], f["fecn"], f["becn"])
    if f["grh"]:
        return
    assert (codec.get_opcode(c), codec.get_se(c), codec.get_m(c), codec.get_tver(c), codec.get_pkey(c),
            codec.get_fecn_local(c), codec.get_becn_local(c), codec.get_destqp(c), codec.get_ackreq(c),
            codec.get_psn(c)) == (opcode, f["se"], f["m"], f["tver"], f["pkey"], f["fecn"], f["becn"],
                                  f["destqp"], f["ackreq"], f["psn"])
    assert codec.get_padcnt(c) == (-len(f["payload"])) & 3
    assert codec.payload_len(c) == len(f["payload"]) and codec.payload_of(c) == f["payload"]
    first = OPCODES[opcode][1][:1]
    if first == ("AETH",):
        assert (codec.get_aeth_syndrome(c), codec.get_aeth_msn(c)) == \
            (f["ext"]["AETH"]["syndrome"], f["ext"]["AETH"]["msn"])
    if first == ("DETH",):
        assert (codec.get_deth_qkey(c), codec.get_deth_src_qp(c)) == \
            (f["ext"]["DETH"]["q_key"], f["ext"]["DETH"]["src_qp"])
        if OPCODES[opcode][1] == ("DETH",):
            assert codec.get_ud_payload(c, len(f["payload"])) == f["payload"]
    if first == ("RETH",):
        r = f["ext"]["RETH"]
        assert (codec.get_reth_va(c), codec.get_reth_rkey(c), codec.get_reth_dma_len(c)) == \
            (r["va"], r["r_key"], r["dma_len"])
    codec.set_ackreq(c)
    assert c == codec_build(f, ackreq=1)


@FEW
@given(data=st.data())
def test_crc_checks_are_the_recomputed_crcs(data):
    """vcrc_ok and icrc_ok (the CRC residue over the data and its stored CRC) agree with
    recomputing the CRC and comparing it with the stored one, on good, bit-flipped and
    short buffers."""
    from ibemu.wire.crc import icrc, vcrc

    def icrc_ok(b):
        n, lnh = len(b), b[1] & 3 if len(b) > 1 else 0
        if n < 26 or lnh not in (2, 3) or (lnh == 3 and n < 66):
            return False
        return icrc(bytes(b[8:n - 6]), lnh) == struct.unpack_from("<I", b, n - 6)[0]
    f = data.draw(packet_fields(data.draw(st.sampled_from(ALL_OPCODES))))
    good = codec_build(f)
    bufs = [good, good[:1], good[:2], good[:3], bytes(3), bytes(len(good)), good[:26], good[:66]]
    for _ in range(8):
        b = bytearray(good)
        bit = data.draw(st.integers(0, len(b) * 8 - 1))
        b[bit >> 3] ^= 1 << (bit & 7)
        bufs.append(b)
    for b in bufs:
        end = len(b) - 2
        assert codec.vcrc_ok(b) == (end > 0 and vcrc(bytes(b[:end])) == b[end] | (b[end + 1] << 8))
        assert codec.icrc_ok(b) == icrc_ok(b)


@given(op=bits(4), fctbs=bits(12), vl=bits(4), fccl=bits(12))
def test_link_accessors_agree_with_parse_link(op, fctbs, vl, fccl):
    from ibemu.wire import linkpkt
    c = build_link(op, fctbs, vl, fccl)
    assert linkpkt.get_link_credits(c) == (vl, fctbs, fccl)
    assert (linkpkt.get_link_op(c), linkpkt.get_link_fctbs(c), linkpkt.get_link_vl(c),
            linkpkt.get_link_fccl(c)) == parse_link(c)[:4]
