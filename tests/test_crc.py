"""ibemu.wire.crc against independent bitwise reference implementations.

References (../shared/REFERENCE.md "Wire format"):
- VCRC / LPCRC: CRC-16, polynomial 0x100B, reflected (0xD008), init 0xFFFF, xorout 0xFFFF.
- ICRC: CRC-32 reflected 0xEDB88320, init and xorout 0xFFFFFFFF, over the packet with the
  variant fields set to all ones (the whole LRH; GRH TClass, FlowLabel, HopLmt; the BTH
  FECN/BECN/rsvd byte).
Each CRC-16 reference is itself checked against a second, MSB-first formulation.
"""
from __future__ import annotations

import random
import struct
import zlib

import anycrc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibemu.wire import codec, crc
from ibemu.wire.linkpkt import build_link

VCRC_MODEL = anycrc.CRC(width=16, poly=0x100B, init=0xFFFF, refin=True, refout=True, xorout=0xFFFF)
"""The VCRC's parameters (REFERENCE.md "Wire format") in anycrc, which carries a value on
with ``calc(data, init=value)``."""

# ----------------------------------------------------------------- reference CRCs

def ref_crc16_reflected(data: bytes) -> int:
    """CRC-16/0x100B, LSB-first (reflected) bit loop."""
    reg = 0xFFFF
    for byte in data:
        reg ^= byte
        for _ in range(8):
            reg = (reg >> 1) ^ 0xD008 if reg & 1 else reg >> 1
    return reg ^ 0xFFFF


def _reverse(value: int, width: int) -> int:
    return int(format(value, "0%db" % width)[::-1], 2)


def ref_crc16_msb_first(data: bytes) -> int:
    """The same CRC the textbook way: unreflected polynomial 0x100B on bit-reversed input
    bytes, output reversed (refin = refout = True)."""
    reg = 0xFFFF
    for byte in data:
        reg ^= _reverse(byte, 8) << 8
        for _ in range(8):
            reg = ((reg << 1) ^ 0x100B) & 0xFFFF if reg & 0x8000 else (reg << 1) & 0xFFFF
    return _reverse(reg, 16) ^ 0xFFFF


def ref_crc32(data: bytes) -> int:
    reg = 0xFFFFFFFF
    for byte in data:
        reg ^= byte
        for _ in range(8):
            reg = (reg >> 1) ^ 0xEDB88320 if reg & 1 else reg >> 1
    return reg ^ 0xFFFFFFFF


def ref_crc16_zero(data: bytes) -> int:
    """The CRC-16 with zero init and zero xorout (the linear part used for deltas)."""
    reg = 0
    for byte in data:
        reg ^= byte
        for _ in range(8):
            reg = (reg >> 1) ^ 0xD008 if reg & 1 else reg >> 1
    return reg


def ref_icrc(after_lrh: bytes, lnh: int) -> int:
    """ICRC over 8 bytes of 0xFF (the LRH) + the rest with the variant fields all ones."""
    b = bytearray(after_lrh)
    off = 0
    if lnh == 3:
        b[0] |= 0x0F            # TClass high nibble (IPVer stays)
        b[1] = 0xFF             # TClass low nibble, FlowLabel high nibble
        b[2] = b[3] = 0xFF      # FlowLabel
        b[7] = 0xFF             # HopLmt
        off = 40
    b[off + 4] = 0xFF           # FECN | BECN | rsvd6
    return ref_crc32(b"\xff" * 8 + bytes(b))


# ----------------------------------------------------------------- the references themselves

def test_references_are_sound():
    assert ref_crc32(b"123456789") == 0xCBF43926          # the CRC-32 check value
    for n in (0, 1, 2, 9, 31, 100):
        d = random.Random(n).randbytes(n)
        assert ref_crc16_reflected(d) == ref_crc16_msb_first(d)
    assert ref_crc16_reflected(b"") == 0x0000              # init ^ xorout


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_crc16_references_agree(data):
    assert ref_crc16_reflected(data) == ref_crc16_msb_first(data)


# ----------------------------------------------------------------- the module

@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_vcrc_matches_reference(data):
    expect = ref_crc16_reflected(data)
    assert crc.vcrc(data) == expect
    assert crc.vcrc(bytearray(data)) == expect
    assert crc.vcrc(memoryview(data)) == expect


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=4, max_size=4))
def test_lpcrc_matches_reference(head):
    assert crc.lpcrc(head) == ref_crc16_reflected(head)


@settings(max_examples=200, deadline=None)
@given(op=st.integers(0, 15), fctbs=st.integers(0, 4095), vl=st.integers(0, 15),
       fccl=st.integers(0, 4095))
def test_link_packet_lpcrc_is_sent_lsb_first(op, fctbs, vl, fccl):
    p = build_link(op, fctbs, vl, fccl)
    assert struct.unpack("<H", p[4:])[0] == ref_crc16_reflected(p[:4])


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=16, max_size=600), lnh=st.sampled_from([2, 3]))
def test_icrc_matches_reference(data, lnh):
    if lnh == 3 and len(data) < 56:
        data = data + bytes(56 - len(data))
    assert crc.icrc(data, lnh) == ref_icrc(data, lnh)
    assert crc.icrc(memoryview(data), lnh) == ref_icrc(data, lnh)


def test_icrc_is_zlib_crc32_of_the_masked_packet():
    """A fixed example written out by hand, to pin down the masking."""
    rest = bytes(range(12)) + b"payload!"
    masked = b"\xff" * 8 + rest[:4] + b"\xff" + rest[5:]
    assert crc.icrc(rest, 2) == ref_crc32(masked)


@settings(max_examples=100, deadline=None)
@given(payload=st.binary(max_size=300), grh=st.booleans(), fecn=st.integers(0, 1),
       becn=st.integers(0, 1))
def test_frame_crcs_on_the_wire(payload, grh, fecn, becn):
    """In a built frame: ICRC (LE) = reference over the masked packet, VCRC (LE) =
    reference over everything before it, ICRC included."""
    g = {"tclass": 7, "flowlabel": 0xABCDE, "hoplmt": 3, "sgid": bytes(range(16)),
         "dgid": bytes(range(16, 32))} if grh else None
    f = codec.build(dlid=9, slid=4, opcode=0x04, fecn=fecn, becn=becn, payload=payload, grh=g)
    assert struct.unpack_from("<I", f, len(f) - 6)[0] == ref_icrc(bytes(f[8:-6]), 3 if grh else 2)
    assert struct.unpack_from("<H", f, len(f) - 2)[0] == ref_crc16_reflected(bytes(f[:-2]))


# ----------------------------------------------------------------- vcrc_delta

@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=1, max_size=600), pick=st.integers(0, 10**6),
       x=st.integers(1, 255))
def test_vcrc_delta_equals_full_recomputation(data, pick, x):
    pos = pick % len(data)
    changed = bytearray(data)
    changed[pos] ^= x
    d = crc.vcrc_delta(x, len(data) - pos - 1)
    assert crc.vcrc(changed) == crc.vcrc(data) ^ d
    assert d == ref_crc16_zero(bytes([x]) + bytes(len(data) - pos - 1))


@settings(max_examples=100, deadline=None)
@given(data=st.binary(min_size=2, max_size=300), flips=st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=5))
def test_vcrc_delta_composes(data, flips):
    """Several patches in a row (as FECN then VL) still give the full VCRC."""
    buf = bytearray(data)
    v = crc.vcrc(buf)
    for pick, x in flips:
        pos = pick % len(buf)
        buf[pos] ^= x
        v ^= crc.vcrc_delta(x, len(buf) - pos - 1)
    assert v == crc.vcrc(buf) == ref_crc16_reflected(bytes(buf))


@pytest.mark.parametrize("size", [30, 2100, 4200])
def test_codec_patch_uses_the_delta_correctly(size):
    """codec.set_fecn/set_vl on long frames: VCRC patched = VCRC recomputed."""
    f = codec.build(dlid=1, slid=2, opcode=0x04, payload=bytes(size - 28))
    for value in (1, 0, 1):
        codec.set_fecn(f, value)
        codec.set_becn(f, value)
        codec.set_vl(f, 7 * value)
        assert struct.unpack_from("<H", f, len(f) - 2)[0] == ref_crc16_reflected(bytes(f[:-2]))


def test_lpcrc_words_is_lpcrc_of_the_head() -> None:
    import random
    import struct
    from ibemu.wire.crc import lpcrc, lpcrc_words
    rng = random.Random(3)
    for _ in range(5000):
        a, b = rng.randrange(1 << 16), rng.randrange(1 << 16)
        assert lpcrc_words(a, b) == lpcrc(struct.pack(">HH", a, b))


# ----------------------------------------------------------------- zero extension (issue 28)

@settings(max_examples=150, deadline=None)
@given(c=st.integers(0, 0xFFFFFFFF), n=st.one_of(st.integers(0, 4200), st.sampled_from([1, 2, 3, 2048, 4096])))
def test_crc32_zeros_is_zlib_over_zero_bytes(c, n):
    assert crc.crc32_zeros(c, n) == zlib.crc32(bytes(n), c)


@settings(max_examples=150, deadline=None)
@given(v=st.integers(0, 0xFFFF), n=st.one_of(st.integers(0, 4200), st.sampled_from([1, 2, 3, 2048, 4096])))
def test_vcrc_zeros_is_anycrc_over_zero_bytes(v, n):
    assert crc.vcrc_zeros(v, n) == VCRC_MODEL.calc(bytes(n), init=v)


@settings(max_examples=40, deadline=None)
@given(prefix=st.binary(max_size=40), n=st.integers(0, 600))
def test_zero_extensions_match_the_bitwise_references(prefix, n):
    """Carried on from the CRC of a prefix, both equal the bitwise loops over prefix + zeros."""
    assert crc.vcrc_zeros(crc.vcrc(prefix), n) == ref_crc16_reflected(prefix + bytes(n))
    assert crc.crc32_zeros(zlib.crc32(prefix), n) == ref_crc32(prefix + bytes(n))


def test_zero_extension_past_the_cached_lengths():
    """More distinct lengths than the tables are kept for, and lengths past those that get
    tables: the rest take the plain pass, with the same results."""
    rng = random.Random(28)
    for n in [*range(100, 100 + 3 * crc.ZEROS_CACHED), crc.ZEROS_BELOW - 1, crc.ZEROS_BELOW, 3 * crc.ZEROS_BELOW]:
        c, v = rng.getrandbits(32), rng.getrandbits(16)
        for _ in range(2):
            assert crc.crc32_zeros(c, n) == zlib.crc32(bytes(n), c)
            assert crc.vcrc_zeros(v, n) == VCRC_MODEL.calc(bytes(n), init=v)


@settings(max_examples=200, deadline=None)
@given(v=st.integers(0, 0xFFFF), data=st.binary(max_size=100))
def test_vcrc_update_is_anycrc_carried_on(v, data):
    """The loop (used compiled) and vcrc_update (the loop or anycrc) carry a value on as
    anycrc does, and from 0 give the bitwise reference."""
    assert crc.vcrc_loop(v, data) == crc.vcrc_update(v, data) == VCRC_MODEL.calc(data, init=v) \
        == crc.vcrc_more(v, data)
    assert crc.vcrc_loop(0, data) == ref_crc16_reflected(data)


@settings(max_examples=200, deadline=None)
@given(v=st.integers(0, 0xFFFF), w=st.integers(0, 0xFFFFFFFF))
def test_vcrc_word_is_the_word_sent_lsb_first(v, w):
    assert crc.vcrc_word(v, w) == VCRC_MODEL.calc(w.to_bytes(4, "little"), init=v)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(min_size=1, max_size=300), pick=st.integers(0, 10**6), x=st.integers(1, 255))
def test_icrc_delta_equals_full_recomputation(data, pick, x):
    pos = pick % len(data)
    changed = bytearray(data)
    changed[pos] ^= x
    assert ref_crc32(bytes(changed)) == ref_crc32(data) ^ crc.icrc_delta(x, len(data) - pos - 1)


@settings(max_examples=60, deadline=None)
@given(masked=st.binary(min_size=12, max_size=80))
def test_icrc_start_is_the_masked_lrh_then_the_headers(masked):
    assert crc.icrc_start(masked) == ref_crc32(b"\xff" * 8 + masked)


# ----------------------------------------------------------------- header words (issue 28)

@settings(max_examples=300, deadline=None)
@given(c=st.integers(0, 0xFFFFFFFF), v=st.integers(0, 0xFFFF), w=st.integers(0, 0xFFFFFFFF))
def test_word_steps_are_the_word_sent_msb_first(c, v, w):
    """crc32_be32 and vcrc_be32, the compiled builder's steps over a header word
    (ibemu.wire.localpkt), carry a value on as zlib and anycrc over its four bytes."""
    assert crc.crc32_be32(c, w) == zlib.crc32(w.to_bytes(4, "big"), c)
    assert crc.vcrc_be32(v, w) == VCRC_MODEL.calc(w.to_bytes(4, "big"), init=v)


def test_icrc_starts_after_an_all_ones_lrh():
    assert crc.ICRC_LRH == crc.icrc_start(b"") == ref_crc32(b"\xff" * 8)


def test_crc32_zeros_as_compiled(monkeypatch):
    """Compiled (crc._LOOP), CRC-32's zero-extension tables are bytes, four per entry:
    the same values as zlib, for lengths with tables and past the cached ones."""
    if crc.COMPILED:
        pytest.skip("the compiled module's tables are not the module attributes patched here")
    monkeypatch.setattr(crc, "_LOOP", True)
    for name, fresh in (("_CRC32_ZEROS_LE", [b""] * crc.ZEROS_BELOW), ("_CRC32_ZEROS", [[]] * crc.ZEROS_BELOW),
                        ("_VCRC_ZEROS", [[]] * crc.ZEROS_BELOW), ("_TABLED", [])):
        monkeypatch.setattr(crc, name, fresh)
    rng = random.Random(41)
    for n in [1, 2, 3, 2048, 4096, 4099, *range(100, 102 + crc.ZEROS_CACHED), crc.ZEROS_BELOW]:
        for _ in range(3):
            c, v = rng.getrandbits(32), rng.getrandbits(16)
            assert crc.crc32_zeros(c, n) == zlib.crc32(bytes(n), c)
            assert crc.vcrc_zeros(v, n) == VCRC_MODEL.calc(bytes(n), init=v)
    assert len(crc._TABLED) == crc.ZEROS_CACHED and not crc._CRC32_ZEROS[2048]
