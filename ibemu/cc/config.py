"""The scenario's ``[cc]`` table.

``scheme`` selects the congestion control: ``"none"`` (default), ``"hp"`` (seeds 000/003:
marking, ECN, hybrid rate/window response) or ``"cca"`` (IBA annex A10 with Threshold,
Marking_Rate and CCT/CCTI, seeds 002/004).  Each scheme's settings live in its own
sub-table and are parsed by that scheme's ``config`` module, which gets the scenario
checker *ctx* (:class:`ibemu.validate.Checker`: ``ctx.err(path, reason)`` makes the
one-line error) and the key path.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..validate import Checker, string, table
from .cca.config import parse_cca
from .cca.settings import CCASpec
from .dcms.config import DCMSSpec, parse_dcms
from .hp.config import HPSpec, parse_hp

__all__ = ["SCHEMES", "CCSpec", "parse_cc"]

SCHEMES = ("none", "hp", "cca")


@dataclass
class CCSpec:
    scheme: str = "none"
    hp: HPSpec | None = None
    cca: CCASpec | None = None
    dcms: DCMSSpec | None = None            # the DCMS manager (with "cca")


def parse_cc(ctx: Checker, raw: Any, path: str = "cc", nodes: dict[str, str] | None = None) -> CCSpec:
    """Validate the ``[cc]`` table.  *nodes* maps node names to "switch" or "hca"."""
    raw = table(ctx, path, raw if raw is not None else {}, ("scheme",) + SCHEMES[1:] + ("dcms",))
    scheme = string(ctx, path + ".scheme", raw.get("scheme", "none"), SCHEMES)
    spec = CCSpec(scheme)
    if "hp" in raw or scheme == "hp":
        spec.hp = parse_hp(ctx, raw.get("hp", {}), path + ".hp", nodes or {})
    if "cca" in raw or scheme == "cca":
        spec.cca = parse_cca(ctx, raw.get("cca", {}), path + ".cca", nodes or {})
    if "dcms" in raw:
        if scheme != "cca":
            raise ctx.err(path + ".dcms", 'the DCMS manager tunes the IBA CCA: set cc.scheme = "cca"')
        spec.dcms = parse_dcms(ctx, raw["dcms"], path + ".dcms", nodes or {})
    return spec
