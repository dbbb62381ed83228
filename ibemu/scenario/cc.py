"""The scenario's ``[cc]`` table: the congestion-control scheme and its settings, read by
the registered schemes' own schemas (:func:`ibemu.cc.parse_cc`).
"""
from __future__ import annotations

from typing import Any

from ..cc import CCSpec, parse_cc
from ..validate import Checker

__all__ = ["parse_cc_table"]


def parse_cc_table(ctx: Checker, raw: dict[str, Any], nodes: dict[str, str]) -> CCSpec:
    """``[cc]`` of the raw scenario *raw*; *nodes* maps node names to "switch" or "hca"."""
    return parse_cc(ctx, raw.get("cc", {}), "cc", nodes)
