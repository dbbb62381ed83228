"""The InfiniBand packet layout: header sizes and field offsets, defined once.

A packet is LRH [GRH] BTH extension-headers payload pad ICRC VCRC (IBA Vol 1 ch. 5 and
../shared/REFERENCE.md "Wire format"):

- LRH, local route header (IBA 7.7), 8 bytes::

      0  VL(4) LVer(4)         1  SL(4) rsvd(2) LNH(2)     2-3  DLID
      4-5  rsvd(5) PktLen(11)  6-7  SLID

- GRH, global route header (IBA 8.3), 40 bytes, present when LNH = 3;
- BTH, base transport header (IBA 9.2), 12 bytes::

      0  OpCode                1  SE(1) M(1) PadCnt(2) TVer(4)     2-3  P_Key
      4  FECN(1) BECN(1) rsvd(6)                                 5-7  DestQP
      8  AckReq(1) rsvd(7)                                       9-11 PSN

- extension headers (IBA 9.3, Table 38 says which OpCode carries which;
  :data:`ibemu.wire.opcodes.EXT_SIZES`): RDETH 4, DETH 8 (Q_Key 4, rsvd 1, SrcQP 3),
  RETH 16 (VA 8, R_Key 4, DMA Length 4), AtomicETH 28, AETH 4 (Syndrome 1, MSN 3),
  AtomicAckETH 8, ImmDt 4, IETH 4;
- ICRC 4 bytes and VCRC 2 bytes, least significant byte first.

Offsets named ``LRH_*`` count from the first byte of the packet, ``BTH_*`` from the first
byte of the BTH and ``DETH_*``/``RETH_*``/``AETH_*`` from the first byte of that header.
The ``*_LOCAL`` offsets are absolute positions in an IBA local packet (LNH = 2, no GRH),
the only kind ibemu's HCAs build and accept.  Code outside :mod:`ibemu.wire` reads and
writes fields through the accessors of :mod:`ibemu.wire.codec`, never by offset
(tests/test_layout_lint.py).  Link flow-control packets have their own 6-byte layout in
:mod:`ibemu.wire.linkpkt`.
"""
from __future__ import annotations

from typing import Final, TypeAlias

Buf: TypeAlias = bytes | bytearray | memoryview
"""A frame as the wire modules read it: the bytes on the wire, LRH first, VCRC last."""

# ------------------------------------------------------------------ header sizes (bytes)
LRH_LEN: Final = 8
GRH_LEN: Final = 40
BTH_LEN: Final = 12
RDETH_LEN: Final = 4
DETH_LEN: Final = 8
RETH_LEN: Final = 16
ATOMIC_ETH_LEN: Final = 28
AETH_LEN: Final = 4
ATOMIC_ACK_ETH_LEN: Final = 8
IMMDT_LEN: Final = 4
IETH_LEN: Final = 4
ICRC_LEN: Final = 4
VCRC_LEN: Final = 2

# ------------------------------------------------------------------ common overheads
PACKET_OVERHEAD: Final = LRH_LEN + BTH_LEN + ICRC_LEN + VCRC_LEN
"""26: LRH + BTH + ICRC + VCRC, the bytes of an LNH-2 packet besides its extension
headers, payload and pad (a SEND packet's overhead); also the shortest IBA packet."""
MAX_HEADERS: Final = PACKET_OVERHEAD + RETH_LEN
"""42: LRH + BTH + RETH + ICRC + VCRC, the most non-payload bytes of an ibemu data packet
(RDMA WRITE first/only); an MTU packet is at most MTU + MAX_HEADERS bytes."""
GRH_PACKET_MIN: Final = LRH_LEN + GRH_LEN + BTH_LEN + ICRC_LEN + VCRC_LEN
"""66: the shortest packet with a GRH (LNH = 3)."""
CRC_LEN: Final = ICRC_LEN + VCRC_LEN
"""6: the two CRCs that end every IBA packet."""

# ------------------------------------------------------------------ LRH fields
LRH_VL: Final = 0           # VL in bits 7:4, LVer in 3:0
LRH_SL: Final = 1           # SL in bits 7:4, LNH in 1:0
LRH_DLID: Final = 2         # 16 bits
LRH_PKTLEN: Final = 4       # 11 bits (bytes 4-5), in 4-byte words, VCRC excluded
LRH_SLID: Final = 6         # 16 bits
PKTLEN_MASK: Final = 0x7FF

# ------------------------------------------------------------------ BTH fields (from the BTH)
BTH_OPCODE: Final = 0
BTH_FLAGS: Final = 1        # SE 7, M 6, PadCnt 5:4, TVer 3:0
BTH_PKEY: Final = 2         # 16 bits
BTH_CN: Final = 4           # FECN 7, BECN 6 (the variant byte of the BTH: ICRC masks it)
BTH_DESTQP: Final = 5       # 24 bits
BTH_ACKREQ: Final = 8       # AckReq 7
BTH_PSN: Final = 9          # 24 bits

# ------------------------------------------------------------------ extension header fields
DETH_QKEY: Final = 0        # 32 bits
DETH_SRCQP: Final = 5       # 24 bits (after a reserved byte)
RETH_VA: Final = 0          # 64 bits
RETH_RKEY: Final = 8        # 32 bits
RETH_DMALEN: Final = 12     # 32 bits
AETH_SYNDROME: Final = 0    # 8 bits
AETH_MSN: Final = 1         # 24 bits

# ------------------------------------------------------------------ where the BTH starts
BTH_LOCAL: Final = LRH_LEN                  # 8: LNH = 2
BTH_GLOBAL: Final = LRH_LEN + GRH_LEN       # 48: LNH = 3
EXT_LOCAL: Final = BTH_LOCAL + BTH_LEN      # 20: first extension header (or payload), LNH = 2

# absolute offsets in an IBA local packet (LNH = 2)
OPCODE_LOCAL: Final = BTH_LOCAL + BTH_OPCODE
FLAGS_LOCAL: Final = BTH_LOCAL + BTH_FLAGS
PKEY_LOCAL: Final = BTH_LOCAL + BTH_PKEY
CN_LOCAL: Final = BTH_LOCAL + BTH_CN
DESTQP_LOCAL: Final = BTH_LOCAL + BTH_DESTQP
ACKREQ_LOCAL: Final = BTH_LOCAL + BTH_ACKREQ
PSN_LOCAL: Final = BTH_LOCAL + BTH_PSN
# and in a global one (LNH = 3)
OPCODE_GLOBAL: Final = BTH_GLOBAL + BTH_OPCODE
PKEY_GLOBAL: Final = BTH_GLOBAL + BTH_PKEY
CN_GLOBAL: Final = BTH_GLOBAL + BTH_CN


def packet_size(payload: int, ext: int = 0) -> int:
    """Bytes on the wire of an LNH-2 packet with *ext* bytes of extension headers and
    *payload* bytes of payload (padded to a multiple of 4; IBA 9.2 PadCnt)."""
    return PACKET_OVERHEAD + ext + payload + ((-payload) & 3)
