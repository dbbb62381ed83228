"""Job metrics (issue 29 Deliver 3): per job and per iteration, from the marks the ranks
report (:meth:`ibemu.fabric.recorder.Recorder.job_mark`: rank, operation, iteration,
when its first messages were posted, when its last expected message arrived).

- an iteration of an operation takes from the earliest rank's start to the latest rank's
  end (the collective is done when its last rank is);
- an operation's time: from its first iteration's start to its last one's end;
- the job's completion time: from the job's start to the last rank's last end; per rank
  the same (the ``rank_completion`` distribution); None while the run ended first;
- the slowdown: the completion time over the same job's alone on the same fabric
  (``baseline_ps``, from a baseline run :func:`with_baseline` adds), None without one.

Percentiles are nearest-rank (:func:`~ibemu.results.latency.latency_stats`).  The
``summary["jobs"]`` of results.json is :func:`job_summary`; :func:`job_rows` are the
rows of the printed table.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..units import PS_PER_US
from .latency import latency_stats

if TYPE_CHECKING:
    from ..fabric.job.spec import JobSpec

Mark = tuple[str, int, int, int, int, int]          # job, rank, op, iteration, start, end (ps)

__all__ = ["job_info", "job_summary", "job_rows", "with_baseline", "Mark"]


def job_info(jobs: Iterable[JobSpec]) -> dict[str, dict[str, Any]]:
    """What the summary needs of each job's spec: ranks, start, operation labels and
    their iterations (JSON-ready)."""
    out: dict[str, dict[str, Any]] = {}
    for j in jobs:
        iters = [op.iterations for op in j.ops] if j.ops else _iterations_of(j)
        out[j.name] = {"ranks": len(j.hosts), "start_ps": j.start, "ops": list(j.op_names), "iterations": iters}
    return out


def _iterations_of(j: JobSpec) -> list[int]:
    """Iterations per operation from the programs (a replayed trace has no OpSpec)."""
    n: dict[int, int] = {}
    for st in (j.programs[0] if j.programs else []):
        if st.last:
            n[st.op] = max(n.get(st.op, 0), st.iteration + 1)
    return [n.get(i, 0) for i in range(len(j.op_names))]


def job_summary(marks: Iterable[Mark], info: Mapping[str, Mapping[str, Any]],
                baselines: Mapping[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Every job's metrics (see the module); *info* from :func:`job_info`."""
    by_job: dict[str, list[Mark]] = {name: [] for name in info}
    for m in marks:
        by_job.setdefault(m[0], []).append(m)
    out: dict[str, dict[str, Any]] = {}
    for name, ms in by_job.items():
        meta = info.get(name, {})
        start = int(meta.get("start_ps", 0))
        nranks = int(meta.get("ranks", len({m[1] for m in ms})))
        labels = list(meta.get("ops", []))
        iters = list(meta.get("iterations", []))
        nops = max(len(labels), 1 + max((m[2] for m in ms), default=-1))
        ops: list[dict[str, Any]] = []
        all_iter: list[int] = []
        complete = True
        for op in range(nops):
            mine = [m for m in ms if m[2] == op]
            want = iters[op] if op < len(iters) else 1 + max((m[3] for m in mine), default=-1)
            times: list[int | None] = []
            for it in range(want):
                im = [m for m in mine if m[3] == it]
                if len(im) < nranks:
                    times.append(None)
                    complete = False
                else:
                    times.append(max(m[5] for m in im) - min(m[4] for m in im))
            done = [t for t in times if t is not None]
            all_iter += done
            stats = latency_stats(np.asarray(done, dtype=np.int64))
            ops.append({"op": labels[op] if op < len(labels) else "op%d" % op, "iterations": want,
                        "iteration_ps": times, "iteration": stats,
                        "time_ps": (max(m[5] for m in mine) - min(m[4] for m in mine))
                        if mine and None not in times else None})
        rank_end: dict[int, int] = {}
        for m in ms:
            rank_end[m[1]] = max(rank_end.get(m[1], 0), m[5])
        complete = complete and len(rank_end) == nranks
        completion = max(rank_end.values()) - start if complete and rank_end else None
        base = (baselines or {}).get(name)
        out[name] = {"ranks": nranks, "start_ps": start, "completed": complete, "completion_ps": completion,
                     "rank_completion": latency_stats(np.asarray([t - start for t in rank_end.values()],
                                                                 dtype=np.int64)) if complete else None,
                     "iteration": latency_stats(np.asarray(all_iter, dtype=np.int64)), "ops": ops,
                     "baseline_ps": base,
                     "slowdown": completion / base if completion is not None and base else None}
    return out


def with_baseline(jobs: dict[str, dict[str, Any]], baselines: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """*jobs* (a ``summary["jobs"]``) with ``baseline_ps`` and ``slowdown`` set from
    *baselines* (job name -> its completion time alone)."""
    out = {}
    for name, d in jobs.items():
        d = dict(d)
        base = baselines.get(name)
        d["baseline_ps"] = base
        d["slowdown"] = d["completion_ps"] / base if d.get("completion_ps") is not None and base else None
        out[name] = d
    return out


def job_rows(jobs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The printed table of the jobs: one row per job and one per operation."""
    def us(ps: float | None) -> str:
        return "-" if ps is None else "%.2f" % (ps / PS_PER_US)

    head = ["job / op", "ranks", "iters", "done in us", "iter p50 us", "iter p99 us", "iter max us", "slowdown"]
    rows: list[list[str]] = []
    for name, d in jobs.items():
        it = d.get("iteration") or {}
        rows.append([name, str(d["ranks"]), str(sum(o["iterations"] for o in d["ops"])),
                     us(d.get("completion_ps")) if d.get("completed") else "unfinished",
                     us(it.get("p50_ps")), us(it.get("p99_ps")), us(it.get("max_ps")),
                     "-" if d.get("slowdown") is None else "%.3f" % d["slowdown"]])
        for o in d["ops"]:
            s = o.get("iteration") or {}
            rows.append(["  " + o["op"], "", str(o["iterations"]), us(o.get("time_ps")), us(s.get("p50_ps")),
                         us(s.get("p99_ps")), us(s.get("max_ps")), ""])
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]
