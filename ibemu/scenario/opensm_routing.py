"""The routing options of a scenario's opensm.conf (issue 18 item 9): ``routing_engine``,
``root_guid_file``, ``lmc`` and ``lfts_file`` select the subnet manager's routing
(:mod:`ibemu.routing`) as OpenSM 3.3 would (man opensm(8); REFERENCE-FABRICS §3).

The opensm.conf is the one of ``[cc.cca]`` (``opensm_file = "..."`` or inline
``opensm = '''...'''``; :mod:`ibemu.cc.cca.opensm` checks the names and values).
:func:`routing_defaults` turns its options into values for the keys of the scenario's
``[routing]`` table that the table does not give -- a key the table gives wins, and the
option it replaces is named in the run's note:

- ``routing_engine a,b,c`` -> ``engine = a``, then b, c tried in order when an engine
  fails (:attr:`RoutingSpec.fallback <ibemu.scenario.model.RoutingSpec>`), then minhop
  unless the list holds ``no_fallback`` (OpenSM's rule).  ``(null)``: minhop, OpenSM's
  default.  An engine OpenSM has but ibemu does not model (dnup, lash, dor, torus-2QoS,
  nue, dfsssp, sssp) anywhere in the list is an error: ibemu would otherwise route
  differently from the subnet manager it stands for.
- ``lmc N`` -> ``lmc = N`` (OpenSM's default 0).
- ``root_guid_file F`` (relative to the opensm.conf's folder) -> ``roots``: one GUID per
  line (``0x`` hex or decimal, as OpenSM's strtoull reads it; blank lines and ``#``
  comments skipped), each a switch's node GUID in this scenario (``guid`` of
  ``[[switch]]``, an ibnetdiscover import's ``switchguid``, else ibemu's default GUID by
  list position, :func:`~ibemu.scenario.model.guids_of`).  Used when the engine list has
  updn or ftree, else listed as unused.
- ``lfts_file F`` (relative to the opensm.conf's folder) -> ``lft_file``, for the file engine.
"""
from __future__ import annotations

import os
from typing import Any

from ..cc import CCSpec
from ..cc.cca.opensm_options import NO_FALLBACK
from ..cc.cca.settings import CCASpec
from ..validate import Checker, ScenarioError
from .model import HCASpec, SwitchSpec, guids_of

__all__ = ["MODELLED", "routing_defaults", "read_root_guids"]

MODELLED = ("minhop", "updn", "ftree", "file")
"""The OpenSM engines ibemu models (:data:`ibemu.routing.ENGINES`)."""


def read_root_guids(ctx: Checker, where: str, path: str, switches: list[SwitchSpec],
                    hcas: list[HCASpec]) -> list[str]:
    """The switch names of OpenSM's root_guid_file *path* (one GUID a line), in file
    order; a line that is no GUID, or a GUID that is no switch of the scenario, is one
    :class:`ScenarioError` naming *where*, the file and the line."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(2**20)
    except OSError as e:
        raise ctx.err(where, "root_guid_file: cannot read %s: %s" % (path, e.strerror or e)) from None
    except UnicodeDecodeError:
        raise ctx.err(where, "root_guid_file: %s is not UTF-8 text (one GUID a line)" % path) from None
    guids = guids_of(switches, hcas)
    sw_names = {s.name for s in switches}
    by_guid = {g: n for n, g in guids.items()}
    by_guid.update({guids[h.name] + 1: h.name for h in hcas if guids[h.name] + 1 not in by_guid})  # port 1 GUIDs
    roots: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        tok = line.split("#", 1)[0].strip()
        if not tok:
            continue

        def bad(reason: str, n: int = n) -> ScenarioError:
            return ctx.err(where, "root_guid_file %s:%d: %s" % (path, n, reason))
        try:
            guid = int(tok, 0)
        except ValueError:
            raise bad("%r is not a GUID (one GUID a line, e.g. 0x0002c90000000001)" % tok) from None
        name = by_guid.get(guid)
        if name is None:
            known = ", ".join("%s 0x%016x" % (s.name, guids[s.name]) for s in switches[:4])
            more = ", ..." if len(switches) > 4 else ""
            raise bad("GUID 0x%016x is no node of this scenario (switch GUIDs: %s%s)" % (guid, known, more))
        if name not in sw_names:
            raise bad("GUID 0x%016x is HCA %s's; roots are switches" % (guid, name))
        if name in roots:
            raise bad("switch %s (GUID 0x%016x) is listed twice" % (name, guid))
        roots.append(name)
    if not roots:
        raise ctx.err(where, "root_guid_file: %s holds no GUID" % path)
    return roots


def routing_defaults(ctx: Checker, cc: CCSpec | None, given: dict[str, Any], switches: list[SwitchSpec],
                     hcas: list[HCASpec]) -> tuple[dict[str, Any], list[str], list[str]]:
    """(values for the ``[routing]`` keys not in *given*, the fallback engines, notes on
    what the opensm.conf set or what *given* overrode) from the opensm.conf of
    ``[cc.cca]``; nothing when there is none."""
    cca = cc.get("cca", CCASpec) if cc is not None else None
    if cca is None or not cca.opensm_routing:
        return {}, [], []
    osm, where = cca.opensm_routing, cca.opensm_where
    out: dict[str, Any] = {}
    notes: list[str] = []

    def rel(name: str) -> str:
        return name if os.path.isabs(name) else os.path.join(cca.opensm_dir, name)

    engines: list[str] = []
    fallback: list[str] = []
    if "routing_engine" in osm:
        listed = osm["routing_engine"].split(",")
        if "engine" in given:
            notes.append("[routing] engine %r overrides routing_engine %s" % (given["engine"], osm["routing_engine"]))
        else:
            engines = [e for e in listed if e != NO_FALLBACK]
            for e in engines:
                if e not in MODELLED:
                    raise ctx.err(where, "routing_engine %s: %r is an OpenSM engine ibemu does not model (it "
                                  "models %s); list only those, or set [routing] engine, which wins"
                                  % (osm["routing_engine"], e, ", ".join(MODELLED)))
            if not engines:
                raise ctx.err(where, "routing_engine %s: no engine listed" % osm["routing_engine"])
            if NO_FALLBACK not in listed and "minhop" not in engines:
                engines.append("minhop")        # OpenSM's last resort
            out["engine"], fallback = engines[0], engines[1:]
            notes.append("engine %s" % " then ".join(engines) if fallback else "engine %s" % engines[0])
    chain = engines or [given.get("engine", "minhop")]
    if "lmc" in osm:
        if "lmc" in given:
            if given["lmc"] != int(osm["lmc"], 0):
                notes.append("[routing] lmc %s overrides lmc %s" % (given["lmc"], osm["lmc"]))
        else:
            out["lmc"] = int(osm["lmc"], 0)
            notes.append("lmc %d" % out["lmc"])
    if "root_guid_file" in osm:
        f = rel(osm["root_guid_file"])
        if "roots" in given:
            notes.append("[routing] roots override root_guid_file %s" % f)
        elif not {"updn", "ftree"} & set(chain):
            notes.append("root_guid_file %s unused (engine %s takes no roots)" % (f, "/".join(chain)))
        else:
            out["roots"] = read_root_guids(ctx, where, f, switches, hcas)
            notes.append("roots %s (root_guid_file %s)" % (", ".join(out["roots"]), f))
    if "lfts_file" in osm:
        f = rel(osm["lfts_file"])
        if "lft_file" in given:
            notes.append("[routing] lft_file overrides lfts_file %s" % f)
        elif "file" not in chain:
            notes.append("lfts_file %s unused (engine %s)" % (f, "/".join(chain)))
        else:
            out["lft_file"] = f
            notes.append("lft_file %s (lfts_file)" % f)
    elif "file" in engines and "lft_file" not in given:
        raise ctx.err(where, "routing_engine %s: the file engine needs lfts_file (an opensm-lfts.dump)"
                      % osm["routing_engine"])
    return out, fallback, notes
