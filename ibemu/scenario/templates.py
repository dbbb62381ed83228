"""Scenario templates: a ``[template]`` table names a topology builder and its
parameters, and expands into the scenario's sections before they are validated.

``santos_fig1`` is the two-switch topology of seed 003 Figure 1 (sections 3-4, Table 1):
switches A and B joined by the inter-switch link, L local sources on B, R remote
sources on A, all sending to the congested destination B_C over the root link, and a
victim flow A_V -> B_V active in [40 ms, 60 ms] of a 100 ms run.  The Python builders
(:mod:`ibemu.scenario.builders`) expand through the same code, so a Python-built
scenario and the equivalent TOML file give equal :class:`~ibemu.scenario.model.Scenario`
objects.

The fat-tree templates ``kary_ntree``, ``xgft``, ``fat_tree2`` and ``leaf_spine`` (issue
15) are :mod:`ibemu.scenario.topologies`; they write the fabric only (no flows, no
duration).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..units import format_time, parse_rate, parse_time
from ..validate import AnyKeys, Checker, join, string, suggest, table, tables
from .topologies import TOPOLOGY_TEMPLATES, TemplateParamError, param_int

__all__ = ["TemplateParamError", "SANTOS_FIG1_DEFAULTS", "SANTOS_FIG1_SUPERSEDES", "MESSAGE_SIZE",
           "TEMPLATES", "template_names", "expand_template", "apply_template"]


# TOML parameter -> default.  Seed 003 section 3: L = 5, R = 1, 100 ms, flows start every
# 100 us (local first), victim active [40 ms, 60 ms]; Table 1: 4-packet buffers, 1 GB/s.
SANTOS_FIG1_DEFAULTS = {
    "L": 5, "R": 1, "buffer_packets": 4, "window": None, "rate_fraction": None,
    "duration": "100ms", "victim": True, "victim_start": "40ms", "victim_stop": "60ms",
    "spacing": "100us", "link_rate": "4x_sdr", "pattern": "greedy", "mean_on": None, "mean_off": None,
    "flow_control": "ideal",    # seed 003's simulated links (ibemu.studies.santos.LINKS)
}
# a parameter that writes a plain key, which the file may set instead (but not both)
SANTOS_FIG1_SUPERSEDES = {"duration": ("scenario", "duration"), "link_rate": ("defaults", "link", "rate"),
                          "buffer_packets": ("defaults", "switch", "buffer"),
                          "flow_control": ("defaults", "link", "flow_control")}
MESSAGE_SIZE = 2048        # Table 1: 2048-byte payloads, one packet per message


def _time(key: str, v: Any, positive: bool = True) -> int:
    try:
        t = parse_time(v)
    except ValueError as e:
        raise TemplateParamError(key, str(e)) from None
    if positive and t <= 0:
        raise TemplateParamError(key, "must be positive")
    return t


def _fraction(key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TemplateParamError(key, "expected a number in (0, 1], got %r" % (v,))
    if not 0 < v <= 1:
        raise TemplateParamError(key, "must be in (0, 1], got %r" % v)
    return float(v)


def _santos_fig1(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    for k in params:
        if k not in SANTOS_FIG1_DEFAULTS:
            raise TemplateParamError(k, "unknown key" + suggest(k, ["name", *SANTOS_FIG1_DEFAULTS]))
    p = {**SANTOS_FIG1_DEFAULTS, **params}
    L = param_int("L", p["L"], 0, 251)             # B: inter, root, B_V and L sources on 254 ports
    R = param_int("R", p["R"], 0, 252)             # A: inter, A_V and R sources
    bufp = param_int("buffer_packets", p["buffer_packets"], 1)
    window = None if p["window"] is None else param_int("window", p["window"], 1)
    duration = _time("duration", p["duration"])
    spacing = _time("spacing", p["spacing"], positive=False)
    try:
        parse_rate(p["link_rate"])
    except ValueError as e:
        raise TemplateParamError("link_rate", str(e)) from None
    if p["flow_control"] not in ("wire", "ideal"):
        raise TemplateParamError("flow_control", "must be 'wire' or 'ideal', got %r" % (p["flow_control"],))
    if not isinstance(p["victim"], bool):
        raise TemplateParamError("victim", "expected true or false, got %r" % (p["victim"],))
    norm: dict[str, Any] = {"L": L, "R": R, "buffer_packets": bufp, "duration": format_time(duration),
            "victim": p["victim"], "spacing": format_time(spacing), "link_rate": p["link_rate"],
            "flow_control": p["flow_control"]}
    if window is not None:
        norm["window"] = window
    if p["victim"]:
        vstart = _time("victim_start", p["victim_start"], positive=False)
        vstop = _time("victim_stop", p["victim_stop"])
        if vstop <= vstart:
            raise TemplateParamError("victim_stop", "must be after victim_start (%s)" % format_time(vstart))
        norm["victim_start"], norm["victim_stop"] = format_time(vstart), format_time(vstop)
    else:
        for k in ("victim_start", "victim_stop"):
            if k in params:
                raise TemplateParamError(k, "only used when victim = true")
    pattern = p["pattern"]
    if pattern not in ("greedy", "onoff"):
        raise TemplateParamError("pattern", "unknown value %r (expected 'greedy' or 'onoff')" % (pattern,))
    norm["pattern"] = pattern
    for k in ("mean_on", "mean_off"):             # seed 003 section 6.3.2: ON/OFF flows
        if pattern == "onoff":
            if p[k] is None:
                raise TemplateParamError(k, "missing (pattern 'onoff' needs mean_on and mean_off)")
            norm[k] = format_time(_time(k, p[k]))
        elif p[k] is not None:
            raise TemplateParamError(k, "only used with pattern 'onoff'")

    # flows: locals first, then remotes, one every `spacing` from 0 (section 3)
    hcas = ["BC", "BV", "AV"] + ["L%d" % i for i in range(1, L + 1)] + ["R%d" % j for j in range(1, R + 1)]
    flows: list[dict[str, Any]] = []
    for n, (grp, src) in enumerate([("local", "L%d" % i) for i in range(1, L + 1)]
                                   + [("remote", "R%d" % j) for j in range(1, R + 1)]):
        f = {"name": grp + src[1:], "src": src, "dst": "BC", "group": grp, "start": format_time(n * spacing),
             "pattern": pattern}
        if pattern == "onoff":
            f["mean_on"], f["mean_off"] = norm["mean_on"], norm["mean_off"]
        flows.append(f)
    if p["victim"]:
        flows.append({"name": "victim", "src": "AV", "dst": "BV", "group": "victim", "pattern": "greedy",
                      "start": norm["victim_start"], "stop": norm["victim_stop"]})
    for f in flows:
        f.update({"transport": "rc", "op": "send", "message_size": MESSAGE_SIZE})
        if window is not None:
            f["window"] = window

    rf = p["rate_fraction"]
    if rf is not None:
        names = {f["name"] for f in flows}
        groups = {f["group"] for f in flows}
        if isinstance(rf, dict):
            rf = {k: _fraction("rate_fraction." + k, v) for k, v in rf.items()}
            for k in rf:
                if k not in names and k not in groups:
                    raise TemplateParamError("rate_fraction." + k, "no flow or group %r (groups: %s; flows: %s)"
                                             % (k, ", ".join(sorted(groups)), ", ".join(f["name"] for f in flows)))
            for f in flows:
                x = rf.get(f["name"], rf.get(f["group"]))
                if x is not None:
                    f["rate_fraction"] = x
        else:
            rf = _fraction("rate_fraction", rf)
            for f in flows:
                f["rate_fraction"] = rf
        norm["rate_fraction"] = rf

    links = [{"a": "A", "b": "B", "name": "inter"}, {"a": "B", "b": "BC", "name": "root"},
             {"a": "B", "b": "BV"}, {"a": "AV", "b": "A"}]
    links += [{"a": "L%d" % i, "b": "B"} for i in range(1, L + 1)]
    links += [{"a": "R%d" % j, "b": "A"} for j in range(1, R + 1)]
    gen: dict[str, Any] = {
        "scenario": {"duration": norm["duration"]},
        "defaults": {"link": {"rate": norm["link_rate"], "flow_control": norm["flow_control"]},
                     "switch": {"buffer": "%d packets" % bufp}},
        "switch": [{"name": "A"}, {"name": "B"}],
        "hca": [{"name": n, "lid": i + 1} for i, n in enumerate(hcas)],
        "link": links,
        "flow": flows,
        "output": {"plot_links": ["root", "inter"],
                   "plot_groups": [g for g in ("local", "remote", "victim") if any(f["group"] == g for f in flows)]},
    }
    return gen, norm


Expander = Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]
TEMPLATES: dict[str, tuple[Expander, dict[str, tuple[str, ...]]]] = {
    "santos_fig1": (_santos_fig1, SANTOS_FIG1_SUPERSEDES),
    **{name: (fn, {}) for name, fn in TOPOLOGY_TEMPLATES.items()}}


def template_names() -> list[str]:
    """The names a ``[template]`` table may give."""
    return sorted(TEMPLATES)


def expand_template(name: str, params: dict[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, tuple[str, ...]]]:
    """Expand template ``name`` with TOML-form ``params`` into ``(raw sections,
    normalized params, {param: key path it writes})``; raises TemplateParamError."""
    if name not in TEMPLATES:
        raise TemplateParamError(None, "unknown template %r" % name)
    fn, supersedes = TEMPLATES[name]
    gen, norm = fn(params)
    return gen, norm, dict(supersedes)


def apply_template(ctx: Checker, raw: dict[str, Any]) -> dict[str, Any]:
    """The raw scenario with its ``[template]`` expanded: the template's sections, with
    the file's own keys and entries merged in (a plain key the template would write
    replaces the template parameter that writes it; both given is a conflict, unless
    one came from ``--set``).  ``template`` keeps the normalized parameters."""
    tpl = table(ctx, "template", raw.pop("template"), AnyKeys(), ("name",))
    tname = string(ctx, "template.name", tpl["name"])
    params = {k: v for k, v in tpl.items() if k != "name"}
    try:
        gen, normalized, supersedes = expand_template(tname, params)
    except TemplateParamError as e:
        if e.key is None:
            raise ctx.err("template.name",
                          "unknown template %r (known: %s)" % (tname, ", ".join(template_names()))) from None
        raise ctx.err(join("template", e.key), e.reason) from None
    for param, keys in supersedes.items():
        node: Any = raw
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
            gen[k] = {**gen.get(k, {}), **table(ctx, k, raw[k], AnyKeys())}
    if "defaults" in raw:
        d = table(ctx, "defaults", raw["defaults"], ("link", "switch", "hca"))
        for k, v in d.items():
            mine = table(ctx, "defaults." + k, v, AnyKeys())
            gd = gen.setdefault("defaults", {})
            gd[k] = {**gd.get(k, {}), **mine}
    for k in ("switch", "hca", "link", "flow"):
        if k in raw:
            gen[k] = gen.get(k, []) + tables(ctx, k, raw[k])
    if "lmc" in normalized and isinstance(raw.get("routing"), dict) and "lmc" in raw["routing"] \
            and raw["routing"]["lmc"] != normalized["lmc"]:
        raise ctx.err("routing.lmc", "conflicts with template.lmc = %d, which also spaces the HCAs' LIDs by "
                      "2^lmc; set template.lmc instead" % normalized["lmc"])
    for k, v in raw.items():            # other sections ([routing], [faults], [[traffic]], ...) as written
        if k in ("scenario", "output", "cc", "defaults", "switch", "hca", "link", "flow"):
            continue
        if isinstance(v, dict) and isinstance(gen.get(k), dict):
            gen[k] = {**gen[k], **v}
        elif isinstance(v, list) and isinstance(gen.get(k), list):
            gen[k] = gen[k] + v
        else:
            gen[k] = v
    gen["template"] = {"name": tname, **normalized}
    return gen
