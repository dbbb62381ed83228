"""The compiled core's way to build the packets ibemu's HCAs send (issue 28).

:func:`ibemu.wire.codec.build` hands an IBA local packet (LNH 2, no GRH) whose OpCode
carries no extension header, or an AETH, a DETH or a RETH alone, to :func:`build_local`
when the wire modules run compiled: data packets, ACKs, RDMA READ requests and
responses, UD sends, CNPs.  It makes the same bytes as the codec's general path (struct
over every field, zlib and a second struct over a copy of the headers with the variant
fields all ones, a list joined), with fewer calls into Python:

- the fields go into the 32-bit words of the headers as native ints: LRH 2 words
  (IBA 7.7), BTH 3 (IBA 9.2), the extension header's 1 (AETH, IBA 9.3.5), 2 (DETH,
  9.3.2) or 4 (RETH, 9.3.3) -- layout.py has the bit positions;
- both CRCs are carried over the words as ints (:func:`ibemu.wire.crc.crc32_be32`,
  :func:`~ibemu.wire.crc.vcrc_be32`), the ICRC with the whole LRH and the BTH's
  FECN|BECN|Resv6 byte all ones (crc.py), and over a zero payload by table
  (:func:`~ibemu.wire.crc.crc32_zeros`);
- one struct call packs the words, and the pad and the CRCs (least significant byte
  first) are one int's bytes; without a payload the CRCs are packed with the headers.

Interpreted, the general path costs less than these steps, so the codec keeps it.
"""
from __future__ import annotations

import struct
from typing import Any, Final

from mypy_extensions import i64

from .crc import ICRC_LRH, crc32_be32, tail_crcs, vcrc_be32, vcrc_word
from .layout import BTH_LEN, ICRC_LEN, LRH_LEN, PKTLEN_MASK, VCRC_LEN
from .opcodes import EXT_LEN, LNH_IBA_LOCAL, OPCODES

# the extension headers of an OpCode (IBA 9.3, Table 38) that build_local makes, by the
# number of their 32-bit words (0xFF: any other list), and their length in bytes: by
# OpCode, in bytes objects, which the compiled core indexes natively
_NONE: Final = 0
_AETH: Final = 1
_DETH: Final = 2
_RETH: Final = 4
_FORMS: Final = {(): _NONE, ("AETH",): _AETH, ("DETH",): _DETH, ("RETH",): _RETH}
_FORM: Final = bytes([_FORMS.get(OPCODES[op][1], 0xFF) if op in OPCODES else _NONE for op in range(256)])
_ELEN: Final = bytes([EXT_LEN.get(op, 0) for op in range(256)])
# the header words (LRH 2, BTH 3, then the extension header's), and with the ICRC and the
# VCRC after them, byte-swapped (they go least significant byte first)
_PACK_0: Final = struct.Struct(">IIIII").pack
_PACK_1: Final = struct.Struct(">IIIII" + "I").pack
_PACK_2: Final = struct.Struct(">IIIII" + "II").pack
_PACK_4: Final = struct.Struct(">IIIII" + "IIII").pack
_PACK_0C: Final = struct.Struct(">IIIII" + "IH").pack
_PACK_1C: Final = struct.Struct(">IIIII" + "I" + "IH").pack
_PACK_2C: Final = struct.Struct(">IIIII" + "II" + "IH").pack
_PACK_4C: Final = struct.Struct(">IIIII" + "IIII" + "IH").pack
_JOIN: Final = bytearray().join
_NO_FIELDS: Final[dict[str, Any]] = {}
_MASK24: Final = 0xFFFFFF


def build_local(dlid: i64, slid: i64, opcode: i64, psn: i64, destqp: i64, vl: i64, lver: i64, sl: i64,
                pkey: i64, fecn: i64, becn: i64, ackreq: i64, se: i64, m: i64, tver: i64, pad: i64,
                payload: bytes, zeros: bool, ext: dict[str, dict[str, Any]] | None, pktlen: int | None,
                icrc: int | None, vcrc: int | None) -> bytearray | None:
    """:func:`ibemu.wire.codec.build` of an LNH-2 packet with OpCode *opcode* (0 to 255)
    and PadCnt *pad* (0 to 3), *zeros* when the payload is known to be zeros (the CRCs
    then do not read it); the other arguments are build's.  None when the OpCode's
    extension headers are other than none or an AETH, DETH or RETH alone, or when a field
    does not fit its bits (the general path then raises as struct does; the masked
    fields are masked here too)."""
    form: i64 = _FORM[opcode]
    # struct refuses: SE past 1 bit, M past 2 (M << 6 reaches bit 7), FECN past 1, BECN
    # past 2, AckReq past 1, a LID past 16
    if form == 0xFF or ((se >> 1) | (m >> 2) | (fecn >> 1) | (becn >> 2) | (ackreq >> 1)
                        | (dlid >> 16) | (slid >> 16)) != 0:
        return None
    n: i64 = len(payload)
    elen: i64 = _ELEN[opcode]
    pl: i64 = (LRH_LEN + BTH_LEN + elen + n + pad + ICRC_LEN) >> 2 if pktlen is None else pktlen & PKTLEN_MASK
    lrh0 = ((vl & 0xF) << 28) | ((lver & 0xF) << 24) | ((sl & 0xF) << 20) | (LNH_IBA_LOCAL << 16) | dlid
    lrh1 = (pl << 16) | slid
    bth0 = (opcode << 24) | (se << 23) | (m << 22) | (pad << 20) | ((tver & 0xF) << 16) | (pkey & 0xFFFF)
    bth1 = (fecn << 31) | (becn << 30) | (destqp & _MASK24)
    bth2 = (ackreq << 31) | (psn & _MASK24)
    v = vcrc_be32(vcrc_be32(vcrc_be32(vcrc_be32(vcrc_be32(0, lrh0), lrh1), bth0), bth1), bth2)
    c = crc32_be32(crc32_be32(crc32_be32(ICRC_LRH, bth0), 0xFF000000 | (destqp & _MASK24)), bth2)
    e0: i64 = 0
    e1: i64 = 0
    e2: i64 = 0
    e3: i64 = 0
    f: dict[str, Any]
    if form == _AETH:                   # Syndrome 8 bits, MSN 24
        f = _NO_FIELDS if ext is None else ext.get("AETH", _NO_FIELDS)
        syndrome, msn = f.get("syndrome", 0), f.get("msn", 0)
        if not (isinstance(syndrome, int) and isinstance(msn, int)):
            return None
        e0 = ((syndrome & 0xFF) << 24) | (msn & _MASK24)
        v = vcrc_be32(v, e0)
        c = crc32_be32(c, e0)
    elif form == _DETH:                 # Q_Key 32 bits, reserved 8, SrcQP 24
        f = _NO_FIELDS if ext is None else ext.get("DETH", _NO_FIELDS)
        q_key, src_qp = f.get("q_key", 0), f.get("src_qp", 0)
        if not (isinstance(q_key, int) and isinstance(src_qp, int) and q_key >> 32 == 0):
            return None
        e0 = q_key
        e1 = src_qp & _MASK24
        v = vcrc_be32(vcrc_be32(v, e0), e1)
        c = crc32_be32(crc32_be32(c, e0), e1)
    elif form == _RETH:                 # VA 64 bits, R_Key 32, DMA Length 32
        f = _NO_FIELDS if ext is None else ext.get("RETH", _NO_FIELDS)
        va, r_key, dma_len = f.get("va", 0), f.get("r_key", 0), f.get("dma_len", 0)
        if not (isinstance(va, int) and isinstance(r_key, int) and isinstance(dma_len, int)
                and va >> 64 == 0 and r_key >> 32 == 0 and dma_len >> 32 == 0):
            return None
        e0 = va >> 32
        e1 = va & 0xFFFFFFFF
        e2 = r_key
        e3 = dma_len
        v = vcrc_be32(vcrc_be32(vcrc_be32(vcrc_be32(v, e0), e1), e2), e3)
        c = crc32_be32(crc32_be32(crc32_be32(crc32_be32(c, e0), e1), e2), e3)
    c, v = tail_crcs(c, v, payload, zeros, pad)
    if icrc is not None:
        if icrc >> 32 != 0:
            return None
        c = icrc
    v = vcrc_word(v, c)
    if vcrc is not None:
        if vcrc >> 16 != 0:
            return None
        v = vcrc
    if n + pad == 0:
        cs = ((c & 0xFF) << 24) | ((c & 0xFF00) << 8) | ((c >> 8) & 0xFF00) | (c >> 24)
        vs = ((v & 0xFF) << 8) | (v >> 8)
        if form == _NONE:
            hc = _PACK_0C(lrh0, lrh1, bth0, bth1, bth2, cs, vs)
        elif form == _AETH:
            hc = _PACK_1C(lrh0, lrh1, bth0, bth1, bth2, e0, cs, vs)
        elif form == _DETH:
            hc = _PACK_2C(lrh0, lrh1, bth0, bth1, bth2, e0, e1, cs, vs)
        else:
            hc = _PACK_4C(lrh0, lrh1, bth0, bth1, bth2, e0, e1, e2, e3, cs, vs)
        return bytearray(hc[:])
    if form == _NONE:
        hc = _PACK_0(lrh0, lrh1, bth0, bth1, bth2)
    elif form == _AETH:
        hc = _PACK_1(lrh0, lrh1, bth0, bth1, bth2, e0)
    elif form == _DETH:
        hc = _PACK_2(lrh0, lrh1, bth0, bth1, bth2, e0, e1)
    else:
        hc = _PACK_4(lrh0, lrh1, bth0, bth1, bth2, e0, e1, e2, e3)
    crcs: int = (v << 32) | c           # pad, ICRC, VCRC: one int's bytes, least significant first
    p = int(pad)
    return _JOIN((hc, payload, (crcs << 8 * p).to_bytes(p + ICRC_LEN + VCRC_LEN, "little")))
