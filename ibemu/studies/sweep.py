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
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["Point", "SweepResult", "DaskPool", "parse_values", "plan", "headline", "run_point", "run_sweep",
           "aggregate", "write_tables", "plot_sweep", "SEED_KEY", "LOCAL", "SYNC", "CONNECT_TIMEOUT"]

SEED_KEY = "scenario.seed"
LOCAL, SYNC = "local", "sync"
"""``scheduler`` values: a new local Dask cluster (the default), or no Dask at all."""
CONNECT_TIMEOUT = 5.0
"""Seconds to reach an existing Dask scheduler (``--connect-timeout``) before giving up:
a closed port or a wrong host fails in this time, not Dask's own 30 s."""

Row = dict[str, Any]


# ---------------------------------------------------------------- the points
def parse_values(text: str) -> list[str]:
    """``"1,2,{a=1, b=2}"`` -> ``["1", "2", "{a=1, b=2}"]``: values split at the commas
    outside brackets, braces and quotes (a value is TOML, as for ``--set``)."""
    values: list[str] = []
    depth, quote, cur = 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            values.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    values.append("".join(cur).strip())
    if quote or depth:
        raise UserError("cannot read the values %r: an unclosed quote or bracket" % text)
    if any(not v for v in values):
        raise UserError("an empty value in %r (values are separated by commas)" % text)
    return values


def _key_values(option: str, text: str) -> tuple[str, list[str]]:
    key, sep, vals = text.partition("=")
    key = key.strip()
    if not sep or not key or not vals.strip():
        raise UserError("%s %s: expected KEY=V1,V2,... e.g. %s template.L=2,5" % (option, text, option))
    return key, parse_values(vals)


def toml_value(text: str) -> Any:
    """A swept value as the scenario reads it (a TOML value, else the text)."""
    try:
        parsed = tomllib.loads("v = " + text)
    except tomllib.TOMLDecodeError:
        return text
    return parsed["v"] if list(parsed) == ["v"] else text


@dataclass(frozen=True)
class Point:
    """One run of the sweep: the swept (key, value text) pairs in the order of the
    options, and the seed (``scenario.seed``)."""
    keys: tuple[tuple[str, str], ...]
    seed: int

    def overrides(self) -> list[str]:
        """The ``--set`` strings of this point, the seed last."""
        return ["%s=%s" % kv for kv in self.keys] + ["%s=%d" % (SEED_KEY, self.seed)]

    def label(self) -> str:
        """``template.L=2 template.R=5 seed=1``: the point in messages."""
        return " ".join(["%s=%s" % kv for kv in self.keys] + ["seed=%d" % self.seed])

    def folder(self) -> str:
        """The point's run folder name: its values readable, then a hash of its exact
        overrides (two points never share a folder)."""
        short = ",".join("%s=%s" % (k.rsplit(".", 1)[-1], v.strip("\"'")) for k, v in self.keys) or "base"
        short = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", short)[:80]
        digest = hashlib.sha256("\n".join(self.overrides()).encode()).hexdigest()[:8]
        return "%s,seed=%d-%s" % (short, self.seed, digest)


def plan(grids: Sequence[str], zips: Sequence[str] = (), seeds: int = 1, base_seed: int = 1) -> list[Point]:
    """The points of ``--grid KEY=V1,V2 ...`` (their product), ``--zip KEY=V1,V2 ...``
    (all zipped keys one dimension: their i-th values together) and *seeds* seeds from
    *base_seed* on, in a stable order (the first grid varies slowest, the seed fastest)."""
    if seeds < 1:
        raise UserError("--seeds must be at least 1, got %d" % seeds)
    dims: list[list[tuple[tuple[str, str], ...]]] = []
    seen: set[str] = set()

    def claim(option: str, key: str) -> None:
        if key in seen:
            raise UserError("%s %s: the key is swept twice" % (option, key))
        if key == SEED_KEY:
            raise UserError("%s %s: give the seeds with --seeds N" % (option, key))
        seen.add(key)

    for g in grids:
        key, vals = _key_values("--grid", g)
        claim("--grid", key)
        dims.append([((key, v),) for v in vals])
    if zips:
        zipped = [_key_values("--zip", z) for z in zips]
        n = len(zipped[0][1])
        for key, vals in zipped:
            claim("--zip", key)
            if len(vals) != n:
                raise UserError("--zip %s has %d values, %s has %d: zipped keys need as many"
                                % (key, len(vals), zipped[0][0], n))
        dims.append([tuple((key, vals[i]) for key, vals in zipped) for i in range(n)])
    points = []
    for combo in product(*dims):
        keys = tuple(kv for part in combo for kv in part)
        points.extend(Point(keys, base_seed + s) for s in range(seeds))
    return points


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


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[0] if text else "")


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


class _Sync:
    """The ``sync`` scheduler: the points one after another in this process."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, Callable[[], Row]]] = []

    def submit(self, index: int, fn: Callable[..., Row], *args: Any) -> None:
        self.pending.append((index, lambda: fn(*args)))

    def results(self) -> Iterable[tuple[int, Row | None, str]]:
        for index, call in self.pending:
            try:
                yield index, call(), ""
            except Exception as e:
                yield index, None, _error_text(e)

    def close(self) -> None:
        pass


def _warm() -> None:
    """A new worker's imports of what a point runs, before the first point."""
    from .. import run, scenario   # noqa: F401


class DaskPool:
    """A Dask client: a new local cluster (``address="local"``: one single-threaded
    worker process per core, or *workers*) or the scheduler at *address*
    (``tcp://host:8786``), given up after *connect_timeout* seconds.  :meth:`map` runs a
    function over items on it (``ibemu reproduce --full``); :func:`run_sweep` submits its
    points one by one.  A context manager: the local cluster ends with it."""

    def __init__(self, address: str = LOCAL, workers: int | None = None,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        import logging

        from distributed import Client, LocalCluster
        self.cluster = None
        if address == LOCAL:
            n = workers or os.cpu_count() or 1
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            self.client.run(_warm)          # every worker imports the engine now, all at once
        else:
            try:
                self.client = Client(address, timeout=connect_timeout)
            except (OSError, TimeoutError, ValueError) as e:
                why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise UserError("--scheduler %s: cannot reach the Dask scheduler within %g s (%s); is it running, "
                                "and is the address right? (--connect-timeout to wait longer)"
                                % (address, connect_timeout, why)) from None
        self.futures: dict[Any, int] = {}

    def __enter__(self) -> DaskPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(x) for x in items]``, the calls spread over the cluster's workers; the
        first call's error is raised here."""
        futures = self.client.map(fn, list(items), pure=False)
        try:
            return list(self.client.gather(futures))
        finally:
            for f in futures:
                f.cancel()

    def submit(self, index: int, fn: Callable[..., Row], *args: Any) -> None:
        fut = self.client.submit(fn, *args, pure=False, key="ibemu-point-%d-%s" % (index, os.urandom(4).hex()))
        self.futures[fut] = index

    def results(self) -> Iterable[tuple[int, Row | None, str]]:
        from distributed import as_completed
        for fut in as_completed(list(self.futures)):
            index = self.futures[fut]
            try:
                yield index, fut.result(), ""
            except Exception as e:          # the point's own error, or its worker lost (KilledWorker)
                yield index, None, _error_text(e)

    def close(self) -> None:
        for fut in self.futures:
            fut.cancel()
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


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

    runner: _Sync | DaskPool | None = None
    try:
        if todo:
            runner = _Sync() if scheduler == SYNC else DaskPool(scheduler, workers, connect_timeout)
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


# ---------------------------------------------------------------- the tables and the plot
def _metric_names(rows: Sequence[Row], keys: Sequence[str]) -> list[str]:
    fixed = {"point", "seed", "status", "error", *keys}
    names: list[str] = []
    for row in rows:
        for k, v in row.items():
            if k not in fixed and k not in names and isinstance(v, (int, float)) and not isinstance(v, bool):
                names.append(k)
    return names


def aggregate(rows: Sequence[Row], keys: Sequence[str]) -> list[Row]:
    """Per combination of the swept *keys*' values (the finished rows), each metric's
    mean over the seeds, ``<metric>:ci95`` the half-width of its 95 % confidence interval
    (Student's t with n-1 degrees of freedom: t * s / sqrt(n); NaN for one seed) and
    ``n`` the number of seeds."""
    from scipy.stats import t as student_t
    ok = [r for r in rows if r.get("status") == "ok"]
    metrics = _metric_names(ok, keys)
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for r in ok:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    out = []
    for combo, members in groups.items():
        agg: Row = dict(zip(keys, combo))
        agg["n"] = len(members)
        for m in metrics:
            xs = [float(r[m]) for r in members if isinstance(r.get(m), (int, float)) and not math.isnan(r[m])]
            n = len(xs)
            mean = sum(xs) / n if n else math.nan
            if n >= 2:
                s = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
                half = float(student_t.ppf(0.975, n - 1)) * s / math.sqrt(n)
            else:
                half = math.nan
            agg[m] = mean
            agg[m + ":ci95"] = half
        out.append(agg)
    return out


def _columns(rows: Sequence[Row]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    return cols


def _write_table(rows: Sequence[Row], keys: Sequence[str], csv_path: Path, parquet_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    cols = _columns(rows)
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r.get(c) is None else toml_value(r[c]) if c in keys and isinstance(r[c], str)
                        else r[c] for c in cols])
    arrays = {}
    for c in cols:
        values = [r.get(c) for r in rows]
        if c in keys:                     # a swept key: its TOML value, as text when the types differ
            typed = [toml_value(v) if isinstance(v, str) else v for v in values]
            kinds = {type(v) for v in typed if v is not None}
            values = typed if kinds in ({int}, {float}, {bool}, {str}) else [None if v is None else str(v)
                                                                            for v in values]
            if kinds == {int, float}:
                values = [None if v is None else float(v) for v in typed]
        arrays[c] = pa.array(values)
    pq.write_table(pa.table(arrays), parquet_path)


def write_tables(result: SweepResult, keys: Sequence[str], out: str | Path) -> list[Row]:
    """sweep.csv/.parquet (every row) and aggregate.csv/.parquet (mean and CI over the
    seeds) into *out*; returns the aggregate rows."""
    out = Path(out)
    _write_table(result.rows, keys, out / "sweep.csv", out / "sweep.parquet")
    agg = aggregate(result.rows, keys)
    _write_table(agg, keys, out / "aggregate.csv", out / "aggregate.parquet")
    return agg


def plot_sweep(agg: Sequence[Row], metric: str, x: str, lines: Sequence[str], path: str | Path) -> None:
    """*metric*'s mean (error bars: the 95 % CI) over the swept key *x*, one line per
    combination of the *lines* keys' values."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.4, 4.2), tight_layout=True)
    ax = fig.add_subplot()
    series: dict[tuple[Any, ...], list[Row]] = {}
    for r in agg:
        series.setdefault(tuple(r.get(k) for k in lines), []).append(r)
    numeric = all(isinstance(toml_value(str(r.get(x))), (int, float)) for r in agg)

    def xval(r: Row) -> Any:
        return toml_value(str(r.get(x))) if numeric else str(r.get(x))

    for combo, rs in sorted(series.items(), key=lambda kv: [str(v) for v in kv[0]]):
        rs = sorted(rs, key=xval) if numeric else rs
        ys = [r.get(metric, math.nan) for r in rs]
        errs = [0.0 if math.isnan(r.get(metric + ":ci95", math.nan)) else r[metric + ":ci95"] for r in rs]
        label = ", ".join("%s=%s" % (k.rsplit(".", 1)[-1], v) for k, v in zip(lines, combo)) or metric
        ax.errorbar([xval(r) for r in rs], ys, yerr=errs, marker="o", capsize=3, label=label)
    ax.set_xlabel(x)
    ax.set_ylabel(metric + " (mean, 95 % CI)")
    ax.set_title("%s over %s" % (metric, x), fontsize=9)
    if lines:
        ax.legend(fontsize=7)
    fig.savefig(str(path), dpi=110)
