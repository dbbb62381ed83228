"""Field accessors of an InfiniBand packet held as its wire bytes (LRH first, VCRC
last): plain module-level functions for the hot path, the only way product code outside
``ibemu.wire`` reads or writes a frame field (issue 12; tests/test_layout_lint.py).
Offsets come from :mod:`ibemu.wire.layout`; building and parsing whole packets is
:mod:`ibemu.wire.codec`, which re-exports these names.
"""
from __future__ import annotations

from .crc import ICRC_RESIDUE, VCRC_RESIDUE, icrc as _icrc, icrc_delta, vcrc as _vcrc, vcrc_delta
from .layout import (Buf, ACKREQ_LOCAL, AETH_MSN, AETH_SYNDROME, BTH_CN, CN_GLOBAL, CN_LOCAL, DESTQP_LOCAL, DETH_LEN,
                     DETH_QKEY, DETH_SRCQP, EXT_LOCAL, FLAGS_LOCAL, GRH_LEN, GRH_PACKET_MIN, ICRC_LEN, LRH_DLID,
                     LRH_LEN, LRH_PKTLEN, LRH_SL, LRH_SLID, LRH_VL, OPCODE_GLOBAL, OPCODE_LOCAL, PACKET_OVERHEAD,
                     PKEY_GLOBAL, PKEY_LOCAL, PSN_LOCAL, RETH_DMALEN, RETH_RKEY, RETH_VA, VCRC_LEN)
from .opcodes import EXT_LEN, LNH_IBA_GLOBAL, LNH_IBA_LOCAL

__all__ = ["get_vl", "get_lver", "get_sl", "get_lnh", "get_dlid", "get_pktlen", "get_slid", "bth_offset",
           "get_opcode", "get_opcode_any", "get_se", "get_m", "get_padcnt", "get_tver", "get_pkey",
           "get_pkey_any", "get_fecn", "get_becn", "get_fecn_local", "get_becn_local", "get_destqp",
           "get_ackreq", "get_psn", "get_aeth_syndrome", "get_aeth_msn", "get_deth_qkey", "get_deth_src_qp",
           "get_reth_va", "get_reth_rkey", "get_reth_dma_len", "payload_len", "payload_of", "get_ud_payload",
           "set_fecn", "set_becn", "set_vl", "set_ackreq", "vcrc_ok", "icrc_ok"]


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
# - The accessors read on every packet an HCA takes in (``get_vl`` ... ``payload_len``,
#   each with an ``isinstance(buf, bytes)`` branch) repeat their reads on a buf typed
#   ``bytes``: there the compiled core reads each byte natively, where a ``bytearray`` or
#   ``memoryview`` takes a generic subscript (mypyc reads ``bytes`` natively, nothing
#   else; issue 28).  The HCA holds a packet as ``bytes`` once it is in (hca.py).
# - A constant index (a layout offset, not a variable one) is a static object in the
#   compiled core, so ``*_any`` pick the subscript, not the offset: no int is boxed per
#   read (issue 28).
# - Setters patch the CRCs: a variant field (VL, FECN, BECN) patches the VCRC in place;
#   an invariant one (AckReq) recomputes ICRC and VCRC.

def get_vl(buf: Buf) -> int:
    """LRH VL (IBA 7.7.2)."""
    if isinstance(buf, bytes):
        return buf[LRH_VL] >> 4
    return buf[LRH_VL] >> 4


def get_lver(buf: Buf) -> int:
    """LRH LVer (link version, 0)."""
    return buf[LRH_VL] & 0xF


def get_sl(buf: Buf) -> int:
    """LRH SL (service level, IBA 7.7.4)."""
    if isinstance(buf, bytes):
        return buf[LRH_SL] >> 4
    return buf[LRH_SL] >> 4


def get_lnh(buf: Buf) -> int:
    """LRH LNH: 2 IBA local (BTH next), 3 IBA global (GRH next); 0/1 raw (IBA 7.7.5)."""
    if isinstance(buf, bytes):
        return buf[LRH_SL] & 3
    return buf[LRH_SL] & 3


def get_dlid(buf: Buf) -> int:
    """LRH destination LID."""
    if isinstance(buf, bytes):
        return (buf[LRH_DLID] << 8) | buf[LRH_DLID + 1]
    return (buf[LRH_DLID] << 8) | buf[LRH_DLID + 1]


def get_pktlen(buf: Buf) -> int:
    """LRH PktLen: the packet's length in 4-byte words, LRH to ICRC (IBA 7.7.8)."""
    if isinstance(buf, bytes):
        return ((buf[LRH_PKTLEN] & 7) << 8) | buf[LRH_PKTLEN + 1]
    return ((buf[LRH_PKTLEN] & 7) << 8) | buf[LRH_PKTLEN + 1]


def get_slid(buf: Buf) -> int:
    """LRH source LID."""
    if isinstance(buf, bytes):
        return (buf[LRH_SLID] << 8) | buf[LRH_SLID + 1]
    return (buf[LRH_SLID] << 8) | buf[LRH_SLID + 1]


def bth_offset(buf: Buf) -> int:
    """Where the BTH starts: after the GRH when LNH = 3, else after the LRH."""
    return LRH_LEN + GRH_LEN if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else LRH_LEN


def get_opcode(buf: Buf) -> int:
    """BTH OpCode (LNH 2)."""
    if isinstance(buf, bytes):
        return buf[OPCODE_LOCAL]
    return buf[OPCODE_LOCAL]


def get_opcode_any(buf: Buf) -> int:
    """BTH OpCode of an LNH 2 or 3 packet."""
    if isinstance(buf, bytes):
        return buf[OPCODE_GLOBAL] if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else buf[OPCODE_LOCAL]
    return buf[OPCODE_GLOBAL] if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else buf[OPCODE_LOCAL]


def get_se(buf: Buf) -> int:
    """BTH SE, solicited event (LNH 2)."""
    return buf[FLAGS_LOCAL] >> 7


def get_m(buf: Buf) -> int:
    """BTH M, MigReq (LNH 2)."""
    return (buf[FLAGS_LOCAL] >> 6) & 1


def get_padcnt(buf: Buf) -> int:
    """BTH PadCnt: pad bytes after the payload (LNH 2)."""
    if isinstance(buf, bytes):
        return (buf[FLAGS_LOCAL] >> 4) & 3
    return (buf[FLAGS_LOCAL] >> 4) & 3


def get_tver(buf: Buf) -> int:
    """BTH TVer, transport header version (LNH 2)."""
    return buf[FLAGS_LOCAL] & 0xF


def get_pkey(buf: Buf) -> int:
    """BTH P_Key (LNH 2)."""
    if isinstance(buf, bytes):
        return (buf[PKEY_LOCAL] << 8) | buf[PKEY_LOCAL + 1]
    return (buf[PKEY_LOCAL] << 8) | buf[PKEY_LOCAL + 1]


def get_pkey_any(buf: Buf) -> int:
    """BTH P_Key of an LNH 2 or 3 packet."""
    if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL:
        return (buf[PKEY_GLOBAL] << 8) | buf[PKEY_GLOBAL + 1]
    return (buf[PKEY_LOCAL] << 8) | buf[PKEY_LOCAL + 1]


def get_fecn(buf: Buf) -> int:
    """BTH FECN of an LNH 2 or 3 packet."""
    if isinstance(buf, bytes):
        return (buf[CN_GLOBAL] if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else buf[CN_LOCAL]) >> 7
    return (buf[CN_GLOBAL] if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else buf[CN_LOCAL]) >> 7


def get_becn(buf: Buf) -> int:
    """BTH BECN of an LNH 2 or 3 packet."""
    return ((buf[CN_GLOBAL] if (buf[LRH_SL] & 3) == LNH_IBA_GLOBAL else buf[CN_LOCAL]) >> 6) & 1


def get_fecn_local(buf: Buf) -> int:
    """BTH FECN at its LNH-2 position."""
    if isinstance(buf, bytes):
        return buf[CN_LOCAL] >> 7
    return buf[CN_LOCAL] >> 7


def get_becn_local(buf: Buf) -> int:
    """BTH BECN at its LNH-2 position."""
    if isinstance(buf, bytes):
        return (buf[CN_LOCAL] >> 6) & 1
    return (buf[CN_LOCAL] >> 6) & 1


def get_destqp(buf: Buf) -> int:
    """BTH DestQP (LNH 2)."""
    if isinstance(buf, bytes):
        return (buf[DESTQP_LOCAL] << 16) | (buf[DESTQP_LOCAL + 1] << 8) | buf[DESTQP_LOCAL + 2]
    return (buf[DESTQP_LOCAL] << 16) | (buf[DESTQP_LOCAL + 1] << 8) | buf[DESTQP_LOCAL + 2]


def get_ackreq(buf: Buf) -> int:
    """BTH AckReq (LNH 2)."""
    if isinstance(buf, bytes):
        return buf[ACKREQ_LOCAL] >> 7
    return buf[ACKREQ_LOCAL] >> 7


def get_psn(buf: Buf) -> int:
    """BTH PSN (LNH 2)."""
    if isinstance(buf, bytes):
        return (buf[PSN_LOCAL] << 16) | (buf[PSN_LOCAL + 1] << 8) | buf[PSN_LOCAL + 2]
    return (buf[PSN_LOCAL] << 16) | (buf[PSN_LOCAL + 1] << 8) | buf[PSN_LOCAL + 2]


def get_aeth_syndrome(buf: Buf) -> int:
    """AETH Syndrome of an ACK or READ response (LNH 2; IBA 9.7.5.1)."""
    if isinstance(buf, bytes):
        return buf[EXT_LOCAL + AETH_SYNDROME]
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
    if isinstance(buf, bytes):
        return len(buf) - PACKET_OVERHEAD - EXT_LEN.get(buf[OPCODE_LOCAL], 0) - ((buf[FLAGS_LOCAL] >> 4) & 3)
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
    """Set the BTH AckReq bit in place (LNH 2).  AckReq is an invariant field: the ICRC
    changes by :func:`ibemu.wire.crc.icrc_delta` (CRC linearity, as for the VCRC), and
    each changed byte's VCRC change is patched in, the frame not read again (issue 28)."""
    x = (buf[ACKREQ_LOCAL] | 0x80) ^ buf[ACKREQ_LOCAL]
    if not x:
        return
    end = len(buf) - ICRC_LEN - VCRC_LEN
    _patch_byte(buf, ACKREQ_LOCAL, buf[ACKREQ_LOCAL] | 0x80)
    d = icrc_delta(x, end - ACKREQ_LOCAL - 1)
    for i in range(ICRC_LEN):           # least significant byte first
        _patch_byte(buf, end + i, buf[end + i] ^ ((d >> (8 * i)) & 0xFF))


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
