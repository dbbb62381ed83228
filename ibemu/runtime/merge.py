"""Merging what the workers wrote (issue 4 items 2 and 3): their metrics into one
:class:`~ibemu.results.Metrics`, their node counters and runtime counters into one
table each, their captures into one capture in emulated-time order (pcapng with one
interface per directed link, :mod:`ibemu.capture.pcapng`; ERF pcap parts merge into an
ERF pcap, as before issue 18).

A *part* is what one worker recorded (:func:`ibemu.runtime.worker.run_worker`): JSON
with ``metrics`` (bins), ``node_counters``, ``runtime`` (its loop's counters),
``credits`` and, with the integrity check, ``integrity``.
"""
from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ..atomic import atomic_open
from ..capture.erf import LINKTYPE_ERF, PCAP_MAGIC_NS
from ..capture.pcapng import EPB_TYPE, IDB_TYPE, SHB_TYPE, is_pcapng
from ..errors import UserError
from ..results import Metrics
from ..scenario import Scenario

Part = dict[str, Any]
"""One worker's part, as read from JSON."""

_GLOBAL = struct.Struct("<IHHiIII")
_REC = struct.Struct("<IIII")
_BLOCK = struct.Struct("<II")
_TS = struct.Struct("<II")
_IFACE_TS = struct.Struct("<III")
"""An EPB's interface id and timestamp (high, low words)."""
_EPB_IFACE = 8          # an EPB's interface id, after its block type and length; the timestamp follows
_MAGIC_LEN = 4          # the SHB's block type, which starts a pcapng file

RUNTIME_TOTALS = ("events", "datagrams_sent", "datagrams_received", "datagrams_lost",
                  "datagrams_late", "datagrams_dropped_injected", "datagrams_lost_injected",
                  "datagrams_duplicated", "duplicates_dropped", "strangers", "forged", "send_errors",
                  "bad_datagrams", "slips", "slip_ps")
"""The loop counters (:meth:`ibemu.runtime.loop.NodeLoop.stats`) summed over the workers."""


def read_part(path: str | Path) -> Part | None:
    """A worker's part file, or None when it is missing or unreadable (a worker that
    died before writing it)."""
    try:
        part: Part = json.loads(Path(path).read_text(encoding="utf-8"))
        return part
    except (OSError, ValueError):
        return None


def new_metrics(scn: Scenario) -> Metrics:
    """An empty :class:`~ibemu.results.Metrics` for *scn*, as :func:`ibemu.run.run_virtual`
    makes one: a worker's, or the controller's to merge the workers' into."""
    flows = {f.name: f for f in scn.flows}
    return Metrics(scn.duration, scn.output.bin, {}, flows, {}, window_ps=scn.output.window)


def merge_metrics(metrics: Metrics, parts: Iterable[Part]) -> None:
    """Add every part's bins, message starts and completions (a flow's starts come from
    its source's worker, its completions from its destination's: the merge joins them,
    :meth:`ibemu.results.Metrics.latencies`) into *metrics*."""
    for part in parts:
        metrics.merge_bins(part["metrics"])


def merge_counters(parts: Iterable[Part | None]) -> dict[str, dict[str, int]]:
    """The node counters of every part, added up (a link's fault counts come from both
    of its ends)."""
    counters: dict[str, dict[str, int]] = {}
    for p in parts:
        for n, c in (p["node_counters"].items() if p else ()):
            mine = counters.setdefault(n, {})
            for k, v in c.items():
                mine[k] = mine.get(k, 0) + v
    return counters


def merge_runtime(workers: Sequence[tuple[int, list[str]]], parts: Sequence[Part | None],
                  dilation: float, base: int) -> dict[str, Any]:
    """The run's ``runtime`` table (results.json): the loop counters of the parts summed
    (:data:`RUNTIME_TOTALS`), slips' maximum and mean, the overloaded workers, and one
    entry per worker (*workers*: (index, node names), in the order of *parts*)."""
    per: list[dict[str, Any]] = []
    tot: dict[str, Any] = dict.fromkeys(RUNTIME_TOTALS, 0)
    max_slip = 0
    for (index, nodes), p in zip(workers, parts):
        st = p["runtime"] if p else {}
        per.append({"worker": index, "nodes": nodes, "part_written": p is not None,
                    "scheduling": p.get("scheduling") if p else None, **st})
        for k in RUNTIME_TOTALS:
            tot[k] += st.get(k, 0)
        max_slip = max(max_slip, st.get("max_slip_ps", 0))
    tot["max_slip_ps"] = max_slip
    effs = [w.get("effective_dilation") for w in per if w.get("effective_dilation")]
    tot["effective_dilation"] = max(effs) if effs else None     # the slowest worker's (issue 27)
    tot["sync"] = next((w["sync"] for w in per if w.get("sync")), None)
    tot["overloaded"] = [w["worker"] for w in per if w.get("overloaded")]
    tot["mean_slip_ps"] = tot["slip_ps"] / tot["slips"] if tot["slips"] else 0
    tot["dilation"] = dilation
    tot["udp_port_base"] = base
    tot["workers"] = per
    return tot


Records = list[tuple[int, int, int, int]]
"""(time_ns, interface, offset, length) of every whole record of a capture part (ERF: interface 0)."""


def _records(buf: bytes | mmap.mmap, path: str | Path) -> tuple[bytes, Records]:
    """The header and the records of a capture part written by an ibemu worker: pcapng
    (:class:`~ibemu.capture.pcapng.PcapngWriter`: the header is the SHB and the IDBs, a
    record an EPB) or ERF pcap (the 24-byte global header; a record is a pcap record).
    A truncated tail is ignored: a worker may have been killed while writing."""
    n = len(buf)
    out: Records = []
    if is_pcapng(bytes(buf[:_MAGIC_LEN])):
        off, head_end = 0, 0
        unpack = _BLOCK.unpack_from
        while off + 12 <= n:
            btype, blen = unpack(buf, off)
            if blen < 12 or off + blen > n:
                break
            if btype == EPB_TYPE:
                iface, hi, lo = _IFACE_TS.unpack_from(buf, off + _EPB_IFACE)
                out.append(((hi << 32) | lo, iface, off, blen))     # if_tsresol 9: nanoseconds
            elif btype in (SHB_TYPE, IDB_TYPE) and not out:
                head_end = off + blen
            else:
                raise UserError("%s: block type 0x%x in a capture part written by an ibemu worker" % (path, btype))
            off += blen
        return bytes(buf[:head_end]), out
    if n < _GLOBAL.size:
        return b"", []
    magic, *_rest, linktype = _GLOBAL.unpack_from(buf, 0)
    if magic != PCAP_MAGIC_NS or linktype != LINKTYPE_ERF:
        raise UserError("%s: not a capture part written by an ibemu worker" % path)
    off = _GLOBAL.size
    unpack = _REC.unpack_from
    while off + 16 <= n:
        sec, ns, incl, _ = unpack(buf, off)
        end = off + 16 + incl
        if end > n:
            break
        out.append((sec * 1_000_000_000 + ns, 0, off, end - off))
        off = end
    return bytes(buf[:_GLOBAL.size]), out


def merge_captures(parts: Iterable[str | Path | None], out_path: str | Path) -> int:
    """Write the records of the capture *parts* (paths; missing ones skipped) to
    *out_path* in the canonical order (:func:`ibemu.capture.pcapng.canonical_order`: time,
    then directed link, each link's records as its one part wrote them; ERF parts: time,
    then part); return the count.
    Every part has the same header (the workers build the same fabric, so the same
    interfaces in the same order); the merged file has it once, then the records.
    Written atomically (:func:`ibemu.atomic.atomic_open`): *out_path* is the old file or
    none until the whole merged capture is on disk."""
    maps: list[mmap.mmap] = []
    keys: list[tuple[int, int, int, int, int]] = []
    files: list[BinaryIO] = []
    header = b""
    try:
        for p in parts:
            if p is None:
                continue
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
            head, recs = _records(m, p)
            if header and head != header:
                raise UserError("%s: its capture header (format or interfaces) differs from the other parts'" % p)
            header = header or head
            keys.extend((t, iface, k, off, ln) for t, iface, off, ln in recs)
        keys.sort(key=lambda r: (r[0], r[1], r[2]))    # time, link, part: the canonical order
        with atomic_open(out_path, "wb") as out:       # a killed merge leaves no half capture
            out.write(header or _GLOBAL.pack(PCAP_MAGIC_NS, 2, 4, 0, 0, 65535, LINKTYPE_ERF))
            chunk: list[bytes] = []
            size = 0
            for _, _i, k, off, ln in keys:
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
        for fh in files:
            fh.close()
