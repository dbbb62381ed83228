"""The scenario's ``[faults]`` table: link fault injection (issue 8 item 2) --
loss, duplication, reordering, bit corruption and link down/up, for every directed link
or per link -- validated into the :class:`~ibemu.fabric.faults.FaultSpec` that the
fabric's injectors run (semantics in :mod:`ibemu.fabric.faults`).
"""
from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from ..fabric.faults import FaultSpec, LinkFaults
from ..units import describe, parse_time
from ..validate import AnyKeys, Checker, integer, table
from .model import LinkSpec

__all__ = ["FAULT_KEYS", "parse_faults"]

FAULT_KEYS = ("loss", "duplicate", "reorder", "reorder_depth", "corrupt", "down")


def parse_faults(ctx: Checker, raw: Any, links: list[LinkSpec], path: str = "faults") -> FaultSpec | None:
    """Validate a scenario's ``[faults]`` table (every key: the site's scenario reference,
    docs/reference/scenario.md, "Faults", generated from :mod:`ibemu.scenario.keyref`)::

        [faults]                      # every directed link
        loss = 0.05                   # probabilities in [0, 1]
        duplicate = 0.01
        reorder = 0.02
        reorder_depth = 4             # frames that may overtake a held-back one
        corrupt = 0.01
        down = [["1ms", "1.5ms"]]     # [start, end) intervals: the link is down
        [faults.link."S1->S2"]        # one direction by its label, or a link's name
        loss = 0.2                    # (both directions); unset keys come from [faults]

    *links* are the scenario's :class:`~ibemu.scenario.model.LinkSpec` objects.  ``down``
    always applies to both directions of a link.
    """
    if raw is None:
        return None
    table(ctx, path, raw, FAULT_KEYS + ("link",))

    def prob(p: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ctx.err(p, "expected a probability (a number from 0 to 1), got %s" % describe(v))
        if not 0 <= v <= 1:
            raise ctx.err(p, "must be between 0 and 1, got %r" % v)
        return float(v)

    def fields(p: str, t: dict[str, Any], base: LinkFaults) -> LinkFaults:
        f = replace(base, down=list(base.down))   # (not vars(): compiled, it has no __dict__)
        for k in ("loss", "duplicate", "reorder", "corrupt"):
            if k in t:
                setattr(f, k, prob(p + "." + k, t[k]))
        if "reorder_depth" in t:
            f.reorder_depth = integer(ctx, p + ".reorder_depth", t["reorder_depth"], 1, 1024)
        if "down" in t:
            dp = p + ".down"
            v = t["down"]
            if not isinstance(v, list):
                raise ctx.err(dp, "expected an array of [start, end] pairs, got %s" % describe(v))
            f.down = []
            for i, pair in enumerate(v):
                ip = "%s[%d]" % (dp, i)
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ctx.err(ip, "expected a [start, end] pair such as [\"1ms\", \"2ms\"], got %s"
                                  % describe(pair))
                a, b = (ctx.conv(ip, parse_time, x) for x in pair)
                if b <= a:
                    raise ctx.err(ip, "the link must come back up after it goes down (end > start)")
                f.down.append((a, b))
        return f

    every = fields(path, raw, LinkFaults())
    spec = FaultSpec(all=every)
    by_label: dict[str, tuple[str, str]] = {}
    for ln in links:
        fwd, rev = ln.labels()
        by_label[fwd] = (fwd, rev)
        by_label[rev] = (rev, fwd)
        if ln.name:
            by_label[ln.name] = (fwd, rev)
    lpath = path + ".link"
    for key, t in table(ctx, lpath, raw.get("link", {}), AnyKeys()).items():
        kp = '%s."%s"' % (lpath, key)
        if key not in by_label:
            close = difflib.get_close_matches(key, list(by_label), n=1, cutoff=0.6)
            raise ctx.err(kp, "no link %r%s" % (key, " (did you mean %r?)" % close[0] if close else
                                                 " (links: %s)" % ", ".join(sorted(by_label)[:8])))
        table(ctx, kp, t, FAULT_KEYS)
        f = fields(kp, t, every)
        targets = by_label[key] if key in {ln.name for ln in links if ln.name} else (key,)
        for label in targets:
            spec.links[label] = f
        if "down" in t:                         # a link goes down as a whole
            for label in by_label[key]:
                other = spec.links.get(label)
                if other is None:
                    spec.links[label] = replace(every, down=list(f.down))
                else:
                    other.down = list(f.down)
    return spec if spec.active() else None
