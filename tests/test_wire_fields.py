"""ibemu.wire.fields: the accessors give the same answer for bytes, bytearray and
memoryview frames (issue 28: the ones an HCA reads have a ``bytes`` branch, the ones
that read at a position chosen by LNH subscript constant offsets).

The expected values come from the layout (IBA 7.7.5: LNH 3 puts a 40-byte GRH after the
8-byte LRH, IBA 8.3; the BTH then holds OpCode in its byte 0, P_Key in bytes 2-3, FECN and
BECN in bits 7 and 6 of byte 4, IBA 9.2), done with integer arithmetic here, on any
buffer long enough, well formed or not.  tests/test_codec_vs_layers.py checks the
accessors against built packets.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ibemu.wire import fields as F
from ibemu.wire.fields import get_becn, get_fecn, get_opcode_any, get_pkey_any
from ibemu.wire.opcodes import EXT_LEN


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=60, max_size=80))
def test_any_accessors_read_the_bth_where_lnh_puts_it(raw):
    bth = 8 + 40 if raw[1] & 3 == 3 else 8
    want = (raw[bth], int.from_bytes(raw[bth + 2:bth + 4], "big"), raw[bth + 4] >> 7, (raw[bth + 4] >> 6) & 1)
    for buf in (raw, bytearray(raw), memoryview(raw), memoryview(bytearray(raw))):
        assert (get_opcode_any(buf), get_pkey_any(buf), get_fecn(buf), get_becn(buf)) == want


def _be(raw, at, n):
    return int.from_bytes(raw[at:at + n], "big")


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=26, max_size=90))
def test_lnh2_accessors_are_the_same_for_bytes_bytearray_and_memoryview(raw):
    """The accessors with a ``bytes`` branch (what an HCA reads on every packet) against
    the LRH (IBA 7.7) and BTH (IBA 9.2) positions of an LNH-2 packet: LRH bytes 0-7, BTH
    bytes 8-19, the AETH (IBA 9.3.5) at byte 20; ``payload_len`` is the length less the
    26 bytes of LRH + BTH + ICRC + VCRC, the extension headers of Table 38 and PadCnt."""
    opcode, padcnt = raw[8], (raw[9] >> 4) & 3
    want = {
        F.get_vl: raw[0] >> 4, F.get_sl: raw[1] >> 4, F.get_lnh: raw[1] & 3, F.get_dlid: _be(raw, 2, 2),
        F.get_pktlen: _be(raw, 4, 2) & 0x7FF, F.get_slid: _be(raw, 6, 2), F.get_opcode: opcode,
        F.get_padcnt: padcnt, F.get_pkey: _be(raw, 10, 2), F.get_fecn_local: raw[12] >> 7,
        F.get_becn_local: (raw[12] >> 6) & 1, F.get_destqp: _be(raw, 13, 3), F.get_ackreq: raw[16] >> 7,
        F.get_psn: _be(raw, 17, 3),
        F.payload_len: len(raw) - 26 - EXT_LEN.get(opcode, 0) - padcnt,
    }
    if len(raw) > 20:
        want[F.get_aeth_syndrome] = raw[20]
    for buf in (raw, bytearray(raw), memoryview(raw), memoryview(bytearray(raw))):
        assert {f: f(buf) for f in want} == want
