"""A switch's linear forwarding table as the data path reads it (IBA 18.2.4.3.1,
LinearForwardingTable: one output port per unicast DLID).

The routing engines hand each switch its table as a dict, DLID -> port.  Looked up once
per packet and hop, a dict of 11,664 LIDs in each of 1,620 switches (the largest
three-level fat tree of issue 28) is about 650 kB a switch and three cache misses a
lookup.  :class:`ForwardingTable` keeps the dict (what the rest of ibemu reads) and, beside
it, the same table as one byte per DLID, port + 1 (0: no entry): 11.7 kB a switch, one
read.  A table that does not fit bytes (a port above 254, a DLID above 0xFFFF, a negative
number) is looked up in the dict, with the same answers.

The dict must not change in place after the table is made: a switch's table is replaced
whole (``Switch.fwd``, made again).
"""
from __future__ import annotations

from typing import Final

import numpy as np

MAX_PORT: Final = 254
"""The highest port a byte holds (as 255); IBA switches have at most 254 ports."""
MAX_DLID: Final = 0xFFFF


def dense_ports(table: dict[int, int]) -> bytes | None:
    """*table* as bytes, ``port + 1`` at each DLID and 0 where it has none; None when an
    entry does not fit (the module text).  Read and scattered as arrays: at 11,664 hosts
    the 1,620 tables hold 21.5M entries, a loop over them took seconds (issue 28)."""
    if not table:
        return b""
    n = len(table)
    try:
        dlids = np.fromiter(table.keys(), dtype=np.int64, count=n)
        ports = np.fromiter(table.values(), dtype=np.int64, count=n)
    except OverflowError:               # beyond 64 bits: does not fit either
        return None
    if dlids.min() < 0 or dlids.max() > MAX_DLID or ports.min() < 0 or ports.max() > MAX_PORT:
        return None
    out = np.zeros(int(dlids.max()) + 1, dtype=np.uint8)
    out[dlids] = ports + 1              # DLIDs are a dict's keys: each written once
    return out.tobytes()


class ForwardingTable:
    """DLID -> output port, for the switch's data path (the module text)."""

    def __init__(self, table: dict[int, int]) -> None:
        self.table = table
        self.ports: bytes = dense_ports(table) or b""   # b"": the dict answers (module text)

    def out(self, dlid: int) -> int | None:
        """The output port for *dlid*, None for a DLID the table has no entry for."""
        ports = self.ports
        if 0 <= dlid < len(ports):
            p = ports[dlid]
            return p - 1 if p else None
        return self.table.get(dlid)     # beyond the bytes' last DLID: none in a table that fits
