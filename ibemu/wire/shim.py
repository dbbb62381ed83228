"""The UDP encapsulation ibemu puts on the wire between emulated ports.

Every datagram is a 16-byte shim followed by one InfiniBand frame::

    magic 'iB' (2) | version (1) | kind (1) | seq (4) | time_ns (8)     big-endian

*kind* tells an IBA packet (0, the frame starts at the LRH) from a link flow-control
packet (1) -- on a real link the physical layer's start delimiters do that.  *seq* is a
per-link datagram sequence number (lost or reordered datagrams are detected and counted
by the receiver) and *time_ns* the emulated send time, so a receiver accounts in emulated
time even when its own wake-ups are late (../shared/DESIGN.md §4).
"""
from __future__ import annotations

import struct
from typing import Final

MAGIC = b"iB"
VERSION = 1
KIND_PACKET, KIND_LINK = 0, 1
SHIM_LEN = 16
SHIM: Final = struct.Struct(">2sBBIQ")
"""The shim's layout, (magic, version, kind, seq, time_ns): for the runtime's hot path,
which binds ``SHIM.pack`` and ``SHIM.unpack_from`` to locals and checks the fields
itself; elsewhere :func:`pack_shim` and :func:`unpack_shim`."""
DEFAULT_PORT_BASE = 18600
"""The first UDP port the runtime hands out; Scapy binds the shim to a range above it."""
DEFAULT_PORT_COUNT = 2000


def pack_shim(kind: int, seq: int, time_ns: int, *, version: int = VERSION) -> bytes:
    """The shim of a datagram: *seq* and *time_ns* wrap to their widths; *kind* and
    *version* (another one only to fuzz a receiver) are bytes, not checked."""
    return SHIM.pack(MAGIC, version, kind, seq & 0xFFFFFFFF, time_ns & 0xFFFFFFFFFFFFFFFF)


def unpack_shim(buf: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """Return (kind, seq, time_ns); raise ValueError when it is not an ibemu datagram."""
    if len(buf) < SHIM_LEN:
        raise ValueError("datagram shorter than the shim")
    magic: bytes
    version: int
    kind: int
    seq: int
    t: int
    magic, version, kind, seq, t = SHIM.unpack_from(buf, 0)
    if magic != MAGIC or version != VERSION or kind not in (KIND_PACKET, KIND_LINK):
        raise ValueError("not an ibemu datagram")
    return kind, seq, t
