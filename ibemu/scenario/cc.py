"""The scenario's ``[cc]`` table: the congestion-control scheme and its settings, read by
the schemes' own schemas (:func:`ibemu.cc.config.parse_cc`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..validate import Checker

if TYPE_CHECKING:
    from ..cc.config import CCSpec

__all__ = ["parse_cc_table"]


def parse_cc_table(ctx: Checker, raw: dict[str, Any], nodes: dict[str, str]) -> CCSpec:
    """``[cc]`` of the raw scenario *raw*; *nodes* maps node names to "switch" or "hca"."""
    # Deferred: ibemu.cc.hp's package imports ibemu.build (MAX_HEADERS), and ibemu.build
    # imports this package -- the build -> cc -> build circle of issue 12.  Move this
    # import to the top once cc no longer imports build.
    from ..cc.config import parse_cc
    return parse_cc(ctx, raw.get("cc", {}), "cc", nodes)
