"""ibemu.wire.fields: the accessors that read at a position chosen by LNH (``*_any``,
``get_fecn``/``get_becn``) give the same answer for bytes, bytearray and memoryview
frames (issue 28 rewrote them to subscript constant offsets).

The expected values come from the layout (IBA 7.7.5: LNH 3 puts a 40-byte GRH after the
8-byte LRH, IBA 8.3; the BTH then holds OpCode in its byte 0, P_Key in bytes 2-3, FECN and
BECN in bits 7 and 6 of byte 4, IBA 9.2), done with integer arithmetic here, on any
buffer long enough, well formed or not.  tests/test_codec_vs_layers.py checks the
accessors against built packets.
"""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ibemu.wire.fields import get_becn, get_fecn, get_opcode_any, get_pkey_any


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=60, max_size=80))
def test_any_accessors_read_the_bth_where_lnh_puts_it(raw):
    bth = 8 + 40 if raw[1] & 3 == 3 else 8
    want = (raw[bth], int.from_bytes(raw[bth + 2:bth + 4], "big"), raw[bth + 4] >> 7, (raw[bth + 4] >> 6) & 1)
    for buf in (raw, bytearray(raw), memoryview(raw), memoryview(bytearray(raw))):
        assert (get_opcode_any(buf), get_pkey_any(buf), get_fecn(buf), get_becn(buf)) == want
