"""A sweep's tables and plot (issue 17 Deliver 1): the aggregate over seeds (mean and the
95 % confidence interval, Student's t), one table written as CSV and Parquet, and the
plot of a metric over a swept key."""
from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .sweep_plan import Row, toml_value


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


def write_table(rows: Sequence[Row], keys: Sequence[str], csv_path: Path, parquet_path: Path) -> None:
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
