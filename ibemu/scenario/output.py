"""The scenario's ``[output]`` table: time-series bin, sliding window (seed 003
section 3: rates over 2 ms), plots and which links and groups they show.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..fabric.params import FlowSpec
from ..units import describe, format_time, parse_time
from ..validate import Checker, boolean, integer, known, string, table
from .model import OutputSpec

__all__ = ["OUTPUT_KEYS", "SERIES_PER_DIRECTION", "SERIES_PER_FLOW", "BIN_BYTES", "DEFAULT_MEMORY_LIMIT",
           "parse_output", "bins_memory", "check_memory", "format_bytes"]

# The time bins ibemu.results.metrics.Metrics allocates up front (issue 8 item 8): one
# int64 per bin in 3 series per link direction (all bytes, data bytes, data packets) and 6 per flow
# (2 sent, 4 received); tests/test_hardening_inputs.py measures them against this figure.
SERIES_PER_DIRECTION = 3
SERIES_PER_FLOW = 6
BIN_BYTES = 8
# The largest bin memory a run may take without --max-memory (issue 14 Deliver 4): a few
# GiB, as the results analysis holds float64 copies of the series besides.
DEFAULT_MEMORY_LIMIT = 2 * 2**30

OUTPUT_KEYS = ("bin", "window", "plots", "plot_links", "plot_groups", "snaplen")
MAX_SNAPLEN = 65535
"""The largest snap length: pcapng's and tcpdump's usual limit, above any InfiniBand frame."""


def parse_output(ctx: Checker, o: Any, labels: Iterable[str], flows: list[FlowSpec]) -> OutputSpec:
    """Seed 003 section 3: rates over a 2 ms sliding window.  ``snaplen``: the bytes of
    each frame (from the LRH on) a capture stores, the rest counted in its original length
    (:mod:`ibemu.capture.pcapng`)."""
    table(ctx, "output", o, OUTPUT_KEYS)
    out = OutputSpec()
    for k in ("bin", "window"):
        if k in o:
            t = ctx.conv("output." + k, parse_time, o[k])
            if t <= 0:
                raise ctx.err("output." + k, "must be positive")
            setattr(out, k, t)
    if "snaplen" in o:                      # issue 18 item 2: headers-only captures
        out.snaplen = integer(ctx, "output.snaplen", o["snaplen"], 1, MAX_SNAPLEN)
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


def bins_memory(duration: int, bin_ps: int, directions: int, flows: int) -> int:
    """Bytes of time bins for a run of *duration* ps in bins of *bin_ps*, with *directions*
    link directions and *flows* flows: time bins x series x 8 bytes."""
    nbins = -(-duration // bin_ps)
    return nbins * (SERIES_PER_DIRECTION * directions + SERIES_PER_FLOW * flows) * BIN_BYTES


def format_bytes(n: int) -> str:
    """``1.5 GiB``, ``512 MiB``, ``3 KiB``, ``12 bytes``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return "%.3g %s" % (n / size, unit)
    return "%d bytes" % n


def check_memory(ctx: Checker, duration: int, out: OutputSpec, directions: int, flows: int,
                 limit: int | None) -> None:
    """Refuse, before anything is allocated, a run whose time bins would exceed *limit*
    bytes (None: no limit), naming the figure and what changes it."""
    need = bins_memory(duration, out.bin, directions, flows)
    if limit is None or need <= limit:
        return
    series = SERIES_PER_DIRECTION * directions + SERIES_PER_FLOW * flows
    fit = -(-duration * series * BIN_BYTES // limit)          # the finest bin that fits, in ps
    unit, uname = next((u, n) for u, n in ((10**12, "s"), (10**9, "ms"), (10**6, "us"), (10**3, "ns"), (1, "ps"))
                       if fit >= u)
    key = "scenario.duration" if ctx.by_set("scenario.duration") else "output.bin"
    raise ctx.err(key, "the time bins would take %s (%d bins of %s x %d series x 8 bytes for %s), over the "
                  "%s limit: set a coarser output.bin (at least %s), a shorter scenario.duration "
                  "(--duration), or a higher --max-memory"
                  % (format_bytes(need), -(-duration // out.bin), format_time(out.bin), series,
                     format_time(duration), format_bytes(limit), "%d%s" % (-(-fit // unit), uname)))
