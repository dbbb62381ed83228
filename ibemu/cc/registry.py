"""The registry of congestion-control schemes (issue 12; DESIGN §7 "Schemes are plug-ins").

A scheme registers one :class:`Scheme`: its name (the value of ``[cc] scheme`` and the
name of its settings table ``[cc.<name>]``), the schema that validates that table into
its settings object, the install that attaches its parts to a built fabric -- markers at
switches, notifiers at destinations, responses at sources (the Protocols of
:mod:`ibemu.cc.protocols`) -- and, optionally, the node class of a manager that runs on
one of the scenario's HCAs.  An *add-on* (``extends``) is not selected by ``scheme``: its
table is allowed with the scheme it extends and installed after it (DCMS retunes the
IBA CCA's Marking_Rate, seed 002 §3).

:mod:`ibemu.cc` registers the shipped schemes, in this order: ``none``, ``hp``, ``cca``,
``dcms``; the order is the order of the ``[cc]`` keys in error messages and of install.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..validate import Checker, string, table

if TYPE_CHECKING:
    from ..fabric.hca import HCA
    from ..fabric.network import Fabric

__all__ = ["CCSpec", "InstallContext", "Scheme", "active", "parse_cc", "register", "scheme", "schemes",
           "unregister"]

T = TypeVar("T")


@dataclass
class CCSpec:
    """The scenario's ``[cc]`` table: the selected scheme and every scheme's settings
    that the table holds (by scheme name)."""
    scheme: str = "none"
    settings: dict[str, object] = field(default_factory=dict)

    def get(self, name: str, kind: type[T]) -> T | None:
        """The settings of scheme *name*, when the table has them and they are a *kind*."""
        value = self.settings.get(name)
        return value if isinstance(value, kind) else None


@dataclass(frozen=True)
class InstallContext:
    """What an install may read beyond its own settings."""
    cc: CCSpec                  # the whole [cc] table (an add-on reads its base's settings)
    seed: int                   # the scenario seed (random marking decisions)
    bin_ps: int                 # the results' time-series bin (traces sampled per bin)


ParseSettings = Callable[[Checker, Any, str, dict[str, str]], object]
"""``parse(checker, raw table, key path, nodes)`` -> settings; *nodes* maps node names
to "switch" or "hca"; errors through ``checker.err(path, reason)``."""
Install = Callable[["Fabric", Any, InstallContext], None]
"""``install(fabric, settings, context)``: attach the scheme's parts to *fabric*."""
NodeClass = Callable[[Any, str], "type[HCA] | None"]
"""``node_class(settings, hca name)``: the class of that HCA when the scheme runs a
manager on it, else None."""


@dataclass(frozen=True)
class Scheme:
    name: str
    summary: str
    install: Install
    parse: ParseSettings | None = None      # None: the scheme has no settings table
    extends: str | None = None              # an add-on to this scheme
    extends_reason: str = ""                # the error when its table comes without it
    node_class: NodeClass | None = None


_schemes: dict[str, Scheme] = {}


def register(s: Scheme) -> Scheme:
    """Add scheme *s* (its name must be new)."""
    if s.name in _schemes:
        raise ValueError("congestion-control scheme %r is registered twice" % s.name)
    if s.extends is not None and s.extends not in _schemes:
        raise ValueError("scheme %r extends %r, which is not registered" % (s.name, s.extends))
    _schemes[s.name] = s
    return s


def unregister(name: str) -> None:
    """Remove scheme *name* (a plug-in that goes away, or a test's own scheme)."""
    if any(s.extends == name for s in _schemes.values()):
        raise ValueError("scheme %r has add-ons registered; unregister them first" % name)
    del _schemes[name]


def schemes() -> list[Scheme]:
    """Every registered scheme, in registration order."""
    return list(_schemes.values())


def scheme(name: str) -> Scheme:
    return _schemes[name]


def parse_cc(ctx: Checker, raw: Any, path: str = "cc", nodes: dict[str, str] | None = None) -> CCSpec:
    """Validate the ``[cc]`` table: ``scheme`` names a selectable scheme; a scheme's
    table is validated whenever it is present (and the selected scheme's table always,
    empty for its defaults); an add-on's table needs the scheme it extends."""
    nodes = nodes or {}
    all_ = schemes()
    selectable = tuple(s.name for s in all_ if s.extends is None)
    tables = tuple(s.name for s in all_ if s.parse is not None)
    raw = table(ctx, path, raw if raw is not None else {}, ("scheme", *tables))
    chosen = string(ctx, path + ".scheme", raw.get("scheme", "none"), selectable)
    spec = CCSpec(chosen)
    for s in all_:
        if s.parse is None:
            continue
        if s.extends is not None:
            if s.name not in raw:
                continue
            if chosen != s.extends:
                raise ctx.err("%s.%s" % (path, s.name), s.extends_reason)
        elif s.name not in raw and chosen != s.name:
            continue
        spec.settings[s.name] = s.parse(ctx, raw.get(s.name, {}), "%s.%s" % (path, s.name), nodes)
    return spec


def active(spec: CCSpec | None) -> list[tuple[Scheme, object]]:
    """The schemes a scenario runs, in install order: the selected one, then its add-ons
    whose tables are present; each with its settings (None for a scheme without)."""
    if spec is None:
        return []
    out: list[tuple[Scheme, object]] = []
    for s in schemes():
        if s.name == spec.scheme or (s.extends == spec.scheme and s.name in spec.settings):
            out.append((s, spec.settings.get(s.name)))
    return out
