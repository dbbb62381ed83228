"""``[cc.dcms]``: the DCMS manager of seed 002 (needs ``scheme = "cca"``).

Keys: ``manager`` (the HCA that runs it: a host on the fabric), ``tau`` (sweep interval),
``T_C``, ``T_W`` (fractions of τ a port spent congested / waiting for credits: seed 002
§4.3's 8M and 27.4M ticks of 22 ns in one-second sweeps are 0.18 and 0.60), ``T_D``
(a drop of a victim port's utilisation from one sweep to the next, as a fraction of its
link rate, that ends it being a victim; the paper gives no value: 0.03, docs/dcms.md),
``T_I`` (Low-MR duration threshold in sweeps), ``low`` and ``default`` Marking_Rates
(seed 002: 0 and 128).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...units import parse_time
from ...validate import Checker, integer, string, table

DCMS_KEYS = ("manager", "tau", "T_C", "T_W", "T_D", "T_I", "low", "default")


@dataclass
class DCMSSpec:
    manager: str
    tau: int                        # ps
    T_C: float = 0.18
    T_W: float = 0.60
    T_D: float = 0.03
    T_I: int = 12
    low: int = 0
    default: int = 128


def _fraction(ctx: Checker, path: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise ctx.err(path, "expected a fraction between 0 and 1, got %r" % (v,))
    return float(v)


def parse_dcms(ctx: Checker, raw: Any, path: str, nodes: dict[str, str]) -> DCMSSpec:
    """Validate ``[cc.dcms]``; *nodes* maps node names to "switch" or "hca"."""
    raw = table(ctx, path, raw, DCMS_KEYS, ("manager", "tau"))
    manager = string(ctx, path + ".manager", raw["manager"])
    if nodes.get(manager) != "hca":
        raise ctx.err(path + ".manager", "%r is not an HCA of this scenario (the manager is a host)" % manager)
    tau = ctx.conv(path + ".tau", parse_time, raw["tau"])
    if tau <= 0:
        raise ctx.err(path + ".tau", "must be positive")
    spec = DCMSSpec(manager, tau)
    for k in ("T_C", "T_W", "T_D"):
        if k in raw:
            setattr(spec, k, _fraction(ctx, "%s.%s" % (path, k), raw[k]))
    if "T_I" in raw:
        spec.T_I = integer(ctx, path + ".T_I", raw["T_I"], 1, 10**6)
    for k in ("low", "default"):
        if k in raw:
            setattr(spec, k, integer(ctx, "%s.%s" % (path, k), raw[k], 0, 0xFFFF))
    return spec
