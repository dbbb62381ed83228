"""``ibemu reproduce``: the seed papers' figures, run on the emulator and compared with
the published numbers.

:data:`REPRODUCTIONS` lists every reproduction explicitly, in the order ``--list`` and
``all`` use: seed 003 Figures 2–3 (:mod:`.santos`), the HP scheme (:mod:`.hp.reproduce`),
the CCA on seed 002's testbed (:mod:`.cca.reproduce`), DCMS (:mod:`.dcms.reproduce`) and the
congestion tree on a fat tree (:mod:`.congestion_tree`); adaptive routing (:mod:`.adaptive`).
Each holds the scenario or runner, the measurement window and the paper's figures with
the range we accept.  The emulator's numbers come only from running the scenario; the
table is read only to print and judge them.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..run import run_virtual
from ..units import PS_PER_MS
from .adaptive import REPRODUCTIONS as ADAPTIVE
from .cca.reproduce import REPRODUCTIONS as CCA
from .congestion_tree import REPRODUCTIONS as TREE
from .dcms.reproduce import REPRODUCTIONS as DCMS
from .figure_axes import plot_rate_figure
from .hp.reproduce import REPRODUCTIONS as HP
from .interference import REPRODUCTIONS as INTERFERENCE
from .reproduction import DEPARTS, FIXED, MISMATCH, PAPER, REGRESSION, Check, Reproduction, RunCache
from .santos import REPRODUCTIONS as SANTOS

__all__ = ["Check", "Reproduction", "RunCache", "REPRODUCTIONS", "BY_ID", "measure",
           "RunnerResult", "run_reproduction", "format_rows", "departures", "main"]

REPRODUCTIONS: list[Reproduction] = [*SANTOS, *HP, *CCA, *DCMS, *TREE, *INTERFERENCE, *ADAPTIVE]
BY_ID: dict[str, Reproduction] = {r.id: r for r in REPRODUCTIONS}
Row = tuple[Check, float, str]
"""(check, ours, verdict): :meth:`Check.verdict`."""


def measure(summary: dict[str, Any], metric: str) -> float:
    """A metric of a windowed summary, as a fraction of link rate."""
    kind, _, name = metric.partition(":")
    if kind == "link":
        value: float = summary["links"][name]["window"]["data_utilization"]
        return value
    table = summary["flows" if kind == "flow" else "groups"]
    value = table[name]["window"]["normalized"]
    return value


@dataclass
class RunnerResult:
    wall_seconds: float


def run_reproduction(rep: Reproduction, out_dir: Path | str | None = None,
                     progress: bool | None = None, full: bool = False,
                     cache: RunCache | None = None) -> tuple[list[Row], bool, Any]:
    """Run one figure; return (rows, passed, result) with rows (check, ours, verdict);
    *passed*: no check mismatched and no known departure passed (``FIXED?``);
    *result* has ``wall_seconds`` (a run's :class:`~ibemu.run.RunResult` for a figure
    of one scenario).  *cache*: runs shared with other figures of the same invocation
    (default: this figure's own)."""
    get: Callable[[str], float]
    result: Any
    if rep.runner is not None:
        t0 = time.perf_counter()
        values = rep.runner(None if out_dir is None else Path(out_dir), full,
                            RunCache() if cache is None else cache)
        result = RunnerResult(time.perf_counter() - t0)
        get = values.__getitem__
    else:
        assert rep.build is not None and rep.window_ms is not None, rep.id
        scn = rep.build()
        window = (int(rep.window_ms[0] * PS_PER_MS), int(rep.window_ms[1] * PS_PER_MS))
        result = run_virtual(scn, out_dir=out_dir, progress=progress, window=window)
        get = partial(measure, result.summary)
        if rep.figure is not None and out_dir is not None:      # the paper's figure, in its style
            plot_rate_figure(rep.figure, result.metrics, Path(out_dir) / "figure.png")
    rows = []
    for c in rep.checks:
        ours = get(c.metric)
        rows.append((c, ours, c.verdict(ours)))
    return rows, not any(v in (MISMATCH, FIXED) for _, _, v in rows), result


def _row(c: Check, ours: float, verdict: str) -> list[str]:
    if c.unit == "%":
        val, rng = "%8.1f%%" % (100 * ours), "[%4.0f, %4.0f]%%" % (100 * c.lo, 100 * c.hi)
    else:
        val, rng = "%9.4g" % ours, "[%.4g, %.4g] %s" % (c.lo, c.hi, c.unit)
    lines = ["  %-22s %-50s %s  %-15s %s" % (c.metric, c.paper, val, rng, verdict)]
    if c.quote or c.section:
        said = ('"%s"' % c.quote) if c.read_from == "text" else "figure: %s" % c.quote
        lines.append("  %22s   %s%s" % ("", said, (" (%s)" % c.section) if c.section else ""))
    if c.departs:
        lines.append("  %22s   departs: %s (paper %s, ours %s)" % ("", c.departs, c.paper, val.strip()))
    return lines


def format_rows(rep: Reproduction, rows: list[Row]) -> str:
    """The figure's table: the paper checks (each with the paper's words), then the
    regression bounds, which no paper published, apart."""
    where = (", measured over %g–%g ms" % tuple(rep.window_ms)) if rep.window_ms else ""
    lines = ["%s — %s (%s)%s" % (rep.id, rep.title, rep.source, where)]
    paper = [r for r in rows if r[0].kind == PAPER]
    bounds = [r for r in rows if r[0].kind == REGRESSION]
    if paper:
        lines.append("  %-22s %-50s %9s  %-15s %s" % ("paper check", "paper", "ours", "accepted", ""))
        for c, ours, verdict in paper:
            lines += _row(c, ours, verdict)
    if bounds:
        lines.append("  %-22s %-50s %9s  %-15s %s" % ("regression bound", "(no published number)", "ours",
                                                      "accepted", ""))
        for c, ours, verdict in bounds:
            lines += _row(c, ours, verdict)
    return "\n".join(lines)


def departures(rows: list[Row]) -> list[Row]:
    """The rows of known departures (verdict ``departs`` or ``FIXED?``)."""
    return [r for r in rows if r[2] in (DEPARTS, FIXED)]


def main(which: str | None, out_dir: str | Path | None = None, list_only: bool = False,
         full: bool = False, scheduler: str | None = None, workers: int | None = None,
         connect_timeout: float | None = None) -> int:
    """``ibemu reproduce [ID|all]``: exit status 1 when a figure is outside its range.

    *scheduler* (issue 17 Deliver 2): where the runs of a figure's sweep go
    (:meth:`RunCache.map`): ``"sync"`` one after another here, ``"local"`` a local Dask
    cluster of *workers* processes (default one per core), or a Dask scheduler's address
    (reached within *connect_timeout* seconds, default :data:`.sweep.CONNECT_TIMEOUT`).
    Default: ``"local"`` with *full* (the papers' sweeps), ``"sync"`` without."""
    if list_only or not which:
        for r in REPRODUCTIONS:
            print("%-12s %-55s %s" % (r.id, r.title, r.source))
        print("run one with `ibemu reproduce ID`, all with `ibemu reproduce all`")
        return 0
    ids = [r.id for r in REPRODUCTIONS] if which == "all" else [which]
    for i in ids:
        if i not in BY_ID:
            raise UserError("unknown reproduction %r (known: %s, all)" % (i, ", ".join(BY_ID)))
    from .sweep_pool import CONNECT_TIMEOUT, LOCAL, SYNC, DaskPool
    scheduler = scheduler or (LOCAL if full else SYNC)
    pool = None if scheduler == SYNC else DaskPool(scheduler, workers, connect_timeout or CONNECT_TIMEOUT)
    failed = 0
    cache = RunCache(mapper=None if pool is None else pool.map)      # owned by this invocation
    try:
        for i in ids:
            rep = BY_ID[i]
            out = Path(out_dir or "reproductions") / rep.id
            rows, ok, result = run_reproduction(rep, out_dir=out, full=full, cache=cache)
            print(format_rows(rep, rows))
            print("  plots and series in %s/ (%.1f s wall)\n" % (out, result.wall_seconds))
            failed += not ok
    finally:
        if pool is not None:
            pool.close()
    return 1 if failed else 0
