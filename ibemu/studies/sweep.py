"""``ibemu sweep``: a scenario run over a grid of ``--set`` values and seeds, the points
run in parallel by Dask (issue 17 Deliver 1).

A *point* is one combination of swept values and one seed: a list of ``key.path=value``
overrides (:func:`ibemu.scenario.overrides.apply_overrides`, the same as ``ibemu run
--set``) run on the virtual clock, so each point is deterministic and independent of the
others.  :func:`plan` turns the grids (product), the zipped keys (one dimension, varied
together) and the seeds into points; :func:`run_sweep` runs them -- by default on a local
Dask cluster of one worker process per core (``dask.distributed.LocalCluster``), on an
existing cluster with ``scheduler="tcp://host:port"``, or one after another in this
process with ``scheduler="sync"`` -- and writes into the sweep's folder:

- ``points/<point>/``: each point's run folder (results.json, the CSV series) and
  ``point.json``, the point's row, written last: a point with one is finished and is not
  run again (resume);
- ``sweep.csv`` and ``sweep.parquet``: one row per point and seed, the swept keys as
  columns, then the headline metrics (:func:`headline`);
- ``aggregate.csv`` and ``aggregate.parquet``: per combination of swept values, the
  mean over seeds and the half-width of its 95 % confidence interval (Student's t);
- ``sweep.png``: a metric over one swept key, one line per value of the other keys.

A point that fails (its scenario is refused, or its run raises) is reported with its
key values and error; the others go on and :func:`run_sweep`'s result counts it.

This module runs the points; they are planned in :mod:`ibemu.studies.sweep_plan`, run by
the pools of :mod:`ibemu.studies.sweep_pool` and tabled by :mod:`ibemu.studies.sweep_tables`,
whose names it re-exports (``from ibemu.studies import sweep as S``: ``S.plan``, ...).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from .sweep_plan import SEED_KEY, Point, Row, parse_values, plan
from .sweep_pool import CONNECT_TIMEOUT, LOCAL, SYNC, DaskPool, SyncPool
from .sweep_tables import aggregate, plot_sweep, write_table

__all__ = ["Point", "SweepResult", "DaskPool", "parse_values", "plan", "headline", "run_point", "run_sweep",
           "aggregate", "write_tables", "plot_sweep", "SEED_KEY", "LOCAL", "SYNC", "CONNECT_TIMEOUT"]


# ---------------------------------------------------------------- one point
def headline(summary: dict[str, Any], windowed: bool = False) -> dict[str, float]:
    """The headline metrics of a run's summary (results.json's ``summary``), each a
    number (NaN where the run has none):

    - ``group:<g>`` per flow group and ``flow:<f>`` per flow outside a group: received
      rate as a fraction of the capacity (``normalized``);
    - ``victim``: the group or flow named ``victim`` (seed 003 Figure 1's victim);
    - ``latency_p50_us``, ``latency_p99_us``: the worst flow's median and 99th percentile
      message latency;
    - ``link:<label>``: data utilization of every named link (the scenario's ``name``),
      ``link_max``: the highest over all links;
    - ``jain``: Jain's fairness index over the flows.

    *windowed*: the figures over the run's measurement window (``--window``)."""
    def pick(entry: dict[str, Any]) -> dict[str, Any]:
        win = entry.get("window") if windowed else None
        return win if isinstance(win, dict) else entry

    out: dict[str, float] = {}
    groups = summary.get("groups") or {}
    flows = summary.get("flows") or {}
    for g, entry in sorted(groups.items()):
        out["group:%s" % g] = float(pick(entry).get("normalized", math.nan))
    for f, entry in sorted(flows.items()):
        if not entry.get("group"):
            out["flow:%s" % f] = float(pick(entry).get("normalized", math.nan))
    out["victim"] = out.get("group:victim", out.get("flow:victim", math.nan))
    p50 = [e["latency"]["p50_ps"] for e in flows.values() if (e.get("latency") or {}).get("p50_ps") is not None]
    p99 = [e["latency"]["p99_ps"] for e in flows.values() if (e.get("latency") or {}).get("p99_ps") is not None]
    out["latency_p50_us"] = max(p50) / 1e6 if p50 else math.nan
    out["latency_p99_us"] = max(p99) / 1e6 if p99 else math.nan
    links = summary.get("links") or {}
    utils = []
    for label, entry in sorted(links.items()):
        u = float(pick(entry).get("data_utilization", math.nan))
        utils.append(u)
        if "->" not in label and not label.endswith(".rev"):
            out["link:%s" % label] = u
    out["link_max"] = max(utils) if utils else math.nan
    fair = summary.get("fairness") or {}
    out["jain"] = float(fair["jain"]) if fair.get("jain") is not None else math.nan
    return out


def run_point(source: str, overrides: Sequence[str], out_dir: str, window_ms: tuple[float, float] | None = None,
              plots: bool = False) -> Row:
    """Run one point on the virtual clock into *out_dir*; its headline metrics and the
    wall time.  Runs in a Dask worker (or in this process with ``scheduler="sync"``)."""
    from ..run import run_virtual
    from ..scenario import load_scenario
    from ..units import PS_PER_MS
    scn = load_scenario(source, list(overrides))
    scn.output.plots = plots
    window = None if window_ms is None else (int(window_ms[0] * PS_PER_MS), int(window_ms[1] * PS_PER_MS))
    cpu0 = time.process_time()
    result = run_virtual(scn, out_dir=out_dir, progress=False, window=window)
    row: Row = dict(headline(result.summary, windowed=window is not None))
    row["events"] = result.events
    row["wall_s"] = round(result.wall_seconds, 4)
    row["cpu_s"] = round(time.process_time() - cpu0, 4)
    return row


# ---------------------------------------------------------------- the sweep
@dataclass
class SweepResult:
    """What :func:`run_sweep` did: every point's row (finished, reused or failed, in plan
    order), how many it ran, reused from an earlier sweep and saw fail, and its wall time."""
    rows: list[Row]
    ran: int = 0
    reused: int = 0
    failed: list[tuple[Point, str]] = field(default_factory=list)
    wall_seconds: float = 0.0
    interrupted: bool = False


def _row_of(point: Point, status: str, metrics: Row | None = None, error: str = "") -> Row:
    row: Row = {"point": point.folder()}
    for key, value in point.keys:
        row[key] = value
    row["seed"] = point.seed
    row["status"] = status
    row["error"] = error
    row.update(metrics or {})
    return row


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _done(folder: Path, point: Point) -> Row | None:
    """The row of a point finished by an earlier sweep into *folder*, else None."""
    try:
        saved = json.loads((folder / "point.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if saved.get("overrides") != point.overrides() or not isinstance(saved.get("row"), dict):
        return None
    row: Row = saved["row"]
    return row


def _pre_check(source: str, common: Sequence[str], points: Sequence[Point]) -> dict[Point, str]:
    """Each point's scenario loaded (not run): the points it refuses, with the reason.
    Every point refused is bad input: one line, no sweep."""
    from ..scenario import load_scenario
    refused: dict[Point, str] = {}
    cache: dict[tuple[str, ...], str] = {}
    for p in points:
        key = tuple(o for o in p.overrides() if not o.startswith(SEED_KEY + "="))
        if key not in cache:
            try:
                load_scenario(source, [*common, *key])
                cache[key] = ""
            except UserError as e:
                cache[key] = str(e)
        if cache[key]:
            refused[p] = cache[key]
    if points and len(refused) == len(points):
        raise UserError(next(iter(refused.values())))
    return refused


def _require_tables() -> None:
    """The sweep's tables need the sweep extra's scipy (confidence intervals) and pyarrow
    (Parquet): one line before any point runs, not an ImportError after all of them."""
    from importlib.util import find_spec
    missing = [m for m in ("scipy", "pyarrow") if find_spec(m) is None]
    if missing:
        raise UserError("ibemu sweep: its tables need %s, which %s not installed: pip install 'ibemu[sweep]'"
                        % (" and ".join(missing), "is" if len(missing) == 1 else "are"))


def run_sweep(source: str, points: Sequence[Point], out: str | Path, *, common: Sequence[str] = (),
              scheduler: str = LOCAL, workers: int | None = None, window_ms: tuple[float, float] | None = None,
              plots: bool = False, progress: bool | None = None,
              on_row: Callable[[Point, Row], None] | None = None,
              connect_timeout: float = CONNECT_TIMEOUT) -> SweepResult:
    """Run *points* of the scenario *source* (each with the *common* overrides first)
    into *out* and write the sweep's tables; points finished by an earlier sweep into
    *out* are reused, not run.  *scheduler*: ``"local"`` (a new local Dask cluster of
    *workers* processes, default one per core), ``"sync"`` (this process, one after
    another) or a Dask scheduler's address (``tcp://host:8786``, reached within
    *connect_timeout* seconds or a :class:`UserError`).  *on_row* is called
    with every point's row as it arrives (finished, reused or failed)."""
    t0 = time.perf_counter()
    _require_tables()
    refused = _pre_check(source, common, points)
    out = Path(out)
    folders = out / "points"
    try:
        folders.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from ..errors import OutputError
        raise OutputError.from_os(str(folders), e) from None
    result = SweepResult(rows=[{} for _ in points])

    def record(i: int, row: Row, failed: str = "") -> None:
        result.rows[i] = row
        if failed:
            result.failed.append((points[i], failed))
            report("point %s failed: %s" % (points[i].label(), failed))
        if on_row is not None:
            on_row(points[i], row)

    from tqdm import tqdm
    bar = tqdm(total=len(points), desc="sweep", unit="point", file=sys.stderr,
               disable=(not sys.stderr.isatty()) if progress is None else not progress)

    def report(text: str) -> None:
        tqdm.write(text, file=sys.stderr)

    todo: list[int] = []
    for i, p in enumerate(points):
        if p in refused:
            record(i, _row_of(p, "failed", error=refused[p]), refused[p])
            bar.update()
            continue
        done = _done(folders / p.folder(), p)
        if done is not None:
            result.reused += 1
            record(i, done)
            bar.update()
            continue
        todo.append(i)

    runner: SyncPool | DaskPool | None = None
    try:
        if todo:
            runner = SyncPool() if scheduler == SYNC else DaskPool(scheduler, workers, connect_timeout)
            for i in todo:
                p = points[i]
                runner.submit(i, run_point, source, [*common, *p.overrides()],
                              str((folders / p.folder()).resolve()), window_ms, plots)
            for i, metrics, error in runner.results():
                p = points[i]
                if metrics is None:
                    record(i, _row_of(p, "failed", error=error), error)
                else:
                    row = _row_of(p, "ok", metrics)
                    _write_json(folders / p.folder() / "point.json", {"overrides": p.overrides(), "row": row})
                    result.ran += 1
                    record(i, row)
                bar.update()
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        bar.close()
        if runner is not None:
            runner.close()
    result.rows = [r for r in result.rows if r]          # an interrupted sweep: what finished
    result.wall_seconds = time.perf_counter() - t0
    return result


def write_tables(result: SweepResult, keys: Sequence[str], out: str | Path) -> list[Row]:
    """sweep.csv/.parquet (every row) and aggregate.csv/.parquet (mean and CI over the
    seeds) into *out*; returns the aggregate rows."""
    out = Path(out)
    write_table(result.rows, keys, out / "sweep.csv", out / "sweep.parquet")
    agg = aggregate(result.rows, keys)
    write_table(agg, keys, out / "aggregate.csv", out / "aggregate.parquet")
    return agg
