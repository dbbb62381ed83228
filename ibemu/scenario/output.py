"""The scenario's ``[output]`` table: time-series bin, sliding window (seed 003
section 3: rates over 2 ms), plots and which links and groups they show.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..fabric.params import FlowSpec
from ..units import describe, parse_time
from ..validate import Checker, boolean, known, string, table
from .model import OutputSpec

__all__ = ["OUTPUT_KEYS", "parse_output"]

OUTPUT_KEYS = ("bin", "window", "plots", "plot_links", "plot_groups")


def parse_output(ctx: Checker, o: Any, labels: Iterable[str], flows: list[FlowSpec]) -> OutputSpec:
    """Seed 003 section 3: rates over a 2 ms sliding window."""
    table(ctx, "output", o, OUTPUT_KEYS)
    out = OutputSpec()
    for k in ("bin", "window"):
        if k in o:
            t = ctx.conv("output." + k, parse_time, o[k])
            if t <= 0:
                raise ctx.err("output." + k, "must be positive")
            setattr(out, k, t)
    if "plots" in o:
        out.plots = boolean(ctx, "output.plots", o["plots"])
    groups = list(dict.fromkeys(f.group for f in flows if f.group))
    for k, names, what in (("plot_links", list(labels), "link"), ("plot_groups", groups, "group")):
        if k in o:
            lst = o[k]
            if not isinstance(lst, list):
                raise ctx.err("output." + k, "expected an array of names, got %s" % describe(lst))
            for i, x in enumerate(lst):
                xp = "output.%s[%d]" % (k, i)
                if string(ctx, xp, x) not in names:
                    raise ctx.err(xp, "unknown %s %r (known: %s)" % (what, x, known(names, 12) or "none"))
            setattr(out, k, list(lst))
    return out
