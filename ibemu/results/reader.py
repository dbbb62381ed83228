"""Reading a run's output folder back (what :func:`~ibemu.results.outputs.write_outputs`
wrote, on either clock): :func:`load_results` gives a :class:`Results` with the
results.json summary, and the CSV time series as numpy arrays -- no pandas needed.

latency.csv has one row per flow and group (:meth:`Results.latency`).
flows.csv / links.csv / counters.csv all have a ``time_ms`` column and one column per
series; :func:`read_series` returns ``{column: array}`` (an empty cell, a rate without a
link capacity, is NaN).  traces.csv is a long table; :func:`read_traces` returns
``{(kind, key): (time_ms, value)}``.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Series = dict[str, np.ndarray]
"""Column name -> values (float64), ``time_ms`` first."""


def _number(cell: str) -> float:
    return float(cell) if cell else float("nan")


def read_series(path: str | Path) -> Series:
    """A time-series CSV (flows.csv, links.csv, counters.csv) as ``{column: array}``."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return {}
    head, body = rows[0], rows[1:]
    return {name: np.array([_number(r[i]) for r in body], dtype=np.float64)
            for i, name in enumerate(head)}


def read_traces(path: str | Path) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """traces.csv as ``{(kind, key): (time_ms, value)}`` (e.g. ``("CCTI", "f1")``)."""
    points: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            ts, vs = points.setdefault((row["kind"], row["key"]), ([], []))
            ts.append(float(row["time_ms"]))
            vs.append(_number(row["value"]))
    return {k: (np.array(ts, dtype=np.float64), np.array(vs, dtype=np.float64))
            for k, (ts, vs) in points.items()}


@dataclass(frozen=True)
class Results:
    """A run's output folder, read back by :func:`load_results`.

    *summary* is results.json's ``summary`` (flows, groups, links, fairness, counters;
    see :func:`ibemu.results.summary.summarize`); *data* the whole results.json (with
    ``extra``, ``traces``, ``ports``, ``events`` when the run had them).  The series are
    read from their CSV files when asked for.
    """
    path: Path
    scenario: str
    seed: int
    duration_ps: int
    summary: dict[str, Any]
    data: dict[str, Any] = field(repr=False)

    def flows(self) -> Series:
        """flows.csv: each flow's and ``group:<name>``'s delivered rate, fraction of its link."""
        return read_series(self.path / "flows.csv")

    def links(self) -> Series:
        """links.csv: each directed link's utilization (all frames) and ``<label>:data``."""
        return read_series(self.path / "links.csv")

    def counters(self) -> Series:
        """counters.csv: busy ports' counters (``node:port:PortXmitData`` ...) over time."""
        return read_series(self.path / "counters.csv")

    def latency(self) -> dict[str, dict[str, str]]:
        """latency.csv: name -> its row (``kind`` flow or group, ``messages``,
        ``p50_us``, ``p99_us``, ``max_us``, ``completion_us`` ...; empty: no value)."""
        with open(self.path / "latency.csv", newline="", encoding="utf-8") as fh:
            return {row["name"]: row for row in csv.DictReader(fh)}

    def traces(self) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        """traces.csv: congestion-control variables over time (empty without any)."""
        path = self.path / "traces.csv"
        return read_traces(path) if path.exists() else {}

    def config(self) -> dict[str, Any]:
        """config.json: the scenario as it was resolved for the run."""
        loaded: dict[str, Any] = json.loads((self.path / "config.json").read_text(encoding="utf-8"))
        return loaded


def load_results(run_dir: str | Path) -> Results:
    """The output folder *run_dir* of a run (``ibemu run --out``, ``run_virtual(out_dir=)``)."""
    path = Path(run_dir)
    data: dict[str, Any] = json.loads((path / "results.json").read_text(encoding="utf-8"))
    return Results(path=path, scenario=data["scenario"], seed=data["seed"],
                   duration_ps=data["duration_ps"], summary=data["summary"], data=data)
