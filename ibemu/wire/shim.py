"""The UDP encapsulation ibemu puts on the wire between emulated ports (version 2, issue 27).

Every datagram is a 16-byte shim followed by one InfiniBand frame::

    magic 'iB' (2) | version 2 (1) | flags (1) | seq (4) | time_ps (8)     big-endian

    flags = kind (bits 0-1) | depth << 2 (bits 2-7)

*kind* tells an IBA packet (0, the frame starts at the LRH) from a link flow-control
packet (1) -- on a real link the physical layer's start delimiters do that -- and from a
synchronisation message of the exact wall clock (2, :mod:`ibemu.runtime.syncproto`;
docs/sync-protocol.md), which carries no frame and consumes no sequence number.  *seq*
is a per-link datagram sequence number (lost or reordered datagrams are detected and
counted by the receiver; it is also the frame's *link_seq* in the order of simultaneous
events, :func:`ibemu.sim.scheduler.order`) and *time_ps* the emulated time (picoseconds)
at which the frame's first bit left the sender, so a receiver accounts in emulated time
even when its own wake-ups are late (../shared/DESIGN.md §4).  *depth* is the depth of
the frame's arrival event at its instant (:mod:`ibemu.sim.scheduler`): 0 when it arrives
later than the event that sent it, else that event's depth plus one.

Version 1 carried the time in nanoseconds, rounded up, and no depth: the receiver could
not put a frame at the very picosecond, nor in the very place among simultaneous events,
where the virtual clock puts it.

Authentication (issue 14 item 1): the runtime follows the frame with a :data:`TAG_LEN`
byte tag, keyed BLAKE2b (RFC 7693's keyed mode, a MAC) over the shim and the frame::

    shim (16) | frame | tag (16) = BLAKE2b-128(key = link key, shim | frame)

The *link key* is one per direction of a link, derived from the run's secret and the
two port names (:func:`link_key`), so a datagram recorded on one link does not
authenticate on another, and the shim's *seq* inside the tag lets the receiver reject
replays (a replay window per link, :mod:`ibemu.runtime.delivery`).
"""
from __future__ import annotations

import hashlib
import hmac
import struct
from typing import Final

MAGIC = b"iB"
VERSION = 2
KIND_PACKET, KIND_LINK, KIND_SYNC = 0, 1, 2
KIND_MASK: Final = 3
DEPTH_BITS: Final = 2
"""*depth* is ``flags >> DEPTH_BITS``; *kind* is ``flags & KIND_MASK``."""
MAX_SHIM_DEPTH = 63
SHIM_LEN = 16
SHIM: Final = struct.Struct(">2sBBIQ")
"""The shim's layout, (magic, version, flags, seq, time_ps): for the runtime's hot path,
which binds ``SHIM.pack`` and ``SHIM.unpack_from`` to locals and checks the fields
itself; elsewhere :func:`pack_shim` and :func:`unpack_shim`."""
DEFAULT_PORT_BASE = 18600
"""The first UDP port the runtime hands out; Scapy binds the shim to a range above it."""
DEFAULT_PORT_COUNT = 2000


def pack_shim(kind: int, seq: int, time_ps: int, *, version: int = VERSION, depth: int = 0) -> bytes:
    """The shim of a datagram: *seq* and *time_ps* wrap to their widths; *kind* (with
    *depth*, capped at 63, in the flags byte) and *version* (another one only to fuzz a
    receiver) are not checked."""
    flags = (kind | (min(depth, MAX_SHIM_DEPTH) << DEPTH_BITS)) & 0xFF
    return SHIM.pack(MAGIC, version, flags, seq & 0xFFFFFFFF, time_ps & 0xFFFFFFFFFFFFFFFF)


def shim_depth(buf: bytes | bytearray | memoryview) -> int:
    """The *depth* of a datagram's shim (no checks)."""
    return int(buf[3]) >> DEPTH_BITS


def unpack_shim(buf: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """Return (kind, seq, time_ps); raise ValueError when it is not an ibemu datagram
    (:func:`shim_depth` reads the depth)."""
    if len(buf) < SHIM_LEN:
        raise ValueError("datagram shorter than the shim")
    magic: bytes
    version: int
    flags: int
    seq: int
    t: int
    magic, version, flags, seq, t = SHIM.unpack_from(buf, 0)
    kind = flags & KIND_MASK
    if magic != MAGIC or version != VERSION or kind > KIND_SYNC:
        raise ValueError("not an ibemu datagram")
    return kind, seq, t


TAG_LEN = 16
"""Bytes of the MAC tag that follows the frame (BLAKE2b truncated to 128 bits)."""
KEY_LEN = 32
"""Bytes of a run's secret and of a link key."""


def link_key(secret: bytes, sender: str, receiver: str) -> bytes:
    """The key of the directed link from port *sender* to port *receiver* ("node:port"
    labels): BLAKE2b keyed with the run's *secret* over the two labels."""
    if len(secret) < 16:
        raise ValueError("the run's secret must have at least 16 bytes, got %d" % len(secret))
    label = ("ibemu link %s > %s" % (sender, receiver)).encode()
    return hashlib.blake2b(label, key=secret[:64], digest_size=KEY_LEN).digest()


def tag(key: bytes, data: bytes | bytearray | memoryview) -> bytes:
    """The MAC tag of *data* (shim and frame) under a link *key*."""
    return hashlib.blake2b(data, key=key, digest_size=TAG_LEN).digest()


def seal(key: bytes, datagram: bytes) -> bytes:
    """*datagram* (shim and frame) followed by its tag."""
    return datagram + hashlib.blake2b(datagram, key=key, digest_size=TAG_LEN).digest()


def verify(key: bytes, datagram: bytes | bytearray | memoryview) -> bool:
    """True when the last :data:`TAG_LEN` bytes of *datagram* are the tag of the rest
    (compared in constant time)."""
    mv = memoryview(datagram)
    n = len(mv)
    if n < TAG_LEN:
        return False
    return hmac.compare_digest(
        hashlib.blake2b(mv[:n - TAG_LEN], key=key, digest_size=TAG_LEN).digest(), mv[n - TAG_LEN:])
