"""A run's output folder as pandas DataFrames, for notebooks (issue 18 item 4).

``ibemu.load_run(RUN_DIR)`` returns a :class:`Run`::

    import ibemu
    run = ibemu.load_run("runs/santos_fig1")
    run.name, run.seed, run.duration_ms, run.scenario      # config.json: the resolved scenario
    run.summary["fairness"]["jain"]                       # results.json's summary, as a dict
    run.flow_table()        # one row per flow (index: flow): group, src, dst, throughput_gbps, normalized, ...
    run.link_table()        # one row per directed link (index: label): level, utilization, ...
    run.flows()             # rate over time (index: time_ms; a column per flow and group:<name>)
    run.links()             # utilization over time (a column per link); run.links(data=True): data frames only
    run.ports()             # port counters over time, columns (port, counter) (counters.csv)
    run.port_totals()       # the counters at the end (index: port; results.json "ports")
    run.latency()           # per flow and group: messages, p50_us, p99_us, max_us, mean_us, completion_us
    run.traces()            # congestion-control variables, long form: kind, key, time_ms, value
    run.events()            # logged events: time_ms, source, text
    run.jobs()              # per job (issue 29): ranks, completion_us, iteration p50/p99/max, slowdown
    run.job_iterations()    # per job, operation and iteration: op, iteration_us

The numbers are the run's own files (flow_table.csv, links.csv ... results.json), read
as they are.  pandas is an optional dependency: ``pip install 'ibemu[analysis]'``;
:func:`load_run` itself needs it only when a table is asked for.  ``Run.results`` is the
numpy-only :class:`~ibemu.results.reader.Results` of the same folder.  A sweep's folder
(``ibemu sweep --out``): ``ibemu.load_sweep`` (:mod:`ibemu.results.sweep_frames`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .reader import Results, load_results

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Run", "load_run", "pandas_module"]


def pandas_module() -> Any:
    """pandas, or an ImportError naming the extra that installs it."""
    try:
        import pandas
    except ImportError:
        raise ImportError("ibemu's DataFrames (load_run, load_sweep) need pandas: pip install 'ibemu[analysis]'") \
            from None
    return pandas


@dataclass(frozen=True)
class Run:
    """One run's output folder (:func:`load_run`)."""
    results: Results
    scenario: dict[str, Any] = field(repr=False)
    """config.json: the scenario as resolved for the run (empty when the folder has none)."""

    @property
    def path(self) -> Path:
        return self.results.path

    @property
    def name(self) -> str:
        return self.results.scenario

    @property
    def seed(self) -> int:
        return self.results.seed

    @property
    def duration_ms(self) -> float:
        return self.results.duration_ps / 1e9

    @property
    def summary(self) -> dict[str, Any]:
        """results.json's ``summary`` (flows, groups, links, fairness, counters)."""
        return self.results.summary

    @property
    def data(self) -> dict[str, Any]:
        """The whole results.json."""
        return self.results.data

    def _csv(self, name: str, **kw: Any) -> pd.DataFrame:
        pd = pandas_module()
        path = self.path / name
        if not path.exists():
            return pd.DataFrame()
        return pd.read_csv(path, **kw)

    def flow_table(self) -> pd.DataFrame:
        """flow_table.csv: one row per flow, indexed by its name."""
        return self._csv("flow_table.csv", index_col="name", keep_default_na=False, na_values=[""])

    def link_table(self) -> pd.DataFrame:
        """link_table.csv: one row per directed link, indexed by its label."""
        return self._csv("link_table.csv", index_col="label", keep_default_na=False, na_values=[""])

    def flows(self) -> pd.DataFrame:
        """flows.csv: each flow's (and ``group:<name>``'s) delivered rate per time bin,
        a fraction of its source link; index ``time_ms`` (the bin's centre)."""
        return self._csv("flows.csv", index_col="time_ms")

    def links(self, data: bool = False) -> pd.DataFrame:
        """links.csv: each directed link's utilization per time bin (all frames, or
        with *data* the data packets only); one column per link label."""
        df = self._csv("links.csv", index_col="time_ms")
        if data:
            cols = [c for c in df.columns if c.endswith(":data")]
            return df[cols].rename(columns=lambda c: c[:-len(":data")])
        return df[[c for c in df.columns if not c.endswith(":data")]]

    def ports(self) -> pd.DataFrame:
        """counters.csv: the busy ports' counters (running totals) at each sample time;
        columns a (port, counter) MultiIndex, e.g. ``df["S:4", "PortXmitData"]``."""
        pd = pandas_module()
        df = self._csv("counters.csv", index_col="time_ms")
        if df.empty:
            return df
        df.columns = pd.MultiIndex.from_tuples([tuple(c.rsplit(":", 1)) for c in df.columns],
                                               names=["port", "counter"])
        return df

    def port_totals(self) -> pd.DataFrame:
        """results.json ``ports``: every port's counters at the end, one row per port."""
        pd = pandas_module()
        ports = self.data.get("ports") or {}
        return pd.DataFrame.from_dict(ports, orient="index").rename_axis("port")

    def latency(self) -> pd.DataFrame:
        """latency.csv: per flow and group (``kind``), indexed by name; times in µs."""
        return self._csv("latency.csv", index_col="name", keep_default_na=False, na_values=[""])

    def traces(self) -> pd.DataFrame:
        """traces.csv, long form: ``kind`` (CCTI, injection_rate, CWND, FECN_marks ...),
        ``key`` (its owner), ``time_ms``, ``value``: every change of every traced variable."""
        pd = pandas_module()
        df = self._csv("traces.csv", dtype={"kind": str, "key": str})
        return df if not df.empty else pd.DataFrame(columns=["kind", "key", "time_ms", "value"])

    def events(self) -> pd.DataFrame:
        """results.json ``events``: time_ms, source, text."""
        pd = pandas_module()
        return pd.DataFrame(self.data.get("events") or [], columns=["time_ms", "source", "text"])

    def jobs(self) -> pd.DataFrame:
        """results.json ``summary["jobs"]`` (issue 29), one row per job, indexed by its
        name; times in µs (:mod:`ibemu.results.jobs`)."""
        pd = pandas_module()
        rows = []
        for name, d in (self.summary.get("jobs") or {}).items():
            it, rc = d.get("iteration") or {}, d.get("rank_completion") or {}
            rows.append({"job": name, "ranks": d["ranks"], "completed": d["completed"],
                         "completion_us": _us(d.get("completion_ps")), "rank_p50_us": _us(rc.get("p50_ps")),
                         "rank_p99_us": _us(rc.get("p99_ps")), "rank_max_us": _us(rc.get("max_ps")),
                         "iteration_p50_us": _us(it.get("p50_ps")), "iteration_p99_us": _us(it.get("p99_ps")),
                         "iteration_max_us": _us(it.get("max_ps")), "baseline_us": _us(d.get("baseline_ps")),
                         "slowdown": d.get("slowdown")})
        return pd.DataFrame(rows, columns=["job", "ranks", "completed", "completion_us", "rank_p50_us",
                                           "rank_p99_us", "rank_max_us", "iteration_p50_us", "iteration_p99_us",
                                           "iteration_max_us", "baseline_us", "slowdown"]).set_index("job")

    def job_iterations(self) -> pd.DataFrame:
        """Every iteration of every job's operations, long form: ``job``, ``op_index``,
        ``op``, ``iteration``, ``iteration_us`` (empty while unfinished)."""
        pd = pandas_module()
        rows = [{"job": name, "op_index": i, "op": o["op"], "iteration": k, "iteration_us": _us(t)}
                for name, d in (self.summary.get("jobs") or {}).items()
                for i, o in enumerate(d["ops"]) for k, t in enumerate(o["iteration_ps"])]
        return pd.DataFrame(rows, columns=["job", "op_index", "op", "iteration", "iteration_us"])


def _us(ps: float | None) -> float | None:
    return None if ps is None else ps / 1e6


def load_run(run_dir: str | Path) -> Run:
    """The output folder *run_dir* of a run (``ibemu run --out``, ``run_virtual(out_dir=)``)
    as a :class:`Run` (its tables need pandas: ``pip install 'ibemu[analysis]'``).  A
    sweep's folder is refused naming :func:`ibemu.load_sweep`, which reads it."""
    path = Path(run_dir)
    if not (path / "results.json").exists() and (path / "sweep.csv").is_file():
        raise FileNotFoundError("%s is a sweep's folder (sweep.csv, points/): ibemu.load_sweep(%r) reads it, "
                                "and .run(point) each point's run" % (path, str(path)))
    res = load_results(run_dir)
    cfg = res.path / "config.json"
    scenario = json.loads(cfg.read_text(encoding="utf-8")) if cfg.exists() else {}
    return Run(results=res, scenario=scenario)
