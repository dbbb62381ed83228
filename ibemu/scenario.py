"""Scenario files: TOML read, overridden, template-expanded and validated into the typed
objects of :mod:`ibemu.config`.

Every mistake is a :class:`ScenarioError`, whose ``str()`` is one whole line
``<file>: <key.path>: <reason>``.  Units: times are strings with ns/us/µs/ms/s (a bare
number is refused, except 0), sizes are integer bytes or strings with B/KB/KiB/MB/MiB
(switch buffers also "N packets"), rates are bytes/s numbers, IB link names (4x_sdr)
or strings such as "8Gb/s" and "1GB/s".  Defaults are those of ``ibemu.config``
(seed 003 Table 1).  ``scenarios/README.md`` describes the schema.
"""
from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path

from .config import (FlowSpec, HCAParams, HCASpec, LinkParams, LinkSpec, OutputSpec, Scenario,
                     SwitchParams, SwitchSpec, VLArbTable)

__all__ = ["ScenarioError", "load_scenario", "scenario_from_dict", "apply_overrides",
           "parse_time", "format_time", "parse_size", "parse_rate", "link_labels"]


from .units import format_time, parse_rate, parse_size, parse_time  # noqa: F401,E402
from .validate import AnyKeys as _AnyKeys  # noqa: E402
from .validate import Checker as _Ctx  # noqa: E402
from .validate import ScenarioError  # noqa: E402
from .validate import boolean as _bool  # noqa: E402
from .validate import describe as _describe  # noqa: E402
from .validate import identifier as _name  # noqa: E402
from .validate import integer as _int  # noqa: E402
from .validate import join as _join  # noqa: E402
from .validate import known as _known  # noqa: E402
from .validate import merged as _merged  # noqa: E402
from .validate import string as _str  # noqa: E402
from .validate import suggest as _suggest  # noqa: E402,F401 (ibemu.topologies)
from .validate import table as _table  # noqa: E402
from .validate import tables as _tables  # noqa: E402
from .validate import unknown_node as _unknown_node  # noqa: E402


def link_labels(link: LinkSpec) -> tuple[str, str]:
    """Labels of a link's two directions (see :meth:`ibemu.config.LinkSpec.labels`)."""
    return link.labels()


# ---------------------------------------------------------------- overrides

_OVR_PART = re.compile(r"^([A-Za-z0-9_\-]+)((?:\[\d+\])*)$")


def apply_overrides(raw: dict, overrides, label: str = "<overrides>", _ctx=None) -> dict:
    """Apply "key.path=value" strings to a raw TOML dict in place (value read as a TOML
    value, else taken as a string); ``flow[2].window=1`` indexes arrays of tables."""
    ctx = _ctx or _Ctx(label)
    for text in overrides:
        key, sep, val = str(text).partition("=")
        key = key.strip()
        bad = lambda reason: ScenarioError(ctx.label, "--set %s" % text, reason)  # noqa: E731
        if not sep or not key:
            raise bad("expected key.path=value, e.g. template.L=10")
        tokens: list = []
        for part in key.split("."):
            m = _OVR_PART.match(part)
            if not m:
                raise bad("cannot read key path %r (expected e.g. scenario.duration or flow[0].window)" % key)
            tokens.append(m[1])
            tokens.extend(int(i) for i in re.findall(r"\d+", m[2]))
        try:
            parsed = tomllib.loads("v = " + val)
            value = parsed["v"] if list(parsed) == ["v"] else val.strip()
        except tomllib.TOMLDecodeError:
            value = val.strip()
        node, path = raw, ""
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1
            if isinstance(node, list):
                if isinstance(tok, str) and tok.isdigit():
                    tok = int(tok)
                if not isinstance(tok, int):
                    raise bad("%s is an array; index it as %s[0]" % (path, path))
                if tok >= len(node):
                    raise bad("%s has %d entries, no [%d]" % (path, len(node), tok))
            elif isinstance(node, dict):
                if isinstance(tok, int):
                    raise bad("%s is not an array" % (path or "the top level"))
                if not last and tok not in node:
                    node[tok] = {}
            else:
                raise bad("%s is a value, not a table" % path)
            path = _join(path, tok)
            if last:
                node[tok] = value
            else:
                node = node[tok]
        ctx.overridden.append((path, text))
    return raw


# ---------------------------------------------------------------- parameter sections

LINK_KEYS = ("rate", "propagation", "fc_period")
SWITCH_KEYS = ("buffer", "bypass_limit", "forwarding_delay", "mode", "data_vls", "sl2vl", "vlarb",
               "enforce_pkeys", "pkeys")
HCA_KEYS = ("mtu", "buffer", "ack_every", "data_vls", "vlarb", "ack_timeout", "retry_cnt", "max_outstanding",
            "pkeys")
MTUS = (256, 512, 1024, 2048, 4096)
DATA_VLS = (1, 2, 4, 8, 15)      # IBA VLCap: VL0, VL0-1, VL0-3, VL0-7, VL0-14


def _data_vls(ctx, items) -> int:
    if "data_vls" not in items:
        return 1
    v, path = items["data_vls"]
    n = _int(ctx, path, v)
    if n not in DATA_VLS:
        raise ctx.err(path, "must be one of 1, 2, 4, 8, 15 (IBA VLCap), got %d" % n)
    return n


def _vlarb_list(ctx, lpath, entries, data_vls) -> list[tuple[int, int]]:
    """A High or Low list: TOML pairs [[vl, weight], ...] or the string format of
    OMNeT++'s IB model, "VL:weight VL:weight ..." (e.g. "0:1 1:20 2:40")."""
    if isinstance(entries, str):
        pairs = []
        for tok in entries.replace(",", " ").split():
            a, sep, b = tok.partition(":")
            if not sep or not a.strip().isdigit() or not b.strip().isdigit():
                raise ctx.err(lpath, "cannot read %r (expected VL:weight pairs such as \"0:1 1:20 2:40\")" % tok)
            pairs.append([int(a), int(b)])
        entries = pairs
    if not isinstance(entries, list) or len(entries) > 64:
        raise ctx.err(lpath, "expected an array of at most 64 [vl, weight] pairs or a string "
                             "\"VL:weight ...\", got %s" % _describe(entries))
    out = []
    for i, e in enumerate(entries):
        epath = _join(lpath, i)
        if not isinstance(e, list) or len(e) != 2:
            raise ctx.err(epath, "expected a [vl, weight] pair, got %s" % _describe(e))
        vl = _int(ctx, epath, e[0], 0, 14)
        if vl >= data_vls:
            raise ctx.err(epath, "VL %d is not a data VL (data_vls = %d)" % (vl, data_vls))
        out.append((vl, _int(ctx, epath, e[1], 0, 255)))
    return out


def _vlarb(ctx, items, data_vls) -> VLArbTable:
    """IBA VL arbitration (seed 004): High/Low lists of VL:weight, weight in 64-byte
    units, as TOML pairs or OMNeT++ strings; default: every data VL in the Low list with
    weight 255, no High list."""
    if "vlarb" not in items:
        return VLArbTable(low=[(vl, 255) for vl in range(data_vls)])
    v, path = items["vlarb"]
    _table(ctx, path, v, ("high", "low", "limit_of_high_priority"))
    lists = {}
    for k, default in (("high", []), ("low", [[vl, 255] for vl in range(data_vls)])):
        lists[k] = _vlarb_list(ctx, _join(path, k), v.get(k, default), data_vls)
    limit = _int(ctx, _join(path, "limit_of_high_priority"), v.get("limit_of_high_priority", 255), 0, 255)
    return VLArbTable(high=lists["high"], low=lists["low"], limit_of_high_priority=limit)


def _sl2vl_row(ctx, path, v, data_vls) -> list[int]:
    if not isinstance(v, list) or len(v) != 16:
        raise ctx.err(path, "expected an array of 16 VLs (one per SL), got %s" % _describe(v))
    return [_int(ctx, _join(path, i), x, 0, data_vls - 1) for i, x in enumerate(v)]


def _link_params(ctx, items) -> LinkParams:
    p = LinkParams()
    if "rate" in items:
        p.rate = ctx.conv(items["rate"][1], parse_rate, items["rate"][0])
    if "propagation" in items:
        p.propagation = ctx.conv(items["propagation"][1], parse_time, items["propagation"][0])
    if "fc_period" in items:
        v, path = items["fc_period"]
        p.fc_period = ctx.conv(path, parse_time, v)
        if p.fc_period <= 0:
            raise ctx.err(path, "must be positive")
    return p


def _switch_params(ctx, items, max_mtu: int) -> SwitchParams:
    """Table 1 of seed 003: 4-packet input buffers, bypass limit 4, 40 ns forwarding delay."""
    p = SwitchParams()
    if "buffer" in items:
        v, path = items["buffer"]
        nbytes, npk = ctx.conv(path, parse_size, v, True)
        if nbytes is not None and nbytes < max_mtu:
            raise ctx.err(path, "%d bytes cannot hold one %d-byte packet (largest HCA MTU)" % (nbytes, max_mtu))
        p.buffer_bytes, p.buffer_packets = nbytes, npk
    if "bypass_limit" in items:
        p.bypass_limit = _int(ctx, items["bypass_limit"][1], items["bypass_limit"][0], 0)
    if "forwarding_delay" in items:
        v, path = items["forwarding_delay"]
        p.forwarding_delay = ctx.conv(path, parse_time, v)
    if "mode" in items:
        v, path = items["mode"]
        p.cut_through = _str(ctx, path, v, ("cut-through", "store-and-forward")) == "cut-through"
    p.data_vls = _data_vls(ctx, items)
    if "sl2vl" in items:                # one table for every port pair, or per port (seed 004)
        v, path = items["sl2vl"]
        if isinstance(v, dict):
            for k, row in v.items():
                kp = _join(path, k)
                if k == "default":
                    p.sl2vl = _sl2vl_row(ctx, kp, row, p.data_vls)
                    continue
                a, sep, b = k.partition(":")
                if not (b if sep else a).isdigit() or (sep and not a.isdigit()):
                    raise ctx.err(kp, "expected \"default\", an output port \"5\" or an input:output "
                                      "pair \"1:5\"")
                key = (int(a), int(b)) if sep else (None, int(a))
                p.port_sl2vl[key] = _sl2vl_row(ctx, kp, row, p.data_vls)
        else:
            p.sl2vl = _sl2vl_row(ctx, path, v, p.data_vls)
    p.vlarb = _vlarb(ctx, items, p.data_vls)
    if "enforce_pkeys" in items:                 # IBA 10.9 inbound partition enforcement
        p.enforce_pkeys = _bool(ctx, items["enforce_pkeys"][1], items["enforce_pkeys"][0])
    if "pkeys" in items:
        p.pkeys = _pkeys(ctx, items["pkeys"][1], items["pkeys"][0])
    return p


def _pkey(ctx, path, v) -> int:
    """A P_Key (IBA 10.9): 16 bits, partition number not 0 (0x0000 and 0x8000 are invalid)."""
    k = _int(ctx, path, v, 0, 0xFFFF)
    if not k & 0x7FFF:
        raise ctx.err(path, "0x%04x is the invalid P_Key (partition number 0)" % k)
    return k


def _pkeys(ctx, path, v) -> list[int]:
    """A port's P_Key table: an array of P_Keys, e.g. [0xFFFF, 0x8001]."""
    if not isinstance(v, list) or not v:
        raise ctx.err(path, "expected a non-empty array of P_Keys such as [0xFFFF, 0x8001], got %s" % _describe(v))
    return [_pkey(ctx, "%s[%d]" % (path, i), k) for i, k in enumerate(v)]


def _hca_params(ctx, items) -> HCAParams:
    p = HCAParams()
    if "mtu" in items:
        v, path = items["mtu"]
        p.mtu = _int(ctx, path, v)
        if p.mtu not in MTUS:
            raise ctx.err(path, "must be one of 256, 512, 1024, 2048, 4096, got %d" % p.mtu)
    if "buffer" in items:
        v, path = items["buffer"]
        p.buffer_bytes = ctx.conv(path, parse_size, v)[0]
        if p.buffer_bytes < p.mtu:
            raise ctx.err(path, "%d bytes cannot hold one %d-byte (MTU) packet" % (p.buffer_bytes, p.mtu))
    if "ack_every" in items:
        p.ack_every = _int(ctx, items["ack_every"][1], items["ack_every"][0], 1)
    if "ack_timeout" in items:                   # IBA local ACK timeout, emulated time
        v, path = items["ack_timeout"]
        p.ack_timeout = ctx.conv(path, parse_time, v)
        if p.ack_timeout <= 0:
            raise ctx.err(path, "must be positive")
    if "retry_cnt" in items:                     # IBA Retry Count: a 3-bit field
        p.retry_cnt = _int(ctx, items["retry_cnt"][1], items["retry_cnt"][0], 0, 7)
    if "max_outstanding" in items:               # send-queue depth, packets
        p.max_outstanding = _int(ctx, items["max_outstanding"][1], items["max_outstanding"][0], 1, 1 << 22)
    if "pkeys" in items:
        p.pkeys = _pkeys(ctx, items["pkeys"][1], items["pkeys"][0])
    p.data_vls = _data_vls(ctx, items)
    p.vlarb = _vlarb(ctx, items, p.data_vls)
    return p


# ---------------------------------------------------------------- the loader

TOP_KEYS = ("scenario", "defaults", "switch", "hca", "link", "flow", "output", "template", "cc", "faults")
FLOW_KEYS = ("name", "src", "dst", "transport", "op", "pattern", "message_size", "count", "start",
             "stop", "window", "ipd", "rate", "rate_fraction", "sl", "mean_on", "mean_off", "group", "pkey")
OUTPUT_KEYS = ("bin", "window", "plots", "plot_links", "plot_groups")


def load_scenario(path, overrides=()) -> Scenario:
    """Read, override ("key.path=value" strings), expand and validate a TOML scenario."""
    label = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ScenarioError(label, None, "no such file") from None
    except IsADirectoryError:
        raise ScenarioError(label, None, "is a directory, not a scenario file") from None
    except PermissionError:
        raise ScenarioError(label, None, "permission denied") from None
    except OSError as e:
        raise ScenarioError(label, None, "cannot read: %s" % (e.strerror or e)) from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ScenarioError(label, None, "not UTF-8 text (is this a TOML scenario?)") from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", msg)
        if m:
            raise ScenarioError(label, "line %s" % m[1], "%s (column %s)" % (msg[:m.start()], m[2])) from None
        m = re.search(r"\s*\(at end of document\)$", msg)
        raise ScenarioError(label, "end of file", msg[:m.start()] if m else msg) from None
    return scenario_from_dict(raw, label=label, source=str(path), name=Path(path).stem,
                              overrides=overrides)


def scenario_from_dict(raw: dict, *, label: str = "<scenario>", source: str | None = None,
                       name: str | None = None, overrides=()) -> Scenario:
    """Validate a raw TOML-shaped dict (not modified); ``name`` is the default name."""
    ctx = _Ctx(label)
    raw = copy.deepcopy(raw)
    had_template = isinstance(raw, dict) and "template" in raw
    apply_overrides(raw, overrides, _ctx=ctx)
    if not had_template and isinstance(raw.get("template"), dict) and "name" not in raw["template"]:
        key = next(iter(raw["template"]), "name")
        raise ctx.err("template.%s" % key, "this scenario has no [template] to set parameters of")
    _table(ctx, "", raw, TOP_KEYS)
    if "template" in raw:
        raw = _expand_template(ctx, raw)
    return _build(ctx, raw, name, source)


def _expand_template(ctx, raw: dict) -> dict:
    from .topologies import TemplateParamError, expand_template, template_names
    tpl = _table(ctx, "template", raw.pop("template"), _AnyKeys(), ("name",))
    tname = _str(ctx, "template.name", tpl["name"])
    params = {k: v for k, v in tpl.items() if k != "name"}
    try:
        gen, normalized, supersedes = expand_template(tname, params)
    except TemplateParamError as e:
        if e.key is None:
            raise ctx.err("template.name", "unknown template %r (known: %s)" % (tname, ", ".join(template_names())))
        raise ctx.err(_join("template", e.key), e.reason) from None
    for param, keys in supersedes.items():
        node = raw
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and keys[-1] in node:
            if param in params:
                # both given: a --set beats the file; twice in one place is a conflict
                by_set, param_by_set = ctx.by_set(".".join(keys)), ctx.by_set("template." + param)
                if by_set == param_by_set:
                    raise ctx.err(".".join(keys), "conflicts with template.%s; set only one" % param)
                if param_by_set:
                    del node[keys[-1]]
                    continue
            g = gen
            for k in keys[:-1]:
                g = g[k]
            del g[keys[-1]]
            normalized.pop(param, None)
    for k in ("scenario", "output", "cc"):
        if k in raw:
            gen[k] = {**gen.get(k, {}), **_table(ctx, k, raw[k], _AnyKeys())}
    if "defaults" in raw:
        d = _table(ctx, "defaults", raw["defaults"], ("link", "switch", "hca"))
        for k, v in d.items():
            mine = _table(ctx, "defaults." + k, v, _AnyKeys())
            gen.setdefault("defaults", {})[k] = {**gen["defaults"].get(k, {}), **mine}
    for k in ("switch", "hca", "link", "flow"):
        if k in raw:
            gen[k] = gen.get(k, []) + _tables(ctx, k, raw[k])
    gen["template"] = {"name": tname, **normalized}
    return gen


def _build(ctx, raw: dict, default_name, source) -> Scenario:
    # [scenario]
    sc = _table(ctx, "scenario", raw.get("scenario", {}), ("name", "duration", "seed"), ("duration",))
    name = _str(ctx, "scenario.name", sc.get("name", default_name or "scenario"))
    if not name.strip():
        raise ctx.err("scenario.name", "must not be empty")
    duration = ctx.conv("scenario.duration", parse_time, sc["duration"])
    if duration <= 0:
        raise ctx.err("scenario.duration", "must be positive")
    seed = _int(ctx, "scenario.seed", sc.get("seed", 1), 0, 2**63 - 1)

    # [defaults.*]: checked on their own first so mistakes are reported where they are
    d = _table(ctx, "defaults", raw.get("defaults", {}), ("link", "switch", "hca"))
    dl = _table(ctx, "defaults.link", d.get("link", {}), LINK_KEYS)
    ds = _table(ctx, "defaults.switch", d.get("switch", {}), SWITCH_KEYS)
    dh = _table(ctx, "defaults.hca", d.get("hca", {}), HCA_KEYS)
    _link_params(ctx, _merged({}, "", dl, "defaults.link", LINK_KEYS))
    _hca_params(ctx, _merged({}, "", dh, "defaults.hca", HCA_KEYS))

    nodes: dict[str, str] = {}           # name -> "switch" | "hca"
    where: dict[str, str] = {}           # name -> key path of its entry

    def add_node(path, nm, kind):
        if nm in nodes:
            raise ctx.err(path, "duplicate name %r (also %s)" % (nm, where[nm]))
        nodes[nm], where[nm] = kind, path.rsplit(".", 1)[0]

    # [[hca]]
    hcas: list[HCASpec] = []
    lids: dict[int, str] = {}
    hraw = _tables(ctx, "hca", raw.get("hca", []))
    for i, h in enumerate(hraw):
        path = _join("hca", i)
        _table(ctx, path, h, ("name", "lid") + HCA_KEYS, ("name",))
        nm = _name(ctx, path + ".name", h["name"])
        add_node(path + ".name", nm, "hca")
        if "lid" in h:
            lid = _int(ctx, path + ".lid", h["lid"], 1, 0xBFFF)
            if lid in lids:
                raise ctx.err(path + ".lid", "duplicate LID %d (also %s)" % (lid, lids[lid]))
            lids[lid] = path
        hcas.append(HCASpec(nm, h.get("lid", 0), _hca_params(ctx, _merged(h, path, dh, "defaults.hca", HCA_KEYS))))
    free = (n for n in range(1, 0xC000) if n not in lids)   # unicast LIDs for HCAs without one
    for h in hcas:
        if h.lid == 0:
            h.lid = next(free)
    max_mtu = max((h.params.mtu for h in hcas), default=HCAParams().mtu)
    _switch_params(ctx, _merged({}, "", ds, "defaults.switch", SWITCH_KEYS), max_mtu)

    # [[switch]]
    switches: list[SwitchSpec] = []
    sraw = _tables(ctx, "switch", raw.get("switch", []))
    for i, s in enumerate(sraw):
        path = _join("switch", i)
        _table(ctx, path, s, ("name", "ports", "lft", "port_buffers", "port_pkeys", "port_vlarb")
               + SWITCH_KEYS, ("name",))
        nm = _name(ctx, path + ".name", s["name"])
        add_node(path + ".name", nm, "switch")
        ports = _int(ctx, path + ".ports", s["ports"], 1, 254) if "ports" in s else None
        params = _switch_params(ctx, _merged(s, path, ds, "defaults.switch", SWITCH_KEYS), max_mtu)
        switches.append(SwitchSpec(nm, params, ports, None))

    links, used = _links(ctx, raw, nodes, where, {s.name: s.ports for s in switches}, dl)
    labels: dict[str, str] = {}
    for i, ln in enumerate(links):
        for lab in link_labels(ln):
            if lab in labels:
                raise ctx.err(_join("link", i) + ".name", "link label %r is also used by %s" % (lab, labels[lab]))
            labels[lab] = _join("link", i)

    # switch tables that refer to ports and LIDs
    lid_of = {h.name: h.lid for h in hcas}
    for i, (s, sw) in enumerate(zip(sraw, switches)):
        path = _join("switch", i)
        conn = sorted(p for (n, p) in used if n == sw.name)
        if "lft" in s:
            lft = {}
            for k, v in _table(ctx, path + ".lft", s["lft"], _AnyKeys()).items():
                kp = "%s.lft.%s" % (path, k)
                lid = int(k) if k.isdigit() else lid_of.get(k)
                if lid is None or lid not in lid_of.values():
                    raise ctx.err(kp, "no HCA has LID or name %r" % k)
                port = _int(ctx, kp, v, 1, 254)
                if port not in conn:
                    raise ctx.err(kp, "switch %r has no link on port %d (linked: %s)"
                                  % (sw.name, port, _known(conn, 99)))
                lft[lid] = port
            sw.lft = lft
        for k, v in _table(ctx, path + ".port_buffers", s.get("port_buffers", {}), _AnyKeys()).items():
            kp = "%s.port_buffers.%s" % (path, k)
            if not k.isdigit() or int(k) not in conn:
                raise ctx.err(kp, "switch %r has no link on port %s (linked: %s)" % (sw.name, k, _known(conn, 99)))
            nbytes = ctx.conv(kp, parse_size, v)[0]
            if nbytes < max_mtu:
                raise ctx.err(kp, "%d bytes cannot hold one %d-byte packet (largest HCA MTU)" % (nbytes, max_mtu))
            sw.params.port_buffers[int(k)] = nbytes
        for k, v in _table(ctx, path + ".port_pkeys", s.get("port_pkeys", {}), _AnyKeys()).items():
            kp = "%s.port_pkeys.%s" % (path, k)
            if not k.isdigit() or int(k) not in conn:
                raise ctx.err(kp, "switch %r has no link on port %s (linked: %s)" % (sw.name, k, _known(conn, 99)))
            sw.params.port_pkeys[int(k)] = _pkeys(ctx, kp, v)
        for k, v in _table(ctx, path + ".port_vlarb", s.get("port_vlarb", {}), _AnyKeys()).items():
            kp = "%s.port_vlarb.%s" % (path, k)      # a port's own VL arbitration table
            if not k.isdigit() or int(k) not in conn:
                raise ctx.err(kp, "switch %r has no link on port %s (linked: %s)" % (sw.name, k, _known(conn, 99)))
            sw.params.port_vlarb[int(k)] = _vlarb(ctx, {"vlarb": (v, kp)}, sw.params.data_vls)
        for (pin, pout) in sw.params.port_sl2vl:     # per-port SL-to-VL tables name linked ports
            for pnum in (pin, pout):
                if pnum is not None and pnum not in conn:
                    key = "%d:%d" % (pin, pout) if pin is not None else str(pout)
                    src = path if "sl2vl" in s else "defaults.switch"
                    raise ctx.err("%s.sl2vl.%s" % (src, key), "switch %r has no link on port %d (linked: %s)"
                                  % (sw.name, pnum, _known(conn, 99)))

    flows = _flows(ctx, raw, nodes, links)
    out = _output(ctx, raw.get("output", {}), labels, flows)
    from .cc.config import parse_cc
    cc = parse_cc(ctx, raw.get("cc", {}), "cc", nodes)
    from .fabric.faults import parse_faults
    faults = parse_faults(ctx, raw.get("faults"), links)

    resolved = copy.deepcopy(raw)
    resolved["scenario"] = {"name": name, "duration": format_time(duration), "seed": seed}
    resolved["output"] = {"bin": format_time(out.bin), "window": format_time(out.window), "plots": out.plots,
                          "plot_links": list(out.plot_links), "plot_groups": list(out.plot_groups)}
    return Scenario(name=name, duration=duration, switches=switches, hcas=hcas, links=links, flows=flows,
                    seed=seed, output=out, source=source, resolved=resolved, cc=cc, faults=faults)


def _links(ctx, raw, nodes, where, ports_of, dl) -> tuple[list[LinkSpec], dict]:
    """[[link]] entries, with ports given or assigned (next free from 1; 0 is the
    switch management port); returns the links and {(node, port): link key path}."""
    links: list[LinkSpec] = []
    used: dict[tuple[str, int], str] = {}
    hca_link: dict[str, str] = {}
    lraw = _tables(ctx, "link", raw.get("link", []))
    for i, ln in enumerate(lraw):
        path = _join("link", i)
        _table(ctx, path, ln, ("a", "b", "name") + LINK_KEYS, ("a", "b"))
        ends = []
        for side in ("a", "b"):
            epath = "%s.%s" % (path, side)
            node, _, port = _str(ctx, epath, ln[side]).partition(":")
            if node not in nodes:
                raise ctx.err(epath, _unknown_node(node, nodes))
            if ends and ends[0][0] == node:
                raise ctx.err(epath, "a link cannot connect %r to itself" % node)
            pnum = None
            if port:
                if not port.isdigit():
                    raise ctx.err(epath, "cannot read port %r (expected node or node:port)" % port)
                pnum = int(port)
                if nodes[node] == "hca" and pnum != 1:
                    raise ctx.err(epath, "HCA %r has one port, 1" % node)
                if nodes[node] == "switch":
                    if pnum == 0:
                        raise ctx.err(epath, "port 0 is the switch management port; links use ports 1 and up")
                    limit = ports_of[node] or 254
                    if pnum > limit:
                        raise ctx.err(epath, "switch %r has ports 1..%d" % (node, limit))
                if (node, pnum) in used:
                    raise ctx.err(epath, "port %s:%d is already used by %s" % (node, pnum, used[node, pnum]))
                used[node, pnum] = path
            if nodes[node] == "hca":
                if node in hca_link:
                    raise ctx.err(epath, "HCA %r already has a link (%s); an HCA has one port" % (node, hca_link[node]))
                hca_link[node] = path
            ends.append((node, pnum))
        lname = _name(ctx, path + ".name", ln["name"]) if "name" in ln else None
        lp = _link_params(ctx, _merged(ln, path, dl, "defaults.link", LINK_KEYS))
        links.append(LinkSpec(ends[0][0], ends[1][0], ends[0][1], ends[1][1], lp, lname))
    for i, ln in enumerate(links):            # auto ports: next free, from 1 (0 is management)
        for side in ("a", "b"):
            node = getattr(ln, side)
            if getattr(ln, side + "_port") is None:
                port = 1
                while (node, port) in used:
                    port += 1
                if nodes[node] == "switch" and port > (ports_of[node] or 254):
                    sp = where[node]
                    raise ctx.err(sp + ".ports", "switch %r has %d ports; link[%d] needs one more"
                                  % (node, ports_of[node] or 254, i))
                used[node, port] = _join("link", i)
                setattr(ln, side + "_port", port)
    linked = {n for n, _ in used}
    for nm in nodes:
        if nm not in linked:
            raise ctx.err(where[nm], "%s %r has no link" % ("HCA" if nodes[nm] == "hca" else "switch", nm))
    return links, used


def _flows(ctx, raw, nodes, links) -> list[FlowSpec]:
    nbr: dict[str, list[str]] = {n: [] for n in nodes}
    rate_of: dict[str, int] = {}
    for ln in links:
        nbr[ln.a].append(ln.b)
        nbr[ln.b].append(ln.a)
        for end in (ln.a, ln.b):
            if nodes[end] == "hca":
                rate_of[end] = ln.params.rate

    def reachable(src):
        seen, todo = {src}, [src]
        while todo:
            n = todo.pop()
            for m in nbr[n]:
                if m not in seen:
                    seen.add(m)
                    if nodes[m] == "switch":
                        todo.append(m)
        return seen

    flows, names = [], {}
    for i, f in enumerate(_tables(ctx, "flow", raw.get("flow", []))):
        path = _join("flow", i)
        p = lambda k: "%s.%s" % (path, k)  # noqa: E731
        _table(ctx, path, f, FLOW_KEYS, ("src", "dst"))
        nm = _str(ctx, p("name"), f.get("name", "flow%d" % i))
        if not nm:
            raise ctx.err(p("name"), "must not be empty")
        if nm in names:
            raise ctx.err(p("name"), "duplicate flow name %r (also %s)" % (nm, names[nm]))
        names[nm] = path
        ends = {}
        for k in ("src", "dst"):
            node = _str(ctx, p(k), f[k])
            if node not in nodes:
                raise ctx.err(p(k), _unknown_node(node, nodes))
            if nodes[node] != "hca":
                raise ctx.err(p(k), "%r is a switch; flows start and end at HCAs" % node)
            ends[k] = node
        if ends["src"] == ends["dst"]:
            raise ctx.err(p("dst"), "same as src (%r)" % ends["src"])
        if ends["dst"] not in reachable(ends["src"]):
            raise ctx.err(p("dst"), "%r cannot be reached from %r" % (ends["dst"], ends["src"]))
        fl = FlowSpec(nm, ends["src"], ends["dst"])
        fl.transport = _str(ctx, p("transport"), f.get("transport", "rc"), ("rc", "ud"))
        fl.op = _str(ctx, p("op"), f.get("op", "send"), ("send", "write", "read"))
        if fl.transport == "ud" and fl.op != "send":
            raise ctx.err(p("op"), "ud supports only send (got %r)" % fl.op)
        fl.pattern = _str(ctx, p("pattern"), f.get("pattern", "greedy"), ("greedy", "messages", "onoff"))
        if "message_size" in f:
            fl.message_size = ctx.conv(p("message_size"), parse_size, f["message_size"])[0]
            if not 1 <= fl.message_size <= 2**31:
                raise ctx.err(p("message_size"), "must be between 1 byte and 2GiB, got %d" % fl.message_size)
        if fl.pattern == "messages":
            if "count" not in f:
                raise ctx.err(p("count"), "missing (pattern 'messages' needs a message count)")
            fl.count = _int(ctx, p("count"), f["count"], 1)
        elif "count" in f:
            raise ctx.err(p("count"), "only used with pattern 'messages' (pattern is %r)" % fl.pattern)
        for k in ("mean_on", "mean_off"):
            if fl.pattern == "onoff":
                if k not in f:
                    raise ctx.err(p(k), "missing (pattern 'onoff' needs mean_on and mean_off)")
                t = ctx.conv(p(k), parse_time, f[k])
                if t <= 0:
                    raise ctx.err(p(k), "must be positive")
                setattr(fl, k, t)
            elif k in f:
                raise ctx.err(p(k), "only used with pattern 'onoff' (pattern is %r)" % fl.pattern)
        fl.start = ctx.conv(p("start"), parse_time, f.get("start", 0))
        if "stop" in f:
            fl.stop = ctx.conv(p("stop"), parse_time, f["stop"])
            if fl.stop <= fl.start:
                raise ctx.err(p("stop"), "must be after start (%s)" % format_time(fl.start))
        if "window" in f:
            if fl.transport == "ud":
                raise ctx.err(p("window"), "needs transport 'rc' (ud has no ACKs to clock a window)")
            fl.window = _int(ctx, p("window"), f["window"], 1)
        given = [k for k in ("ipd", "rate", "rate_fraction") if k in f]
        if len(given) > 1:
            raise ctx.err(p(given[1]), "give only one of ipd, rate, rate_fraction")
        if "ipd" in f:
            fl.ipd = _int(ctx, p("ipd"), f["ipd"], 0, 255)
        if "rate" in f:
            fl.rate = float(ctx.conv(p("rate"), parse_rate, f["rate"]))
        if "rate_fraction" in f:
            x = f["rate_fraction"]
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise ctx.err(p("rate_fraction"), "expected a number, got %s" % _describe(x))
            if not 0 < x <= 1:
                raise ctx.err(p("rate_fraction"), "must be in (0, 1], got %r" % x)
            fl.rate = x * rate_of[fl.src]
        fl.sl = _int(ctx, p("sl"), f.get("sl", 0), 0, 15)
        if "pkey" in f:
            fl.pkey = _pkey(ctx, p("pkey"), f["pkey"])
        if "group" in f:
            fl.group = _str(ctx, p("group"), f["group"])
            if not fl.group:
                raise ctx.err(p("group"), "must not be empty")
        flows.append(fl)
    return flows


def _output(ctx, o, labels, flows) -> OutputSpec:
    """Seed 003 section 3: rates over a 2 ms sliding window."""
    _table(ctx, "output", o, OUTPUT_KEYS)
    out = OutputSpec()
    for k in ("bin", "window"):
        if k in o:
            t = ctx.conv("output." + k, parse_time, o[k])
            if t <= 0:
                raise ctx.err("output." + k, "must be positive")
            setattr(out, k, t)
    if "plots" in o:
        out.plots = _bool(ctx, "output.plots", o["plots"])
    groups = list(dict.fromkeys(f.group for f in flows if f.group))
    for k, known, what in (("plot_links", list(labels), "link"), ("plot_groups", groups, "group")):
        if k in o:
            lst = o[k]
            if not isinstance(lst, list):
                raise ctx.err("output." + k, "expected an array of names, got %s" % _describe(lst))
            for i, x in enumerate(lst):
                xp = "output.%s[%d]" % (k, i)
                if _str(ctx, xp, x) not in known:
                    raise ctx.err(xp, "unknown %s %r (known: %s)" % (what, x, _known(known, 12) or "none"))
            setattr(out, k, list(lst))
    return out
