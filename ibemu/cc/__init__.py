"""Congestion control: the schemes, and how they plug into the sans-I/O fabric.

A scenario's ``[cc]`` table picks a scheme (``scheme = "none" | "hp" | "cca"``) and holds
each scheme's settings in a table of its name (``[cc.hp]``, ``[cc.cca]``; the DCMS
manager's ``[cc.dcms]`` is an add-on to ``"cca"``).  Every scheme is a
:class:`~ibemu.cc.registry.Scheme` registered below: its schema validates its table,
its install attaches its parts to a built fabric through the hooks of
:mod:`ibemu.fabric.hooks` (a :class:`~ibemu.fabric.hooks.Marker` at switches, a
:class:`~ibemu.fabric.hooks.Notifier` at destinations, a
:class:`~ibemu.fabric.hooks.SourceResponse` at sources), and it may run a manager node
on one of the scenario's HCAs.  :func:`install` is called by
:func:`ibemu.build.build_fabric` once the nodes and queue pairs exist, so both clocks run
the same scheme.

The shipped schemes:

- ``none`` -- no congestion control (the transport still echoes marks, but nothing marks);
- ``hp`` -- seeds 000 and 003 (:mod:`ibemu.cc.hp`);
- ``cca`` -- the IBA congestion control annex, seeds 002 and 004 (:mod:`ibemu.cc.cca`);
- ``dcms`` -- seed 002's manager retuning the CCA's Marking_Rate (:mod:`ibemu.cc.dcms`).
"""
from __future__ import annotations

from ..fabric.hca import HCA
from ..fabric.network import Fabric
from .cca import CCA
from .dcms import DCMS_SCHEME
from .hp import HP
from .none import NONE
from .registry import CCSpec, InstallContext, Scheme, active, parse_cc, register, scheme, schemes, unregister

__all__ = ["CCSpec", "InstallContext", "Scheme", "install", "node_class", "parse_cc", "register",
           "scheme", "schemes", "unregister"]

for _s in (NONE, HP, CCA, DCMS_SCHEME):
    register(_s)


def node_class(cc: CCSpec | None, name: str) -> type[HCA]:
    """The class of HCA *name*: a scheme's manager node, or a plain HCA."""
    for s, settings in active(cc):
        if s.node_class is not None:
            cls = s.node_class(settings, name)
            if cls is not None:
                return cls
    return HCA


def install(fabric: Fabric, cc: CCSpec | None, seed: int, bin_ps: int) -> None:
    """Attach the scenario's congestion-control scheme (and its add-ons) to *fabric*."""
    if cc is None:
        return
    ctx = InstallContext(cc, seed, bin_ps)
    for s, settings in active(cc):
        s.install(fabric, settings, ctx)
