"""The nodes of a scenario: ``[[hca]]`` and ``[[switch]]`` entries and their parameters
(over ``[defaults.hca]`` / ``[defaults.switch]``), with the IBA tables a switch port
carries: SL-to-VL mapping and VL arbitration (seed 004), P_Key tables (IBA 10.9), the
linear forwarding table and per-port buffers.  Defaults: seed 003 Table 1
(:mod:`ibemu.fabric.params`).
"""
from __future__ import annotations

from typing import Any

from ..fabric.params import HCAParams, SwitchParams, VLArbTable
from ..units import ascii_digits, parse_bytes, parse_size, parse_time
from ..validate import (
    AnyKeys,
    Checker,
    boolean,
    describe,
    identifier,
    integer,
    join,
    known,
    merged,
    string,
    table,
    tables,
)
from .model import HCASpec, SwitchSpec

__all__ = ["SWITCH_KEYS", "HCA_KEYS", "MTUS", "DATA_VLS", "switch_params", "hca_params", "vlarb_table",
           "pkey", "pkey_table", "NodeNames", "node_identity", "parse_hcas", "parse_switches", "switch_port_tables"]

SWITCH_KEYS = ("buffer", "bypass_limit", "forwarding_delay", "mode", "crossbar_speedup", "data_vls", "sl2vl",
               "vlarb", "enforce_pkeys", "pkeys")
MAX_SPEEDUP = 64        # an input feeding every output of a radix-64 switch at once
ADAPTIVE_KEYS = ("adaptive", "adaptive_policy", "adaptive_groups")    # [[switch]] only (issue 31)
HCA_KEYS = ("mtu", "buffer", "ack_every", "data_vls", "vlarb", "ack_timeout", "retry_cnt", "max_outstanding",
            "pkeys")
MTUS = (256, 512, 1024, 2048, 4096)
DATA_VLS = (1, 2, 4, 8, 15)      # IBA VLCap: VL0, VL0-1, VL0-3, VL0-7, VL0-14

Items = dict[str, tuple[Any, str]]     # key -> (value, key path), see ibemu.validate.merged


# ---------------------------------------------------------------- parameters

def _data_vls(ctx: Checker, items: Items) -> int:
    if "data_vls" not in items:
        return 1
    v, path = items["data_vls"]
    n = integer(ctx, path, v)
    if n not in DATA_VLS:
        raise ctx.err(path, "must be one of 1, 2, 4, 8, 15 (IBA VLCap), got %d" % n)
    return n


def _vlarb_list(ctx: Checker, lpath: str, entries: Any, data_vls: int) -> list[tuple[int, int]]:
    """A High or Low list: TOML pairs [[vl, weight], ...] or the string format of
    OMNeT++'s IB model, "VL:weight VL:weight ..." (e.g. "0:1 1:20 2:40")."""
    if isinstance(entries, str):
        pairs = []
        for tok in entries.replace(",", " ").split():
            a, sep, b = tok.partition(":")
            if not sep or not ascii_digits(a.strip()) or not ascii_digits(b.strip()):
                raise ctx.err(lpath, "cannot read %r (expected VL:weight pairs such as \"0:1 1:20 2:40\")" % tok)
            pairs.append([int(a), int(b)])
        entries = pairs
    if not isinstance(entries, list) or len(entries) > 64:
        raise ctx.err(lpath, "expected an array of at most 64 [vl, weight] pairs or a string "
                             "\"VL:weight ...\", got %s" % describe(entries))
    out = []
    for i, e in enumerate(entries):
        epath = join(lpath, i)
        if not isinstance(e, list) or len(e) != 2:
            raise ctx.err(epath, "expected a [vl, weight] pair, got %s" % describe(e))
        vl = integer(ctx, epath, e[0], 0, 14)
        if vl >= data_vls:
            raise ctx.err(epath, "VL %d is not a data VL (data_vls = %d)" % (vl, data_vls))
        out.append((vl, integer(ctx, epath, e[1], 0, 255)))
    return out


def vlarb_table(ctx: Checker, items: Items, data_vls: int) -> VLArbTable:
    """IBA VL arbitration (seed 004): High/Low lists of VL:weight, weight in 64-byte
    units, as TOML pairs or OMNeT++ strings; default: every data VL in the Low list with
    weight 255, no High list."""
    if "vlarb" not in items:
        return VLArbTable(low=[(vl, 255) for vl in range(data_vls)])
    v, path = items["vlarb"]
    table(ctx, path, v, ("high", "low", "limit_of_high_priority"))
    lists = {}
    for k, default in (("high", []), ("low", [[vl, 255] for vl in range(data_vls)])):
        lists[k] = _vlarb_list(ctx, join(path, k), v.get(k, default), data_vls)
    limit = integer(ctx, join(path, "limit_of_high_priority"), v.get("limit_of_high_priority", 255), 0, 255)
    return VLArbTable(high=lists["high"], low=lists["low"], limit_of_high_priority=limit)


def _sl2vl_row(ctx: Checker, path: str, v: Any, data_vls: int) -> list[int]:
    if not isinstance(v, list) or len(v) != 16:
        raise ctx.err(path, "expected an array of 16 VLs (one per SL), got %s" % describe(v))
    return [integer(ctx, join(path, i), x, 0, data_vls - 1) for i, x in enumerate(v)]


def switch_params(ctx: Checker, items: Items, max_mtu: int) -> SwitchParams:
    """Table 1 of seed 003: 4-packet input buffers, bypass limit 4, 40 ns forwarding delay."""
    p = SwitchParams()
    if "buffer" in items:
        v, path = items["buffer"]
        nbytes, npk = ctx.conv(path, parse_size, v, True)
        if nbytes is not None and nbytes < max_mtu:
            raise ctx.err(path, "%d bytes cannot hold one %d-byte packet (largest HCA MTU)" % (nbytes, max_mtu))
        p.buffer_bytes, p.buffer_packets = nbytes, npk
    if "bypass_limit" in items:
        p.bypass_limit = integer(ctx, items["bypass_limit"][1], items["bypass_limit"][0], 0)
    if "forwarding_delay" in items:
        v, path = items["forwarding_delay"]
        p.forwarding_delay = ctx.conv(path, parse_time, v)
    if "mode" in items:
        v, path = items["mode"]
        p.cut_through = string(ctx, path, v, ("cut-through", "store-and-forward")) == "cut-through"
    if "crossbar_speedup" in items:             # a crossbar input's read rate / its link rate (.fabric.xport)
        v, path = items["crossbar_speedup"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ctx.err(path, "expected a number, got %s" % describe(v))
        if not 1 <= v <= MAX_SPEEDUP:
            raise ctx.err(path, "must be between 1 and %d (1: no speedup), got %s" % (MAX_SPEEDUP, v))
        p.crossbar_speedup = float(v)
    p.data_vls = _data_vls(ctx, items)
    if "sl2vl" in items:                # one table for every port pair, or per port (seed 004)
        v, path = items["sl2vl"]
        if isinstance(v, dict):
            for k, row in v.items():
                kp = join(path, k)
                if k == "default":
                    p.sl2vl = _sl2vl_row(ctx, kp, row, p.data_vls)
                    continue
                a, sep, b = k.partition(":")
                if not ascii_digits(b if sep else a) or (sep and not ascii_digits(a)):
                    raise ctx.err(kp, "expected \"default\", an output port \"5\" or an input:output "
                                      "pair \"1:5\"")
                key = (int(a), int(b)) if sep else (None, int(a))
                p.port_sl2vl[key] = _sl2vl_row(ctx, kp, row, p.data_vls)
        else:
            p.sl2vl = _sl2vl_row(ctx, path, v, p.data_vls)
    p.vlarb = vlarb_table(ctx, items, p.data_vls)
    if "enforce_pkeys" in items:                 # IBA 10.9 inbound partition enforcement
        p.enforce_pkeys = boolean(ctx, items["enforce_pkeys"][1], items["enforce_pkeys"][0])
    if "pkeys" in items:
        p.pkeys = pkey_table(ctx, items["pkeys"][1], items["pkeys"][0])
    return p


def pkey(ctx: Checker, path: str, v: Any) -> int:
    """A P_Key (IBA 10.9): 16 bits, partition number not 0 (0x0000 and 0x8000 are invalid)."""
    k = integer(ctx, path, v, 0, 0xFFFF)
    if not k & 0x7FFF:
        raise ctx.err(path, "0x%04x is the invalid P_Key (partition number 0)" % k)
    return k


def pkey_table(ctx: Checker, path: str, v: Any) -> list[int]:
    """A port's P_Key table: an array of P_Keys, e.g. [0xFFFF, 0x8001]."""
    if not isinstance(v, list) or not v:
        raise ctx.err(path, "expected a non-empty array of P_Keys such as [0xFFFF, 0x8001], got %s" % describe(v))
    return [pkey(ctx, "%s[%d]" % (path, i), k) for i, k in enumerate(v)]


def hca_params(ctx: Checker, items: Items) -> HCAParams:
    p = HCAParams()
    if "mtu" in items:
        v, path = items["mtu"]
        p.mtu = integer(ctx, path, v)
        if p.mtu not in MTUS:
            raise ctx.err(path, "must be one of 256, 512, 1024, 2048, 4096, got %d" % p.mtu)
    if "buffer" in items:
        v, path = items["buffer"]
        nbytes = ctx.conv(path, parse_bytes, v)
        if nbytes < p.mtu:
            raise ctx.err(path, "%d bytes cannot hold one %d-byte (MTU) packet" % (nbytes, p.mtu))
        p.buffer_bytes = nbytes
    if "ack_every" in items:
        p.ack_every = integer(ctx, items["ack_every"][1], items["ack_every"][0], 1)
    if "ack_timeout" in items:                   # IBA local ACK timeout, emulated time
        v, path = items["ack_timeout"]
        p.ack_timeout = ctx.conv(path, parse_time, v)
        if p.ack_timeout <= 0:
            raise ctx.err(path, "must be positive")
    if "retry_cnt" in items:                     # IBA Retry Count: a 3-bit field
        p.retry_cnt = integer(ctx, items["retry_cnt"][1], items["retry_cnt"][0], 0, 7)
    if "max_outstanding" in items:               # send-queue depth, packets
        p.max_outstanding = integer(ctx, items["max_outstanding"][1], items["max_outstanding"][0], 1, 1 << 22)
    if "pkeys" in items:
        p.pkeys = pkey_table(ctx, items["pkeys"][1], items["pkeys"][0])
    p.data_vls = _data_vls(ctx, items)
    p.vlarb = vlarb_table(ctx, items, p.data_vls)
    return p


# ---------------------------------------------------------------- [[hca]] and [[switch]]

class NodeNames:
    """The node names of a scenario: ``kind`` (name -> "switch" | "hca") and ``where``
    (name -> key path of its entry, e.g. ``hca[3]``)."""

    def __init__(self, ctx: Checker):
        self.ctx = ctx
        self.kind: dict[str, str] = {}
        self.where: dict[str, str] = {}

    def add(self, path: str, nm: str, kind: str) -> None:
        """Name *nm* of kind *kind*, given at key *path* (``hca[3].name``)."""
        if nm in self.kind:
            raise self.ctx.err(path, "duplicate name %r (also %s)" % (nm, self.where[nm]))
        self.kind[nm], self.where[nm] = kind, path.rsplit(".", 1)[0]


def node_identity(ctx: Checker, path: str, entry: dict[str, Any]) -> tuple[int | None, str | None]:
    """A node's ``guid`` (NodeInfo NodeGUID, IBA 14.2.5.3: a non-zero 64-bit number, given as an
    integer or a string "0x0002c90000000001" since TOML integers stop at 2^63 - 1) and ``desc``
    (NodeDescription, IBA 14.2.5.2: at most 64 bytes of UTF-8), as ibnetdiscover shows them."""
    guid = desc = None
    if "guid" in entry:
        v, gpath = entry["guid"], path + ".guid"
        if isinstance(v, str):
            t = v.strip().lower()
            t = t[2:] if t.startswith("0x") else t
            if not t or len(t) > 16 or any(c not in "0123456789abcdef" for c in t):
                raise ctx.err(gpath, "cannot read GUID %r (expected 16 hex digits such as \"0x0002c90000000001\")" % v)
            guid = int(t, 16)
        else:
            guid = integer(ctx, gpath, v, 0)
        if not guid:
            raise ctx.err(gpath, "a GUID is not zero")
    if "desc" in entry:
        desc = string(ctx, path + ".desc", entry["desc"])
        if len(desc.encode("utf-8")) > 64 or not desc.isprintable() or '"' in desc:
            raise ctx.err(path + ".desc", "a node description is at most 64 bytes of printable text without '\"'")
    return guid, desc


def parse_hcas(ctx: Checker, entries: Any, dh: dict[str, Any], names: NodeNames) -> list[HCASpec]:
    """``[[hca]]`` over ``[defaults.hca]`` *dh*; HCAs without a LID get the lowest free ones."""
    hcas: list[HCASpec] = []
    lids: dict[int, str] = {}
    for i, h in enumerate(tables(ctx, "hca", entries)):
        path = join("hca", i)
        table(ctx, path, h, ("name", "lid", "guid", "desc") + HCA_KEYS, ("name",))
        nm = identifier(ctx, path + ".name", h["name"])
        names.add(path + ".name", nm, "hca")
        if "lid" in h:
            lid = integer(ctx, path + ".lid", h["lid"], 1, 0xBFFF)
            if lid in lids:
                raise ctx.err(path + ".lid", "duplicate LID %d (also %s)" % (lid, lids[lid]))
            lids[lid] = path
        hcas.append(HCASpec(nm, h.get("lid", 0), hca_params(ctx, merged(h, path, dh, "defaults.hca", HCA_KEYS)),
                            *node_identity(ctx, path, h)))
    free = (n for n in range(1, 0xC000) if n not in lids)   # unicast LIDs for HCAs without one
    for spec in hcas:
        if spec.lid == 0:
            spec.lid = next(free)
    return hcas


def parse_switches(ctx: Checker, sraw: list[dict[str, Any]], ds: dict[str, Any], names: NodeNames,
                   max_mtu: int) -> list[SwitchSpec]:
    """``[[switch]]`` entries *sraw* over ``[defaults.switch]`` *ds*; their port tables
    come later (:func:`switch_port_tables`), once the links have ports."""
    switches: list[SwitchSpec] = []
    for i, s in enumerate(sraw):
        path = join("switch", i)
        table(ctx, path, s, ("name", "ports", "lft", "port_buffers", "port_pkeys", "port_vlarb", "guid", "desc")
              + SWITCH_KEYS + ADAPTIVE_KEYS, ("name",))
        nm = identifier(ctx, path + ".name", s["name"])
        names.add(path + ".name", nm, "switch")
        ports = integer(ctx, path + ".ports", s["ports"], 1, 254) if "ports" in s else None
        params = switch_params(ctx, merged(s, path, ds, "defaults.switch", SWITCH_KEYS), max_mtu)
        spec = SwitchSpec(nm, params, ports, None, *node_identity(ctx, path, s))
        if "adaptive" in s:
            spec.adaptive = boolean(ctx, path + ".adaptive", s["adaptive"])
        if "adaptive_policy" in s:
            spec.adaptive_policy = string(ctx, path + ".adaptive_policy", s["adaptive_policy"],
                                          ("credits", "random", "static"))
        switches.append(spec)
    return switches


def switch_port_tables(ctx: Checker, sraw: list[dict[str, Any]], switches: list[SwitchSpec],
                       hcas: list[HCASpec], used: dict[tuple[str, int], str], max_mtu: int) -> None:
    """The switch tables that name ports and LIDs: ``lft``, ``port_buffers``,
    ``port_pkeys``, ``port_vlarb``, and the ports of per-port ``sl2vl`` tables; *used*
    maps (node, port) to the link on it."""
    lid_of = {h.name: h.lid for h in hcas}
    lids = set(lid_of.values())
    linked: dict[str, list[int]] = {}               # node -> its linked ports (one pass: issue 28)
    for n, p in used:
        linked.setdefault(n, []).append(p)
    for i, (s, sw) in enumerate(zip(sraw, switches)):
        path = join("switch", i)
        conn = sorted(linked.get(sw.name, ()))
        if "lft" in s:
            lft: dict[int, int] = {}
            for k, v in table(ctx, path + ".lft", s["lft"], AnyKeys()).items():
                kp = "%s.lft.%s" % (path, k)
                lid = int(k) if ascii_digits(k) else lid_of.get(k)
                if lid is None or lid not in lids:
                    raise ctx.err(kp, "no HCA has LID or name %r" % k)
                port = integer(ctx, kp, v, 1, 254)
                if port not in conn:
                    raise ctx.err(kp, "switch %r has no link on port %d (linked: %s)"
                                  % (sw.name, port, known(conn, 99)))
                lft[lid] = port
            sw.lft = lft
        if "adaptive_groups" in s:                  # explicit adaptive routing groups (issue 31)
            groups: dict[int, list[int]] = {}
            for k, v in table(ctx, path + ".adaptive_groups", s["adaptive_groups"], AnyKeys()).items():
                kp = "%s.adaptive_groups.%s" % (path, k)
                lid = int(k) if ascii_digits(k) else lid_of.get(k)
                if lid is None or lid not in lids:
                    raise ctx.err(kp, "no HCA has LID or name %r" % k)
                if not isinstance(v, list) or not v:
                    raise ctx.err(kp, "expected a non-empty array of ports, got %s" % describe(v))
                ports: list[int] = []
                for j, x in enumerate(v):
                    port = integer(ctx, "%s[%d]" % (kp, j), x, 1, 254)
                    if port not in conn:
                        raise ctx.err("%s[%d]" % (kp, j), "switch %r has no link on port %d (linked: %s)"
                                      % (sw.name, port, known(conn, 99)))
                    if port in ports:
                        raise ctx.err("%s[%d]" % (kp, j), "port %d is listed twice" % port)
                    ports.append(port)
                groups[lid] = ports
            sw.adaptive_groups = groups
        for k, v in table(ctx, path + ".port_buffers", s.get("port_buffers", {}), AnyKeys()).items():
            kp = "%s.port_buffers.%s" % (path, k)
            if not ascii_digits(k) or int(k) not in conn:
                raise ctx.err(kp, "switch %r has no link on port %s (linked: %s)" % (sw.name, k, known(conn, 99)))
            nbytes = ctx.conv(kp, parse_bytes, v)
            if nbytes < max_mtu:
                raise ctx.err(kp, "%d bytes cannot hold one %d-byte packet (largest HCA MTU)" % (nbytes, max_mtu))
            sw.params.port_buffers[int(k)] = nbytes
        for k, v in table(ctx, path + ".port_pkeys", s.get("port_pkeys", {}), AnyKeys()).items():
            kp = "%s.port_pkeys.%s" % (path, k)
            if not ascii_digits(k) or int(k) not in conn:
                raise ctx.err(kp, "switch %r has no link on port %s (linked: %s)" % (sw.name, k, known(conn, 99)))
            sw.params.port_pkeys[int(k)] = pkey_table(ctx, kp, v)
        for k, v in table(ctx, path + ".port_vlarb", s.get("port_vlarb", {}), AnyKeys()).items():
            kp = "%s.port_vlarb.%s" % (path, k)      # a port's own VL arbitration table
            if not ascii_digits(k) or int(k) not in conn:
                raise ctx.err(kp, "switch %r has no link on port %s (linked: %s)" % (sw.name, k, known(conn, 99)))
            sw.params.port_vlarb[int(k)] = vlarb_table(ctx, {"vlarb": (v, kp)}, sw.params.data_vls)
        for (pin, pout) in sw.params.port_sl2vl:     # per-port SL-to-VL tables name linked ports
            for pnum in (pin, pout):
                if pnum is not None and pnum not in conn:
                    key = "%d:%d" % (pin, pout) if pin is not None else str(pout)
                    src = path if "sl2vl" in s else "defaults.switch"
                    raise ctx.err("%s.sl2vl.%s" % (src, key), "switch %r has no link on port %d (linked: %s)"
                                  % (sw.name, pnum, known(conn, 99)))
