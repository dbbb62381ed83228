"""LFT dump files (REFERENCE-FABRICS §2): OpenSM's ``opensm-lfts.dump`` (OSM
opensm/osm_dump.c dump_ucast_lfts) and ``ibroute``'s output (RC infiniband-diags
ibroute.c), written from and read into :data:`~.graph.Routes`.

Functions take and return text; the caller does the I/O.  Reading maps a table to a
switch by its GUID (else by its LID) and keeps destination LIDs as they are; a line
that fits neither format is a one-line :class:`UserError` ``<file>:<line>: <reason>``.
"""
from __future__ import annotations

import re

from ..errors import UserError
from .graph import Routes, Subnet

__all__ = ["write_opensm", "write_ibroute", "read_lfts"]

_TYPE = {True: "Switch", False: "Channel Adapter"}


def _dest(sn: Subnet, lid: int) -> tuple[str, int, str] | None:
    """(type, port GUID, description) of the node owning *lid*."""
    name = sn.owner(lid)
    if name is None:
        return None
    n = sn.nodes[name]
    return _TYPE[n.switch], n.port_guid, n.desc


def _switch_order(sn: Subnet) -> list[str]:
    return [s.name for s in sorted(sn.switches(), key=lambda x: x.guid)]


def write_opensm(sn: Subnet, lfts: Routes) -> str:
    """``opensm-lfts.dump``: switches by GUID (OpenSM's switch table order), LIDs 0..max
    LID, unrouted LIDs skipped, the trailer gives the max LID."""
    max_lid = sn.max_lid()
    out: list[str] = []
    for name in _switch_order(sn):
        sw = sn.nodes[name]
        lft = lfts.get(name, {})
        out.append("Unicast lids [0-%u] of switch Lid %u guid 0x%016x ('%s'):" % (max_lid, sw.lid, sw.guid, sw.desc))
        for lid in range(max_lid + 1):
            port = lft.get(lid)
            if port is None or port > sw.nports:
                continue
            d = _dest(sn, lid)
            info = "%s portguid 0x%016x: '%s'" % d if d else "unknown node and type"
            out.append("0x%04x %03u # %s" % (lid, port, info))
        out.append("%u lids dumped" % max_lid)
    return "\n".join(out) + "\n"


def write_ibroute(sn: Subnet, lfts: Routes) -> str:
    """``ibroute <switch lid>`` for every switch in turn (as ``dump_lfts.sh`` does):
    LIDs up to the top routed LID; extra LMC LIDs say which path of the CA they are."""
    out: list[str] = []
    for name in _switch_order(sn):
        sw = sn.nodes[name]
        lft = {lid: p for lid, p in lfts.get(name, {}).items() if p <= sw.nports}
        top = max(lft, default=0)
        out.append("Unicast lids [0x0-0x%x] of switch Lid %u guid 0x%016x (%s):" % (top, sw.lid, sw.guid, sw.desc))
        out.append("  Lid  Out   Destination")
        out.append("       Port     Info ")
        n = 0
        for lid in sorted(lft):
            d = _dest(sn, lid)
            owner = sn.owner(lid)
            if d is None or owner is None:
                info = "unknown node and type"
            else:
                off = lid - sn.nodes[owner].lid
                if off:
                    info = "path #%d out of %d: portguid 0x%016x" % (off + 1, 1 << sn.lmc, d[1])
                else:
                    info = "%s portguid 0x%016x: '%s'" % d
            out.append("0x%04x %03u : (%s)" % (lid, lft[lid], info))
            n += 1
        out.append("%d valid lids dumped " % n)
    return "\n".join(out) + "\n"


_OSM_HEAD = re.compile(r"Unicast lids \[0-(\d+)\] of switch Lid (\d+) guid 0x([0-9a-fA-F]{1,16}) \('(.*)'\):$")
_IBR_HEAD = re.compile(r"Unicast lids \[0x([0-9a-fA-F]+)-0x([0-9a-fA-F]+)\] of switch Lid (\d+) "
                       r"guid 0x([0-9a-fA-F]{1,16}) \((.*)\):$")
_OSM_ROW = re.compile(r"0x([0-9a-fA-F]{1,4}) (\d{1,3}) # .*$")
_IBR_ROW = re.compile(r"0x([0-9a-fA-F]{1,4}) (\d{1,3})(?: : \(.*\))?\s*$")
_OSM_TAIL = re.compile(r"\d+ lids dumped$")
_IBR_TAIL = re.compile(r"\d+ (valid )?lids dumped\s*$")
_IBR_COLS = ("Lid  Out   Destination", "Port     Info")


def read_lfts(text: str, sn: Subnet, label: str = "<lfts>") -> Routes:
    """LFTs from an opensm-lfts.dump or ibroute text, for the switches of *sn* (by GUID,
    else by LID); every switch of the file must be in *sn* and every port linked (or 0
    for the switch's own LID)."""
    by_guid = {s.guid: s.name for s in sn.switches()}
    by_lid = {s.lid: s.name for s in sn.switches()}
    out: Routes = {}
    cur: str | None = None

    def err(i: int, reason: str) -> UserError:
        return UserError("%s:%d: %s" % (label, i, reason))

    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _OSM_HEAD.match(line) or _IBR_HEAD.match(line)
        if m:
            lid, guid = (int(m[2]), int(m[3], 16)) if m.re is _OSM_HEAD else (int(m[3]), int(m[4], 16))
            name = by_guid.get(guid) or by_lid.get(lid)
            if name is None:
                raise err(i, "switch guid 0x%016x lid %d is not in this fabric" % (guid, lid))
            if name in out:
                raise err(i, "switch %s (guid 0x%016x) has a second table" % (name, guid))
            cur = name
            out[cur] = {}
            continue
        if line.startswith(_IBR_COLS):
            continue
        if _OSM_TAIL.match(line) or _IBR_TAIL.match(line):
            cur = None
            continue
        m = _OSM_ROW.match(line) or _IBR_ROW.match(line)
        if m is None:
            raise err(i, "not an LFT line (expected '0x<lid> <port> ...', a 'Unicast lids' header "
                         "or a 'lids dumped' trailer): %r" % line[:60])
        if cur is None:
            raise err(i, "an LFT entry outside a switch's table (no 'Unicast lids ... of switch' header before it)")
        dlid, port = int(m[1], 16), int(m[2])
        sw = sn.nodes[cur]
        if dlid == 0 or dlid >= 0xC000:
            raise err(i, "LID 0x%04x is not a unicast LID (1..0xbfff)" % dlid)
        if port != 0 and port not in sw.peers:
            raise err(i, "port %d of switch %s has no link" % (port, cur))
        if dlid in out[cur]:
            raise err(i, "LID 0x%04x appears twice in switch %s's table" % (dlid, cur))
        out[cur][dlid] = port
    return out
