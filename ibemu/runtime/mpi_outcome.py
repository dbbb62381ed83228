"""What an MPI run ends with (issue 17 Deliver 3; :mod:`.mpi`): each rank's part as rank 0
sees it (:class:`RankPart`), the run's status on every rank (:class:`MpiRun`), rank 0's
merge of the parts into one output folder and capture, and what the ranks do when a rank
*process* died (:func:`after_death`: the lifelines only, no MPI call)."""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import atomic_batch
from ..scenario import Scenario
from .collect import Outcome, WallResult, collect
from .lifeline import Lifelines
from .verdict import time_scale, worker_map

__all__ = ["RankPart", "MpiRun", "after_death", "end_orphaned", "finish_rank0", "remove_workdir", "PART_TIMEOUT"]

PART_TIMEOUT = 20.0
"""Seconds rank 0 waits for the living ranks' parts after a rank process died."""


@dataclass
class RankPart:
    """What rank 0 knows of a rank at the end, in the shape :func:`.collect.collect`
    reads a :class:`~.workers.Worker` (index, nodes, data, part, pcap, label, error)."""
    index: int
    nodes: list[str]
    host: str
    pid: int
    data: dict[str, Any] | None
    part: Path
    pcap: Path | None
    t: int = 0
    error: str = ""

    def label(self) -> str:
        names = ", ".join(self.nodes[:6]) + (", ..." if len(self.nodes) > 6 else "")
        pid = ", worker pid %d" % self.pid if self.pid else ""
        return "rank %d (host %s%s; nodes %s)" % (self.index, self.host, pid, names)

    def error_text(self) -> str:
        return self.error


@dataclass
class MpiRun:
    """What :func:`run_mpi` returns on every rank: the exit status (0, 1 a rank failed,
    :data:`~.verdict.EXIT_INVALID` for an invalid run, late results not allowed), the
    verdict on the run (every rank's slips, lag and losses, :func:`.verdict.verdict`: the same on
    every rank), and on rank 0 the merged result."""
    status: int
    rank: int
    result: WallResult | None = None
    message: str = ""
    validity: dict[str, Any] = field(default_factory=dict)
    orphaned: bool = False
    """A rank process died: MPI cannot be finalized (it would wait for the dead rank,
    as srun's PMI does), so the process ends without it (:func:`end_orphaned`)."""

def after_death(rank: int, size: int, scn: Scenario, fabric: Any, dead: int, said: str, mine: dict[str, Any],
                lines: Lifelines, groups: list[list[str]], hosts: list[str], workdir: Path, out: Path | None,
                pcap: str | Path | None, dilation: float, wall: float, window: tuple[int, int] | None,
                port_base: int, sync: str) -> MpiRun:
    """A rank process died (*dead*; this rank's worker is stopped): no MPI call any more,
    only the lifelines.  Rank 0 receives the other living ranks' parts and writes the
    partial outputs, marked ``"completed": false`` and ``"valid": false`` with the dead
    rank as the reason; another rank sends rank 0 its part; when rank 0 is the dead one,
    each rank writes its own part into its --out (``rank<N>.json``, ``rank<N>.pcap``)."""
    if rank != 0 and dead != 0:
        lines.send("part", rank, mine)
        remove_workdir(workdir)
        return MpiRun(1, rank, orphaned=True)        # rank 0 tells what happened
    if rank != 0:                                    # rank 0 is gone: keep this rank's part here
        msg = "%s; no merged output (rank 0 writes it)" % said
        if out is not None:
            import json

            from ..atomic import atomic_open, atomic_write_text
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(out / ("rank%d.json" % rank), json.dumps(
                {k: v for k, v in mine.items() if k != "pcap"}, indent=1))
            if mine["pcap"] is not None:
                with atomic_open(out / ("rank%d.pcap" % rank), "wb") as f:
                    f.write(mine["pcap"])
            msg += "; this rank's part in %s" % (out / ("rank%d.json" % rank))
        remove_workdir(workdir)
        return MpiRun(1, rank, message=msg, orphaned=True)
    everything = [mine]
    deadline = time.monotonic() + PART_TIMEOUT
    waiting = set(lines.alive())
    while waiting and time.monotonic() < deadline:
        for event in lines.poll(0.1):
            if event.kind == "part" and isinstance(event.payload, dict):
                everything.append(event.payload)
            if event.kind in ("part", "dead"):
                waiting.discard(event.rank)
    have = {m["rank"] for m in everything}
    for r in range(size):
        if r not in have:
            everything.append({"rank": r, "nodes": groups[r], "host": hosts[r], "pid": 0, "data": None,
                               "pcap": None, "t": 0, "error": "died: its process ended" if r == dead else
                               "its part did not reach rank 0"})
    everything.sort(key=lambda m: int(m["rank"]))
    run = finish_rank0(scn, fabric, everything, workdir, out, pcap, dilation, wall, window, port_base, sync,
                       failed_rank=dead)
    run.orphaned = True
    return run


def end_orphaned(status: int) -> None:
    """End this rank's process with *status* without finalizing MPI (a rank died: see
    :attr:`MpiRun.orphaned`); what it printed is flushed first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    os._exit(status)

def remove_workdir(path: Path) -> None:
    import shutil
    shutil.rmtree(path, ignore_errors=True)


def finish_rank0(scn: Scenario, fabric: Any, everything: list[dict[str, Any]], workdir: Path, out: Path | None,
                 pcap: str | Path | None, dilation: float, wall: float, window: tuple[int, int] | None,
                 port_base: int, sync: str, failed_rank: int | None = None) -> MpiRun:
    """Rank 0: the ranks' parts merged into one result, output folder and capture.  A run
    with a failed rank (*failed_rank*, else the first with an error) is partial: not
    completed, and not valid, with that rank as the reason."""
    parts: list[RankPart] = []
    for m in everything:
        cap_path = None
        if m["pcap"] is not None:
            cap_path = workdir / ("rank%d.pcap" % m["rank"])
            cap_path.write_bytes(m["pcap"])
        parts.append(RankPart(m["rank"], m["nodes"], m["host"], m["pid"], m["data"],
                              workdir / ("rank%d.json" % m["rank"]), cap_path, m["t"], m["error"]))
    failed = next((p for p in parts if p.index == failed_rank or (failed_rank is None and p.error)), None)
    outcome = Outcome(parts, wall, False, failed, sync,  # type: ignore[arg-type]   # RankPart reads as a Worker
                      time_scale(fabric.wiring, worker_map([p.nodes for p in parts])))
    recorded = any(p.data is not None for p in parts)
    with atomic_batch():
        result = collect(scn, fabric, outcome, dilation=dilation, port_base=port_base, pcap=pcap if recorded else None,
                         window=window, out=out if recorded else None, who="rank")
    result.runtime["ranks"] = [{"rank": p.index, "host": p.host, "nodes": p.nodes, "last_t_ps": p.t,
                                "completed": bool(p.data and p.data.get("completed")), "error": p.error or None}
                               for p in parts]
    if failed is not None:
        result.validity = dict(result.validity, valid=False, reason="partial results: %s %s" % (
            failed.label(), failed.error))
    if out is not None and recorded:
        _add_ranks(out, result.runtime["ranks"], result.validity)
    remove_workdir(workdir)
    if failed is not None:
        where = "; partial results in %s/" % out if out is not None and recorded else ""
        return MpiRun(1, 0, result, "%s %s%s" % (failed.label(), failed.error, where), validity=result.validity)
    return MpiRun(0, 0, result, validity=result.validity)


def _add_ranks(out: Path, ranks: list[dict[str, Any]], validity: dict[str, Any]) -> None:
    """results.json's ``extra.runtime.ranks`` (each rank's host, nodes and last emulated
    time) and the verdict (``extra.valid``, ``extra.validity``)."""
    import json

    from ..atomic import atomic_write_text
    path = out / "results.json"
    res = json.loads(path.read_text(encoding="utf-8"))
    res["extra"]["runtime"]["ranks"] = ranks
    res["extra"]["mpi_ranks"] = len(ranks)
    res["extra"]["valid"] = bool(validity.get("valid", True))
    res["extra"]["validity"] = validity
    atomic_write_text(path, json.dumps(res, indent=1))
