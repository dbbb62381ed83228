"""Seed 002 §4.2 runs on the DCMS testbed (:mod:`.testbed`): one run per
(Marking_Rate, CCTI_Timer), measured as the figures need; used by :mod:`.reproduce`
and the tests.  Windows (emulated ms, 1 s of the paper = 0.25 ms): the victim after
A→D settles, 8-15 ms; with Marking_Rate 0 while X→Y would still run unhindered,
7.5-10 ms; the contributors after X→Y is done, 11-20 ms."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...run import run_virtual
from ...units import PS_PER_MS
from ..reproduction import RunCache
from .testbed import CONTRIBUTORS, dcms_testbed

__all__ = ["run_case", "run_cases", "run_case_of", "VICTIM_WIN", "EARLY_WIN", "AFTER_XY_WIN"]

VICTIM_WIN = (8.0, 15.0)
EARLY_WIN = (7.5, 10.0)             # A→D running, X→Y not yet done even when unhindered
AFTER_XY_WIN = (11.0, 20.0)


def run_case(marking_rate: int, ccti_timer: int, cache: RunCache | None = None) -> dict[str, Any]:
    """One testbed run, measured; memoised in *cache* (a run is a pure function of its
    settings) so that Figures 3 and 4 of one invocation share their runs."""
    if cache is None:
        return _run_case(marking_rate, ccti_timer)
    return cache.get(("cca.run_case", marking_rate, ccti_timer),
                     lambda: _run_case(marking_rate, ccti_timer))


def run_cases(cases: list[tuple[int, int]], cache: RunCache) -> list[dict[str, Any]]:
    """:func:`run_case` of each (marking_rate, ccti_timer), the missing runs together
    through :meth:`RunCache.get_many` (on Dask under ``ibemu reproduce --full``)."""
    return cache.get_many([("cca.run_case", mr, tm) for mr, tm in cases], run_case_of, cases)


def run_case_of(case: tuple[int, int]) -> dict[str, Any]:
    """One (marking_rate, ccti_timer) run, unmemoised (module-level: it pickles)."""
    return _run_case(*case)


def _run_case(marking_rate: int, ccti_timer: int) -> dict[str, Any]:
    scn = dcms_testbed(marking_rate=marking_rate, ccti_timer=ccti_timer,
                       name="dcms_%d_%d" % (ccti_timer, marking_rate))
    r = run_virtual(scn, progress=False)
    m = r.metrics
    bin_ms = m.bin / PS_PER_MS
    cap = m.flow_capacity["XY"]
    wire = {f: m.flow_bins(f, "rx_wire_bytes") / (m.bin / 1e12) / cap
            for f in ("XY",) + CONTRIBUTORS}     # fraction of SDR per bin, wire bytes

    def mean(f: list[str] | tuple[str, ...], win: tuple[float, float]) -> float:
        a, b = int(win[0] / bin_ms), int(win[1] / bin_ms)
        return float(np.mean(sum(wire[x] for x in f)[a:b]))
    msgs = np.cumsum(m.flow_bins("XY", "messages"))
    want = scn.flows[0].count
    done = np.nonzero(msgs >= want)[0]
    return {"victim": mean(["XY"], VICTIM_WIN), "victim_early": mean(["XY"], EARLY_WIN),
            "contributors": mean(CONTRIBUTORS, VICTIM_WIN),
            "contributors_after": mean(CONTRIBUTORS, AFTER_XY_WIN),
            "xy_completion_ms": float((done[0] + 1) * bin_ms) if len(done) else scn.duration / PS_PER_MS,
            "marks": r.counters.get("S2", {}).get("FECN_marked:port23", 0),
            "ports": {k: v for k, v in m.port_totals().items() if k.startswith("S")},
            "wire": wire, "bin_ms": bin_ms}
