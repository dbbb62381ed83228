"""Raw writes of frame fields, for the fuzzers (:mod:`ibemu.fuzz`,
:mod:`ibemu.runtime.fuzzpeer`).

Unlike the setters of :mod:`ibemu.wire.codec` (``set_fecn``, ``set_vl``, ``set_ackreq``,
which keep the CRCs right), the ``set_*`` functions here write one field of an IBA
local packet (LNH = 2; offsets from :mod:`ibemu.wire.layout`) in place and touch
nothing else: the CRCs stay as they were, so a fuzzer can build a frame that is wrong
in exactly one way, then call :func:`fix_crcs` or :func:`fix_vcrc` when the frame is to
get past the link checks.  Values are not range-checked beyond what the field's width
keeps (PktLen is masked to 11 bits, a byte-wide field takes 0..255).
"""
from __future__ import annotations


from .crc import icrc, vcrc
from .layout import (
    ACKREQ_LOCAL,
    CRC_LEN,
    DESTQP_LOCAL,
    GRH_PACKET_MIN,
    ICRC_LEN,
    LRH_DLID,
    LRH_LEN,
    LRH_PKTLEN,
    LRH_SL,
    LRH_VL,
    OPCODE_LOCAL,
    PACKET_OVERHEAD,
    PKEY_LOCAL,
    PSN_LOCAL,
    VCRC_LEN,
)
from .opcodes import LNH_IBA_GLOBAL, LNH_IBA_LOCAL


# ------------------------------------------------------------------ LRH (IBA 7.7)
def set_vl(f: bytearray, vl: int) -> None:
    """LRH VL (bits 7:4 of byte 0), LVer kept; no CRC updated (``codec.set_vl`` patches
    the VCRC)."""
    f[LRH_VL] = (vl << 4) | (f[LRH_VL] & 0xF)


def set_lnh(f: bytearray, lnh: int) -> None:
    """LRH LNH (bits 1:0 of byte 1), SL and the reserved bits kept."""
    f[LRH_SL] = (f[LRH_SL] & 0xFC) | lnh


def set_dlid(f: bytearray, dlid: int) -> None:
    """LRH DLID (16 bits)."""
    f[LRH_DLID:LRH_DLID + 2] = dlid.to_bytes(2, "big")


def set_pktlen(f: bytearray, words: int) -> None:
    """LRH PktLen (11 bits, in 4-byte words; *words* is masked), the reserved bits of
    its first byte kept."""
    f[LRH_PKTLEN] = (f[LRH_PKTLEN] & 0xF8) | ((words >> 8) & 7)
    f[LRH_PKTLEN + 1] = words & 0xFF


# ------------------------------------------------------------------ BTH (IBA 9.2), LNH = 2
def set_opcode(f: bytearray, opcode: int) -> None:
    """BTH OpCode."""
    f[OPCODE_LOCAL] = opcode


def set_pkey(f: bytearray, pkey: int) -> None:
    """BTH P_Key (16 bits)."""
    f[PKEY_LOCAL:PKEY_LOCAL + 2] = pkey.to_bytes(2, "big")


def set_destqp(f: bytearray, qpn: int) -> None:
    """BTH DestQP (24 bits); the reserved byte before it (FECN, BECN) kept."""
    f[DESTQP_LOCAL:DESTQP_LOCAL + 3] = qpn.to_bytes(3, "big")


def set_ackreq_byte(f: bytearray, ackreq: int) -> None:
    """The BTH byte of AckReq (bit 7) and its 7 reserved bits: *ackreq* (0 or 1) with
    the reserved bits cleared.  No CRC updated (``codec.set_ackreq`` recomputes both)."""
    f[ACKREQ_LOCAL] = 0x80 if ackreq else 0


def set_psn(f: bytearray, psn: int) -> None:
    """BTH PSN (24 bits); the AckReq byte before it kept."""
    f[PSN_LOCAL:PSN_LOCAL + 3] = psn.to_bytes(3, "big")


# ------------------------------------------------------------------ the CRCs
def fix_vcrc(f: bytearray) -> bytearray:
    """Recompute the VCRC (the last two bytes) over the bytes before it, in place, and
    return *f*.  *f* has at least two bytes."""
    n = len(f)
    f[n - VCRC_LEN:] = vcrc(bytes(f[:n - VCRC_LEN])).to_bytes(VCRC_LEN, "little")
    return f


def fix_crcs(f: bytearray, icrc_too: bool = True) -> bytearray:
    """Recompute the ICRC (when *icrc_too*, the frame is long enough for one and its LNH
    says IBA local or global) and the VCRC (when the frame has two bytes), in place;
    return *f*.  Whatever the frame holds, the CRCs then say it is what was sent."""
    n = len(f)
    if icrc_too and n >= PACKET_OVERHEAD:
        lnh = f[LRH_SL] & 3
        if lnh == LNH_IBA_LOCAL or (lnh == LNH_IBA_GLOBAL and n >= GRH_PACKET_MIN):
            end = n - CRC_LEN
            f[end:end + ICRC_LEN] = icrc(bytes(f[LRH_LEN:end]), lnh).to_bytes(ICRC_LEN, "little")
    if n >= VCRC_LEN:
        fix_vcrc(f)
    return f


def flip_vcrc_bit(f: bytearray, k: int, bit: int) -> None:
    """Flip bit *bit* of the VCRC byte *k* places before the frame's last byte."""
    f[-1 - k] ^= 1 << bit


def flip_icrc_bit(f: bytearray, k: int, bit: int) -> None:
    """Flip bit *bit* of the ICRC byte *k* places before the ICRC's last byte (the one
    just before the VCRC)."""
    f[-VCRC_LEN - 1 - k] ^= 1 << bit


def insert_before_vcrc(f: bytearray, data: bytes) -> bytearray:
    """A copy of *f* with *data* inserted between the ICRC and the VCRC (the frame
    grows; PktLen and the CRCs are left as they were)."""
    return f[:-VCRC_LEN] + data + f[-VCRC_LEN:]
