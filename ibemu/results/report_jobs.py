"""The jobs section of ``ibemu report`` (issue 29 Deliver 3): per job its completion
time, iteration percentiles and slowdown (a table), and every operation's iteration
times (a plot), from results.json's ``summary["jobs"]`` (:mod:`.jobs`).  The page's
helpers (section, table, figure) come from :mod:`.report_elements`, passed in by
:mod:`.report` as arguments."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..units import PS_PER_US

__all__ = ["jobs_section"]


def _us(ps: float | None) -> float | None:
    return None if ps is None else ps / PS_PER_US


def jobs_section(go: Any, jobs: Mapping[str, Mapping[str, Any]] | None, section: Callable[[str, str, str], str],
                 table: Callable[..., str], figure: Callable[..., str]) -> str:
    """The section's HTML; empty for a run without jobs."""
    if not jobs:
        return ""
    rows = []
    fig = go.Figure()
    for name, d in jobs.items():
        it = d.get("iteration") or {}
        rc = d.get("rank_completion") or {}
        rows.append((name, d["ranks"], "yes" if d.get("completed") else "no", _us(d.get("completion_ps")),
                     _us(rc.get("p50_ps")), _us(rc.get("p99_ps")), _us(it.get("p50_ps")), _us(it.get("p99_ps")),
                     _us(it.get("max_ps")), _us(d.get("baseline_ps")), d.get("slowdown")))
        for o in d.get("ops", []):
            times = o.get("iteration_ps") or []
            fig.add_trace(go.Scatter(x=list(range(len(times))), y=[_us(t) for t in times], mode="lines+markers",
                                     name="%s: %s" % (name, o["op"])))
    fig.update_layout(title="iteration time per operation", xaxis_title="iteration",
                      yaxis_title="time (µs)", height=420)
    head = ("job", "ranks", "completed", "completion (µs)", "rank p50 (µs)", "rank p99 (µs)", "iteration p50 (µs)",
            "iteration p99 (µs)", "iteration max (µs)", "alone (µs)", "slowdown")
    note = ("<p class=note>An iteration runs from its first rank's first message posted to its last rank's last "
            "message delivered; the slowdown is the completion time over the job's alone on the same fabric "
            "(when a baseline run was made).</p>")
    return section("Jobs", "jobs", note + table(head, rows, what="jobs") + figure(fig, "plot-jobs"))
