"""Reading a scenario: the TOML file, its ``--set`` overrides, its template, then each
section in turn (:mod:`.nodes`, :mod:`.links`, :mod:`.flows`, :mod:`.output`,
:mod:`.cc`, :mod:`.faults`) into a :class:`~ibemu.scenario.model.Scenario`.

Every mistake is a :class:`~ibemu.validate.ScenarioError`, whose ``str()`` is one whole
line ``<file>: <key.path>: <reason>``.
"""
from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..fabric.params import HCAParams
from ..units import format_time, parse_time
from ..validate import Checker, ScenarioError, integer, merged, string, table, tables
from .cc import parse_cc_table
from .faults import parse_faults
from .flows import parse_flows
from .links import LINK_KEYS, label_paths, link_params, parse_links
from .model import Scenario
from .nodes import (
    HCA_KEYS,
    SWITCH_KEYS,
    NodeNames,
    hca_params,
    parse_hcas,
    parse_switches,
    switch_params,
    switch_port_tables,
)
from .output import parse_output
from .overrides import apply_overrides
from .templates import apply_template

__all__ = ["TOP_KEYS", "load_scenario", "scenario_from_dict"]

TOP_KEYS = ("scenario", "defaults", "switch", "hca", "link", "flow", "output", "template", "cc", "faults")


def load_scenario(path: str | Path, overrides: Iterable[str] = ()) -> Scenario:
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


def scenario_from_dict(raw: dict[str, Any], *, label: str = "<scenario>", source: str | None = None,
                       name: str | None = None, overrides: Iterable[str] = ()) -> Scenario:
    """Validate a raw TOML-shaped dict (not modified); ``name`` is the default name."""
    ctx = Checker(label)
    raw = copy.deepcopy(raw)
    had_template = isinstance(raw, dict) and "template" in raw
    apply_overrides(raw, overrides, checker=ctx)
    if not had_template and isinstance(raw.get("template"), dict) and "name" not in raw["template"]:
        key = next(iter(raw["template"]), "name")
        raise ctx.err("template.%s" % key, "this scenario has no [template] to set parameters of")
    table(ctx, "", raw, TOP_KEYS)
    if "template" in raw:
        raw = apply_template(ctx, raw)
    return _build(ctx, raw, name, source)


def _build(ctx: Checker, raw: dict[str, Any], default_name: str | None, source: str | None) -> Scenario:
    """Validate the sections of an expanded scenario, in the order its errors are reported."""
    # [scenario]
    sc = table(ctx, "scenario", raw.get("scenario", {}), ("name", "duration", "seed"), ("duration",))
    name = string(ctx, "scenario.name", sc.get("name", default_name or "scenario"))
    if not name.strip():
        raise ctx.err("scenario.name", "must not be empty")
    duration = ctx.conv("scenario.duration", parse_time, sc["duration"])
    if duration <= 0:
        raise ctx.err("scenario.duration", "must be positive")
    seed = integer(ctx, "scenario.seed", sc.get("seed", 1), 0, 2**63 - 1)

    # [defaults.*]: checked on their own first so mistakes are reported where they are
    d = table(ctx, "defaults", raw.get("defaults", {}), ("link", "switch", "hca"))
    dl = table(ctx, "defaults.link", d.get("link", {}), LINK_KEYS)
    ds = table(ctx, "defaults.switch", d.get("switch", {}), SWITCH_KEYS)
    dh = table(ctx, "defaults.hca", d.get("hca", {}), HCA_KEYS)
    link_params(ctx, merged({}, "", dl, "defaults.link", LINK_KEYS))
    hca_params(ctx, merged({}, "", dh, "defaults.hca", HCA_KEYS))

    # [[hca]], then [[switch]] (whose buffers must hold the largest HCA MTU)
    names = NodeNames(ctx)
    hcas = parse_hcas(ctx, raw.get("hca", []), dh, names)
    max_mtu = max((h.params.mtu for h in hcas), default=HCAParams().mtu)
    switch_params(ctx, merged({}, "", ds, "defaults.switch", SWITCH_KEYS), max_mtu)
    sraw = tables(ctx, "switch", raw.get("switch", []))
    switches = parse_switches(ctx, sraw, ds, names, max_mtu)

    links, used = parse_links(ctx, raw.get("link", []), names.kind, names.where,
                              {s.name: s.ports for s in switches}, dl)
    labels = label_paths(ctx, links)
    switch_port_tables(ctx, sraw, switches, hcas, used, max_mtu)

    flows = parse_flows(ctx, raw.get("flow", []), names.kind, links)
    out = parse_output(ctx, raw.get("output", {}), labels, flows)
    cc = parse_cc_table(ctx, raw, names.kind)
    faults = parse_faults(ctx, raw.get("faults"), links)

    resolved = copy.deepcopy(raw)
    resolved["scenario"] = {"name": name, "duration": format_time(duration), "seed": seed}
    resolved["output"] = {"bin": format_time(out.bin), "window": format_time(out.window), "plots": out.plots,
                          "plot_links": list(out.plot_links), "plot_groups": list(out.plot_groups)}
    return Scenario(name=name, duration=duration, switches=switches, hcas=hcas, links=links, flows=flows,
                    seed=seed, output=out, source=source, resolved=resolved, cc=cc, faults=faults)
