"""Scenario builders for scripted experiments: Python functions that build the same
:class:`~ibemu.scenario.model.Scenario` as the equivalent TOML file.

``santos_fig1()`` expands the ``santos_fig1`` template (seed 003 Figure 1,
:mod:`ibemu.scenario.templates`); ``quickstart()`` is ``scenarios/quickstart.toml``;
``kary_ntree()``, ``xgft()``, ``fat_tree2()`` and ``leaf_spine()`` expand the fat-tree
templates of :mod:`ibemu.scenario.topologies` (issue 15; names, LIDs and ports in
docs/fabrics.md).
"""
from __future__ import annotations

import copy
from typing import Any

from .model import Scenario
from .read import scenario_from_dict

__all__ = ["santos_fig1", "quickstart", "QUICKSTART", "kary_ntree", "xgft", "fat_tree2", "leaf_spine"]


def _t(x: float | str, unit: str) -> str:
    """A time parameter as TOML spells it: 100, "ms" -> "100ms" (strings pass through)."""
    if isinstance(x, str):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return "%d%s" % (x, unit)
    return "%r%s" % (float(x), unit)


def santos_fig1(L: int = 5, R: int = 1, buffer_packets: int = 4, window: int | None = None,
                rate: float | dict[str, float] | None = None, duration_ms: float = 100,
                victim: tuple[float, float] | None = (40, 60), spacing_us: float = 100,
                link_rate: str | int = "4x_sdr", seed: int = 1, pattern: str = "greedy",
                mean_on_us: float | None = None, mean_off_us: float | None = None,
                name: str = "santos_fig1", output: dict[str, Any] | None = None,
                flow_control: str = "ideal") -> Scenario:
    """Seed 003 Figure 1.  ``rate``: static rate limit as a fraction of the link rate, for
    every flow, or a dict {flow or group name: fraction} (e.g. {"local": 0.1, "remote": 0.1}
    for Figure 3(b)); ``victim``: its active interval in ms, or None for no victim flow;
    ``pattern="onoff"`` with ``mean_on_us``/``mean_off_us`` makes local and remote flows
    ON/OFF (section 6.3.2); ``output``: keys of [output]; ``flow_control``: ``"ideal"``
    (seed 003's links, the default) or ``"wire"`` (flow-control packets take link time).  Raises
    ScenarioError."""
    tpl: dict[str, Any] = {"name": "santos_fig1", "L": L, "R": R, "buffer_packets": buffer_packets,
                           "duration": _t(duration_ms, "ms"), "spacing": _t(spacing_us, "us"),
                           "link_rate": link_rate, "pattern": pattern, "flow_control": flow_control}
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
    raw: dict[str, Any] = {"scenario": {"name": name, "seed": seed}, "template": tpl}
    if output:
        raw["output"] = dict(output)
    return scenario_from_dict(raw, label="santos_fig1()")


# scenarios/quickstart.toml as a dict (tests check that the two stay equal)
QUICKSTART: dict[str, Any] = {
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
    raw = copy.deepcopy(QUICKSTART)
    raw["scenario"].update(duration=_t(duration_ms, "ms"), seed=seed)
    return scenario_from_dict(raw, label="quickstart()")


def _fabric(template: str, params: dict[str, Any], duration: float | str, name: str | None, seed: int,
            flows: list[dict[str, Any]] | None, sections: dict[str, Any] | None) -> Scenario:
    """A scenario from topology *template* with *params* (None values left out): *duration*
    in ms (or a time string), *flows* as [[flow]] tables, *sections*: other raw sections
    ({"traffic": [...], "routing": {...}, "defaults": {...}, "output": {...}, "cc": {...}})."""
    raw: dict[str, Any] = copy.deepcopy(sections) if sections else {}
    raw["scenario"] = {**raw.get("scenario", {}), "name": name or template, "duration": _t(duration, "ms"),
                       "seed": seed}
    raw["template"] = {"name": template, **{k: v for k, v in params.items() if v is not None}}
    if flows:
        raw["flow"] = list(raw.get("flow", [])) + [dict(f) for f in flows]
    return scenario_from_dict(raw, label="%s()" % template)


def _levels(x: Any) -> Any:
    return list(x) if isinstance(x, (list, tuple)) else x


def kary_ntree(k: int, n: int, duration: float | str = 1, *, lmc: int = 0, rates: Any = None,
               propagations: Any = None, name: str | None = None, seed: int = 1,
               flows: list[dict[str, Any]] | None = None, sections: dict[str, Any] | None = None) -> Scenario:
    """The k-ary n-tree (k^n hosts h0.., n*k^(n-1) switches sw<level>_<index>), template
    ``kary_ntree``.  *rates*/*propagations*: one value or one per level 1..n; *duration* in
    ms; *flows*: [[flow]] tables; *sections*: other raw sections.  Raises ScenarioError."""
    return _fabric("kary_ntree", {"k": k, "n": n, "lmc": lmc, "rates": _levels(rates),
                                  "propagations": _levels(propagations)}, duration, name, seed, flows, sections)


def xgft(m: list[int], w: list[int], duration: float | str = 1, *, lmc: int = 0, rates: Any = None,
         propagations: Any = None, name: str | None = None, seed: int = 1,
         flows: list[dict[str, Any]] | None = None, sections: dict[str, Any] | None = None) -> Scenario:
    """XGFT(h; m1..mh; w1..wh) with h = len(m), w1 = 1, template ``xgft`` (see
    :func:`kary_ntree` for the other arguments)."""
    return _fabric("xgft", {"m": list(m), "w": list(w), "lmc": lmc, "rates": _levels(rates),
                            "propagations": _levels(propagations)}, duration, name, seed, flows, sections)


def fat_tree2(radix: int, leaves: int | None = None, duration: float | str = 1, *, lmc: int = 0,
              rates: Any = None, propagations: Any = None, name: str | None = None, seed: int = 1,
              flows: list[dict[str, Any]] | None = None, sections: dict[str, Any] | None = None) -> Scenario:
    """The two-level fat tree of radix-*radix* switches (leaves L0.. of radix/2 hosts,
    radix/2 spines S0..; *leaves* default radix: radix^2/2 hosts), template ``fat_tree2``."""
    return _fabric("fat_tree2", {"radix": radix, "leaves": leaves, "lmc": lmc, "rates": _levels(rates),
                                 "propagations": _levels(propagations)}, duration, name, seed, flows, sections)


def leaf_spine(leaves: int, hosts_per_leaf: int, spines: int, duration: float | str = 1, *,
               uplinks: int | None = None, oversubscription: float | None = None, lmc: int = 0,
               rates: Any = None, propagations: Any = None, name: str | None = None, seed: int = 1,
               flows: list[dict[str, Any]] | None = None, sections: dict[str, Any] | None = None) -> Scenario:
    """Leaf-spine: *uplinks* per leaf (a multiple of *spines*; default *spines*) or an
    *oversubscription* hosts_per_leaf : uplinks, template ``leaf_spine``."""
    return _fabric("leaf_spine", {"leaves": leaves, "hosts_per_leaf": hosts_per_leaf, "spines": spines,
                                  "uplinks": uplinks, "oversubscription": oversubscription, "lmc": lmc,
                                  "rates": _levels(rates), "propagations": _levels(propagations)},
                   duration, name, seed, flows, sections)
