"""The UDP encapsulation ibemu puts on the wire between emulated ports.

Every datagram is a 16-byte shim followed by one InfiniBand frame::

    magic 'iB' (2) | version (1) | kind (1) | seq (4) | time_ns (8)     big-endian

*kind* tells an IBA packet (0, the frame starts at the LRH) from a link flow-control
packet (1) -- on a real link the physical layer's start delimiters do that.  *seq* is a
per-link datagram sequence number (lost or reordered datagrams are detected and counted
by the receiver) and *time_ns* the emulated send time, so a receiver accounts in emulated
time even when its own wake-ups are late (../shared/DESIGN.md §4).

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
