"""Real topologies (issue 15 Deliver 3): the text output of ``ibnetdiscover``
(infiniband-diags) read into a scenario's ``[[switch]]``, ``[[hca]]`` and ``[[link]]``
sections, and a scenario's topology written back in that format (which ibsim loads, so
OpenSM can route an ibemu fabric).

The format (REFERENCE-FABRICS §1; rdma-core infiniband-diags/ibnetdiscover.c and the
man page's topology-file section): ``#`` comments, blank lines between node blocks,
``vendid=``/``devid=``/``sysimgguid=`` and ``switchguid=0x<node>(<port>)`` / ``caguid=0x<node>``
before each node line ``Switch<TAB><nports> "S-<guid>"<TAB><TAB># "<desc>" base port 0 lid <L> lmc <M>``
or ``Ca<TAB><nports> "H-<guid>"<TAB><TAB># "<desc>"``, then one line per connected port:
switch ``[p]<TAB>"<peer id>"[pp](<peer port guid>)<TAB><TAB># "<peer desc>" lid <L> <w>x<SPEED>``,
CA ``[p](<port guid>)<TAB>"<peer id>"[pp]<TAB><TAB># lid <L> lmc <M> "<peer desc>" lid <L> <w>x<SPEED>``.
Tolerated: ``-g`` chassis grouping (``Non-Chassis Nodes``, ``# Chassis ...`` comments,
``[ext N]`` port tags), ``-f`` extra fields after the rate (`` s=.. w=.. v=..``), ibsim's
``Hca`` keyword.

Every link is listed by both its ends; the two must agree (peer and port, and rate) or the
file is refused.  Every mistake is one line ``<file>:<line>: <reason>`` (a
:class:`~ibemu.validate.ScenarioError`).

ibemu's HCAs have one port: a CA with several connected ports becomes one HCA per port
(named ``<name>_p<port>``), each with its own LID as in the fabric (a port is an end node
of its own to the subnet manager).  Routers are refused (ibemu has none).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..units import LANE_DATA_BPS, WIDTHS, ib_rate
from ..validate import MAX_NAME, ScenarioError
from .model import Scenario, node_guids
from .read import read_scenario_file

__all__ = ["IBPort", "IBNode", "Topology", "parse_ibnetdiscover", "read_ibnetdiscover", "topology_sections",
           "write_ibnetdiscover", "rate_name", "sanitise_name", "scenario_toml", "switch_lid_note"]

# LinkSpeedActive / LinkSpeedExtActive names ibnetdiscover prints (REFERENCE-FABRICS §1) -> units' speeds
SPEEDS = {"SDR": "sdr", "DDR": "ddr", "QDR": "qdr", "FDR10": "fdr10", "FDR": "fdr", "EDR": "edr", "HDR": "hdr",
          "NDR": "ndr", "XDR": "xdr"}

_NODE_RE = re.compile(r'(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]*)"\s*(?:#\s*"(.*)"(.*))?')
_PORT_RE = re.compile(r'\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*"([^"]*)"\[(\d+)\](?:\[ext \d+\])?'
                      r'(?:\(([0-9a-fA-F]+)\))?\s*(?:#\s*(.*))?')
_SW_TAIL = re.compile(r'"(.*)"\s+lid\s+(\d+)\s+(\S+)(?:\s.*)?')
_CA_TAIL = re.compile(r'lid\s+(\d+)\s+lmc\s+(\d+)\s+"(.*)"\s+lid\s+(\d+)\s+(\S+)(?:\s.*)?')
_SW_LID = re.compile(r'\s*(?:base|enhanced)\s+port\s+0\s+lid\s+(\d+)\s+lmc\s+(\d+)(?:\s.*)?')
_GUID_RE = re.compile(r'(switchguid|caguid|rtguid|sysimgguid|vendid|devid)\s*=\s*0x([0-9a-fA-F]+)'
                      r'(?:\(([0-9a-fA-F]+)\))?\s*')
_RATE_RE = re.compile(r'(\d+)x([A-Za-z0-9]+)')
_ID_GUID = re.compile(r'[SHR]-([0-9a-fA-F]{1,16})')
_BAD_CHARS = re.compile(r'[^A-Za-z0-9_.-]+')
MAX_GUID = 2**64 - 1


@dataclass
class IBPort:
    """One connected port line."""
    port: int
    peer: str                   # the peer's node id ("S-...", "H-...")
    peer_port: int
    rate: str                   # "4xQDR" as printed ("" when the line has no comment part)
    line: int
    guid: int | None = None     # a CA's own port GUID ([p](guid))
    lid: int | None = None      # a CA port's own LID (its comment: "lid L lmc M")
    lmc: int = 0


@dataclass
class IBNode:
    """One node block."""
    kind: str                   # "switch" | "ca"
    id: str                     # the quoted node id
    nports: int
    desc: str
    line: int
    guid: int | None = None     # node GUID (switchguid= / caguid=, else from an "S-<hex>" id)
    lid: int | None = None      # a switch's port-0 LID
    lmc: int = 0
    ports: dict[int, IBPort] = field(default_factory=dict)


@dataclass
class Topology:
    """A parsed ibnetdiscover file: nodes in file order and the links (each once, in the
    order first listed) as ((node id, port), (node id, port), rate, line)."""
    file: str
    nodes: dict[str, IBNode] = field(default_factory=dict)
    links: list[tuple[tuple[str, int], tuple[str, int], str, int]] = field(default_factory=list)

    def switches(self) -> list[IBNode]:
        return [n for n in self.nodes.values() if n.kind == "switch"]

    def cas(self) -> list[IBNode]:
        return [n for n in self.nodes.values() if n.kind == "ca"]


def _err(file: str, line: int | None, reason: str) -> ScenarioError:
    return ScenarioError("%s:%d" % (file, line) if line else file, None, reason)


def parse_ibnetdiscover(text: str, file: str = "<ibnetdiscover>") -> Topology:
    """Parse ibnetdiscover's topology text (see the module docstring); *file* names it in errors."""
    topo = Topology(file)
    pending: dict[str, tuple[int, int | None]] = {}     # switchguid/caguid seen before the node line
    guids: dict[int, str] = {}
    node: IBNode | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            node = None                                 # a blank line ends a node block
            continue
        if line.startswith("#") or line == "Non-Chassis Nodes":
            continue
        if line.startswith("["):
            if node is None:
                raise _err(file, lineno, "port line outside a node block (no Switch/Ca line before it)")
            _port_line(topo, node, line, lineno)
            continue
        node = None
        m = _GUID_RE.fullmatch(line.partition("#")[0].strip())     # -g: "switchguid=0x..(..)\t# <chassis>"
        if m:
            if len(m[2]) > 16 or (m[3] and len(m[3]) > 16):
                raise _err(file, lineno, "GUID %r longer than 64 bits" % line.partition("=")[2].strip())
            pending[m[1]] = (int(m[2], 16), int(m[3], 16) if m[3] else None)
            continue
        if "=" in line.split()[0] and line.split("=")[0].strip().isidentifier():
            if line.split("=")[0].strip() in ("switchguid", "caguid", "rtguid", "sysimgguid", "vendid", "devid"):
                raise _err(file, lineno, "cannot read %r (expected %s=0x<hex>)" % (line, line.split("=")[0].strip()))
            continue                                    # ibsim's own settings (width=, speed=...): not topology
        if re.match(r"(Switch|Ca|Hca|Rt)\b", line):
            node = _node_line(topo, line, lineno, pending, guids)
            pending = {}
            continue
        if re.match(r"(Chassis|Non-Chassis)\b", line, re.I):
            continue                                    # -g grouping headers
        raise _err(file, lineno, "cannot read %r (expected a node line Switch/Ca, a port line [n], "
                                 "key=0x<hex>, a comment or a blank line)" % _short(line))
    _pair_links(topo)
    return topo


def _short(s: str) -> str:
    return s if len(s) <= 60 else s[:57] + "..."


def _node_line(topo: Topology, line: str, lineno: int, pending: dict[str, tuple[int, int | None]],
               guids: dict[int, str]) -> IBNode:
    file = topo.file
    if line.count('"') % 2:
        raise _err(file, lineno, "unbalanced quote in %r" % _short(line))
    m = _NODE_RE.fullmatch(line)
    if not m:
        raise _err(file, lineno, 'cannot read node line %r (expected e.g. Switch 36 "S-<guid>" # "<desc>" ...)'
                   % _short(line))
    kind_word, nports, nid = m[1], int(m[2]), m[3]
    if kind_word == "Rt":
        raise _err(file, lineno, "router %r: ibemu has no routers" % nid)
    kind = "switch" if kind_word == "Switch" else "ca"
    if not 1 <= nports <= 254:
        raise _err(file, lineno, "%d ports: a node has 1 to 254 ports" % nports)
    if nid in topo.nodes:
        raise _err(file, lineno, "duplicate node %r (also line %d)" % (nid, topo.nodes[nid].line))
    desc = m[4] if m[4] is not None else nid
    node = IBNode(kind, nid, nports, desc, lineno)
    key = "switchguid" if kind == "switch" else "caguid"
    other = "caguid" if kind == "switch" else "switchguid"
    if other in pending:
        raise _err(file, lineno, "%s= before a %s line" % (other, kind_word))
    if key in pending:
        node.guid = pending[key][0]
    else:
        mg = _ID_GUID.fullmatch(nid)
        node.guid = int(mg[1], 16) if mg else None
    if node.guid is not None:
        if node.guid in guids:
            raise _err(file, lineno, "duplicate GUID 0x%016x (also %s)" % (node.guid, guids[node.guid]))
        guids[node.guid] = "%r, line %d" % (nid, lineno)
    if kind == "switch" and m[5] and m[5].strip():
        ms = _SW_LID.fullmatch(m[5])
        if not ms:
            raise _err(file, lineno, "cannot read %r (expected base|enhanced port 0 lid <L> lmc <M>)"
                       % m[5].strip())
        node.lid, node.lmc = int(ms[1]), int(ms[2])
    topo.nodes[nid] = node
    return node


def _port_line(topo: Topology, node: IBNode, line: str, lineno: int) -> None:
    file = topo.file
    if line.count('"') % 2:
        raise _err(file, lineno, "unbalanced quote in %r" % _short(line))
    m = _PORT_RE.fullmatch(line)
    if not m:
        raise _err(file, lineno, 'cannot read port line %r (expected [port] "<peer id>"[peer port] ...)'
                   % _short(line))
    port, peer_port = int(m[1]), int(m[4])
    lo = 1
    if not lo <= port <= node.nports:
        raise _err(file, lineno, "bad port %d: %r has ports 1..%d" % (port, node.id, node.nports))
    if not 1 <= peer_port <= 254:
        raise _err(file, lineno, "bad peer port %d (ports are 1..254)" % peer_port)
    if port in node.ports:
        raise _err(file, lineno, "port %d of %r listed twice (also line %d)" % (port, node.id, node.ports[port].line))
    p = IBPort(port, m[3], peer_port, "", lineno)
    tail = (m[6] or "").strip()
    if node.kind == "ca":
        if m[2]:
            p.guid = int(m[2], 16)
        if tail:
            mt = _CA_TAIL.fullmatch(tail)
            if not mt:
                raise _err(file, lineno, "cannot read %r (expected lid <L> lmc <M> \"<peer desc>\" lid <L> "
                                         "<width><speed>)" % _short(tail))
            p.lid, p.lmc, p.rate = int(mt[1]), int(mt[2]), mt[5]
    elif tail:
        mt = _SW_TAIL.fullmatch(tail)
        if not mt:
            raise _err(file, lineno, "cannot read %r (expected \"<peer desc>\" lid <L> <width><speed>)" % _short(tail))
        p.rate = mt[3]
    if p.rate:
        rate_name(p.rate, file, lineno)             # refuses unknown widths/speeds here, with the line
    if p.lmc > 7:
        raise _err(file, lineno, "LMC %d (0..7)" % p.lmc)
    node.ports[port] = p


def rate_name(printed: str, file: str = "", line: int | None = None) -> str:
    """ibemu's link-rate name (``4x_qdr``) of ibnetdiscover's ``4xQDR``."""
    m = _RATE_RE.fullmatch(printed)
    if not m:
        raise _err(file, line, "cannot read link rate %r (expected <width>x<speed> such as 4xQDR)" % printed)
    width, speed = m[1] + "x", m[2].upper()
    if width not in WIDTHS:
        raise _err(file, line, "unknown link width %r in %r (known: %s)" % (width, printed, ", ".join(WIDTHS)))
    if speed not in SPEEDS:
        raise _err(file, line, "unknown link speed %r in %r (known: %s)" % (m[2], printed, ", ".join(SPEEDS)))
    return "%s_%s" % (width, SPEEDS[speed])


def _pair_links(topo: Topology) -> None:
    """Each link once, checked from both ends (IBA: a link joins exactly two ports)."""
    file = topo.file
    for node in topo.nodes.values():
        for p in node.ports.values():
            peer = topo.nodes.get(p.peer)
            if peer is None:
                raise _err(file, p.line, "port %d of %r links to %r, which the file does not list"
                           % (p.port, node.id, p.peer))
            if p.peer_port > peer.nports:
                raise _err(file, p.line, "bad peer port %d: %r has ports 1..%d" % (p.peer_port, peer.id, peer.nports))
            back = peer.ports.get(p.peer_port)
            if back is None:
                raise _err(file, p.line, "%r[%d] - %r[%d] is listed by one end only (%r lists no port %d)"
                           % (node.id, p.port, peer.id, p.peer_port, peer.id, p.peer_port))
            if (back.peer, back.peer_port) != (node.id, p.port):
                raise _err(file, max(p.line, back.line), "the ends disagree: %r[%d] (line %d) links to %r[%d], "
                           "but %r[%d] (line %d) links to %r[%d]" % (node.id, p.port, p.line, peer.id, p.peer_port,
                                                                     peer.id, p.peer_port, back.line, back.peer,
                                                                     back.peer_port))
            if p.rate and back.rate and p.rate != back.rate:
                raise _err(file, max(p.line, back.line), "the ends disagree on the rate of %r[%d] - %r[%d]: %s "
                           "(line %d) and %s (line %d)" % (node.id, p.port, peer.id, p.peer_port, p.rate, p.line,
                                                           back.rate, back.line))
            if (node.id, p.port) == (peer.id, p.peer_port):
                raise _err(file, p.line, "port %d of %r links to itself" % (p.port, node.id))
            if back.line > p.line or (back.line == p.line and p.port < back.port):
                topo.links.append(((node.id, p.port), (peer.id, p.peer_port), p.rate or back.rate, p.line))


def read_ibnetdiscover(path: str) -> Topology:
    """Parse the ibnetdiscover file at *path* (a regular file of at most 16 MiB)."""
    data = read_scenario_file(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(str(path), None, "not UTF-8 text (byte %d): is this ibnetdiscover output?"
                            % e.start) from None
    return parse_ibnetdiscover(text, str(path))


def sanitise_name(text: str, fallback: str) -> str:
    """*text* as an ibemu node name: runs of characters other than ASCII letters, digits,
    '_', '-', '.' become '_', '..' becomes '.', at most MAX_NAME characters; *fallback* if nothing is left."""
    s = _BAD_CHARS.sub("_", text).strip("_.")
    while ".." in s:
        s = s.replace("..", ".")
    return s[:MAX_NAME].rstrip(".") or fallback


def _unique(name: str, used: set[str]) -> str:
    out, k = name, 2
    while out in used:
        suffix = "_%d" % k
        out, k = name[:MAX_NAME - len(suffix)] + suffix, k + 1
    used.add(out)
    return out


def _by_lid(nodes: list[IBNode]) -> list[IBNode]:
    """*nodes* in LID order (a CA: its lowest port LID; nodes without a LID last, in file
    order).  ibnetdiscover lists nodes in reverse discovery order; LID order is stable, and
    with switches in LID order ibemu gives them the file's LIDs whenever OpenSM assigned the
    lowest LIDs the CAs leave (ibemu.build.switch_lids)."""
    def key(ix: tuple[int, IBNode]) -> tuple[int, int]:
        i, n = ix
        found = [n.lid] if n.kind == "switch" else [p.lid for p in n.ports.values()]
        lids = [x for x in found if x]
        return (min(lids) if lids else 1 << 20, i)
    return [n for _, n in sorted(enumerate(nodes), key=key)]


def switch_lid_note(topo: Topology, sections: dict[str, Any]) -> str | None:
    """None if ibemu's switch LIDs (the lowest LIDs no HCA has, in switch order) are the
    file's, else a sentence saying which differ."""
    taken = {h["lid"] for h in sections["hca"]}
    free = (x for x in range(1, 0xC000) if x not in taken)
    by_name = {}
    for n, entry in zip(_by_lid(topo.switches()), sections["switch"]):
        by_name[entry["name"]] = (n.lid, next(free))
    off = ["%s (file %s, ibemu %d)" % (k, v[0], v[1]) for k, v in by_name.items() if v[0] != v[1]]
    if not off:
        return None
    return "switch LIDs differ from the file's: " + ", ".join(off[:5]) + (" ..." if len(off) > 5 else "")


def topology_sections(topo: Topology, names: str = "desc", rate_from: str = "file") -> dict[str, Any]:
    """The raw scenario sections (``switch``, ``hca``, ``link`` lists as in a TOML file) of
    *topo*.  *names*: ``desc`` (node descriptions, sanitised, made unique with ``_2``, ``_3``
    in file order) or ``guid`` (the node ids ``S-<guid>``/``H-<guid>``).  *rate_from*: ``file``
    (each link's ``rate`` from its width and speed) or ``default`` (no ``rate``: ibemu's default).
    An HCA without a LID in the file gets the lowest LID no node has, in file order."""
    if names not in ("desc", "guid"):
        raise ValueError("names must be desc or guid, got %r" % names)
    if rate_from not in ("file", "default"):
        raise ValueError("rate_from must be file or default, got %r" % rate_from)
    used: set[str] = set()
    ends: dict[tuple[str, int], str] = {}           # (node id, port) -> ibemu node name
    sw_names: dict[str, str] = {}
    switches: list[dict[str, Any]] = []
    for n in _by_lid(topo.switches()):
        base = n.desc if names == "desc" else n.id
        nm = _unique(sanitise_name(base, "switch"), used)
        sw_names[n.id] = nm
        entry: dict[str, Any] = {"name": nm, "ports": n.nports}
        if n.guid is not None:
            entry["guid"] = "0x%016x" % n.guid
        entry["desc"] = n.desc
        switches.append(entry)
    taken = {n.lid for n in topo.switches() if n.lid}
    taken |= {p.lid for n in topo.cas() for p in n.ports.values() if p.lid}
    for n in topo.cas():
        for p in n.ports.values():
            if p.lid is not None and p.lid > 0xBFFF:
                raise _err(topo.file, p.line, "LID %d is no unicast LID (1..0xBFFF)" % p.lid)
    seen_lids: dict[int, int] = {}
    free = (x for x in range(1, 0xC000) if x not in taken)
    hcas: list[dict[str, Any]] = []
    for n in _by_lid(topo.cas()):
        several = len(n.ports) > 1
        for p in sorted(n.ports.values(), key=lambda q: q.port):
            base = n.desc if names == "desc" else n.id
            nm = sanitise_name(base, "hca")
            if several:
                nm = sanitise_name("%s_p%d" % (nm[:MAX_NAME - 5], p.port), "hca")
            nm = _unique(nm, used)
            ends[n.id, p.port] = nm
            lid = p.lid if p.lid else next(free)
            if lid in seen_lids:
                raise _err(topo.file, p.line, "duplicate LID %d (also line %d)" % (lid, seen_lids[lid]))
            seen_lids[lid] = p.line
            entry = {"name": nm, "lid": lid}
            if n.guid is not None:
                entry["guid"] = "0x%016x" % (n.guid if p.port == 1 or not several else n.guid + p.port - 1)
            entry["desc"] = n.desc
            hcas.append(entry)
    for nid, nm in sw_names.items():
        for port in topo.nodes[nid].ports:
            ends[nid, port] = nm
    # links in a canonical order (not the file's discovery order): from the end listed first
    # above (switches, then HCAs), by its port
    order = {nm: i for i, nm in enumerate([e["name"] for e in switches] + [e["name"] for e in hcas])}
    canon = []
    for (a, ap), (b, bp), rate, line in topo.links:
        if (order[ends[b, bp]], bp) < (order[ends[a, ap]], ap):
            (a, ap), (b, bp) = (b, bp), (a, ap)
        canon.append((order[ends[a, ap]], ap, (a, ap), (b, bp), rate, line))
    links: list[dict[str, Any]] = []
    for _, _, (a, ap), (b, bp), rate, line in sorted(canon, key=lambda c: (c[0], c[1])):
        entry = {"a": "%s:%d" % (ends[a, ap], ap if topo.nodes[a].kind == "switch" else 1),
                 "b": "%s:%d" % (ends[b, bp], bp if topo.nodes[b].kind == "switch" else 1)}
        if rate_from == "file" and rate:
            entry["rate"] = rate_name(rate, topo.file, line)
        links.append(entry)
    return {"switch": switches, "hca": hcas, "link": links}


def _rate_text(rate: int) -> str:
    """ibnetdiscover's ``4xQDR`` for a rate in bytes/s: the width and speed whose rate it is
    exactly, else the nearest (4x first)."""
    best: tuple[float, int, str] | None = None
    for w in WIDTHS:
        for sp in LANE_DATA_BPS:
            r = ib_rate("%s_%s" % (w, sp))
            key = (abs(r - rate) / rate, 0 if w == "4x" else 1, "%s%s" % (w, sp.upper()))
            if best is None or key < best:
                best = key
    assert best is not None
    return best[2]


def write_ibnetdiscover(scn: Scenario, lmc: int | None = None) -> str:
    """*scn*'s topology in ibnetdiscover's format (REFERENCE-FABRICS §1): switches then HCAs,
    in the scenario's order; node ids ``S-``/``H-`` + the 16-hex node GUID
    (:func:`~ibemu.scenario.model.node_guids`); switch LIDs as ibemu gives them: the lowest LIDs
    no HCA has (none of an HCA's 2^LMC LIDs), in switch order.  Ports are those the links name
    (a link without ports must have them assigned: load the scenario first)."""
    lmc = scn.routing.lmc if lmc is None else lmc
    guids = node_guids(scn)
    taken = {h.lid + i for h in scn.hcas for i in range(1 << lmc)}
    free = (x for x in range(1, 0xC000) if x not in taken)
    sw_lid = {s.name: next(free) for s in scn.switches}
    lid = dict(sw_lid)
    lid.update({h.name: h.lid for h in scn.hcas})
    is_sw = {s.name: True for s in scn.switches}
    is_sw.update({h.name: False for h in scn.hcas})
    desc = {s.name: s.desc or s.name for s in scn.switches}
    desc.update({h.name: h.desc or h.name for h in scn.hcas})
    ports: dict[str, dict[int, tuple[str, int, int]]] = {n: {} for n in is_sw}
    for ln in scn.links:
        if ln.a_port is None or ln.b_port is None:
            raise ValueError("link %s-%s has no ports assigned (load the scenario first)" % (ln.a, ln.b))
        ports[ln.a][ln.a_port] = (ln.b, ln.b_port, ln.params.rate)
        ports[ln.b][ln.b_port] = (ln.a, ln.a_port, ln.params.rate)

    def nid(n: str) -> str:
        return "%s-%016x" % ("S" if is_sw[n] else "H", guids[n])

    def pguid(n: str) -> int:               # switch: port GUID = node GUID; HCA port 1: node GUID + 1
        return guids[n] if is_sw[n] else guids[n] + 1

    first = scn.hcas[0].name if scn.hcas else (scn.switches[0].name if scn.switches else None)
    out = ["#", "# Topology file: generated by ibemu from scenario %s" % scn.name, "#"]
    if first is not None:
        out.append("# Initiated from node %016x port %016x" % (guids[first], pguid(first)))
    for s in scn.switches:
        nports = s.ports or max(ports[s.name], default=1)
        out += ["", "vendid=0x2c9", "devid=0xcf08", "sysimgguid=0x%x" % guids[s.name],
                "switchguid=0x%x(%x)" % (guids[s.name], guids[s.name]),
                'Switch\t%d "%s"\t\t# "%s" base port 0 lid %d lmc 0' % (nports, nid(s.name), desc[s.name],
                                                                       sw_lid[s.name])]
        for p in sorted(ports[s.name]):
            peer, pp, rate = ports[s.name][p]
            pg = "" if is_sw[peer] else "(%x) " % pguid(peer)
            out.append('[%d]\t"%s"[%d]%s\t\t# "%s" lid %d %s' % (p, nid(peer), pp, pg, desc[peer], lid[peer],
                                                                 _rate_text(rate)))
    for h in scn.hcas:
        out += ["", "vendid=0x2c9", "devid=0x1017", "sysimgguid=0x%x" % guids[h.name],
                "caguid=0x%x" % guids[h.name], 'Ca\t1 "%s"\t\t# "%s"' % (nid(h.name), desc[h.name])]
        for p in sorted(ports[h.name]):
            peer, pp, rate = ports[h.name][p]
            pg = "" if is_sw[peer] else "(%x) " % pguid(peer)
            out.append('[%d](%x) \t"%s"[%d]%s\t\t# lid %d lmc %d "%s" lid %d %s'
                       % (p, pguid(h.name), nid(peer), pp, pg, h.lid, lmc, desc[peer], lid[peer], _rate_text(rate)))
    return "\n".join(out) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    out = []
    for c in s:                                 # a TOML basic string (TOML 1.0 §String)
        if c in '"\\':
            out.append("\\" + c)
        elif not c.isprintable() or ord(c) < 0x20:
            out.append("\\u%04x" % ord(c) if ord(c) < 0x10000 else "\\U%08x" % ord(c))
        else:
            out.append(c)
    return '"%s"' % "".join(out)


def scenario_toml(topo: Topology, names: str = "desc", rate_from: str = "file", duration: str = "1ms",
                  name: str | None = None) -> str:
    """A scenario file (TOML text) holding *topo*'s topology (:func:`topology_sections`), a
    duration and a comment telling the user to add ``[[flow]]`` or ``[[traffic]]`` tables."""
    sec = topology_sections(topo, names, rate_from)
    nsw, nca = len(sec["switch"]), len(sec["hca"])
    out = ["# Imported by `ibemu topology import` from %s" % topo.file.replace("\n", " "),
           "# (%d switches, %d HCAs, %d links; names from %s, link rates from %s)."
           % (nsw, nca, len(sec["link"]), "node descriptions" if names == "desc" else "node GUIDs",
              "the file" if rate_from == "file" else "ibemu's default"),
           "# Nodes are in LID order; ibemu's switch LIDs are %s." % (switch_lid_note(topo, sec) or "the file's"),
           "# Add [[flow]] (or [[traffic]]) tables for the traffic to run, e.g.",
           "#   [[flow]]",
           '#   src = "%s"' % (sec["hca"][0]["name"] if sec["hca"] else "<hca>"),
           '#   dst = "%s"' % (sec["hca"][-1]["name"] if sec["hca"] else "<hca>"),
           "", "[scenario]"]
    if name is not None:
        out.append("name = %s" % _toml_value(name))
    out += ["duration = %s" % _toml_value(duration), ""]
    for kind in ("switch", "hca", "link"):
        for entry in sec[kind]:
            out.append("[[%s]]" % kind)
            out += ["%s = %s" % (k, _toml_value(v)) for k, v in entry.items()]
            out.append("")
    return "\n".join(out)
