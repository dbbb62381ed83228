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

Here the file is read into a :class:`Topology`; :mod:`ibemu.scenario.ibnetdiscover_import`
turns it into scenario sections and :mod:`ibemu.scenario.ibnetdiscover_export` writes a
scenario's topology back.

ibemu's HCAs have one port: a CA with several connected ports becomes one HCA per port
(named ``<name>_p<port>``), each with its own LID as in the fabric (a port is an end node
of its own to the subnet manager).  Routers are refused (ibemu has none).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..units import WIDTHS
from ..validate import ScenarioError
from .read import read_scenario_file

__all__ = ["IBPort", "IBNode", "Topology", "parse_ibnetdiscover", "read_ibnetdiscover", "rate_name", "line_error"]

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


def line_error(file: str, line: int | None, reason: str) -> ScenarioError:
    """The one-line error ``<file>:<line>: <reason>`` of a mistake in an ibnetdiscover file."""
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
                raise line_error(file, lineno, "port line outside a node block (no Switch/Ca line before it)")
            _port_line(topo, node, line, lineno)
            continue
        node = None
        m = _GUID_RE.fullmatch(line.partition("#")[0].strip())     # -g: "switchguid=0x..(..)\t# <chassis>"
        if m:
            if len(m[2]) > 16 or (m[3] and len(m[3]) > 16):
                raise line_error(file, lineno, "GUID %r longer than 64 bits" % line.partition("=")[2].strip())
            pending[m[1]] = (int(m[2], 16), int(m[3], 16) if m[3] else None)
            continue
        if "=" in line.split()[0] and line.split("=")[0].strip().isidentifier():
            if line.split("=")[0].strip() in ("switchguid", "caguid", "rtguid", "sysimgguid", "vendid", "devid"):
                raise line_error(file, lineno, "cannot read %r (expected %s=0x<hex>)"
                                 % (line, line.split("=")[0].strip()))
            continue                                    # ibsim's own settings (width=, speed=...): not topology
        if re.match(r"(Switch|Ca|Hca|Rt)\b", line):
            node = _node_line(topo, line, lineno, pending, guids)
            pending = {}
            continue
        if re.match(r"(Chassis|Non-Chassis)\b", line, re.I):
            continue                                    # -g grouping headers
        raise line_error(file, lineno, "cannot read %r (expected a node line Switch/Ca, a port line [n], "
                         "key=0x<hex>, a comment or a blank line)" % _short(line))
    _pair_links(topo)
    return topo


def _short(s: str) -> str:
    return s if len(s) <= 60 else s[:57] + "..."


def _node_line(topo: Topology, line: str, lineno: int, pending: dict[str, tuple[int, int | None]],
               guids: dict[int, str]) -> IBNode:
    file = topo.file
    if line.count('"') % 2:
        raise line_error(file, lineno, "unbalanced quote in %r" % _short(line))
    m = _NODE_RE.fullmatch(line)
    if not m:
        raise line_error(file, lineno, 'cannot read node line %r (expected e.g. Switch 36 "S-<guid>" # "<desc>" ...)'
                         % _short(line))
    kind_word, nports, nid = m[1], int(m[2]), m[3]
    if kind_word == "Rt":
        raise line_error(file, lineno, "router %r: ibemu has no routers" % nid)
    kind = "switch" if kind_word == "Switch" else "ca"
    if not 1 <= nports <= 254:
        raise line_error(file, lineno, "%d ports: a node has 1 to 254 ports" % nports)
    if nid in topo.nodes:
        raise line_error(file, lineno, "duplicate node %r (also line %d)" % (nid, topo.nodes[nid].line))
    desc = m[4] if m[4] is not None else nid
    node = IBNode(kind, nid, nports, desc, lineno)
    key = "switchguid" if kind == "switch" else "caguid"
    other = "caguid" if kind == "switch" else "switchguid"
    if other in pending:
        raise line_error(file, lineno, "%s= before a %s line" % (other, kind_word))
    if key in pending:
        node.guid = pending[key][0]
    else:
        mg = _ID_GUID.fullmatch(nid)
        node.guid = int(mg[1], 16) if mg else None
    if node.guid is not None:
        if node.guid in guids:
            raise line_error(file, lineno, "duplicate GUID 0x%016x (also %s)" % (node.guid, guids[node.guid]))
        guids[node.guid] = "%r, line %d" % (nid, lineno)
    if kind == "switch" and m[5] and m[5].strip():
        ms = _SW_LID.fullmatch(m[5])
        if not ms:
            raise line_error(file, lineno, "cannot read %r (expected base|enhanced port 0 lid <L> lmc <M>)"
                             % m[5].strip())
        node.lid, node.lmc = int(ms[1]), int(ms[2])
    topo.nodes[nid] = node
    return node


def _port_line(topo: Topology, node: IBNode, line: str, lineno: int) -> None:
    file = topo.file
    if line.count('"') % 2:
        raise line_error(file, lineno, "unbalanced quote in %r" % _short(line))
    m = _PORT_RE.fullmatch(line)
    if not m:
        raise line_error(file, lineno, 'cannot read port line %r (expected [port] "<peer id>"[peer port] ...)'
                         % _short(line))
    port, peer_port = int(m[1]), int(m[4])
    lo = 1
    if not lo <= port <= node.nports:
        raise line_error(file, lineno, "bad port %d: %r has ports 1..%d" % (port, node.id, node.nports))
    if not 1 <= peer_port <= 254:
        raise line_error(file, lineno, "bad peer port %d (ports are 1..254)" % peer_port)
    if port in node.ports:
        raise line_error(file, lineno, "port %d of %r listed twice (also line %d)"
                         % (port, node.id, node.ports[port].line))
    p = IBPort(port, m[3], peer_port, "", lineno)
    tail = (m[6] or "").strip()
    if node.kind == "ca":
        if m[2]:
            p.guid = int(m[2], 16)
        if tail:
            mt = _CA_TAIL.fullmatch(tail)
            if not mt:
                raise line_error(file, lineno, "cannot read %r (expected lid <L> lmc <M> \"<peer desc>\" lid <L> "
                                 "<width><speed>)" % _short(tail))
            p.lid, p.lmc, p.rate = int(mt[1]), int(mt[2]), mt[5]
    elif tail:
        mt = _SW_TAIL.fullmatch(tail)
        if not mt:
            raise line_error(file, lineno, "cannot read %r (expected \"<peer desc>\" lid <L> <width><speed>)"
                             % _short(tail))
        p.rate = mt[3]
    if p.rate:
        rate_name(p.rate, file, lineno)             # refuses unknown widths/speeds here, with the line
    if p.lmc > 7:
        raise line_error(file, lineno, "LMC %d (0..7)" % p.lmc)
    node.ports[port] = p


def rate_name(printed: str, file: str = "", line: int | None = None) -> str:
    """ibemu's link-rate name (``4x_qdr``) of ibnetdiscover's ``4xQDR``."""
    m = _RATE_RE.fullmatch(printed)
    if not m:
        raise line_error(file, line, "cannot read link rate %r (expected <width>x<speed> such as 4xQDR)" % printed)
    width, speed = m[1] + "x", m[2].upper()
    if width not in WIDTHS:
        raise line_error(file, line, "unknown link width %r in %r (known: %s)" % (width, printed, ", ".join(WIDTHS)))
    if speed not in SPEEDS:
        raise line_error(file, line, "unknown link speed %r in %r (known: %s)" % (m[2], printed, ", ".join(SPEEDS)))
    return "%s_%s" % (width, SPEEDS[speed])


def _pair_links(topo: Topology) -> None:
    """Each link once, checked from both ends (IBA: a link joins exactly two ports)."""
    file = topo.file
    for node in topo.nodes.values():
        for p in node.ports.values():
            peer = topo.nodes.get(p.peer)
            if peer is None:
                raise line_error(file, p.line, "port %d of %r links to %r, which the file does not list"
                                 % (p.port, node.id, p.peer))
            if p.peer_port > peer.nports:
                raise line_error(file, p.line, "bad peer port %d: %r has ports 1..%d"
                                 % (p.peer_port, peer.id, peer.nports))
            back = peer.ports.get(p.peer_port)
            if back is None:
                raise line_error(file, p.line, "%r[%d] - %r[%d] is listed by one end only (%r lists no port %d)"
                                 % (node.id, p.port, peer.id, p.peer_port, peer.id, p.peer_port))
            if (back.peer, back.peer_port) != (node.id, p.port):
                raise line_error(file, max(p.line, back.line),
                                 "the ends disagree: %r[%d] (line %d) links to %r[%d], but %r[%d] (line %d) links "
                                 "to %r[%d]" % (node.id, p.port, p.line, peer.id, p.peer_port, peer.id, p.peer_port,
                                                back.line, back.peer, back.peer_port))
            if p.rate and back.rate and p.rate != back.rate:
                raise line_error(file, max(p.line, back.line),
                                 "the ends disagree on the rate of %r[%d] - %r[%d]: %s (line %d) and %s (line %d)"
                                 % (node.id, p.port, peer.id, p.peer_port, p.rate, p.line, back.rate, back.line))
            if (node.id, p.port) == (peer.id, p.peer_port):
                raise line_error(file, p.line, "port %d of %r links to itself" % (p.port, node.id))
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
