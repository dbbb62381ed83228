"""Link flow-control packets (IBA 7.9.4; ../shared/REFERENCE.md "Wire format").

Six bytes: Op(4) FCTBS(12) | VL(4) FCCL(12) | LPCRC(16).  Op 0 = normal flow control,
1 = flow-control init.  FCTBS is the total blocks (64 bytes) sent on the VL and FCCL the
credit limit granted by the receiver, both modulo 4096.  LPCRC is the VCRC polynomial
over the first four bytes, sent least significant byte first like the VCRC.

ibemu adds one link packet of its own, the adaptive routing notification (ARN, issue
31; :mod:`ibemu.fabric.arn`): Op 2 (reserved in IBA 7.9.4.1; the format of the ARNs of
current switches is not public), VL 15 (which has no flow control, so a receiver that
takes it for a flow-control packet drops it as malformed), and the 16-bit DLID it is
about in the twelve FCTBS bits and the top four FCCL bits: Op(4) DLID[15:4](12) |
15(4) DLID[3:0](4) 0(8) | LPCRC(16).

The accessors (``link_crc_ok``, ``get_link_op`` ... ``get_link_fccl``) are the hot-path
readers every node uses on arrival; ``parse_link`` is the checked one for tools.
"""
from __future__ import annotations

from typing import Final

import struct

from .crc import VCRC_RESIDUE, lpcrc, lpcrc_words
from .layout import Buf

LINK_LEN: Final = 6
OP_NORMAL: Final = 0
OP_INIT: Final = 1
OP_ARN: Final = 2           # ibemu's adaptive routing notification (module text)
ARN_VL: Final = 15
LINK_OP_FCTBS: Final = 0    # byte offsets of the three 16-bit words
LINK_VL_FCCL: Final = 2
LINK_LPCRC: Final = 4
_LP: Final = struct.Struct(">HH")
_LPCRC: Final = struct.Struct("<H")


def build_link(op: int, fctbs: int, vl: int, fccl: int, crc: int | None = None) -> bytes:
    """The six bytes of a link packet; *crc*: the LPCRC to send (None: the right one).
    Made from the two header words in one step (issue 16: every other frame is one)."""
    a = ((op & 0xF) << 12) | (fctbs & 0xFFF)
    b = ((vl & 0xF) << 12) | (fccl & 0xFFF)
    c = lpcrc_words(a, b) if crc is None else crc & 0xFFFF
    # one 48-bit integer written big-endian: the two words, then the LPCRC with its bytes
    # swapped (it goes least significant byte first); compiled, int.to_bytes is a
    # primitive, about a third of the cost of bytes() of a 6-tuple (issue 28)
    return ((a << 32) | (b << 16) | ((c & 0xFF) << 8) | (c >> 8)).to_bytes(LINK_LEN, "big")


def build_arn(dlid: int) -> bytes:
    """The six bytes of an adaptive routing notification about *dlid* (module text)."""
    return build_link(OP_ARN, (dlid >> 4) & 0xFFF, ARN_VL, (dlid & 0xF) << 8)


def get_arn_dlid(buf: Buf) -> int:
    """The DLID of an adaptive routing notification."""
    return (((buf[LINK_OP_FCTBS] & 0xF) << 8 | buf[LINK_OP_FCTBS + 1]) << 4) | (buf[LINK_VL_FCCL] & 0xF)


def parse_link(buf: Buf) -> tuple[int, int, int, int, int]:
    """Return (op, fctbs, vl, fccl, lpcrc); raise ValueError on a wrong length."""
    if len(buf) != LINK_LEN:
        raise ValueError("link packet must be %d bytes, got %d" % (LINK_LEN, len(buf)))
    a: int
    b: int
    a, b = _LP.unpack_from(buf, 0)
    crc: int = _LPCRC.unpack_from(buf, LINK_LPCRC)[0]
    return a >> 12, a & 0xFFF, b >> 12, b & 0xFFF, crc


def link_crc_ok(buf: Buf) -> bool:
    """A link packet of the right length whose LPCRC matches (the CRC over all six
    bytes is the VCRC polynomial's residue, :data:`ibemu.wire.crc.VCRC_RESIDUE`)."""
    return len(buf) == LINK_LEN and lpcrc(buf) == VCRC_RESIDUE


def get_link_credits(buf: Buf) -> tuple[int, int, int]:
    """(VL, FCTBS, FCCL) of a link packet, in one call (every node, on every arrival).

    A ``bytes`` frame (what :func:`build_link` makes) is read through its own branch: there
    the compiled core reads each byte natively, where a ``bytearray`` or ``memoryview``
    takes a generic subscript (mypyc has a native read for ``bytes`` only; issue 28)."""
    if isinstance(buf, bytes):     # (the same reads as below, on a buf typed bytes)
        b0, b1, b2, b3 = buf[LINK_OP_FCTBS], buf[LINK_OP_FCTBS + 1], buf[LINK_VL_FCCL], buf[LINK_VL_FCCL + 1]
    else:
        b0, b1, b2, b3 = buf[LINK_OP_FCTBS], buf[LINK_OP_FCTBS + 1], buf[LINK_VL_FCCL], buf[LINK_VL_FCCL + 1]
    return b2 >> 4, ((b0 & 0xF) << 8) | b1, ((b2 & 0xF) << 8) | b3


def get_link_op(buf: Buf) -> int:
    return buf[LINK_OP_FCTBS] >> 4


def get_link_fctbs(buf: Buf) -> int:
    return ((buf[LINK_OP_FCTBS] & 0xF) << 8) | buf[LINK_OP_FCTBS + 1]


def get_link_vl(buf: Buf) -> int:
    return buf[LINK_VL_FCCL] >> 4


def get_link_fccl(buf: Buf) -> int:
    return ((buf[LINK_VL_FCCL] & 0xF) << 8) | buf[LINK_VL_FCCL + 1]
