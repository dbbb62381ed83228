"""The scenario's ``[cc.cca]`` table -> :class:`~ibemu.cc.cca.settings.CCASpec`
(every key: the site's scenario reference, docs/reference/scenario.md, "Congestion
control", generated from :mod:`ibemu.scenario.keyref`; names as REFERENCE.md's "IBA
Congestion Control Annex").

Layers, each overriding the one before:

1. OpenSM options, ``opensm = '''...'''`` inline or ``opensm_file = "path"`` (relative
   to the scenario file) -- :mod:`ibemu.cc.cca.opensm`;
2. spec-named keys for every switch (SwitchCongestionSetting: ``Threshold``,
   ``Marking_Rate``, ``Packet_Size``, ``Victim_Mask``, ``Control_Map``) and every CA
   (``Port_Control``, ``CCTI_Timer``, ``CCTI_Increase``, ``Trigger_Threshold``,
   ``CCTI_Min`` for all SLs, ``CCTI_Limit``, ``CCT``), and ``[cc.cca.sl.<SL>]`` tables;
3. ``[cc.cca.switch.<name>]`` (its own SwitchCongestionSetting) with
   ``[cc.cca.switch.<name>.port.<p>]`` (SwitchPortCongestionSetting: Threshold,
   Marking_Rate, Packet_Size), and ``[cc.cca.hca.<name>]`` (its CA setting).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ...validate import Checker, boolean, integer, string, table, unknown_node
from .opensm import OpenSMError, parse_cct, parse_opensm
from .settings import CCT_MAX_ENTRIES, CASetting, CCASpec, PortSetting, SLSetting, SwitchSetting

SW_KEYS = ("Threshold", "Marking_Rate", "Packet_Size", "Victim_Mask", "Control_Map")
PORT_KEYS = ("Threshold", "Marking_Rate", "Packet_Size")
SL_KEYS = ("CCTI_Timer", "CCTI_Increase", "Trigger_Threshold", "CCTI_Min")
CA_KEYS = ("Port_Control", "CCTI_Limit", "CCT") + SL_KEYS
TOP_KEYS = ("opensm", "opensm_file", "enabled", "trace_marks", "sl", "switch", "hca") + SW_KEYS + CA_KEYS
_BITS = {"Threshold": 4, "Marking_Rate": 16, "Packet_Size": 8, "Control_Map": 32,
         "CCTI_Timer": 16, "CCTI_Increase": 8, "Trigger_Threshold": 8, "CCTI_Min": 8, "CCTI_Limit": 16}


def _num(ctx: Checker, path: str, key: str, v: Any) -> int:
    return integer(ctx, path, v, 0, (1 << _BITS[key]) - 1)


def _victim_mask(ctx: Checker, path: str, v: Any) -> frozenset[int]:
    """An array of port numbers, or the 256-bit mask as an integer or "0x..." string."""
    if isinstance(v, list):
        return frozenset(integer(ctx, "%s[%d]" % (path, i), p, 0, 255) for i, p in enumerate(v))
    if isinstance(v, str):
        try:
            v = int(v, 0)
        except ValueError:
            raise ctx.err(path, "expected an array of ports or a hex mask such as \"0x8000\", got %r" % v) from None
    mask = integer(ctx, path, v, 0, (1 << 256) - 1)
    return frozenset(p for p in range(256) if mask >> p & 1)


def _cct(ctx: Checker, path: str, v: Any) -> list[tuple[int, int]]:
    """``"shift:mult,..."`` (OpenSM's cc_cct) or an array of [CCT_Shift, CCT_Multiplier]."""
    if isinstance(v, str):
        return ctx.conv(path, parse_cct, v)
    if not isinstance(v, list) or not 1 <= len(v) <= CCT_MAX_ENTRIES:
        raise ctx.err(path, "expected \"shift:mult,...\" or an array of 1..%d [shift, mult] pairs" % CCT_MAX_ENTRIES)
    out = []
    for i, e in enumerate(v):
        ep = "%s[%d]" % (path, i)
        if not isinstance(e, list) or len(e) != 2:
            raise ctx.err(ep, "expected a [CCT_Shift, CCT_Multiplier] pair")
        out.append((integer(ctx, ep, e[0], 0, 3), integer(ctx, ep, e[1], 0, (1 << 14) - 1)))
    return out


def _apply_switch(ctx: Checker, path: str, raw: dict[str, Any], sw: SwitchSetting) -> None:
    for k in SW_KEYS:
        if k in raw:
            kp = path + "." + k if path else k
            setattr(sw, k, _victim_mask(ctx, kp, raw[k]) if k == "Victim_Mask" else _num(ctx, kp, k, raw[k]))


def _apply_sl(ctx: Checker, path: str, raw: dict[str, Any], s: SLSetting) -> None:
    for k in SL_KEYS:
        if k in raw:
            setattr(s, k, _num(ctx, path + "." + k, k, raw[k]))


def _apply_ca(ctx: Checker, path: str, raw: dict[str, Any], ca: CASetting) -> None:
    if "Port_Control" in raw:
        ca.Port_Control = string(ctx, path + ".Port_Control", raw["Port_Control"], ("qp", "sl"))
    if "CCTI_Limit" in raw:
        ca.CCTI_Limit = _num(ctx, path + ".CCTI_Limit", "CCTI_Limit", raw["CCTI_Limit"])
    if "CCT" in raw:
        ca.CCT = _cct(ctx, path + ".CCT", raw["CCT"])
    for s in ca.sl:
        _apply_sl(ctx, path, raw, s)
    sls = table(ctx, path + ".sl", raw.get("sl", {}), [str(i) for i in range(16)])
    for k, t in sls.items():
        _apply_sl(ctx, "%s.sl.%s" % (path, k), table(ctx, "%s.sl.%s" % (path, k), t, SL_KEYS), ca.sl[int(k)])
    if ca.CCTI_Limit > len(ca.CCT) - 1:
        raise ctx.err(path + ".CCTI_Limit",
                      "%d is beyond the table's last entry (%d)" % (ca.CCTI_Limit, len(ca.CCT) - 1))
    for i, s in enumerate(ca.sl):
        if s.CCTI_Min > ca.limit():
            raise ctx.err(path + ".CCTI_Min", "SL %d: CCTI_Min %d is above CCTI_Limit %d" % (i, s.CCTI_Min, ca.limit()))


def _opensm_text(ctx: Checker, path: str, raw: dict[str, Any]) -> tuple[str, str, Path] | None:
    """(the opensm.conf text, the key path naming it, the folder its relative names
    resolve from: the file's own, or the scenario's for inline text), or None."""
    if "opensm" in raw and "opensm_file" in raw:
        raise ctx.err(path + ".opensm_file", "give opensm or opensm_file, not both")
    base = Path(ctx.label).parent if not ctx.label.startswith("<") else Path(".")
    if "opensm" in raw:
        return string(ctx, path + ".opensm", raw["opensm"]), path + ".opensm", base
    if "opensm_file" in raw:
        fp = path + ".opensm_file"
        name = string(ctx, fp, raw["opensm_file"])
        f = Path(name) if Path(name).is_absolute() else base / name
        try:
            return f.read_text(encoding="utf-8"), "%s (%s)" % (fp, f), f.parent
        except (OSError, UnicodeDecodeError) as e:
            why = (e.strerror if isinstance(e, OSError) else None) or e
            raise ctx.err(fp, "cannot read %s: %s" % (f, why)) from None
    return None


def parse_cca(ctx: Checker, raw: Any, path: str, nodes: dict[str, str]) -> CCASpec:
    """Validate ``[cc.cca]``; *nodes* maps node names to "switch" or "hca"."""
    raw = table(ctx, path, raw, TOP_KEYS)
    spec = CCASpec()
    got = _opensm_text(ctx, path, raw)
    if got is not None:
        text, where, folder = got
        try:
            osm = parse_opensm(text)
        except OpenSMError as e:
            raise ctx.err(where, str(e)) from None
        spec.enabled = osm["enabled"]
        spec.opensm_routing = dict(osm["routing"])      # applied to [routing] (ibemu.scenario.opensm_routing)
        spec.opensm_where, spec.opensm_dir = where, str(folder)
        spec.opensm_not_modelled = list(osm["not_modelled"])
        for k, v in osm["switch"].items():
            setattr(spec.switch, k, frozenset(p for p in range(256) if v >> p & 1) if k == "Victim_Mask" else v)
        if "Port_Control" in osm["ca"]:
            spec.ca.Port_Control = osm["ca"]["Port_Control"]
        if "CCT" in osm["ca"]:
            spec.ca.CCT = osm["ca"]["CCT"]
        for sl, d in osm["sl"].items():
            for k, n in d.items():
                setattr(spec.ca.sl[sl], k, n)
    if "enabled" in raw:
        spec.enabled = boolean(ctx, path + ".enabled", raw["enabled"])
    if "trace_marks" in raw:
        spec.trace_marks = boolean(ctx, path + ".trace_marks", raw["trace_marks"])
    _apply_switch(ctx, path, raw, spec.switch)
    _apply_ca(ctx, path, {k: v for k, v in raw.items() if k in CA_KEYS or k == "sl"}, spec.ca)

    for name, t in table(ctx, path + ".switch", raw.get("switch", {}), list(nodes) or ["-"]).items():
        sp = "%s.switch.%s" % (path, name)
        if nodes.get(name) != "switch":
            raise ctx.err(sp, "%r is an HCA, not a switch" % name if name in nodes else unknown_node(name, nodes))
        t = table(ctx, sp, t, SW_KEYS + ("port",))
        sw = copy.deepcopy(spec.switch)
        _apply_switch(ctx, sp, t, sw)
        for p, pt in table(ctx, sp + ".port", t.get("port", {}), [str(i) for i in range(1, 255)]).items():
            pp = "%s.port.%s" % (sp, p)
            pt = table(ctx, pp, pt, PORT_KEYS)
            ps = PortSetting(**{k: _num(ctx, pp + "." + k, k, pt[k]) for k in PORT_KEYS if k in pt})
            sw.ports[int(p)] = ps
        spec.switches[name] = sw
    for name, t in table(ctx, path + ".hca", raw.get("hca", {}), list(nodes) or ["-"]).items():
        hp = "%s.hca.%s" % (path, name)
        if nodes.get(name) != "hca":
            raise ctx.err(hp, "%r is a switch, not an HCA" % name if name in nodes else unknown_node(name, nodes))
        t = table(ctx, hp, t, CA_KEYS + ("sl",))
        ca = copy.deepcopy(spec.ca)
        _apply_ca(ctx, hp, t, ca)
        spec.hcas[name] = ca
    return spec
