"""BTH OpCodes and the extension headers each one carries.

IBA Vol 1 Table 38 (OpCode field) and the header layouts of IBA 9.3 / 9.4, as also
listed by linux include/rdma/ib_pack.h.  The upper three bits name the transport
(000 RC, 001 UC, 010 RD, 011 UD, 100 CNP); CNP = 0x80 is the native InfiniBand
congestion notification packet (no payload, ../shared/REFERENCE.md).

This one table drives both implementations of the wire format: the Scapy layers
(``layers/``) choose the next layer from it, and the codec uses it for header lengths.
"""
from __future__ import annotations

from typing import Final

# extension header names and sizes (bytes)
EXT_SIZES: Final = {
    "RDETH": 4,
    "DETH": 8,
    "RETH": 16,
    "AtomicETH": 28,
    "AETH": 4,
    "AtomicAckETH": 8,
    "ImmDt": 4,
    "IETH": 4,
}

_RC_LIKE = [
    # (low 5 bits, name, request headers after RDETH/DETH for RD, flags)
    (0x00, "SEND_FIRST", ()),
    (0x01, "SEND_MIDDLE", ()),
    (0x02, "SEND_LAST", ()),
    (0x03, "SEND_LAST_WITH_IMMEDIATE", ("ImmDt",)),
    (0x04, "SEND_ONLY", ()),
    (0x05, "SEND_ONLY_WITH_IMMEDIATE", ("ImmDt",)),
    (0x06, "RDMA_WRITE_FIRST", ("RETH",)),
    (0x07, "RDMA_WRITE_MIDDLE", ()),
    (0x08, "RDMA_WRITE_LAST", ()),
    (0x09, "RDMA_WRITE_LAST_WITH_IMMEDIATE", ("ImmDt",)),
    (0x0A, "RDMA_WRITE_ONLY", ("RETH",)),
    (0x0B, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", ("RETH", "ImmDt")),
    (0x0C, "RDMA_READ_REQUEST", ("RETH",)),
    (0x0D, "RDMA_READ_RESPONSE_FIRST", ("AETH",)),
    (0x0E, "RDMA_READ_RESPONSE_MIDDLE", ()),
    (0x0F, "RDMA_READ_RESPONSE_LAST", ("AETH",)),
    (0x10, "RDMA_READ_RESPONSE_ONLY", ("AETH",)),
    (0x11, "ACKNOWLEDGE", ("AETH",)),
    (0x12, "ATOMIC_ACKNOWLEDGE", ("AETH", "AtomicAckETH")),
    (0x13, "COMPARE_SWAP", ("AtomicETH",)),
    (0x14, "FETCH_ADD", ("AtomicETH",)),
]
_RC_ONLY = [
    (0x16, "SEND_LAST_WITH_INVALIDATE", ("IETH",)),
    (0x17, "SEND_ONLY_WITH_INVALIDATE", ("IETH",)),
]
_RESPONSES = {"RDMA_READ_RESPONSE_FIRST", "RDMA_READ_RESPONSE_MIDDLE",
              "RDMA_READ_RESPONSE_LAST", "RDMA_READ_RESPONSE_ONLY",
              "ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE"}

OPCODES: Final[dict[int, tuple[str, tuple[str, ...]]]] = {}
"""code -> (name, extension headers in wire order)."""

for low, name, ext in _RC_LIKE + _RC_ONLY:
    OPCODES[0x00 | low] = ("RC_" + name, ext)
for low, name, ext in _RC_LIKE[:12]:
    OPCODES[0x20 | low] = ("UC_" + name, ext)
for low, name, ext in _RC_LIKE:
    prefix = ("RDETH",) if name in _RESPONSES else ("RDETH", "DETH")
    OPCODES[0x40 | low] = ("RD_" + name, prefix + ext)
OPCODES[0x55] = ("RD_RESYNC", ("RDETH", "DETH"))
OPCODES[0x64] = ("UD_SEND_ONLY", ("DETH",))
OPCODES[0x65] = ("UD_SEND_ONLY_WITH_IMMEDIATE", ("DETH", "ImmDt"))
OPCODES[0x80] = ("CNP", ())

OPCODE_BY_NAME = {name: code for code, (name, _) in OPCODES.items()}
EXT_LEN: Final = {code: sum(EXT_SIZES[e] for e in ext) for code, (_, ext) in OPCODES.items()}

# frequently used codes
RC_SEND_FIRST: Final = 0x00
RC_SEND_MIDDLE: Final = 0x01
RC_SEND_LAST: Final = 0x02
RC_SEND_ONLY: Final = 0x04
RC_RDMA_WRITE_FIRST: Final = 0x06
RC_RDMA_WRITE_MIDDLE: Final = 0x07
RC_RDMA_WRITE_LAST: Final = 0x08
RC_RDMA_WRITE_ONLY: Final = 0x0A
RC_RDMA_READ_REQUEST: Final = 0x0C
RC_RDMA_READ_RESPONSE_FIRST: Final = 0x0D
RC_RDMA_READ_RESPONSE_MIDDLE: Final = 0x0E
RC_RDMA_READ_RESPONSE_LAST: Final = 0x0F
RC_RDMA_READ_RESPONSE_ONLY: Final = 0x10
RC_ACKNOWLEDGE: Final = 0x11
UD_SEND_ONLY: Final = 0x64
CNP: Final = 0x80

# AETH syndrome (IBA 9.7.5.1): bits 6:5 select the kind, bits 4:0 the value
AETH_ACK: Final = 0
AETH_RNR_NAK: Final = 1
AETH_RESERVED: Final = 2
AETH_NAK: Final = 3
AETH_KINDS = {AETH_ACK: "ACK", AETH_RNR_NAK: "RNR_NAK", AETH_RESERVED: "RESERVED", AETH_NAK: "NAK"}
NAK_CODES = {0: "PSN_SEQUENCE_ERROR", 1: "INVALID_REQUEST", 2: "REMOTE_ACCESS_ERROR",
             3: "REMOTE_OPERATIONAL_ERROR", 4: "INVALID_RD_REQUEST"}

# LRH LNH values (IBA 7.7.5)
LNH_RAW: Final = 0
LNH_IPV6: Final = 1
LNH_IBA_LOCAL: Final = 2
LNH_IBA_GLOBAL: Final = 3
GRH_NXTHDR_BTH: Final = 0x1B


def opcode_name(code: int) -> str:
    entry = OPCODES.get(code)
    return entry[0] if entry else "OPCODE_0x%02x" % code


def is_data(code: int) -> bool:
    """Packets that carry application data and may be marked (seed 000 §4: SEND,
    RDMA WRITE and RDMA READ responses; never ACKs or CN packets)."""
    name = OPCODES.get(code, ("",))[0]
    return ("SEND" in name or "WRITE" in name or "READ_RESPONSE" in name)
