"""What both capture formats share (issue 18): the ERF record constants, the error, the
timestamp conversions, and the reading of pcapng files (:class:`Record`,
:func:`read_pcapng`); :mod:`ibemu.capture.erf` and :mod:`ibemu.capture.pcapng` build on it.
The formats are described there.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..atomic import StrPath
from ..errors import UserError

LINKTYPE_ERF = 197
ERF_TYPE_INFINIBAND = 21
ERF_TYPE_INFINIBAND_LINK = 25
ERF_FLAG_VARLEN = 0x04
PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_US = 0xA1B2C3D4

ERF_HDR_LEN = 16
NS = 1_000_000_000


class CaptureError(UserError, ValueError):
    """The file is not an ibemu-readable capture, or it is truncated."""


def erf_timestamp(time_ns: int) -> int:
    sec, rem = divmod(time_ns, NS)
    return (sec << 32) | ((rem << 32) // NS)


def erf_time_ns(ts: int) -> int:
    return (ts >> 32) * NS + (((ts & 0xFFFFFFFF) * NS + (1 << 31)) >> 32)


SHB_TYPE = 0x0A0D0D0A
IDB_TYPE = 1
EPB_TYPE = 6
BYTE_ORDER_MAGIC = 0x1A2B3C4D
SHB_MAGIC_BYTES = struct.pack("<I", SHB_TYPE)
OPT_END = 0
IF_NAME, IF_DESCRIPTION, IF_TSRESOL = 2, 3, 9

_BLOCK = struct.Struct("<II")
_ERF = struct.Struct("<QBB")


# ------------------------------------------------------------------------- reading

@dataclass(frozen=True)
class Record:
    """One frame of a capture: emulated time, link packet or not, the stored bytes, the
    frame's original length and the interface (directed link) name ('' when none)."""
    time_ns: int
    link: bool
    frame: bytes
    length: int
    interface: str


def is_pcapng(head: bytes) -> bool:
    return head[:4] == SHB_MAGIC_BYTES


def _options(data: bytes, off: int, end: int) -> dict[int, bytes]:
    opts: dict[int, bytes] = {}
    while off + 4 <= end:
        code, ln = struct.unpack_from("<HH", data, off)
        if code == OPT_END:
            break
        opts.setdefault(code, data[off + 4: off + 4 + ln])
        off += 4 + ln + (-ln % 4)
    return opts


def read_pcapng(path: StrPath, data: bytes | None = None) -> Iterator[Record]:
    """Yield every frame of an ibemu pcapng capture as a :class:`Record`.

    Raises :class:`CaptureError` with a one-line reason for a file that is not such a
    capture (byte order, link type, a packet on an undeclared interface) or is truncated.
    """
    if data is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise CaptureError("cannot read %s: %s" % (path, e.strerror)) from None
    n = len(data)
    if n < 28 or not is_pcapng(data):
        raise CaptureError("%s: not a pcapng capture" % path)
    ifaces: list[tuple[str, int]] = []          # (name, ticks per second)
    off, index = 0, 0
    while off < n:
        if off + 12 > n:
            raise CaptureError("%s: truncated in the header of block at byte %d" % (path, off))
        btype, blen = _BLOCK.unpack_from(data, off)
        if blen < 12 or blen % 4 or off + blen > n:
            raise CaptureError("%s: truncated or bad block at byte %d (length %d)" % (path, off, blen))
        if btype == SHB_TYPE:
            (magic,) = struct.unpack_from("<I", data, off + 8)
            if magic != BYTE_ORDER_MAGIC:
                raise CaptureError("%s: a big-endian pcapng section (ibemu reads little-endian ones)" % path)
            ifaces = []
        elif btype == IDB_TYPE:
            linktype, _, _snap = struct.unpack_from("<HHI", data, off + 8)
            if linktype != LINKTYPE_ERF:
                raise CaptureError("%s: interface %d has link type %d, expected ERF (197)"
                                   % (path, len(ifaces), linktype))
            opts = _options(data, off + 16, off + blen - 4)
            res = opts.get(IF_TSRESOL, bytes([6]))[0]
            tps = 2 ** (res & 0x7F) if res & 0x80 else 10 ** res
            ifaces.append((opts.get(IF_NAME, b"").decode("utf-8", "replace"), tps))
        elif btype == EPB_TYPE:
            index += 1
            iface, hi, lo, cap, orig = struct.unpack_from("<IIIII", data, off + 8)
            if iface >= len(ifaces):
                raise CaptureError("%s: packet %d names interface %d, which is not declared" % (path, index, iface))
            if 28 + cap > blen - 4 or cap < ERF_HDR_LEN:
                raise CaptureError("%s: packet %d is too short for an ERF header" % (path, index))
            name, tps = ifaces[iface]
            start = off + 28
            _ts, rtype, _flags = _ERF.unpack_from(data, start)
            rtype &= 0x7F
            if rtype not in (ERF_TYPE_INFINIBAND, ERF_TYPE_INFINIBAND_LINK):
                raise CaptureError("%s: packet %d has ERF type %d, not InfiniBand" % (path, index, rtype))
            ticks = (hi << 32) | lo
            t = ticks if tps == 10**9 else ticks * 10**9 // tps
            yield Record(t, rtype == ERF_TYPE_INFINIBAND_LINK, data[start + ERF_HDR_LEN: start + cap],
                         orig - ERF_HDR_LEN, name)
        off += blen


