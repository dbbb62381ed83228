"""Link flow-control packets (IBA 7.9.4; ../shared/REFERENCE.md "Wire format").

Six bytes: Op(4) FCTBS(12) | VL(4) FCCL(12) | LPCRC(16).  Op 0 = normal flow control,
1 = flow-control init.  FCTBS is the total blocks (64 bytes) sent on the VL and FCCL the
credit limit granted by the receiver, both modulo 4096.  LPCRC is the VCRC polynomial
over the first four bytes, sent least significant byte first like the VCRC.
"""
from __future__ import annotations

import struct

from .crc import lpcrc

LINK_LEN = 6
OP_NORMAL, OP_INIT = 0, 1
_LP = struct.Struct(">HH")
_LPCRC = struct.Struct("<H")


def build_link(op: int, fctbs: int, vl: int, fccl: int, crc: int | None = None) -> bytes:
    head = _LP.pack(((op & 0xF) << 12) | (fctbs & 0xFFF), ((vl & 0xF) << 12) | (fccl & 0xFFF))
    return head + _LPCRC.pack(lpcrc(head) if crc is None else crc)


def parse_link(buf) -> tuple[int, int, int, int, int]:
    """Return (op, fctbs, vl, fccl, lpcrc); raise ValueError on a wrong length."""
    if len(buf) != LINK_LEN:
        raise ValueError("link packet must be %d bytes, got %d" % (LINK_LEN, len(buf)))
    a, b = _LP.unpack_from(buf, 0)
    return a >> 12, a & 0xFFF, b >> 12, b & 0xFFF, _LPCRC.unpack_from(buf, 4)[0]


def link_crc_ok(buf) -> bool:
    return len(buf) == LINK_LEN and lpcrc(bytes(buf[:4])) == _LPCRC.unpack_from(buf, 4)[0]
