"""ibemu.load_sweep (issue 18 item 4, "sweep tables load the same way"): a small real sweep
(quickstart, 0.3 ms, f1 ON/OFF so the seed matters; 2 values x 2 seeds, in this process)
read back as DataFrames, compared with each point's point.json and aggregate.csv, and each
point's run through ibemu.load_run."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

import ibemu
from ibemu.resources import scenario_source
from ibemu.studies import sweep as S

pd = pytest.importorskip("pandas", reason="pandas is the analysis extra: pip install 'ibemu[analysis]'")
pytest.importorskip("pyarrow", reason="ibemu sweep writes Parquet too: pip install 'ibemu[sweep]'")
pytest.importorskip("scipy", reason="ibemu sweep's confidence intervals: pip install 'ibemu[sweep]'")

COMMON = ['scenario.duration="0.3ms"', 'flow[0].pattern="onoff"', 'flow[0].mean_on="20us"',
          'flow[0].mean_off="20us"']
KEYS = ["flow[1].window"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    pts = S.plan(["flow[1].window=1,4"], seeds=2, base_seed=1)
    res = S.run_sweep(str(scenario_source("quickstart")), pts, out, common=COMMON, scheduler=S.SYNC,
                      progress=False)
    assert res.ran == 4 and not res.failed
    S.write_tables(res, KEYS, out)
    return out


def _point_rows(sweep_dir: Path) -> dict[str, dict]:
    return {f.parent.name: json.loads(f.read_text())["row"] for f in (sweep_dir / "points").glob("*/point.json")}


def test_points_table_equals_each_points_json(sweep_dir: Path) -> None:
    sw = ibemu.load_sweep(sweep_dir)
    assert isinstance(sw, ibemu.Sweep) and sw.keys == ("flow[1].window",)
    df = sw.points()
    rows = _point_rows(sweep_dir)
    assert sorted(df.index) == sorted(rows) and len(rows) == 4 and sw.point_names() == list(df.index)
    metrics = [c for c in rows[next(iter(rows))] if c.startswith(("flow:", "link:")) or c == "jain"]
    assert "flow:f1" in metrics and "link:bottleneck" in metrics
    for point, row in rows.items():
        got = df.loc[point]
        assert got["flow[1].window"] == int(row["flow[1].window"]) and got["seed"] == row["seed"]
        assert got["status"] == "ok" and pd.isna(got["error"])
        for m in metrics:
            assert got[m] == row[m], (point, m)           # the CSV keeps Python's float repr: exact
    assert df["flow:f1"].nunique() > 2                     # the seed and the window change the figures


def test_aggregate_equals_the_csv_and_the_mean_of_the_points(sweep_dir: Path) -> None:
    sw = ibemu.load_sweep(sweep_dir)
    agg = sw.aggregate()
    with (sweep_dir / "aggregate.csv").open(newline="") as f:
        raw = list(csv.DictReader(f))
    assert list(agg.columns) == list(raw[0]) and len(agg) == len(raw) == 2
    assert sorted(agg["flow[1].window"]) == [1, 4] and set(agg["n"]) == {2}
    pts = sw.points()
    for _, a in agg.iterrows():
        members = pts[pts["flow[1].window"] == a["flow[1].window"]]
        assert a["flow:f1"] == pytest.approx(members["flow:f1"].mean(), rel=1e-12)
        assert a["flow:f1:ci95"] > 0 and math.isfinite(a["flow:f1:ci95"])
    for a, r in zip(agg.to_dict("records"), raw):
        assert a["jain"] == float(r["jain"])


def test_each_points_run_loads_through_load_run(sweep_dir: Path) -> None:
    sw = ibemu.load_sweep(sweep_dir)
    runs = sw.runs()
    pts = sw.points()
    assert list(runs) == list(pts.index)
    for point, run in runs.items():
        assert isinstance(run, ibemu.Run) and run.path == sweep_dir / "points" / point
        assert run.seed == pts.loc[point, "seed"]
        # results.json keeps 9 significant digits, the sweep's row the full float
        assert run.summary["flows"]["f1"]["normalized"] == pytest.approx(pts.loc[point, "flow:f1"], rel=1e-8)
        assert run.scenario["flow"][1]["window"] == pts.loc[point, "flow[1].window"]
        assert run.flow_table().loc["f1", "normalized"] == pytest.approx(pts.loc[point, "flow:f1"], rel=1e-5)
    assert sw.run(pts.index[0]).summary == runs[pts.index[0]].summary
    with pytest.raises(KeyError, match="no point 'nope'"):
        sw.run("nope")


def test_run_and_sweep_folders_are_told_apart(sweep_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"is a sweep's folder .*ibemu.load_sweep"):
        ibemu.load_run(sweep_dir)
    point = next((sweep_dir / "points").iterdir())
    with pytest.raises(FileNotFoundError, match=r"not a sweep's folder \(a run's folder: ibemu.load_run reads it\)"):
        ibemu.load_sweep(point)
