"""The two InfiniBand CRCs, and the in-place VCRC patch used when a switch marks.

ICRC (invariant CRC, ../shared/REFERENCE.md "Wire format"): CRC-32 as ``zlib.crc32``
(reflected 0xEDB88320, initial all ones, final value inverted) over the packet with the
variant fields set to all ones.  ibemu treats the whole LRH as variant, as RoCE does
(linux drivers/infiniband/sw/rxe/rxe_icrc.c starts from the CRC of 8 bytes of 0xFF);
in the GRH, TClass, FlowLabel and HopLmt are variant; in the BTH, the byte holding
FECN, BECN and the 6 reserved bits.  The REFERENCE marks the LRH part as "most likely,
not confirmed"; this is the documented choice.  Like every reflected CRC (and like rxe),
it is sent least significant byte first.

VCRC (variant CRC): CRC-16, polynomial 0x100B (reflected 0xD008), initial 0xFFFF, final
xor 0xFFFF, over the whole packet including the ICRC, recomputed on every hop; sent least
significant byte first.  The link packet's LPCRC is the same CRC over its first 4 bytes.

CRC arithmetic is linear: for messages of equal length,
``crc(a) ^ crc(b) == crc0(a ^ b)`` where ``crc0`` is the CRC with zero initial value and
zero final xor.  Flipping bits in one byte at distance *d* from the end therefore changes
the VCRC by ``crc0(bytes([x]) + bytes(d))``, a constant that is cached.  That is how
:func:`vcrc_delta` lets a switch set FECN or rewrite the VL without re-reading the frame.
"""
from __future__ import annotations

import zlib
from functools import lru_cache
from typing import Final, Protocol

import anycrc

from .layout import BTH_CN, GRH_LEN, LRH_LEN, Buf


class _CRC(Protocol):
    def calc(self, data: Buf) -> int: ...


_VCRC: _CRC = anycrc.CRC(width=16, poly=0x100B, init=0xFFFF, refin=True, refout=True, xorout=0xFFFF)
_VCRC0: _CRC = anycrc.CRC(width=16, poly=0x100B, init=0x0000, refin=True, refout=True, xorout=0x0000)

ICRC_LRH_MASK: Final = b"\xff" * LRH_LEN   # the whole LRH is variant
GRH_VARIANT_MASK: Final = bytes([0x0F, 0xFF, 0xFF, 0xFF]) + bytes(3) + b"\xff" + bytes(32)
"""OR-mask for the 40-byte GRH: TClass (8 bits after IPVer), FlowLabel (20), HopLmt (8)."""

BTH_VARIANT_OFFSET: Final = BTH_CN     # FECN | BECN | Resv6 byte of the BTH


def vcrc(data: Buf) -> int:
    """VCRC of *data* (bytes, bytearray or memoryview)."""
    return _VCRC.calc(data)


def _vcrc_table() -> list[int]:
    """The byte table of the VCRC polynomial, reflected (0x100B -> 0xD008)."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xD008 if c & 1 else c >> 1
        table.append(c)
    return table


_VCRC_TABLE: Final = _vcrc_table()


def lpcrc(first4: Buf) -> int:
    """LPCRC of a link flow-control packet: the VCRC polynomial over its first 4 bytes
    (or, to check one, over all six).  A byte-table loop rather than anycrc: on four or
    six bytes the call into anycrc and its buffer checks cost more than the CRC (issue
    16); tests/test_crc.py checks that the two agree."""
    crc = 0xFFFF
    table = _VCRC_TABLE
    for i in range(len(first4)):
        crc = (crc >> 8) ^ table[(crc ^ first4[i]) & 0xFF]
    return crc ^ 0xFFFF


def lpcrc_words(a: int, b: int) -> int:
    """:func:`lpcrc` of the four bytes of the 16-bit words *a* and *b*, most significant
    byte first (a link packet's head), read from the ints without making the bytes."""
    table = _VCRC_TABLE
    crc = (0xFFFF >> 8) ^ table[(0xFFFF ^ (a >> 8)) & 0xFF]
    crc = (crc >> 8) ^ table[(crc ^ a) & 0xFF]
    crc = (crc >> 8) ^ table[(crc ^ (b >> 8)) & 0xFF]
    crc = (crc >> 8) ^ table[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFF


_LRH_MASK_CRC: Final = zlib.crc32(ICRC_LRH_MASK)


def icrc(lrh_rest: Buf, lnh: int, tail: Buf = b"", pad: int = 0) -> int:
    """ICRC of an IBA packet.

    *lrh_rest* is the packet after the 8-byte LRH, up to (not including) the ICRC:
    GRH (when ``lnh == 3``), BTH, extension headers, payload, pad -- or only its headers,
    followed by *tail* (the payload) and *pad* zero bytes, so that a packet being built
    need not be joined first (:func:`ibemu.wire.codec.build`).
    """
    crc = _LRH_MASK_CRC
    off = 0
    if lnh == 3:
        grh = bytearray(lrh_rest[:GRH_LEN])
        for i, m in enumerate(GRH_VARIANT_MASK):
            if m:
                grh[i] |= m
        crc = zlib.crc32(grh, crc)
        off = GRH_LEN
    pos = off + BTH_VARIANT_OFFSET
    if len(lrh_rest) <= pos:
        raise IndexError("no BTH in %d bytes" % len(lrh_rest))
    # CRC-32 runs on from one piece to the next, so the packet is not copied to mask
    # the variant byte (issue 16: a 2 KiB copy per packet built or checked)
    view = memoryview(lrh_rest)
    crc = zlib.crc32(view[off:pos], crc)
    crc = zlib.crc32(b"\xff", crc)
    crc = zlib.crc32(view[pos + 1:], crc)
    if tail:
        crc = zlib.crc32(tail, crc)
    if pad:
        crc = zlib.crc32(bytes(pad), crc)
    return crc


ICRC_RESIDUE: Final = zlib.crc32(zlib.crc32(b"").to_bytes(4, "little"))
"""CRC-32 over any data followed by its own CRC (least significant byte first)."""
VCRC_RESIDUE: Final = _VCRC.calc(_VCRC.calc(b"").to_bytes(2, "little"))
"""The VCRC over any data followed by its own VCRC (least significant byte first): a
constant of the CRC, so a received packet is checked with one pass over all of it."""


@lru_cache(maxsize=65536)
def vcrc_delta(xor_byte: int, distance_to_end: int) -> int:
    """VCRC change caused by XOR-ing *xor_byte* into a byte followed by
    *distance_to_end* more covered bytes (see the module docstring)."""
    return _VCRC0.calc(bytes([xor_byte]) + bytes(distance_to_end))
