"""A sweep's output folder as pandas DataFrames, for notebooks (issue 18 item 4: "Sweep
tables load the same way" as a run, :mod:`ibemu.results.frames`).

``ibemu sweep ... --out DIR`` (:mod:`ibemu.studies.sweep`) writes ``DIR/sweep.csv`` (one
row per point and seed: ``point``, the swept keys, ``seed``, ``status``, ``error``, the
headline metrics), ``DIR/aggregate.csv`` (per combination of swept values: the mean over
the seeds, ``<metric>:ci95``, ``n``) and each point's run folder ``DIR/points/<point>/``.
``ibemu.load_sweep(DIR)`` returns a :class:`Sweep`::

    import ibemu
    sw = ibemu.load_sweep("sweeps/fig1")
    sw.keys                     # the swept keys, in the sweep's order: ("template.buffer_packets", ...)
    sw.points()                 # sweep.csv (index: point), a row per point and seed
    sw.aggregate()              # aggregate.csv: mean and 95 % CI half-width over the seeds
    sw.run(point)               # that point's run: an ibemu.Run (ibemu.load_run of its folder)
    sw.runs()                   # every finished point's Run, by point name

The tables are the CSV files read as they are (sweep.parquet and aggregate.parquet hold
the same rows with the swept values typed; ``pandas.read_parquet`` reads them where
pyarrow, the sweep extra, is installed).  pandas is the analysis extra
(``pip install 'ibemu[analysis]'``); :func:`load_sweep` itself needs only the standard
library.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .frames import Run, load_run, pandas_module

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Sweep", "load_sweep", "SWEEP_TABLE", "AGGREGATE_TABLE"]

SWEEP_TABLE, AGGREGATE_TABLE = "sweep.csv", "aggregate.csv"
_FIXED = ("point", "seed")          # sweep.csv: point, the swept keys, seed, status, error, metrics


@dataclass(frozen=True)
class Sweep:
    """A sweep's output folder (:func:`load_sweep`)."""
    path: Path
    keys: tuple[str, ...]
    """The swept keys (``--grid`` / ``--zip`` keys), as columns of both tables."""

    def points(self) -> pd.DataFrame:
        """sweep.csv: a row per point and seed, indexed by the point's folder name."""
        return pandas_module().read_csv(self.path / SWEEP_TABLE, index_col="point",
                                        keep_default_na=False, na_values=[""])

    def aggregate(self) -> pd.DataFrame:
        """aggregate.csv: per combination of the swept values (columns :attr:`keys`),
        ``n`` seeds, each metric's mean and ``<metric>:ci95`` (NaN with one seed)."""
        pd = pandas_module()
        path = self.path / AGGREGATE_TABLE
        if not path.exists() or not path.read_text(encoding="utf-8").strip():
            return pd.DataFrame(columns=[*self.keys, "n"])
        return pd.read_csv(path, keep_default_na=False, na_values=[""])

    def point_names(self) -> list[str]:
        """The points of sweep.csv, in its order (failed ones too)."""
        with open(self.path / SWEEP_TABLE, newline="", encoding="utf-8") as fh:
            return [row["point"] for row in csv.DictReader(fh)]

    def run(self, point: str) -> Run:
        """The run of *point* (a name of :meth:`point_names`), read by :func:`load_run`."""
        folder = self.path / "points" / point
        if point not in self.point_names():
            raise KeyError("%s: no point %r in %s" % (self.path, point, SWEEP_TABLE))
        if not (folder / "results.json").exists():
            raise FileNotFoundError("%s: point %r has no run (it failed, or its folder was removed)"
                                    % (self.path, point))
        return load_run(folder)

    def runs(self) -> dict[str, Run]:
        """Every point with a finished run, by point name, in sweep.csv's order."""
        return {p: load_run(self.path / "points" / p) for p in self.point_names()
                if (self.path / "points" / p / "results.json").exists()}


def is_sweep(folder: str | Path) -> bool:
    """Whether *folder* is a sweep's output folder (it has sweep.csv, and no results.json)."""
    f = Path(folder)
    return (f / SWEEP_TABLE).is_file() and not (f / "results.json").exists()


def load_sweep(sweep_dir: str | Path) -> Sweep:
    """The output folder *sweep_dir* of ``ibemu sweep --out`` as a :class:`Sweep` (its
    tables need pandas: ``pip install 'ibemu[analysis]'``)."""
    path = Path(sweep_dir)
    table = path / SWEEP_TABLE
    try:
        with open(table, newline="", encoding="utf-8") as fh:
            head = next(csv.reader(fh), [])
    except FileNotFoundError:
        hint = " (a run's folder: ibemu.load_run reads it)" if (path / "results.json").exists() else ""
        raise FileNotFoundError("%s: no %s, not a sweep's folder%s" % (path, SWEEP_TABLE, hint)) from None
    if not head or head[0] != _FIXED[0] or _FIXED[1] not in head:
        raise ValueError("%s: not the table ibemu sweep writes (expected columns point, <keys>, seed, ...)"
                         % table)
    return Sweep(path=path, keys=tuple(head[1:head.index(_FIXED[1])]))
