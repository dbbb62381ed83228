"""Scenario builders for scripted experiments, and the TOML templates they share.

``santos_fig1()`` is the two-switch topology of seed 003 Figure 1 (sections 3-4,
Table 1): switches A and B joined by the inter-switch link, L local sources on B, R
remote sources on A, all sending to the congested destination B_C over the root link,
and a victim flow A_V -> B_V active in [40 ms, 60 ms] of a 100 ms run.  The TOML
``[template] name = "santos_fig1"`` expands through the same code, so a Python-built
scenario and the equivalent TOML file give equal :class:`~ibemu.config.Scenario` objects.
"""
from __future__ import annotations

from .config import Scenario
from .scenario import _suggest, format_time, parse_rate, parse_time, scenario_from_dict

__all__ = ["santos_fig1", "quickstart", "expand_template", "template_names", "TemplateParamError"]


class TemplateParamError(ValueError):
    """A bad template parameter: ``key`` (None: unknown template) and ``reason``."""

    def __init__(self, key: str | None, reason: str):
        super().__init__(reason)
        self.key, self.reason = key, reason


# TOML parameter -> default.  Seed 003 section 3: L = 5, R = 1, 100 ms, flows start every
# 100 us (local first), victim active [40 ms, 60 ms]; Table 1: 4-packet buffers, 1 GB/s.
SANTOS_FIG1_DEFAULTS = {
    "L": 5, "R": 1, "buffer_packets": 4, "window": None, "rate_fraction": None,
    "duration": "100ms", "victim": True, "victim_start": "40ms", "victim_stop": "60ms",
    "spacing": "100us", "link_rate": "4x_sdr", "pattern": "greedy", "mean_on": None, "mean_off": None,
}
# a parameter that writes a plain key, which the file may set instead (but not both)
SANTOS_FIG1_SUPERSEDES = {"duration": ("scenario", "duration"), "link_rate": ("defaults", "link", "rate"),
                          "buffer_packets": ("defaults", "switch", "buffer")}
MESSAGE_SIZE = 2048        # Table 1: 2048-byte payloads, one packet per message


def _int(key, v, lo, hi=None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TemplateParamError(key, "expected an integer, got %r" % (v,))
    if v < lo or (hi is not None and v > hi):
        raise TemplateParamError(key, "must be between %d and %d, got %d" % (lo, hi, v) if hi is not None
                                 else "must be at least %d, got %d" % (lo, v))
    return v


def _time(key, v, positive=True) -> int:
    try:
        t = parse_time(v)
    except ValueError as e:
        raise TemplateParamError(key, str(e)) from None
    if positive and t <= 0:
        raise TemplateParamError(key, "must be positive")
    return t


def _fraction(key, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TemplateParamError(key, "expected a number in (0, 1], got %r" % (v,))
    if not 0 < v <= 1:
        raise TemplateParamError(key, "must be in (0, 1], got %r" % v)
    return float(v)


def _santos_fig1(params: dict) -> tuple[dict, dict]:
    for k in params:
        if k not in SANTOS_FIG1_DEFAULTS:
            raise TemplateParamError(k, "unknown key" + _suggest(k, ["name", *SANTOS_FIG1_DEFAULTS]))
    p = {**SANTOS_FIG1_DEFAULTS, **params}
    L = _int("L", p["L"], 0, 251)             # B: inter, root, B_V and L sources on 254 ports
    R = _int("R", p["R"], 0, 252)             # A: inter, A_V and R sources
    bufp = _int("buffer_packets", p["buffer_packets"], 1)
    window = None if p["window"] is None else _int("window", p["window"], 1)
    duration = _time("duration", p["duration"])
    spacing = _time("spacing", p["spacing"], positive=False)
    try:
        parse_rate(p["link_rate"])
    except ValueError as e:
        raise TemplateParamError("link_rate", str(e)) from None
    if not isinstance(p["victim"], bool):
        raise TemplateParamError("victim", "expected true or false, got %r" % (p["victim"],))
    norm = {"L": L, "R": R, "buffer_packets": bufp, "duration": format_time(duration),
            "victim": p["victim"], "spacing": format_time(spacing), "link_rate": p["link_rate"]}
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
    flows = []
    for k, (grp, src) in enumerate([("local", "L%d" % i) for i in range(1, L + 1)]
                                   + [("remote", "R%d" % j) for j in range(1, R + 1)]):
        f = {"name": grp + src[1:], "src": src, "dst": "BC", "group": grp, "start": format_time(k * spacing),
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
    gen = {
        "scenario": {"duration": norm["duration"]},
        "defaults": {"link": {"rate": norm["link_rate"]}, "switch": {"buffer": "%d packets" % bufp}},
        "switch": [{"name": "A"}, {"name": "B"}],
        "hca": [{"name": n, "lid": i + 1} for i, n in enumerate(hcas)],
        "link": links,
        "flow": flows,
        "output": {"plot_links": ["root", "inter"],
                   "plot_groups": [g for g in ("local", "remote", "victim") if any(f["group"] == g for f in flows)]},
    }
    return gen, norm


TEMPLATES = {"santos_fig1": (_santos_fig1, SANTOS_FIG1_SUPERSEDES)}


def template_names() -> list[str]:
    return sorted(TEMPLATES)


def expand_template(name: str, params: dict) -> tuple[dict, dict, dict]:
    """Expand template ``name`` with TOML-form ``params`` into ``(raw sections,
    normalized params, {param: key path it writes})``; raises TemplateParamError."""
    if name not in TEMPLATES:
        raise TemplateParamError(None, "unknown template %r" % name)
    fn, supersedes = TEMPLATES[name]
    gen, norm = fn(params)
    return gen, norm, dict(supersedes)


def _t(x, unit: str) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return "%d%s" % (x, unit)
    return "%r%s" % (float(x), unit)


def santos_fig1(L: int = 5, R: int = 1, buffer_packets: int = 4, window: int | None = None,
                rate: float | dict | None = None, duration_ms: float = 100,
                victim: tuple[float, float] | None = (40, 60), spacing_us: float = 100,
                link_rate: str | int = "4x_sdr", seed: int = 1, pattern: str = "greedy",
                mean_on_us: float | None = None, mean_off_us: float | None = None,
                name: str = "santos_fig1", output: dict | None = None) -> Scenario:
    """Seed 003 Figure 1.  ``rate``: static rate limit as a fraction of the link rate, for
    every flow, or a dict {flow or group name: fraction} (e.g. {"local": 0.1, "remote": 0.1}
    for Figure 3(b)); ``victim``: its active interval in ms, or None for no victim flow;
    ``pattern="onoff"`` with ``mean_on_us``/``mean_off_us`` makes local and remote flows
    ON/OFF (section 6.3.2); ``output``: keys of [output].  Raises ScenarioError."""
    tpl: dict = {"name": "santos_fig1", "L": L, "R": R, "buffer_packets": buffer_packets,
                 "duration": _t(duration_ms, "ms"), "spacing": _t(spacing_us, "us"),
                 "link_rate": link_rate, "pattern": pattern}
    if window is not None:
        tpl["window"] = window
    if rate is not None:
        tpl["rate_fraction"] = ({k: float(v) for k, v in rate.items()} if isinstance(rate, dict)
                                else float(rate))
    if victim is None:
        tpl["victim"] = False
    else:
        tpl["victim_start"], tpl["victim_stop"] = _t(victim[0], "ms"), _t(victim[1], "ms")
    if mean_on_us is not None:
        tpl["mean_on"] = _t(mean_on_us, "us")
    if mean_off_us is not None:
        tpl["mean_off"] = _t(mean_off_us, "us")
    raw = {"scenario": {"name": name, "seed": seed}, "template": tpl}
    if output:
        raw["output"] = dict(output)
    return scenario_from_dict(raw, label="santos_fig1()")


# scenarios/quickstart.toml as a dict (tests check that the two stay equal)
QUICKSTART = {
    "scenario": {"name": "quickstart", "duration": "2ms", "seed": 1},
    "defaults": {"link": {"rate": "4x_sdr"},
                 "switch": {"buffer": "4 packets", "forwarding_delay": "40ns", "mode": "cut-through"},
                 "hca": {"mtu": 2048}},
    "switch": [{"name": "S"}],
    "hca": [{"name": "H1", "lid": 1}, {"name": "H2", "lid": 2}, {"name": "H3", "lid": 3}],
    "link": [{"a": "H1", "b": "S"}, {"a": "H2", "b": "S"}, {"a": "S", "b": "H3", "name": "bottleneck"}],
    "flow": [{"name": "f1", "src": "H1", "dst": "H3", "transport": "rc", "op": "send", "pattern": "greedy",
              "message_size": "2KiB"},
             {"name": "f2", "src": "H2", "dst": "H3", "start": "100us"}],
    "output": {"bin": "100us", "window": "500us", "plot_links": ["bottleneck"]},
}


def quickstart(duration_ms: float = 2, seed: int = 1) -> Scenario:
    """One switch, three HCAs, two greedy flows into one destination (H1, H2 -> H3)."""
    import copy
    raw = copy.deepcopy(QUICKSTART)
    raw["scenario"].update(duration=_t(duration_ms, "ms"), seed=seed)
    return scenario_from_dict(raw, label="quickstart()")
