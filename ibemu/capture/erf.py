"""pcap files of ERF records: the InfiniBand capture format stock Wireshark reads.

../shared/REFERENCE.md "Captures and Wireshark": pcap LINKTYPE_ERF (197); ERF record
type 21 (INFINIBAND) holds a packet from the LRH to the VCRC, type 25
(INFINIBAND_LINK) a link packet.  ERF header: 8-byte little-endian timestamp (upper 32
bits seconds, lower 32 bits binary fraction of a second), type, flags, rlen, lctr, wlen
(big-endian).  This is what Mellanox's ibdump writes; tshark 4.0 refuses
LINKTYPE_INFINIBAND (247).  Timestamps are emulated time; the ERF fraction (2^-32 s)
holds nanoseconds exactly, and the pcap record header uses the nanosecond magic.

The writer is buffered and does no Scapy work: cheap enough for the per-frame path.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Self

from ..atomic import StrPath, discard, prepare_file, replace
from ..errors import OutputError
from .records import (
    ERF_FLAG_VARLEN,
    ERF_HDR_LEN,
    ERF_TYPE_INFINIBAND,
    ERF_TYPE_INFINIBAND_LINK,
    LINKTYPE_ERF,
    NS,
    PCAP_MAGIC_NS,
    PCAP_MAGIC_US,
    CaptureError,
    erf_time_ns,
    erf_timestamp,
    is_pcapng,
    read_pcapng,
)

__all__ = ["ERF_FLAG_VARLEN", "ERF_HDR_LEN", "ERF_TYPE_INFINIBAND", "ERF_TYPE_INFINIBAND_LINK", "LINKTYPE_ERF", "NS",
           "PCAP_MAGIC_NS", "PCAP_MAGIC_US", "CaptureError", "ErfPcapWriter", "erf_time_ns", "erf_timestamp",
           "read_erf_pcap"]

_GLOBAL = struct.Struct("<IHHiIII")
_REC = struct.Struct("<IIII")
_ERF_TAIL = struct.Struct(">HHH")


class ErfPcapWriter:
    """Append frames to a pcap file of ERF records.

    ``write(time_ns, frame, link=False)``; ``close()`` (or use as a context manager).
    Atomic (issue 8): the records go to ``<path>.partial`` and ``close()`` renames it to
    *path* once everything is on disk, so *path* is always a whole, readable capture;
    a killed run leaves only the ``.partial`` file (whole records up to a truncated
    tail, which :func:`read_erf_pcap` reports).  ``atomic=False`` writes *path* directly.
    Missing parent folders are created; an operating-system error (a directory at
    *path*, a read-only or full disk) is one :class:`~ibemu.errors.OutputError` and
    leaves no ``.partial`` file (issue 14 item 6).
    """

    def __init__(self, path: StrPath, snaplen: int = 65535, buffer_bytes: int = 1 << 20,
                 atomic: bool = True) -> None:
        self.path = str(path)
        self._tmp = self.path + ".partial" if atomic else None
        prepare_file(self.path)                 # missing folders made; one line if it cannot be (issue 14)
        try:
            self._f = open(self._tmp or self.path, "wb")
        except OSError as e:
            raise OutputError.from_os(self.path, e) from None
        self._buf: list[bytes] = [_GLOBAL.pack(PCAP_MAGIC_NS, 2, 4, 0, 0, snaplen, LINKTYPE_ERF)]
        self._size = 0
        self._limit = buffer_bytes
        self.frames = 0

    def write(self, time_ns: int, frame: bytes | bytearray, link: bool = False) -> None:
        n = len(frame)
        rlen = ERF_HDR_LEN + n
        sec, rem = divmod(time_ns, NS)
        self._buf.append(_REC.pack(sec, rem, rlen, rlen))
        self._buf.append(struct.pack("<QBB", erf_timestamp(time_ns),
                                     ERF_TYPE_INFINIBAND_LINK if link else ERF_TYPE_INFINIBAND,
                                     ERF_FLAG_VARLEN) + _ERF_TAIL.pack(rlen, 0, n))
        self._buf.append(bytes(frame))
        self.frames += 1
        self._size += rlen + 16
        if self._size >= self._limit:
            self.flush()

    def flush(self) -> None:
        """Write the buffered records; an operating-system error (a full disk) closes
        and removes the ``.partial`` file and raises :class:`OutputError` naming *path*."""
        if self._f.closed:
            return
        try:
            self._f.write(b"".join(self._buf))
        except OSError as e:
            self.abort()
            raise OutputError.from_os(self.path, e) from None
        self._buf.clear()
        self._size = 0

    def abort(self) -> None:
        """Close without committing: the ``.partial`` file is removed, *path* untouched."""
        self._buf.clear()
        try:
            self._f.close()
        except OSError:
            pass
        if self._tmp is not None:
            discard(self._tmp)

    def close(self) -> None:
        """Write what is buffered, sync and rename ``.partial`` to *path* (inside an
        :func:`ibemu.atomic.atomic_batch`, at the batch's end).  On an operating-system
        error nothing is left but the earlier *path*: :class:`OutputError`."""
        if self._f.closed:
            return
        self.flush()
        try:
            if self._tmp is not None:
                self._f.flush()
                os.fsync(self._f.fileno())
            self._f.close()
            self._before_commit(self._tmp or self.path)
        except OSError as e:
            self.abort()
            raise OutputError.from_os(self.path, e) from None
        if self._tmp is not None:
            replace(self._tmp, self.path)

    def _before_commit(self, path: str) -> None:
        """The whole file is written and closed at *path* (a subclass may rewrite it)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_erf_pcap(path: StrPath) -> Iterator[tuple[int, bool, bytes]]:
    """Yield ``(time_ns, link, frame)`` for every record of a pcap of ERF records, or of
    a pcapng capture of ERF records (:func:`ibemu.capture.pcapng.read_pcapng`, which also
    gives each frame's link).

    Raises :class:`CaptureError` with a one-line reason for a file that is not such a
    capture or is truncated.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CaptureError("cannot read %s: %s" % (path, e.strerror)) from None
    if is_pcapng(data):                     # pcapng (issue 18): ibemu.capture.pcapng
        for rec in read_pcapng(path, data):
            yield rec.time_ns, rec.link, rec.frame
        return
    if len(data) < _GLOBAL.size:
        raise CaptureError("%s: not a pcap capture (only %d bytes)" % (path, len(data)))
    magic, _, _, _, _, _, linktype = _GLOBAL.unpack_from(data, 0)
    if magic not in (PCAP_MAGIC_NS, PCAP_MAGIC_US):
        raise CaptureError("%s: not a pcap capture (magic 0x%08x)" % (path, magic))
    if linktype != LINKTYPE_ERF:
        raise CaptureError("%s: link type %d, expected ERF (197)" % (path, linktype))
    off, n, index = _GLOBAL.size, len(data), 0
    while off < n:
        index += 1
        if off + _REC.size > n:
            raise CaptureError("%s: truncated in the header of record %d" % (path, index))
        _, _, incl, _ = _REC.unpack_from(data, off)
        off += _REC.size
        if off + incl > n:
            raise CaptureError("%s: truncated in record %d" % (path, index))
        if incl < ERF_HDR_LEN:
            raise CaptureError("%s: record %d is too short for an ERF header" % (path, index))
        ts, rtype, _flags = struct.unpack_from("<QBB", data, off)
        _rlen, _, wlen = _ERF_TAIL.unpack_from(data, off + 10)
        frame = data[off + ERF_HDR_LEN: off + min(incl, ERF_HDR_LEN + wlen)]
        rtype &= 0x7F
        if rtype not in (ERF_TYPE_INFINIBAND, ERF_TYPE_INFINIBAND_LINK):
            raise CaptureError("%s: record %d has ERF type %d, not InfiniBand" % (path, index, rtype))
        yield erf_time_ns(ts), rtype == ERF_TYPE_INFINIBAND_LINK, frame
        off += incl
