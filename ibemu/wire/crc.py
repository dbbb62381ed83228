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

Zero bytes (issue 28): a data packet's payload is nearly always the HCA's zeros, and a
CRC over *n* zero bytes needs no pass over them.  One byte *b* moves a reflected CRC
register *r* to ``(r >> 8) ^ T[(r ^ b) & 0xFF]``, and the byte table is linear over GF(2)
(``T[x ^ y] == T[x] ^ T[y]``: each entry is the polynomial remainder of its index).  With
``b == 0`` the step is a linear map *M* of the register, so *n* zero bytes map it by
``M**n``, again linear.  Both CRCs are handed on as values, ``value = register ^ xorout``
(zlib's ``crc32(data, value)`` and anycrc's ``calc(data, init=value)`` take them so), and
then the map is affine: ``f(c) = M**n(c ^ X) ^ X`` with X all ones, which is
``f(0) ^ L(c)`` with L linear.  L is applied one byte of *c* at a time, each byte through
a table of 256 entries, ``L(c) = L0[c & 0xFF] ^ L1[(c >> 8) & 0xFF] ^ ...``, four tables for
the ICRC and two for the VCRC.  The tables are built from probes of f itself, which is
zlib or anycrc over ``bytes(n)`` once: ``L(1 << i) = f(1 << i) ^ f(0)`` for each bit i,
and ``Lj[b]`` is the XOR of those for the bits set in b -- zlib's ``crc32_combine``, which
Python's zlib does not expose.  They are kept for up to ZEROS_CACHED lengths (a run has few:
the MTU, the pads, a message's last packet); other lengths take one pass over zeros.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable
from functools import lru_cache
from types import FunctionType
from typing import Final, Protocol

import anycrc
from mypy_extensions import i64

from .layout import BTH_CN, GRH_LEN, LRH_LEN, Buf


class _CRC(Protocol):
    def calc(self, data: Buf, init: int | None = None) -> int: ...


_VCRC: _CRC = anycrc.CRC(width=16, poly=0x100B, init=0xFFFF, refin=True, refout=True, xorout=0xFFFF)
_VCRC0: _CRC = anycrc.CRC(width=16, poly=0x100B, init=0x0000, refin=True, refout=True, xorout=0x0000)

ICRC_LRH_MASK: Final = b"\xff" * LRH_LEN   # the whole LRH is variant
GRH_VARIANT_MASK: Final = bytes([0x0F, 0xFF, 0xFF, 0xFF]) + bytes(3) + b"\xff" + bytes(32)
"""OR-mask for the 40-byte GRH: TClass (8 bits after IPVer), FlowLabel (20), HopLmt (8)."""

BTH_VARIANT_OFFSET: Final = BTH_CN     # FECN | BECN | Resv6 byte of the BTH


def vcrc(data: Buf) -> int:
    """VCRC of *data* (bytes, bytearray or memoryview)."""
    return _VCRC.calc(data)


def _byte_table(poly: int) -> list[int]:
    """The byte table of a reflected CRC polynomial (the VCRC's 0x100B is 0xD008 reflected,
    CRC-32's 0x04C11DB7 is 0xEDB88320)."""
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_VCRC_TABLE: Final = _byte_table(0xD008)


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
    byte first (a link packet's head), read from the ints without making the bytes: the
    byte-table steps of :func:`vcrc_loop` on 64-bit ints (i64), plain machine arithmetic
    in the compiled core (issue 28: every flow-control packet is built so)."""
    table = _VCRC_TABLE_LE
    x: i64 = a
    y: i64 = b
    r: i64 = 0xFFFF
    j: i64 = ((r ^ (x >> 8)) & 0xFF) << 1
    r = (r >> 8) ^ table[j] ^ (table[j + 1] << 8)
    j = ((r ^ x) & 0xFF) << 1
    r = (r >> 8) ^ table[j] ^ (table[j + 1] << 8)
    j = ((r ^ (y >> 8)) & 0xFF) << 1
    r = (r >> 8) ^ table[j] ^ (table[j + 1] << 8)
    j = ((r ^ y) & 0xFF) << 1
    r = (r >> 8) ^ table[j] ^ (table[j + 1] << 8)
    return r ^ 0xFFFF


_LRH_MASK_CRC: Final = zlib.crc32(ICRC_LRH_MASK)
ICRC_LRH: Final = _LRH_MASK_CRC
"""The ICRC value after the LRH, which is all variant: where every packet's ICRC starts."""


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


@lru_cache(maxsize=4096)
def icrc_delta(xor_byte: int, distance_to_end: int) -> int:
    """ICRC change caused by XOR-ing *xor_byte* into an invariant byte followed by
    *distance_to_end* more bytes the ICRC covers: ``crc0(bytes([x]) + bytes(d))`` (module
    docstring), for zlib's CRC-32 the difference of the CRCs of two messages of that length
    that differ in that byte alone."""
    return zlib.crc32(bytes([xor_byte]) + bytes(distance_to_end)) ^ zlib.crc32(bytes(distance_to_end + 1))


# ----------------------------------------------------------------- zero extension

ZEROS_CACHED: Final = 32
"""The most lengths whose zero-extension tables are kept (1,025 and 513 ints; compiled,
CRC-32's are 4,100 bytes)."""
ZEROS_BELOW: Final = 8192
"""Tables are made for lengths below this only (a payload of an MTU of 4096 and its pad)."""
_NO_TABLE: Final[list[int]] = []
# the tables by length, in lists rather than dicts: indexed by a native int, not a boxed one
_CRC32_ZEROS: Final = [_NO_TABLE] * ZEROS_BELOW
_VCRC_ZEROS: Final = [_NO_TABLE] * ZEROS_BELOW
# compiled, CRC-32's tables are bytes instead, four per entry: read natively, where a list's
# ints of 32 bits are unboxed on a slow path (and take ten times the memory)
_CRC32_ZEROS_LE: Final = [b""] * ZEROS_BELOW
_TABLED: Final[list[int]] = []              # the lengths with tables, in the order made
_crc32: Final = zlib.crc32


def _zero_tables(width: int, f: Callable[[int], int]) -> list[int]:
    """The tables of the affine map *f* of a *width*-bit CRC value (module docstring):
    ``width // 8`` tables of 256 entries one after another, then ``f(0)``."""
    k = f(0)
    basis = [f(1 << i) ^ k for i in range(width)]
    tables: list[int] = []
    for j in range(width // 8):
        t = [0] * 256
        for b in range(1, 256):
            low = b & -b                    # the lowest bit set: t[b] from t[b without it]
            t[b] = t[b ^ low] ^ basis[8 * j + low.bit_length() - 1]
        tables += t
    tables.append(k)
    return tables


def _make_tables(n: int) -> bool:
    """Make both tables for *n* zero bytes, unless ZEROS_CACHED lengths have them."""
    if len(_TABLED) >= ZEROS_CACHED:
        return False
    z = bytes(n)
    if _LOOP:
        _CRC32_ZEROS_LE[n] = b"".join([x.to_bytes(4, "little") for x in _zero_tables(32, lambda x: _crc32(z, x))])
    else:
        _CRC32_ZEROS[n] = _zero_tables(32, lambda x: _crc32(z, x))
    _VCRC_ZEROS[n] = _zero_tables(16, lambda x: _VCRC.calc(z, x))
    _TABLED.append(n)
    return True


def crc32_zeros(c: int, n: int) -> int:
    """``zlib.crc32(bytes(n), c)``: the CRC-32 value *c* carried over *n* zero bytes,
    four table look-ups for a length with tables (module docstring)."""
    if 0 < n < ZEROS_BELOW:
        x: i64 = c
        if _LOOP:
            b = _CRC32_ZEROS_LE[n]
            if not b and _make_tables(n):
                b = _CRC32_ZEROS_LE[n]
            if b:
                return (_le32(b, 1024) ^ _le32(b, x & 0xFF) ^ _le32(b, 256 + ((x >> 8) & 0xFF))
                        ^ _le32(b, 512 + ((x >> 16) & 0xFF)) ^ _le32(b, 768 + (x >> 24)))
        elif _CRC32_ZEROS[n] or _make_tables(n):
            t = _CRC32_ZEROS[n]
            return t[1024] ^ t[x & 0xFF] ^ t[256 + ((x >> 8) & 0xFF)] ^ t[512 + ((x >> 16) & 0xFF)] ^ t[768 + (x >> 24)]
    return _crc32(bytes(n), c)


def _le32(b: bytes, i: i64) -> i64:
    """Entry *i* of a table of 32-bit entries kept as bytes, least significant first."""
    j = i << 2
    return i64(b[j]) | (i64(b[j + 1]) << 8) | (i64(b[j + 2]) << 16) | (i64(b[j + 3]) << 24)


def vcrc_zeros(v: int, n: int) -> int:
    """The VCRC value *v* carried over *n* zero bytes (``calc(bytes(n), init=v)``), two
    table look-ups for a length with tables (module docstring)."""
    if 0 < n < ZEROS_BELOW and (_VCRC_ZEROS[n] or _make_tables(n)):
        t = _VCRC_ZEROS[n]
        x: i64 = v
        k: i64 = t[512]
        b0: i64 = t[x & 0xFF]
        b1: i64 = t[256 + (x >> 8)]
        return k ^ b0 ^ b1
    return _VCRC.calc(bytes(n), v)


_VCRC_TABLE_LE: Final = b"".join(x.to_bytes(2, "little") for x in _VCRC_TABLE)
"""The VCRC byte table as bytes, two per entry: the compiled core reads bytes natively."""


def vcrc_loop(v: int, data: bytes) -> int:
    """The VCRC value *v* carried over *data* (``calc(data, init=v)``; 0 is the value of
    no bytes) by a byte-table loop.  Compiled, it costs a third of the call into anycrc
    over the few bytes of a packet's headers; interpreted, twice that call (issue 28)."""
    table = _VCRC_TABLE_LE
    r: i64 = v ^ 0xFFFF
    for i in range(len(data)):
        j: i64 = ((r ^ data[i]) & 0xFF) << 1
        r = (r >> 8) ^ table[j] ^ (table[j + 1] << 8)
    return r ^ 0xFFFF


def _compiled() -> bool:
    """True when this module runs compiled (mypyc): its functions are builtins then."""
    return not isinstance(_compiled, FunctionType)


_LOOP: Final = _compiled()
COMPILED: Final = _LOOP
"""True when the wire modules run compiled (mypyc compiles them all or none)."""


def vcrc_update(v: int, data: bytes) -> int:
    """The VCRC value *v* carried over a few bytes *data*: :func:`vcrc_loop` when
    compiled, else anycrc, whichever costs less; the same value either way."""
    if _LOOP:
        return vcrc_loop(v, data)
    return _VCRC.calc(data, v)


def vcrc_word(v: int, w: int) -> int:
    """The VCRC value *v* carried over the four bytes of *w*, least significant first (an
    ICRC as sent): the byte-table step four times on the int when compiled, else anycrc."""
    if not _LOOP:
        return _VCRC.calc(w.to_bytes(4, "little"), v)
    table = _VCRC_TABLE_LE
    r: i64 = v ^ 0xFFFF
    x: i64 = w
    j: i64 = ((r ^ x) & 0xFF) << 1
    r = (r >> 8) ^ i64(table[j]) ^ (i64(table[j + 1]) << 8)
    j = ((r ^ (x >> 8)) & 0xFF) << 1
    r = (r >> 8) ^ i64(table[j]) ^ (i64(table[j + 1]) << 8)
    j = ((r ^ (x >> 16)) & 0xFF) << 1
    r = (r >> 8) ^ i64(table[j]) ^ (i64(table[j + 1]) << 8)
    j = ((r ^ (x >> 24)) & 0xFF) << 1
    r = (r >> 8) ^ i64(table[j]) ^ (i64(table[j + 1]) << 8)
    return r ^ 0xFFFF


def vcrc_more(v: int, data: Buf) -> int:
    """The VCRC value *v* carried over *data* by anycrc (for a payload of any length)."""
    return _VCRC.calc(data, v)


def tail_crcs(c: int, v: int, payload: Buf, zeros: bool, pad: int) -> tuple[int, int]:
    """The ICRC value *c* and the VCRC value *v* carried over a packet's payload and its
    *pad* zero bytes; a payload of *zeros* (empty, or :func:`ibemu.wire.codec.zero_payload`)
    is not read (issue 28)."""
    if zeros:
        if len(payload) + pad:
            return crc32_zeros(c, len(payload) + pad), vcrc_zeros(v, len(payload) + pad)
        return c, v
    c = _crc32(payload, c)
    v = vcrc_more(v, payload)
    if pad:
        return crc32_zeros(c, pad), vcrc_zeros(v, pad)
    return c, v


def icrc_start(masked: bytes) -> int:
    """The ICRC value after the LRH (all variant) and *masked*: the headers that follow
    it, GRH BTH and extension headers, with their variant fields already all ones."""
    return _crc32(masked, _LRH_MASK_CRC)


# ----------------------------------------------------------------- header words (issue 28)

_CRC32_TABLE_LE: Final = b"".join([x.to_bytes(4, "little") for x in _byte_table(0xEDB88320)])
"""CRC-32's byte table as bytes, four per entry (zlib's polynomial, reflected)."""


def crc32_be32(c: i64, w: i64) -> i64:
    """``zlib.crc32(w.to_bytes(4, "big"), c)``: the CRC-32 value *c* carried over the four
    bytes of the 32-bit *w*, most significant first (a header word as sent), by the
    byte-table step on the ints: compiled, no bytes are made nor zlib called
    (:mod:`ibemu.wire.localpkt`)."""
    t = _CRC32_TABLE_LE
    r: i64 = c ^ 0xFFFFFFFF
    j: i64 = ((r ^ (w >> 24)) & 0xFF) << 2
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8) ^ (i64(t[j + 2]) << 16) ^ (i64(t[j + 3]) << 24)
    j = ((r ^ (w >> 16)) & 0xFF) << 2
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8) ^ (i64(t[j + 2]) << 16) ^ (i64(t[j + 3]) << 24)
    j = ((r ^ (w >> 8)) & 0xFF) << 2
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8) ^ (i64(t[j + 2]) << 16) ^ (i64(t[j + 3]) << 24)
    j = ((r ^ w) & 0xFF) << 2
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8) ^ (i64(t[j + 2]) << 16) ^ (i64(t[j + 3]) << 24)
    return r ^ 0xFFFFFFFF


def vcrc_be32(v: i64, w: i64) -> i64:
    """The VCRC value *v* carried over the four bytes of the 32-bit *w*, most significant
    first (a header word as sent), by the byte-table step on the ints (compiled)."""
    t = _VCRC_TABLE_LE
    r: i64 = v ^ 0xFFFF
    j: i64 = ((r ^ (w >> 24)) & 0xFF) << 1
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8)
    j = ((r ^ (w >> 16)) & 0xFF) << 1
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8)
    j = ((r ^ (w >> 8)) & 0xFF) << 1
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8)
    j = ((r ^ w) & 0xFF) << 1
    r = (r >> 8) ^ i64(t[j]) ^ (i64(t[j + 1]) << 8)
    return r ^ 0xFFFF
