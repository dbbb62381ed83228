"""The scenario a wall-clock controller hands to its workers, as JSON (issue 14 Deliver 7:
no code from data).

The controller writes the :class:`~ibemu.scenario.Scenario` it loaded (after overrides,
templates, and whatever a script changed) to ``<out>/parts/scenario.json``; every worker
(``ibemu node --scenario-json``) and ``ibemu perfquery --live`` / ``ibemu ccconfig``
read it back.  The format is plain JSON: a dataclass is ``{"$type": NAME, "fields":
{...}}``, a tuple ``{"$tuple": [...]}``, a dict whose keys are not all strings
``{"$items": [[k, v], ...]}``, bytes ``{"$bytes": HEX}``, a set ``{"$set": [...]}``
(``$frozenset``).

Reading it never runs code named by the data: *NAME* is looked up in an allow-list of
the dataclasses that the scenario model and the registered congestion-control schemes'
settings are made of (:func:`allowed_types`), built from ibemu's own modules that are
already imported; nothing is imported, evaluated or called by name from the file.  An
unknown name, a field the class does not have, or any other shape is refused with one
line (:class:`HandoverError`).  The writer checks that what it wrote reads back equal to
the scenario, so a worker runs exactly the controller's scenario.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_text
from ..errors import UserError
from ..scenario import Scenario

__all__ = ["HandoverError", "allowed_types", "encode", "decode", "write_scenario", "read_scenario",
           "SCENARIO_FILE"]

SCENARIO_FILE = "scenario.json"
FORMAT = "ibemu-scenario/1"


class HandoverError(UserError):
    """A scenario hand-over file that is not what a controller writes."""


def _ibemu_modules() -> list[Any]:
    """ibemu's modules already imported, and the modules of the registered CC schemes
    (a plug-in scheme's settings live in its own package)."""
    from ..cc.registry import schemes
    names = {n for n in sys.modules if n == "ibemu" or n.startswith("ibemu.")}
    for s in schemes():
        for fn in (s.parse, s.install):
            mod = getattr(fn, "__module__", None)
            if mod:
                names.add(mod)
    return [sys.modules[n] for n in sorted(names) if sys.modules.get(n) is not None]


def allowed_types() -> dict[str, type]:
    """``"module:QualName"`` -> class, for every dataclass defined in ibemu's imported
    modules (and the CC schemes' modules): the only classes :func:`decode` builds."""
    import ibemu.build  # noqa: F401  (imports the scenario model and the shipped CC schemes)
    out: dict[str, type] = {}
    for mod in _ibemu_modules():
        for value in list(vars(mod).values()):
            if (isinstance(value, type) and dataclasses.is_dataclass(value)
                    and value.__module__ == mod.__name__):
                out["%s:%s" % (value.__module__, value.__qualname__)] = value
    return out


def encode(obj: Any) -> Any:
    """*obj* as JSON-ready data (see the module text); TypeError for anything else
    (a function, an arbitrary object)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        cls = type(obj)
        return {"$type": "%s:%s" % (cls.__module__, cls.__qualname__),
                "fields": {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, tuple):
        return {"$tuple": [encode(v) for v in obj]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, bytes):
        return {"$bytes": obj.hex()}
    if isinstance(obj, (set, frozenset)):
        items = [encode(v) for v in obj]
        try:
            items.sort()
        except TypeError:
            pass
        return {"$frozenset" if isinstance(obj, frozenset) else "$set": items}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in obj):
            return {k: encode(v) for k, v in obj.items()}
        return {"$items": [[encode(k), encode(v)] for k, v in obj.items()]}
    raise TypeError("cannot hand %s to a worker as data" % type(obj).__name__)


def decode(data: Any, types: dict[str, type] | None = None, where: str = "scenario") -> Any:
    """The object :func:`encode` made *data* from; only classes of *types* (default
    :func:`allowed_types`) are built.  :class:`HandoverError` for anything else."""
    types = allowed_types() if types is None else types
    return _decode(data, types, where)


def _decode(data: Any, types: dict[str, type], where: str) -> Any:
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [_decode(v, types, "%s[%d]" % (where, i)) for i, v in enumerate(data)]
    if not isinstance(data, dict):
        raise HandoverError("%s: unexpected %s" % (where, type(data).__name__))
    tagged = [k for k in data if k.startswith("$")]
    if not tagged:
        return {k: _decode(v, types, "%s.%s" % (where, k)) for k, v in data.items()}
    tag = tagged[0]
    if tag == "$tuple" and set(data) == {tag} and isinstance(data[tag], list):
        return tuple(_decode(v, types, where) for v in data[tag])
    if tag in ("$set", "$frozenset") and set(data) == {tag} and isinstance(data[tag], list):
        try:
            items = [_decode(v, types, where) for v in data[tag]]
            return frozenset(items) if tag == "$frozenset" else set(items)
        except TypeError:
            raise HandoverError("%s: unhashable set member" % where) from None
    if tag == "$bytes" and set(data) == {tag} and isinstance(data[tag], str):
        try:
            return bytes.fromhex(data[tag])
        except ValueError:
            raise HandoverError("%s: bad hex" % where) from None
    if tag == "$items" and set(data) == {tag} and isinstance(data[tag], list):
        out = {}
        for item in data[tag]:
            if not (isinstance(item, list) and len(item) == 2):
                raise HandoverError("%s: expected [key, value] pairs" % where)
            key = _decode(item[0], types, where)
            try:
                out[key] = _decode(item[1], types, "%s[%r]" % (where, key))
            except TypeError:
                raise HandoverError("%s: unhashable key" % where) from None
        return out
    if tag == "$type" and set(data) == {"$type", "fields"} and isinstance(data["fields"], dict):
        name = data["$type"]
        cls = types.get(name) if isinstance(name, str) else None
        if cls is None:
            raise HandoverError("%s: %r is not a scenario type this ibemu knows" % (where, name))
        fields = {f.name: f for f in dataclasses.fields(cls)}
        extra = sorted(set(data["fields"]) - set(fields))
        if extra:
            raise HandoverError("%s: %s has no field %s" % (where, name, ", ".join(extra)))
        values = {k: _decode(v, types, "%s.%s" % (where, k)) for k, v in data["fields"].items()}
        try:
            obj = cls(**{k: v for k, v in values.items() if fields[k].init})
        except (TypeError, ValueError) as e:
            raise HandoverError("%s: %s: %s" % (where, name, e)) from None
        for k, v in values.items():
            if not fields[k].init:
                object.__setattr__(obj, k, v)
        return obj
    raise HandoverError("%s: unexpected key %r" % (where, tag))


def write_scenario(path: str | Path, scn: Scenario) -> None:
    """Write *scn* for the workers; UserError when it holds something that is not data
    or does not read back equal (so a worker never runs a different scenario)."""
    try:
        data = {"format": FORMAT, "scenario": encode(scn)}
    except TypeError as e:
        raise UserError("scenario %s: %s" % (scn.name, e)) from None
    text = json.dumps(data)
    if read_text(text, str(path)) != scn:
        raise UserError("scenario %s does not survive its hand-over to the workers as JSON" % scn.name)
    atomic_write_text(path, text)


def read_text(text: str, label: str) -> Scenario:
    try:
        data = json.loads(text)
    except ValueError as e:
        raise HandoverError("%s: not JSON (%s)" % (label, e)) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or set(data) != {"format", "scenario"}:
        raise HandoverError("%s: not a scenario hand-over file (%s)" % (label, FORMAT))
    scn = decode(data["scenario"], where=label)
    if not isinstance(scn, Scenario):
        raise HandoverError("%s: holds no scenario" % label)
    return scn


def read_scenario(path: str | Path) -> Scenario:
    """The scenario a controller wrote with :func:`write_scenario`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HandoverError("%s: cannot read: %s" % (path, getattr(e, "strerror", None) or e)) from None
    return read_text(text, str(path))
