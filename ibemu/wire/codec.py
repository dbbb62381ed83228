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
from typing import Any

from .crc import ICRC_RESIDUE, VCRC_RESIDUE, icrc as _icrc, vcrc as _vcrc, vcrc_delta
from .layout import (Buf, ACKREQ_LOCAL, AETH_MSN, AETH_SYNDROME, BTH_CN, BTH_LEN, CN_GLOBAL, CN_LOCAL,
                     DESTQP_LOCAL, DETH_LEN, DETH_QKEY, DETH_SRCQP, EXT_LOCAL, FLAGS_LOCAL,
                     GRH_LEN, GRH_PACKET_MIN, ICRC_LEN, LRH_DLID, LRH_LEN, LRH_PKTLEN, LRH_SL,
                     LRH_SLID, LRH_VL, OPCODE_GLOBAL, OPCODE_LOCAL, PACKET_OVERHEAD,
                     PKEY_GLOBAL, PKEY_LOCAL, PKTLEN_MASK, PSN_LOCAL, RETH_DMALEN, RETH_RKEY,
                     RETH_VA, VCRC_LEN)
from .opcodes import EXT_LEN, EXT_SIZES, OPCODES, LNH_IBA_GLOBAL, LNH_IBA_LOCAL

_LRH = struct.Struct(">BBHHH")        # VL|LVer, SL|rsvd|LNH, DLID, rsvd|PktLen, SLID
_BTH = struct.Struct(">BBHII")        # OpCode, SE|M|Pad|TVer, P_Key, FECN|BECN|rsvd|DestQP, AckReq|rsvd|PSN
_GRH = struct.Struct(">IHBB16s16s")   # IPVer|TClass|FlowLabel, PayLen, NxtHdr, HopLmt, SGID, DGID
_U16 = struct.Struct(">H")
_U16LE = struct.Struct("<H")
_U32LE = struct.Struct("<I")

# extension headers: name -> (struct, field names); reserved bits are always zero
_EXT: dict[str, tuple[struct.Struct, tuple[str, ...]]] = {
    "RDETH": (struct.Struct(">I"), ("ee_context",)),
    "DETH": (struct.Struct(">II"), ("q_key", "src_qp")),
    "RETH": (struct.Struct(">QII"), ("va", "r_key", "dma_len")),
    "AtomicETH": (struct.Struct(">QIQQ"), ("va", "r_key", "swap_data", "cmp_data")),
    "AETH": (struct.Struct(">I"), ("syndrome", "msn")),
    "AtomicAckETH": (struct.Struct(">Q"), ("orig_rem_data",)),
    "ImmDt": (struct.Struct(">I"), ("immdt",)),
    "IETH": (struct.Struct(">I"), ("r_key",)),
}
_MASK24 = 0xFFFFFF


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
    """
    ext = ext or {}
    if padcnt is None:
        padcnt = (-len(payload)) & 3
    lnh = LNH_IBA_GLOBAL if grh is not None else LNH_IBA_LOCAL
    rest = bytearray()              # everything after the LRH, up to the ICRC
    if grh is not None:
        paylen = grh.get("paylen")
        if paylen is None:
            paylen = BTH_LEN + EXT_LEN.get(opcode, 0) + len(payload) + padcnt + ICRC_LEN
        rest += _GRH.pack((6 << 28) | ((grh.get("tclass", 0) & 0xFF) << 20)
                          | (grh.get("flowlabel", 0) & 0xFFFFF),
                          paylen, grh.get("nxthdr", 0x1B), grh.get("hoplmt", 0),
                          grh.get("sgid", bytes(16)), grh.get("dgid", bytes(16)))
    rest += _BTH.pack(opcode, (se << 7) | (m << 6) | ((padcnt & 3) << 4) | (tver & 0xF),
                      pkey & 0xFFFF,
                      (fecn << 31) | (becn << 30) | (destqp & _MASK24),
                      (ackreq << 31) | (psn & _MASK24))
    if opcode in OPCODES:
        for name in OPCODES[opcode][1]:
            rest += _pack_ext(name, ext.get(name, {}))
    rest += payload
    if padcnt:
        rest += bytes(padcnt)
    if pktlen is None:
        pktlen = (LRH_LEN + len(rest) + ICRC_LEN) >> 2
    frame = bytearray(_LRH.pack(((vl & 0xF) << 4) | (lver & 0xF), ((sl & 0xF) << 4) | lnh,
                                dlid, pktlen & PKTLEN_MASK, slid))
    frame += rest
    frame += _U32LE.pack(_icrc(rest, lnh) if icrc is None else icrc)
    frame += _U16LE.pack(_vcrc(frame) if vcrc is None else vcrc)
    return frame


class Frame:
    """A parsed packet: header fields as attributes, extension headers in ``ext``."""

    __slots__ = ("vl", "lver", "sl", "lnh", "dlid", "pktlen", "slid", "grh", "opcode",
                 "se", "m", "padcnt", "tver", "pkey", "fecn", "becn", "destqp", "ackreq",
                 "psn", "ext", "payload", "icrc", "vcrc")

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
        return {k: getattr(self, k) for k in self.__slots__}


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


# ---------------------------------------------------------------- accessors
# Plain module-level functions on the frame's bytes, for the hot path (no classes, no
# Scapy).  Every field the product reads or writes outside ibemu.wire has one here; the
# offsets are those of ibemu.wire.layout.
#
# - LRH fields: any packet.
# - BTH and extension-header fields (``get_opcode`` ... ``get_reth_dma_len``): an IBA
#   local packet (LNH = 2), the only kind ibemu's HCAs build and accept
#   (HCA._acceptable drops the others before a QP reads them).
# - ``*_any`` and the FECN/BECN accessors ``get_fecn``/``get_becn``/``set_fecn``/
#   ``set_becn``: LNH 2 or 3 (the BTH after the GRH), for switches, which forward and
#   mark either; ``get_fecn_local``/``get_becn_local`` read the LNH-2 position whatever
#   the LNH.
# - Setters patch the CRCs: a variant field (VL, FECN, BECN) patches the VCRC in place;
#   an invariant one (AckReq) recomputes ICRC and VCRC.

def get_vl(buf: Buf) -> int:
    """LRH VL (IBA 7.7.2)."""
    return buf[LRH_VL] >> 4


def get_lver(buf: Buf) -> int:
    """LRH LVer (link version, 0)."""
    return buf[LRH_VL] & 0xF


def get_sl(buf: Buf) -> int:
    """LRH SL (service level, IBA 7.7.4)."""
    return buf[LRH_SL] >> 4


def get_lnh(buf: Buf) -> int:
    """LRH LNH: 2 IBA local (BTH next), 3 IBA global (GRH next); 0/1 raw (IBA 7.7.5)."""
    return buf[LRH_SL] & 3


def get_dlid(buf: Buf) -> int:
    """LRH destination LID."""
    return (buf[LRH_DLID] << 8) | buf[LRH_DLID + 1]


def get_pktlen(buf: Buf) -> int:
    """LRH PktLen: the packet's length in 4-byte words, LRH to ICRC (IBA 7.7.8)."""
    return ((buf[LRH_PKTLEN] & 7) << 8) | buf[LRH_PKTLEN + 1]


def get_slid(buf: Buf) -> int:
    """LRH source LID."""
    return (buf[LRH_SLID] << 8) | buf[LRH_SLID + 1]


def bth_offset(buf: Buf) -> int:
    """Where the BTH starts: after the GRH when LNH = 3, else after the LRH."""
    return LRH_LEN + GRH_LEN if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else LRH_LEN


def get_opcode(buf: Buf) -> int:
    """BTH OpCode (LNH 2)."""
    return buf[OPCODE_LOCAL]


def get_opcode_any(buf: Buf) -> int:
    """BTH OpCode of an LNH 2 or 3 packet."""
    return buf[OPCODE_GLOBAL if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else OPCODE_LOCAL]


def get_se(buf: Buf) -> int:
    """BTH SE, solicited event (LNH 2)."""
    return buf[FLAGS_LOCAL] >> 7


def get_m(buf: Buf) -> int:
    """BTH M, MigReq (LNH 2)."""
    return (buf[FLAGS_LOCAL] >> 6) & 1


def get_padcnt(buf: Buf) -> int:
    """BTH PadCnt: pad bytes after the payload (LNH 2)."""
    return (buf[FLAGS_LOCAL] >> 4) & 3


def get_tver(buf: Buf) -> int:
    """BTH TVer, transport header version (LNH 2)."""
    return buf[FLAGS_LOCAL] & 0xF


def get_pkey(buf: Buf) -> int:
    """BTH P_Key (LNH 2)."""
    return (buf[PKEY_LOCAL] << 8) | buf[PKEY_LOCAL + 1]


def get_pkey_any(buf: Buf) -> int:
    """BTH P_Key of an LNH 2 or 3 packet."""
    off = PKEY_GLOBAL if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else PKEY_LOCAL
    return (buf[off] << 8) | buf[off + 1]


def get_fecn(buf: Buf) -> int:
    """BTH FECN of an LNH 2 or 3 packet."""
    return buf[CN_GLOBAL if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else CN_LOCAL] >> 7


def get_becn(buf: Buf) -> int:
    """BTH BECN of an LNH 2 or 3 packet."""
    return (buf[CN_GLOBAL if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else CN_LOCAL] >> 6) & 1


def get_fecn_local(buf: Buf) -> int:
    """BTH FECN at its LNH-2 position."""
    return buf[CN_LOCAL] >> 7


def get_becn_local(buf: Buf) -> int:
    """BTH BECN at its LNH-2 position."""
    return (buf[CN_LOCAL] >> 6) & 1


def get_destqp(buf: Buf) -> int:
    """BTH DestQP (LNH 2)."""
    return (buf[DESTQP_LOCAL] << 16) | (buf[DESTQP_LOCAL + 1] << 8) | buf[DESTQP_LOCAL + 2]


def get_ackreq(buf: Buf) -> int:
    """BTH AckReq (LNH 2)."""
    return buf[ACKREQ_LOCAL] >> 7


def get_psn(buf: Buf) -> int:
    """BTH PSN (LNH 2)."""
    return (buf[PSN_LOCAL] << 16) | (buf[PSN_LOCAL + 1] << 8) | buf[PSN_LOCAL + 2]


def get_aeth_syndrome(buf: Buf) -> int:
    """AETH Syndrome of an ACK or READ response (LNH 2; IBA 9.7.5.1)."""
    return buf[EXT_LOCAL + AETH_SYNDROME]


def get_aeth_msn(buf: Buf) -> int:
    """AETH MSN (LNH 2)."""
    off = EXT_LOCAL + AETH_MSN
    return (buf[off] << 16) | (buf[off + 1] << 8) | buf[off + 2]


def get_deth_qkey(buf: Buf) -> int:
    """DETH Q_Key of a UD packet (LNH 2)."""
    return int.from_bytes(buf[EXT_LOCAL + DETH_QKEY:EXT_LOCAL + DETH_QKEY + 4], "big")


def get_deth_src_qp(buf: Buf) -> int:
    """DETH SrcQP of a UD packet (LNH 2)."""
    off = EXT_LOCAL + DETH_SRCQP
    return (buf[off] << 16) | (buf[off + 1] << 8) | buf[off + 2]


def get_reth_va(buf: Buf) -> int:
    """RETH virtual address of an RDMA request that starts with a RETH (LNH 2)."""
    return int.from_bytes(buf[EXT_LOCAL + RETH_VA:EXT_LOCAL + RETH_VA + 8], "big")


def get_reth_rkey(buf: Buf) -> int:
    """RETH R_Key (LNH 2)."""
    return int.from_bytes(buf[EXT_LOCAL + RETH_RKEY:EXT_LOCAL + RETH_RKEY + 4], "big")


def get_reth_dma_len(buf: Buf) -> int:
    """RETH DMA Length: the bytes an RDMA WRITE or READ request covers (LNH 2)."""
    return int.from_bytes(buf[EXT_LOCAL + RETH_DMALEN:EXT_LOCAL + RETH_DMALEN + 4], "big")


def payload_len(buf: Buf) -> int:
    """Payload bytes of an LNH-2 packet (headers, extension headers, pad, CRCs removed)."""
    return len(buf) - PACKET_OVERHEAD - EXT_LEN.get(buf[OPCODE_LOCAL], 0) - ((buf[FLAGS_LOCAL] >> 4) & 3)


def payload_of(buf: Buf) -> bytes:
    """The payload bytes of an LNH-2 packet."""
    start = EXT_LOCAL + EXT_LEN.get(buf[OPCODE_LOCAL], 0)
    return bytes(buf[start:start + payload_len(buf)])


def get_ud_payload(buf: Buf, n: int) -> bytes:
    """The *n* bytes after the DETH of an LNH-2 UD packet, as they are (no PadCnt or
    length check: fewer when the frame is shorter)."""
    start = EXT_LOCAL + DETH_LEN
    return bytes(buf[start:start + n])


def _patch_byte(buf: bytearray, pos: int, new: int) -> None:
    """Write one byte and update the VCRC in place (CRC linearity)."""
    x = buf[pos] ^ new
    if not x:
        return
    buf[pos] = new
    end = len(buf) - VCRC_LEN
    old = buf[end] | (buf[end + 1] << 8)
    v = old ^ vcrc_delta(x, end - pos - 1)
    buf[end] = v & 0xFF
    buf[end + 1] = v >> 8


def set_fecn(buf: bytearray, value: int = 1) -> None:
    """Set (or clear) FECN in place; the VCRC is patched, the ICRC is unchanged."""
    pos = bth_offset(buf) + BTH_CN
    _patch_byte(buf, pos, (buf[pos] | 0x80) if value else (buf[pos] & 0x7F))


def set_becn(buf: bytearray, value: int = 1) -> None:
    """Set (or clear) BECN in place; the VCRC is patched, the ICRC is unchanged."""
    pos = bth_offset(buf) + BTH_CN
    _patch_byte(buf, pos, (buf[pos] | 0x40) if value else (buf[pos] & 0xBF))


def set_vl(buf: bytearray, vl: int) -> None:
    """Rewrite the LRH VL (done by every switch from its SL-to-VL table); VCRC patched."""
    _patch_byte(buf, LRH_VL, (vl << 4) | (buf[LRH_VL] & 0xF))


def set_ackreq(buf: bytearray) -> None:
    """Set the BTH AckReq bit in place (LNH 2); the ICRC and the VCRC are recomputed
    (AckReq is an invariant field)."""
    buf[ACKREQ_LOCAL] |= 0x80
    end = len(buf) - ICRC_LEN - VCRC_LEN
    c = _icrc(memoryview(buf)[LRH_LEN:end], buf[LRH_SL] & 3)
    buf[end:end + ICRC_LEN] = c.to_bytes(ICRC_LEN, "little")
    buf[end + ICRC_LEN:end + ICRC_LEN + VCRC_LEN] = \
        _vcrc(memoryview(buf)[:end + ICRC_LEN]).to_bytes(VCRC_LEN, "little")


def vcrc_ok(buf: Buf) -> bool:
    """True when the VCRC (the last two bytes) matches the bytes before it."""
    return len(buf) > VCRC_LEN and _vcrc(buf) == VCRC_RESIDUE


def icrc_ok(buf: Buf) -> bool:
    """True when the ICRC matches (LNH 2/3 packets only)."""
    n = len(buf)
    if n < PACKET_OVERHEAD:
        return False
    lnh = buf[LRH_SL] & 3
    if lnh not in (LNH_IBA_LOCAL, LNH_IBA_GLOBAL):
        return False
    end = n - VCRC_LEN
    if lnh == LNH_IBA_GLOBAL and end < GRH_PACKET_MIN - VCRC_LEN:
        return False
    # the ICRC over the packet and its stored ICRC is CRC-32's residue when they agree
    return _icrc(memoryview(buf)[LRH_LEN:end], lnh) == ICRC_RESIDUE
