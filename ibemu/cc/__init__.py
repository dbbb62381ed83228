"""Congestion control: how a scheme plugs into the sans-I/O fabric.

A scenario's ``[cc]`` table picks a scheme (``scheme = "none" | "hp" | "cca"``) and
holds its settings in a sub-table of the same name (``[cc.hp]``, ``[cc.cca]``), parsed by
:func:`ibemu.cc.config.parse_cc` into :class:`CCSpec`.  :func:`install` is called by
:func:`ibemu.build.build_fabric` once the nodes and queue pairs exist, so both clocks
(the virtual-time engine and the trio runtime) run the same scheme.

The hook points a scheme uses (all sans-I/O; ``now`` in ps):

- switch marking: ``Switch.marker`` with ``on_arrival(sw, entry, now)``,
  ``on_transmit(sw, entry, now)`` (set FECN here with
  :func:`ibemu.wire.codec.set_fecn`) and ``on_departure(sw, entry, now)``;
- notification: built into the transport (:mod:`ibemu.fabric.qp`): BECN in ACKs, CNPs for
  marked UD packets, READ responses and ACKs;
- source response: ``SenderBase.cc`` with ``on_sent(qp, now, frame)``,
  ``on_ack(qp, now, psn, n, becn)``, ``on_cnp(qp, now)`` and ``gap(qp, nbytes, t)``;
  a response that lets a QP send sooner calls ``qp.hca.kick(now)``; timers via
  ``qp.hca.at(t, fn, *args)`` (``fn(now, *args)``);
- results: ``recorder.trace(kind, key, t, value)`` and ``recorder.event(t, source, text)``.
"""
from __future__ import annotations

from .config import CCSpec, parse_cc

__all__ = ["CCSpec", "parse_cc", "install", "hca_class"]


def hca_class(scn, name: str):
    """The class of HCA *name*: a manager node (DCMS) or a plain HCA."""
    spec = getattr(scn, "cc", None)
    if spec is not None and spec.dcms is not None and spec.dcms.manager == name:
        from .dcms.manager import DCMSManager
        return DCMSManager
    from ..fabric.hca import HCA
    return HCA


def install(fabric, scn) -> None:
    """Attach the scenario's congestion-control scheme to *fabric* (no-op for none)."""
    spec = getattr(scn, "cc", None)
    if spec is None or spec.scheme == "none":
        return
    if spec.scheme == "hp":
        from .hp import install as install_hp
        install_hp(fabric, scn, spec.hp)
    elif spec.scheme == "cca":
        from .cca import install as install_cca
        install_cca(fabric, scn, spec.cca)
        if spec.dcms is not None:
            from .dcms import install as install_dcms
            install_dcms(fabric, scn, spec.dcms)
    else:                                   # parse_cc only lets known schemes through
        raise ValueError("unknown congestion-control scheme %r" % spec.scheme)
