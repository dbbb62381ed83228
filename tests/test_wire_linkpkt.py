"""ibemu.wire.linkpkt: the link flow-control packet's reader and builder give the same
answer for every buffer type a frame comes in (issue 28: ``get_link_credits`` reads a
``bytes`` frame through its own, natively compiled branch; ``build_link`` writes one
integer).

The expected values are the layout of IBA 7.9.4 (../shared/REFERENCE.md "Wire format"),
done with integer arithmetic here: bytes 0-1 are Op(4) FCTBS(12), bytes 2-3 VL(4)
FCCL(12), bytes 4-5 the LPCRC least significant byte first.  The agreement with Scapy's
IBLink is tests/test_codec_vs_layers.py.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ibemu.wire.linkpkt import LINK_LEN, build_link, get_link_credits, parse_link


def bits(n):
    return st.integers(0, (1 << n) - 1)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=4, max_size=LINK_LEN + 4))
def test_get_link_credits_is_the_same_for_bytes_bytearray_and_memoryview(raw):
    """Any buffer of at least four bytes, not only a well-formed link packet."""
    w0, w1 = int.from_bytes(raw[0:2], "big"), int.from_bytes(raw[2:4], "big")
    want = (w1 >> 12, w0 & 0xFFF, w1 & 0xFFF)          # (VL, FCTBS, FCCL)
    assert get_link_credits(raw) == want
    assert get_link_credits(bytearray(raw)) == want
    assert get_link_credits(memoryview(raw)) == want
    assert get_link_credits(memoryview(bytearray(raw))[0:len(raw)]) == want


@settings(max_examples=300, deadline=None)
@given(op=bits(4), fctbs=bits(12), vl=bits(4), fccl=bits(12), crc=st.none() | bits(16))
def test_build_link_writes_the_iba_layout(op, fctbs, vl, fccl, crc):
    c = build_link(op, fctbs, vl, fccl, crc)
    assert type(c) is bytes and len(c) == LINK_LEN
    assert int.from_bytes(c[0:2], "big") == (op << 12) | fctbs
    assert int.from_bytes(c[2:4], "big") == (vl << 12) | fccl
    if crc is not None:
        assert int.from_bytes(c[4:6], "little") == crc
    assert parse_link(c)[:4] == (op, fctbs, vl, fccl)
    assert get_link_credits(c) == get_link_credits(bytearray(c)) == (vl, fctbs, fccl)


def test_build_link_masks_out_of_range_fields():
    """Each field keeps its low bits only (the 4- and 12-bit fields of IBA 7.9.4)."""
    assert build_link(0x1F, 0x1ABC, 0x12, 0x1DEF, 0x1BEEF) == bytes((0xFA, 0xBC, 0x2D, 0xEF, 0xEF, 0xBE))
