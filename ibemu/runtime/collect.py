"""Collecting a wall-clock run's results from its workers (issue 4 items 2 and 3): each
worker's part (from its ``done`` control line, else the file it wrote), merged
(:mod:`.merge`) into one :class:`~ibemu.results.Metrics`, counters and ``runtime``
table, the capture parts into one capture, and written to the same output folder as
the virtual-time engine writes (:func:`ibemu.results.write_outputs`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fabric.network import Fabric
from ..fabric.integrity import credit_problems, merge_records
from ..results import write_outputs
from ..run import RunResult, lids_of
from ..scenario import Scenario
from .merge import merge_captures, merge_counters, merge_metrics, merge_runtime, new_metrics, read_part
from .verdict import verdict
from .workers import Worker


@dataclass
class WallResult(RunResult):
    """What :func:`ibemu.runtime.controller.run_wall` returns: a :class:`RunResult`
    (the same summary, metrics, counters as on the virtual clock) and the wall clock's
    own figures."""
    runtime: dict[str, Any] = field(default_factory=dict)   # results.json "runtime" (merge.merge_runtime)
    completed: bool = True
    pcap: str | Path | None = None
    error: str | None = None
    credit_problems: list[str] | None = None    # credit_problems() of the workers' reports
    integrity: dict[str, Any] | None = None     # merged PayloadCheck records (integrity=True)
    validity: dict[str, Any] = field(default_factory=dict)  # verdict.verdict(): valid, reason, figures

    @property
    def valid(self) -> bool:
        """The verdict (:mod:`.verdict`): exact and complete, or free within the fabric's time-scale."""
        return bool(self.validity.get("valid", True))


@dataclass
class Outcome:
    """How the run ended, for :func:`collect`."""
    workers: Sequence[Worker]
    wall_seconds: float
    interrupted: bool = False
    failed: Worker | None = None            # the worker that died
    sync: str = "exact"                     # --sync (issue 27): exact or free
    time_scale_ps: int = 0                  # free: the smallest packet's time on a cut link

    @property
    def error(self) -> str | None:
        if self.failed is not None:
            return "%s %s" % (self.failed.label(), self.failed.error_text())
        return "interrupted" if self.interrupted else None


def collect(scn: Scenario, fabric: Fabric, outcome: Outcome, *, dilation: float, port_base: int,
            pcap: str | Path | None = None, window: tuple[int, int] | None = None,
            integrity: bool = False, out: Path | None = None, who: str = "worker") -> WallResult:
    """Merge the workers' parts into a :class:`WallResult`; with *out*, write the output
    folder (results.json says ``"completed": false`` when the run did not end well, and
    ``"valid": false`` with ``validity`` when the verdict says so: :func:`.verdict.verdict`,
    whose reason calls a worker *who*)."""
    ws = outcome.workers
    parts = [w.data or read_part(w.part) for w in ws]     # the file: a worker that died late
    metrics = new_metrics(scn)
    metrics.add_links(fabric.link_capacity)
    metrics.add_flow_capacity(fabric.flow_capacity)
    merge_metrics(metrics, [p for p in parts if p])
    runtime = merge_runtime([(w.index, w.nodes) for w in ws], parts, dilation, port_base)
    runtime["sync"] = outcome.sync
    validity = verdict(runtime, outcome.sync, outcome.time_scale_ps, who)
    completed = (not outcome.interrupted and outcome.failed is None
                 and all(p and p["completed"] for p in parts))
    error = outcome.error
    counters = merge_counters(parts)
    pcap_frames = None
    if pcap:
        pcap_frames = merge_captures([w.pcap for w in ws], pcap)
    t_from, t_to = window if window else (None, None)
    summary = metrics.summary(t_from, t_to)
    result = WallResult(scn, metrics, summary, runtime["events"], outcome.wall_seconds, counters,
                        runtime=runtime, completed=completed, pcap=pcap, error=error, validity=validity)
    if all(p and "credits" in p for p in parts):
        result.credit_problems = credit_problems([p["credits"] for p in parts if p])
    if integrity:
        result.integrity = merge_records([p.get("integrity", {}) for p in parts if p])
    if out is not None:
        extra = {"clock": "wall", "dilation": dilation, "workers": len(ws), "completed": completed,
                 "valid": validity["valid"], "validity": validity,
                 "lids": lids_of(fabric),
                 "error": error, "events": runtime["events"], "runtime": runtime,
                 "pcap": Path(pcap).name if pcap else None, "pcap_frames": pcap_frames}
        write_outputs(metrics, scn, out, extra=extra, window=window)
        result.out_dir = out
    return result
