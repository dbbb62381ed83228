"""Fast struct-based codec for InfiniBand packets (LRH [GRH] BTH ext* payload ICRC VCRC).

The hot-path representation of a packet everywhere in ibemu is a ``bytearray`` holding
exactly the bytes on the wire, LRH first, VCRC last.  This module builds such frames,
parses them, and patches them in place (FECN, BECN, VL) with an incremental VCRC update
(:func:`ibemu.wire.crc.vcrc_delta`); marking never changes the ICRC because the
FECN/BECN byte is variant.  The Scapy layers in ``layers/`` are the reference; the
property tests in tests/test_codec_vs_layers.py prove the two byte-for-byte equal.

Layouts: ../shared/REFERENCE.md "Wire format" (LRH, BTH, AETH) and IBA 9.3 / 9.4.
"""
from __future__ import annotations

import struct
from typing import Any, Final

from .crc import COMPILED, ZEROS_BELOW, icrc_start, tail_crcs, vcrc_update, vcrc_word
from .layout import (Buf, BTH_LEN, GRH_LEN, GRH_PACKET_MIN, ICRC_LEN, LRH_LEN, PACKET_OVERHEAD,
                     PKTLEN_MASK, VCRC_LEN)
from .localpkt import build_local
from .opcodes import EXT_LEN, EXT_SIZES, OPCODES, LNH_IBA_GLOBAL, LNH_IBA_LOCAL

_LRH: Final = struct.Struct(">BBHHH")        # VL|LVer, SL|rsvd|LNH, DLID, rsvd|PktLen, SLID
_BTH: Final = struct.Struct(">BBHII")        # OpCode, SE|M|Pad|TVer, P_Key, FECN|BECN|rsvd|DestQP, AckReq|rsvd|PSN
_GRH: Final = struct.Struct(">IHBB16s16s")   # IPVer|TClass|FlowLabel, PayLen, NxtHdr, HopLmt, SGID, DGID
_U16: Final = struct.Struct(">H")
_LRH_BTH_PACK: Final = struct.Struct(">BBHHHBBHII").pack     # LRH then BTH (LNH 2), bound once
_BTH_PACK: Final = _BTH.pack
_CRCS_PACK: Final = struct.Struct("<IH").pack                # ICRC, VCRC: least significant byte first
_PADS: Final = [b"", bytes(1), bytes(2), bytes(3)]     # a list: indexed natively
_U16LE: Final = struct.Struct("<H")
_U32LE: Final = struct.Struct("<I")

# extension headers: name -> (struct, field names); reserved bits are always zero
_EXT: Final[dict[str, tuple[struct.Struct, tuple[str, ...]]]] = {
    "RDETH": (struct.Struct(">I"), ("ee_context",)),
    "DETH": (struct.Struct(">II"), ("q_key", "src_qp")),
    "RETH": (struct.Struct(">QII"), ("va", "r_key", "dma_len")),
    "AtomicETH": (struct.Struct(">QIQQ"), ("va", "r_key", "swap_data", "cmp_data")),
    "AETH": (struct.Struct(">I"), ("syndrome", "msn")),
    "AtomicAckETH": (struct.Struct(">Q"), ("orig_rem_data",)),
    "ImmDt": (struct.Struct(">I"), ("immdt",)),
    "IETH": (struct.Struct(">I"), ("r_key",)),
}
_MASK24: Final = 0xFFFFFF


class CodecError(ValueError):
    """A frame that cannot be parsed (truncated, inconsistent PktLen, unknown OpCode)."""


def _pack_ext(name: str, f: dict[str, Any]) -> bytes:
    st, names = _EXT[name]
    if name == "AETH":
        return st.pack(((f.get("syndrome", 0) & 0xFF) << 24) | (f.get("msn", 0) & _MASK24))
    if name == "RDETH":
        return st.pack(f.get("ee_context", 0) & _MASK24)
    if name == "DETH":
        return st.pack(f.get("q_key", 0), f.get("src_qp", 0) & _MASK24)
    return st.pack(*(f.get(n, 0) for n in names))


def _unpack_ext(name: str, buf: Buf, off: int) -> dict[str, int]:
    st, names = _EXT[name]
    vals = st.unpack_from(buf, off)
    if name == "AETH":
        return {"syndrome": vals[0] >> 24, "msn": vals[0] & _MASK24}
    if name == "RDETH":
        return {"ee_context": vals[0] & _MASK24}
    if name == "DETH":
        return {"q_key": vals[0], "src_qp": vals[1] & _MASK24}
    return dict(zip(names, vals))


ZERO_PAYLOADS_CACHED: Final = 64
"""The most zero payloads kept at once (of lengths below crc.ZEROS_BELOW)."""
_ZERO_PAYLOADS: Final = [b""] * ZEROS_BELOW    # by length; b"": none kept
_ZERO_KEPT: Final[list[int]] = []              # the lengths kept


def zero_payload(n: int) -> bytes:
    """*n* zero bytes, the same object each time for a length asked for again (up to
    ZERO_PAYLOADS_CACHED lengths are kept; past that the set is started afresh).
    :func:`build` knows it by identity and carries the CRCs over it by table
    (:func:`ibemu.wire.crc.crc32_zeros`) instead of reading it (issue 28)."""
    if not 0 < n < ZEROS_BELOW:
        return bytes(n)
    z = _ZERO_PAYLOADS[n]
    if not z:
        if len(_ZERO_KEPT) >= ZERO_PAYLOADS_CACHED:
            for k in _ZERO_KEPT:
                _ZERO_PAYLOADS[k] = b""
            _ZERO_KEPT.clear()
        z = _ZERO_PAYLOADS[n] = bytes(n)
        _ZERO_KEPT.append(n)
    return z


_NO_FIELDS: Final[dict[str, Any]] = {}
_NATIVE: Final = COMPILED           # interpreted, build_local costs more than the general path


def build(*, dlid: int, slid: int, opcode: int, psn: int = 0, destqp: int = 0,
          vl: int = 0, lver: int = 0, sl: int = 0, pkey: int = 0xFFFF, fecn: int = 0,
          becn: int = 0, ackreq: int = 0, se: int = 0, m: int = 0, tver: int = 0,
          padcnt: int | None = None, payload: bytes = b"", ext: dict[str, dict[str, Any]] | None = None,
          grh: dict[str, Any] | None = None, pktlen: int | None = None, icrc: int | None = None,
          vcrc: int | None = None) -> bytearray:
    """Build an IBA transport packet.

    *ext* maps extension header names (``"AETH"``, ``"RETH"`` ...) to dicts of their
    fields; the headers the OpCode requires are emitted in wire order, missing ones with
    zero fields.  *grh* (a dict with tclass, flowlabel, paylen, nxthdr, hoplmt, sgid,
    dgid) selects LNH=3.  Computed fields (PadCnt, PktLen, GRH PayLen, ICRC, VCRC) are
    filled in when None, so a test can force wrong values.

    The CRCs run over the headers once each (the ICRC's copy of them packed with the
    variant fields all ones), then over the payload, which is not read when it is empty
    or :func:`zero_payload`, nor are the pad bytes (issue 28).  Compiled, the packets
    ibemu's HCAs send (no GRH; no extension header, or an AETH, DETH or RETH alone) are
    made by :func:`ibemu.wire.localpkt.build_local`, the same bytes with fewer calls
    into Python; it leaves any other packet, or a field struct would refuse, to the
    general path below.
    """
    if _NATIVE and grh is None and 0 <= opcode <= 0xFF:
        n = len(payload)
        pad = (-n) & 3 if padcnt is None else padcnt
        if 0 <= pad <= 3:
            zero = n == 0 or (n < ZEROS_BELOW and payload is _ZERO_PAYLOADS[n])
            try:
                frame = build_local(dlid, slid, opcode, psn, destqp, vl, lver, sl, pkey, fecn, becn, ackreq,
                                    se, m, tver, pad, payload, zero, ext, pktlen, icrc, vcrc)
            except (ValueError, OverflowError):  # a field past 64 bits: mypyc's ValueError
                frame = None
            if frame is not None:
                return frame
    n = len(payload)
    if padcnt is None:
        padcnt = (-n) & 3
    elen = EXT_LEN.get(opcode, 0)
    flags = (se << 7) | (m << 6) | ((padcnt & 3) << 4) | (tver & 0xF)
    pkey &= 0xFFFF
    destqp &= _MASK24
    w2 = (fecn << 31) | (becn << 30) | destqp
    w3 = (ackreq << 31) | (psn & _MASK24)
    masked = _BTH_PACK(opcode, flags, pkey, 0xFF000000 | destqp, w3)   # FECN|BECN|Resv6 variant
    lrh0 = ((vl & 0xF) << 4) | (lver & 0xF)
    if grh is None:
        if pktlen is None:
            pktlen = (LRH_LEN + BTH_LEN + elen + n + padcnt + ICRC_LEN) >> 2
        head = _LRH_BTH_PACK(lrh0, ((sl & 0xF) << 4) | LNH_IBA_LOCAL, dlid, pktlen & PKTLEN_MASK, slid,
                             opcode, flags, pkey, w2, w3)
    else:
        paylen = grh.get("paylen")
        if paylen is None:
            paylen = BTH_LEN + elen + n + padcnt + ICRC_LEN
        if pktlen is None:
            pktlen = (LRH_LEN + GRH_LEN + BTH_LEN + elen + n + padcnt + ICRC_LEN) >> 2
        w0 = (6 << 28) | ((grh.get("tclass", 0) & 0xFF) << 20) | (grh.get("flowlabel", 0) & 0xFFFFF)
        nxthdr, sgid, dgid = grh.get("nxthdr", 0x1B), grh.get("sgid", bytes(16)), grh.get("dgid", bytes(16))
        head = (_LRH.pack(lrh0, ((sl & 0xF) << 4) | LNH_IBA_GLOBAL, dlid, pktlen & PKTLEN_MASK, slid)
                + _GRH.pack(w0, paylen, nxthdr, grh.get("hoplmt", 0), sgid, dgid)
                + _BTH_PACK(opcode, flags, pkey, w2, w3))
        # TClass, FlowLabel and HopLmt are variant (crc.GRH_VARIANT_MASK)
        masked = _GRH.pack(w0 | 0x0FFFFFFF, paylen, nxthdr, 0xFF, sgid, dgid) + masked
    if elen:
        fields = ext or _NO_FIELDS
        exts = b"".join([_pack_ext(name, fields.get(name, _NO_FIELDS)) for name in OPCODES[opcode][1]])
        head += exts
        masked += exts
    c = icrc_start(masked)
    v = vcrc_update(0, head)
    c, v = tail_crcs(c, v, payload, n == 0 or (n < ZEROS_BELOW and payload is _ZERO_PAYLOADS[n]), padcnt)
    if icrc is not None:
        c = icrc
    v = vcrc_word(v, c)
    return bytearray().join([head, payload, _PADS[padcnt] if 0 <= padcnt < 4 else bytes(padcnt),
                             _CRCS_PACK(c, v if vcrc is None else vcrc)])


FIELDS = ("vl", "lver", "sl", "lnh", "dlid", "pktlen", "slid", "grh", "opcode",
          "se", "m", "padcnt", "tver", "pkey", "fecn", "becn", "destqp", "ackreq",
          "psn", "ext", "payload", "icrc", "vcrc")
"""The parsed fields of a :class:`Frame`, in header order."""


class Frame:
    """A parsed packet: header fields as attributes, extension headers in ``ext``."""

    __slots__ = FIELDS

    vl: int
    lver: int
    sl: int
    lnh: int
    dlid: int
    pktlen: int
    slid: int
    grh: dict[str, Any] | None
    opcode: int
    se: int
    m: int
    padcnt: int
    tver: int
    pkey: int
    fecn: int
    becn: int
    destqp: int
    ackreq: int
    psn: int
    ext: dict[str, dict[str, int]]
    payload: bytes
    icrc: int
    vcrc: int

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FIELDS}


def parse(buf: Buf) -> Frame:
    """Parse a whole IBA packet (LNH 2 or 3).  Raises :class:`CodecError` when it is
    truncated, its PktLen disagrees with its length, or its OpCode is unknown."""
    n = len(buf)
    if n < PACKET_OVERHEAD:
        raise CodecError("truncated: %d bytes" % n)
    f = Frame()
    b0, b1, f.dlid, pl, f.slid = _LRH.unpack_from(buf, 0)
    f.vl, f.lver, f.sl, f.lnh = b0 >> 4, b0 & 0xF, b1 >> 4, b1 & 3
    f.pktlen = pl & PKTLEN_MASK
    if f.lnh not in (LNH_IBA_LOCAL, LNH_IBA_GLOBAL):
        raise CodecError("LNH %d is not an IBA transport packet" % f.lnh)
    if f.pktlen * 4 + VCRC_LEN != n:
        raise CodecError("PktLen %d words does not match %d bytes" % (f.pktlen, n))
    off = LRH_LEN
    f.grh = None
    if f.lnh == LNH_IBA_GLOBAL:
        if n < GRH_PACKET_MIN:
            raise CodecError("truncated GRH")
        w0, paylen, nxthdr, hoplmt, sgid, dgid = _GRH.unpack_from(buf, off)
        f.grh = {"ipver": w0 >> 28, "tclass": (w0 >> 20) & 0xFF, "flowlabel": w0 & 0xFFFFF,
                 "paylen": paylen, "nxthdr": nxthdr, "hoplmt": hoplmt,
                 "sgid": bytes(sgid), "dgid": bytes(dgid)}
        off += GRH_LEN
    op, b1, f.pkey, w2, w3 = _BTH.unpack_from(buf, off)
    f.opcode = op
    f.se, f.m, f.padcnt, f.tver = b1 >> 7, (b1 >> 6) & 1, (b1 >> 4) & 3, b1 & 0xF
    f.fecn, f.becn, f.destqp = w2 >> 31, (w2 >> 30) & 1, w2 & _MASK24
    f.ackreq, f.psn = w3 >> 31, w3 & _MASK24
    off += BTH_LEN
    if op not in OPCODES:
        raise CodecError("unknown OpCode 0x%02x" % op)
    end = n - ICRC_LEN - VCRC_LEN
    if off + EXT_LEN[op] > end:
        raise CodecError("truncated extension headers")
    f.ext = {}
    for name in OPCODES[op][1]:
        f.ext[name] = _unpack_ext(name, buf, off)
        off += EXT_SIZES[name]
    if end - off < f.padcnt:
        raise CodecError("PadCnt larger than the payload")
    f.payload = bytes(buf[off:end - f.padcnt])
    f.icrc = _U32LE.unpack_from(buf, end)[0]
    f.vcrc = _U16LE.unpack_from(buf, end + ICRC_LEN)[0]
    return f


# The field accessors live in ibemu.wire.fields; the codec offers them too, so that
# ``codec.get_psn(frame)`` and ``from ibemu.wire.codec import get_psn`` both work.
from .fields import (  # noqa: E402
    get_vl, get_lver, get_sl, get_lnh, get_dlid, get_pktlen,
    get_slid, bth_offset, get_opcode, get_opcode_any, get_se, get_m,
    get_padcnt, get_tver, get_pkey, get_pkey_any, get_fecn, get_becn,
    get_fecn_local, get_becn_local, get_destqp, get_ackreq, get_psn, get_aeth_syndrome,
    get_aeth_msn, get_deth_qkey, get_deth_src_qp, get_reth_va, get_reth_rkey, get_reth_dma_len,
    payload_len, payload_of, get_ud_payload, set_fecn, set_becn, set_vl,
    set_ackreq, vcrc_ok, icrc_ok,
)

__all__ = ["CodecError", "Frame", "build", "parse", "zero_payload",
           "get_vl", "get_lver", "get_sl", "get_lnh", "get_dlid", "get_pktlen",
           "get_slid", "bth_offset", "get_opcode", "get_opcode_any", "get_se", "get_m",
           "get_padcnt", "get_tver", "get_pkey", "get_pkey_any", "get_fecn", "get_becn",
           "get_fecn_local", "get_becn_local", "get_destqp", "get_ackreq", "get_psn", "get_aeth_syndrome",
           "get_aeth_msn", "get_deth_qkey", "get_deth_src_qp", "get_reth_va", "get_reth_rkey", "get_reth_dma_len",
           "payload_len", "payload_of", "get_ud_payload", "set_fecn", "set_becn", "set_vl",
           "set_ackreq", "vcrc_ok", "icrc_ok"]
