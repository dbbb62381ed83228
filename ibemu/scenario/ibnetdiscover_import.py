"""A parsed ibnetdiscover topology as a scenario (issue 15 Deliver 3; ``ibemu topology
import``): the ``[[switch]]``, ``[[hca]]`` and ``[[link]]`` sections, with names from the
node descriptions or GUIDs, nodes in LID order, and the scenario file's TOML text.
The file is read by :mod:`ibemu.scenario.ibnetdiscover`."""
from __future__ import annotations

import re
from typing import Any

from ..validate import MAX_NAME
from .ibnetdiscover import IBNode, Topology, line_error, rate_name

_BAD_CHARS = re.compile(r'[^A-Za-z0-9_.-]+')


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
                raise line_error(topo.file, p.line, "LID %d is no unicast LID (1..0xBFFF)" % p.lid)
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
                raise line_error(topo.file, p.line, "duplicate LID %d (also line %d)" % (lid, seen_lids[lid]))
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
