"""Merging what the workers wrote (issue 4 items 2 and 3): their metrics into one
:class:`~ibemu.results.Metrics`, their captures into one ERF pcap in emulated-time order.
"""
from __future__ import annotations

import json
import mmap
import struct
from pathlib import Path

from ..atomic import atomic_open
from ..capture.erf import LINKTYPE_ERF, PCAP_MAGIC_NS
from ..errors import UserError

_GLOBAL = struct.Struct("<IHHiIII")
_REC = struct.Struct("<IIII")


def read_part(path) -> dict | None:
    """A worker's part file, or None when it is missing or unreadable (a worker that
    died before writing it)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def merge_metrics(metrics, parts) -> None:
    for part in parts:
        metrics.merge_bins(part["metrics"])


def _records(buf, path):
    """(time_ns, offset, length) of every whole record of a pcap written by
    :class:`~ibemu.capture.erf.ErfPcapWriter` (a truncated tail is ignored: a worker
    may have been killed while writing)."""
    n = len(buf)
    if n < _GLOBAL.size:
        return []
    magic, *_rest, linktype = _GLOBAL.unpack_from(buf, 0)
    if magic != PCAP_MAGIC_NS or linktype != LINKTYPE_ERF:
        raise UserError("%s: not a capture part written by an ibemu worker" % path)
    out = []
    off = _GLOBAL.size
    unpack = _REC.unpack_from
    while off + 16 <= n:
        sec, ns, incl, _ = unpack(buf, off)
        end = off + 16 + incl
        if end > n:
            break
        out.append((sec * 1_000_000_000 + ns, off, end - off))
        off = end
    return out


def merge_captures(parts, out_path) -> int:
    """Write the records of the capture *parts* (paths; missing ones skipped) to
    *out_path* in emulated-time order (stable: ties keep part order); return the count.
    Written atomically (:func:`ibemu.atomic.atomic_open`): *out_path* is the old file or
    none until the whole merged capture is on disk."""
    maps, keys = [], []
    files = []
    try:
        for i, p in enumerate(parts):
            try:
                f = open(p, "rb")
            except OSError:
                continue
            files.append(f)
            size = Path(p).stat().st_size
            if size < _GLOBAL.size:
                continue
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            maps.append(m)
            k = len(maps) - 1
            keys.extend((t, k, off, ln) for t, off, ln in _records(m, p))
        keys.sort(key=lambda r: (r[0], r[1]))
        with atomic_open(out_path, "wb") as out:       # a killed merge leaves no half capture
            out.write(_GLOBAL.pack(PCAP_MAGIC_NS, 2, 4, 0, 0, 65535, LINKTYPE_ERF))
            chunk = []
            size = 0
            for _, k, off, ln in keys:
                chunk.append(maps[k][off:off + ln])
                size += ln
                if size > (4 << 20):
                    out.write(b"".join(chunk))
                    chunk.clear()
                    size = 0
            out.write(b"".join(chunk))
        return len(keys)
    finally:
        for m in maps:
            m.close()
        for f in files:
            f.close()
