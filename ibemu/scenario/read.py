"""Reading a scenario: the TOML file, its ``--set`` overrides, its template, then each
section in turn (:mod:`.nodes`, :mod:`.links`, :mod:`.flows`, :mod:`.output`,
:mod:`.cc`, :mod:`.faults`, :mod:`.routing` with the opensm.conf's routing options) into
a :class:`~ibemu.scenario.model.Scenario`.

Every mistake is a :class:`~ibemu.validate.ScenarioError`, whose ``str()`` is one whole
line ``<file>: <key.path>: <reason>``.
"""
from __future__ import annotations

import copy
import os
import re
import stat
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..fabric.params import HCAParams
from ..units import format_time, parse_time
from ..validate import Checker, ScenarioError, finite_values, integer, merged, table, tables
from ..validate import name as check_name
from .cc import parse_cc_table
from .faults import parse_faults
from .flows import parse_flows
from .jobs import parse_jobs
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
from .output import DEFAULT_MEMORY_LIMIT, check_memory, parse_output
from .overrides import apply_overrides
from .routing import parse_routing
from .templates import apply_template
from .traffic import parse_traffic

__all__ = ["TOP_KEYS", "MAX_FILE", "load_scenario", "read_scenario_file", "scenario_from_dict"]

TOP_KEYS = ("scenario", "defaults", "switch", "hca", "link", "flow", "output", "template", "cc", "faults",
            "traffic", "routing", "job")
MAX_FILE = 16 * 2**20       # a scenario file is a few KiB; a larger one is a mistake, not read into memory

_KINDS = ((stat.S_ISDIR, "is a directory, not a scenario file"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
          (stat.S_ISCHR, "is a character device"), (stat.S_ISBLK, "is a block device"),
          (stat.S_ISSOCK, "is a socket"))


def _not_regular(mode: int) -> str:
    """Why a file of *mode* is no scenario file (issue 14 Deliver 8)."""
    for test, what in _KINDS:
        if test(mode):
            return what + ", not a regular file"
    return "is not a regular file"


def read_scenario_file(path: str | Path) -> bytes:
    """The bytes of a scenario file: a regular file only, checked with os.stat before it
    is opened, and opened non-blocking and checked again (fstat) so that a FIFO or device
    swapped in meanwhile cannot block the read (issue 14 Deliver 8); at most MAX_FILE bytes."""
    label = str(path)
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ScenarioError(label, None, _not_regular(st.st_mode))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ScenarioError(label, None, _not_regular(st.st_mode))
            if st.st_size > MAX_FILE:
                raise ScenarioError(label, None, "%d bytes is too large for a scenario file (at most %d MiB)"
                                    % (st.st_size, MAX_FILE >> 20))
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read(MAX_FILE + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise ScenarioError(label, None, "no such file") from None
    except NotADirectoryError:
        raise ScenarioError(label, None, "no such file (a parent is not a directory)") from None
    except PermissionError:
        raise ScenarioError(label, None, "permission denied") from None
    except OSError as e:
        raise ScenarioError(label, None, "cannot read: %s" % (e.strerror or e)) from None


def load_scenario(path: str | Path, overrides: Iterable[str] = (),
                  memory_limit: int | None = DEFAULT_MEMORY_LIMIT) -> Scenario:
    """Read, override ("key.path=value" strings), expand and validate a TOML scenario;
    *memory_limit*: the most bytes its time bins may take (None: no limit)."""
    label = str(path)
    data = read_scenario_file(path)
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
                              overrides=overrides, memory_limit=memory_limit)


def scenario_from_dict(raw: dict[str, Any], *, label: str = "<scenario>", source: str | None = None,
                       name: str | None = None, overrides: Iterable[str] = (),
                       memory_limit: int | None = DEFAULT_MEMORY_LIMIT) -> Scenario:
    """Validate a raw TOML-shaped dict (not modified); ``name`` is the default name;
    *memory_limit*: the most bytes the run's time bins may take (None: no limit)."""
    ctx = Checker(label)
    raw = copy.deepcopy(raw)
    had_template = isinstance(raw, dict) and "template" in raw
    apply_overrides(raw, overrides, checker=ctx)
    finite_values(ctx, raw)             # no inf, nan or beyond-64-bit number reaches arithmetic
    if not had_template and isinstance(raw.get("template"), dict) and "name" not in raw["template"]:
        key = next(iter(raw["template"]), "name")
        raise ctx.err("template.%s" % key, "this scenario has no [template] to set parameters of")
    table(ctx, "", raw, TOP_KEYS)
    if "template" in raw:
        raw = apply_template(ctx, raw)
    return _build(ctx, raw, name, source, memory_limit)


def _build(ctx: Checker, raw: dict[str, Any], default_name: str | None, source: str | None,
           memory_limit: int | None) -> Scenario:
    """Validate the sections of an expanded scenario, in the order its errors are reported."""
    # [scenario]
    sc = table(ctx, "scenario", raw.get("scenario", {}), ("name", "duration", "seed"), ("duration",))
    if "name" in sc:
        scn_name = check_name(ctx, "scenario.name", sc["name"])
    else:                               # the file's name; it must make as safe a folder name
        try:
            scn_name = check_name(ctx, "scenario.name", default_name or "scenario")
        except ScenarioError as e:
            raise ctx.err("scenario.name", e.reason + " (taken from the file name: set scenario.name)") from None
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
    flows += parse_traffic(ctx, raw.get("traffic", []), [h.name for h in hcas], names.kind, links, seed, flows)
    jobs, job_flows = parse_jobs(ctx, raw.get("job", []), [h.name for h in hcas], names.kind, links, seed, flows,
                                 source)
    flows += job_flows
    out = parse_output(ctx, raw.get("output", {}), labels, flows)
    check_memory(ctx, duration, out, len(labels), len(flows), memory_limit)
    cc = parse_cc_table(ctx, raw, names.kind)
    faults = parse_faults(ctx, raw.get("faults"), links)
    explicit = {i for i, h in enumerate(raw.get("hca", [])) if isinstance(h, dict) and "lid" in h}
    routing = parse_routing(ctx, raw.get("routing"), switches, hcas, flows, source, explicit, cc=cc)

    resolved = copy.deepcopy(raw)
    resolved["scenario"] = {"name": scn_name, "duration": format_time(duration), "seed": seed}
    resolved["output"] = {"bin": format_time(out.bin), "window": format_time(out.window), "plots": out.plots,
                          "plot_links": list(out.plot_links), "plot_groups": list(out.plot_groups)}
    if out.snaplen is not None:
        resolved["output"]["snaplen"] = out.snaplen
    return Scenario(name=scn_name, duration=duration, switches=switches, hcas=hcas, links=links, flows=flows,
                    seed=seed, output=out, source=source, resolved=resolved, cc=cc, faults=faults,
                    routing=routing, jobs=jobs)
