"""pcapng captures with one interface per directed link (issue 18 item 1).

The format (IETF draft-ietf-opsawg-pcapng, the file format of Wireshark since 1.8):

- one Section Header Block (SHB, type 0x0A0D0D0A, byte-order magic 0x1A2B3C4D, version
  1.0, section length -1 = not given) with ``shb_userappl`` = ``ibemu``;
- one Interface Description Block (IDB, type 1) per directed link, in a fixed order (the
  fabric's links as built, each link's a->b direction before its b->a one), each with
  link type 197 (LINKTYPE_ERF: the packet data is an ERF record, the format Mellanox's
  ibdump writes, as in the ERF pcap of :mod:`ibemu.capture.erf`), ``if_name`` = the link's
  label (``inter``, ``L1->B``, ...), ``if_description`` and ``if_tsresol`` = 9 (timestamps
  in nanoseconds, so emulated time is kept exactly); the interface's ``snaplen`` is the
  ERF header plus the snap length (0: no limit);
- one Enhanced Packet Block (EPB, type 6) per frame, in emulated-time order, naming the
  interface (the directed link the frame started on), with the captured and original
  lengths.  Wireshark shows the interface as ``frame.interface_name`` (and
  ``frame.interface_id``): ``frame.interface_name == "inter"`` selects one link.

The snap length (``--snaplen N``, the scenario's ``output.snaplen``) counts bytes of the
InfiniBand frame, from the LRH on, as tcpdump's counts bytes from the link-layer header:
a frame of *n* bytes stores ``min(N, n)`` of them; the record's ERF header then has
``rlen`` = 16 + stored bytes and ``wlen`` = *n*, and the EPB's original length is
16 + *n*, so Wireshark reports the frame's real length (``frame.len``) beside the stored
one (``frame.cap_len``).

Why a writer of its own: Scapy's ``PcapNgWriter`` (2.6) writes microsecond timestamps
only (no ``if_tsresol``; a float per packet), builds a Packet per frame and has no
interface description; python-pcapng's writer builds option objects per block.  Neither
is cheap enough for the per-frame path, which this writer keeps as the ERF pcap writer
does (buffered, one ``struct`` pack per frame).

Every block is little-endian (the SHB's byte-order magic says so; the reader here reads
only that byte order, which is what ibemu writes; other files are read by
:func:`ibemu.capture.erf.read_erf_pcap` with a one-line error).
"""
from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..atomic import StrPath
from .erf import ErfPcapWriter, read_erf_pcap
from .records import (
    EPB_TYPE,
    ERF_FLAG_VARLEN,
    ERF_HDR_LEN,
    ERF_TYPE_INFINIBAND,
    ERF_TYPE_INFINIBAND_LINK,
    IDB_TYPE,
    IF_DESCRIPTION,
    IF_NAME,
    IF_TSRESOL,
    LINKTYPE_ERF,
    OPT_END,
    SHB_TYPE,
    BYTE_ORDER_MAGIC,
    CaptureError,
    Record,
    erf_timestamp,
    is_pcapng,
    read_pcapng,
)

SHB_USERAPPL = 4
TSRESOL_NS = 9                      # if_tsresol: 10^-9 s
MAX_SNAPLEN = 65535

_BLOCK = struct.Struct("<II")
_BLOCK_HEAD = _BLOCK
_EPB_HEAD = struct.Struct("<III")   # interface, ts high, ts low (after type and length)
_EPB = struct.Struct("<IIIIIII")    # type, total length, interface, ts high, ts low, caplen, origlen
_ERF = struct.Struct("<QBB")
_ERF_TAIL = struct.Struct(">HHH")
_PAD = (b"", b"\x00\x00\x00", b"\x00\x00", b"\x00")


def _option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def _block(btype: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return _BLOCK.pack(btype, n) + body + struct.pack("<I", n)


def section_header(app: str = "ibemu") -> bytes:
    """The SHB: little-endian, version 1.0, section length unknown (-1)."""
    body = struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)
    body += _option(SHB_USERAPPL, app.encode()) + _option(OPT_END, b"")
    return _block(SHB_TYPE, body)


def interface_block(name: str, snaplen: int | None) -> bytes:
    """An IDB for the directed link *name*: LINKTYPE_ERF, nanosecond timestamps."""
    snap = 0 if snaplen is None else ERF_HDR_LEN + snaplen
    body = struct.pack("<HHI", LINKTYPE_ERF, 0, snap)
    body += (_option(IF_NAME, name.encode()) + _option(IF_DESCRIPTION, ("ibemu directed link %s" % name).encode())
             + _option(IF_TSRESOL, bytes([TSRESOL_NS])) + _option(OPT_END, b""))
    return _block(IDB_TYPE, body)


def check_snaplen(snaplen: int | None) -> int | None:
    if snaplen is not None and not 1 <= snaplen <= MAX_SNAPLEN:
        raise CaptureError("snap length %d: must be 1 .. %d bytes" % (snaplen, MAX_SNAPLEN))
    return snaplen


class PcapngWriter(ErfPcapWriter):
    """Append frames to a pcapng file, one interface per directed link.

    *interfaces*: the interface names (directed-link labels), in interface-id order;
    ``write(time_ns, frame, link=False, iface=0)``.  *snaplen*: store at most that many
    bytes of each frame (None: all).  Buffered, atomic (``.partial`` renamed on
    ``close()``) and raising :class:`~ibemu.errors.OutputError` as
    :class:`~ibemu.capture.erf.ErfPcapWriter`, whose flushing and closing it shares.
    """

    def __init__(self, path: StrPath, interfaces: Sequence[str], snaplen: int | None = None,
                 buffer_bytes: int = 1 << 20, atomic: bool = True, canonical: bool = False) -> None:
        self.canonical = canonical
        self.snaplen = check_snaplen(snaplen)
        self.interfaces = list(interfaces)
        if not self.interfaces:
            raise CaptureError("a pcapng capture needs at least one interface")
        super().__init__(path, buffer_bytes=buffer_bytes, atomic=atomic)
        self._buf = [header_blocks(self.interfaces, snaplen)]

    def write(self, time_ns: int, frame: bytes | bytearray, link: bool = False, iface: int = 0) -> None:
        n = len(frame)
        keep = n if self.snaplen is None or n <= self.snaplen else self.snaplen
        cap = ERF_HDR_LEN + keep
        pad = _PAD[cap & 3]
        total = 32 + cap + len(pad)
        self._buf.append(_EPB.pack(EPB_TYPE, total, iface, time_ns >> 32, time_ns & 0xFFFFFFFF,
                                   cap, ERF_HDR_LEN + n)
                         + _ERF.pack(erf_timestamp(time_ns),
                                     ERF_TYPE_INFINIBAND_LINK if link else ERF_TYPE_INFINIBAND, ERF_FLAG_VARLEN)
                         + _ERF_TAIL.pack(cap, 0, n))
        self._buf.append(bytes(frame) if keep == n else bytes(frame[:keep]))
        self._buf.append(pad + total.to_bytes(4, "little"))
        self.frames += 1
        self._size += total
        if self._size >= self._limit:
            self.flush()


    def _before_commit(self, path: str) -> None:
        if self.canonical:
            canonical_order(path)


def _epb_keys(m: Any) -> tuple[int, list[tuple[int, int, int, int]]]:
    """The end of the header blocks and (time_ns, interface, offset, length) of every EPB."""
    n = len(m)
    off, head_end = 0, 0
    out: list[tuple[int, int, int, int]] = []
    while off + 12 <= n:
        btype, blen = _BLOCK_HEAD.unpack_from(m, off)
        if blen < 12 or off + blen > n:
            break
        if btype == EPB_TYPE:
            iface, hi, lo = _EPB_HEAD.unpack_from(m, off + 8)
            out.append(((hi << 32) | lo, iface, off, blen))
        elif not out:
            head_end = off + blen
        off += blen
    return head_end, out


def canonical_order(path: StrPath) -> None:
    """Put a pcapng capture's records in the canonical order (issue 27): by timestamp,
    then by interface (directed link), each link's records keeping their order.  The
    order a frame was written in among other links' frames of the same nanosecond is an
    accident of which process wrote it; this one is a function of the run, so the
    virtual clock's capture and a wall-clock run's merged parts are the same bytes."""
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(f.fileno(), 0) as m:
            head_end, recs = _epb_keys(m)
            keys = [(t, i) for t, i, _o, _n in recs]
            if all(keys[k] <= keys[k + 1] for k in range(len(keys) - 1)):
                return
            order = sorted(recs, key=lambda r: (r[0], r[1]))      # stable: a link's own order
            data = b"".join([bytes(m[:head_end])] + [m[o:o + n] for _t, _i, o, n in order])
        f.seek(0)
        f.write(data)
        f.truncate()


def header_blocks(interfaces: Sequence[str], snaplen: int | None) -> bytes:
    """The SHB and one IDB per interface: the start of every ibemu pcapng file."""
    return section_header() + b"".join(interface_block(name, snaplen) for name in interfaces)


class LinkCapture:
    """A :class:`PcapngWriter` addressed by the port a frame leaves from.

    *ports* maps each sending ``(node, port number)`` to its directed link's interface id
    (:func:`link_interfaces`).  ``write_port(node, port, time_ns, frame, link)`` is what
    the engines call (the virtual engine through :func:`ibemu.run.capture_transmit`, the
    wall clock's :class:`~ibemu.runtime.delivery.SocketPorts`).
    """

    def __init__(self, writer: PcapngWriter, ports: Mapping[Any, Mapping[int, int]]) -> None:
        self.writer = writer
        self.ports = ports

    def write_port(self, node: Any, port: int, time_ns: int, frame: bytes | bytearray, link: bool) -> None:
        self.writer.write(time_ns, frame, link, self.ports[node][port])

    def close(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()

    @property
    def frames(self) -> int:
        return self.writer.frames


def link_interfaces(link_ends: Mapping[str, tuple[str, int, str, int]],
                    nodes: Mapping[str, Any]) -> tuple[list[str], dict[Any, dict[int, int]]]:
    """The interfaces of a fabric's capture: the directed-link labels in the fabric's order
    (*link_ends*: label -> (sender, its port, receiver, its port), as
    :class:`~ibemu.fabric.network.Fabric` keeps them), and node -> {port: interface id}
    for the sending ends (*nodes*: name -> node object)."""
    names = list(link_ends)
    ports: dict[Any, dict[int, int]] = {}
    for i, label in enumerate(names):
        a, pa, _b, _pb = link_ends[label]
        ports.setdefault(nodes[a], {})[pa] = i
    return names, ports


def open_link_capture(path: StrPath, link_ends: Mapping[str, tuple[str, int, str, int]],
                      nodes: Mapping[str, Any], snaplen: int | None = None,
                      canonical: bool = False) -> LinkCapture:
    """A :class:`LinkCapture` writing *path*, one interface per directed link (in the
    canonical order, :func:`canonical_order`, when *canonical*: a whole run's capture)."""
    names, ports = link_interfaces(link_ends, nodes)
    return LinkCapture(PcapngWriter(path, names, snaplen, canonical=canonical), ports)


def read_capture(path: StrPath) -> Iterator[Record]:
    """Every frame of a capture ibemu wrote, pcapng or ERF pcap (the latter with no
    interface: ``interface`` is '')."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise CaptureError("cannot read %s: %s" % (path, e.strerror)) from None
    if is_pcapng(head):
        yield from read_pcapng(path)
        return
    for t, link, frame in read_erf_pcap(path):
        yield Record(t, link, frame, len(frame), "")


__all__ = ["PcapngWriter", "LinkCapture", "Record", "link_interfaces", "open_link_capture", "read_pcapng",
           "read_capture", "header_blocks", "is_pcapng", "check_snaplen", "CaptureError", "EPB_TYPE", "IDB_TYPE",
           "SHB_TYPE"]
