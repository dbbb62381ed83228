"""``ibemu sweep`` (issue 17 Deliver 1): the points of a grid run on a local Dask cluster,
the tables, the aggregate over seeds, resume and a failing point.

The scenario is the shipped quickstart shrunk to 0.5 ms with f1 ON/OFF, so the seed
changes the result and the confidence interval is not trivially zero."""
from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq          # the sweep extra, in the test extra: CI has it
import pytest

from ibemu.cli import main
from ibemu.resources import scenario_source
from ibemu.run import run_virtual
from ibemu.scenario import load_scenario
from ibemu.studies import sweep as S

SOURCE = str(scenario_source("quickstart"))
COMMON = ['scenario.duration="0.5ms"', 'flow[0].pattern="onoff"', 'flow[0].mean_on="20us"',
          'flow[0].mean_off="20us"']
GRID = ["flow[1].window=1,2", 'defaults.switch.buffer="2 packets","4 packets"']
KEYS = ["flow[1].window", "defaults.switch.buffer"]


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_values_split_outside_brackets_and_quotes():
    assert S.parse_values('1, 2,{a=1, b=2},"x,y",[1,2]') == ["1", "2", "{a=1, b=2}", '"x,y"', "[1,2]"]
    with pytest.raises(S.UserError):
        S.parse_values("1,,2")
    with pytest.raises(S.UserError):
        S.parse_values("{a=1")


def test_plan_is_the_product_of_grids_times_the_zip_times_the_seeds():
    pts = S.plan(["a.x=1,2,3", "a.y=p,q"], ["b.u=10,20", "b.v=30,40"], seeds=2, base_seed=5)
    assert len(pts) == 3 * 2 * 2 * 2
    assert pts[0].keys == (("a.x", "1"), ("a.y", "p"), ("b.u", "10"), ("b.v", "30"))
    assert [p.seed for p in pts[:2]] == [5, 6]
    assert pts[2].keys[2:] == (("b.u", "20"), ("b.v", "40"))           # zipped: together
    assert pts[-1].keys[:2] == (("a.x", "3"), ("a.y", "q"))
    assert pts[0].overrides() == ["a.x=1", "a.y=p", "b.u=10", "b.v=30", "scenario.seed=5"]
    assert len({p.folder() for p in pts}) == len(pts)
    for bad in (dict(grids=["a.x=1", "a.x=2"]), dict(grids=["scenario.seed=1,2"]), dict(grids=["a.x"]),
                dict(grids=[], zips=["a=1,2", "b=1"]), dict(grids=["a=1"], seeds=0)):
        with pytest.raises(S.UserError):
            S.plan(**bad)


def test_a_2x2_grid_with_2_seeds_on_a_local_dask_cluster(tmp_path):
    out = tmp_path / "sw"
    pts = S.plan(GRID, seeds=2, base_seed=1)
    res = S.run_sweep(SOURCE, pts, out, common=COMMON, workers=2, progress=False)
    assert (res.ran, res.reused, res.failed, res.interrupted) == (8, 0, [], False)
    agg = S.write_tables(res, KEYS, out)

    rows = _csv(out / "sweep.csv")
    assert len(rows) == 8
    table = pq.read_table(out / "sweep.parquet").to_pylist()
    assert len(table) == 8 and {r["seed"] for r in table} == {1, 2}
    assert sorted(r["flow[1].window"] for r in table) == [1, 1, 1, 1, 2, 2, 2, 2]     # typed: TOML ints
    assert {r["defaults.switch.buffer"] for r in table} == {"2 packets", "4 packets"}

    # each row is the point's own run: the same overrides run here give the same figures
    for p, row in zip(pts, res.rows):
        assert (out / "points" / p.folder() / "results.json").exists()
        summary = run_virtual(load_scenario(SOURCE, [*COMMON, *p.overrides()])).summary
        assert row["flow:f1"] == summary["flows"]["f1"]["normalized"]
        assert row["flow:f2"] == summary["flows"]["f2"]["normalized"]
        assert row["link:bottleneck"] == summary["links"]["bottleneck"]["data_utilization"]
        assert row["jain"] == summary["fairness"]["jain"]
    # the seed matters here (ON/OFF), so the two seeds of a point differ
    assert res.rows[0]["flow:f1"] != res.rows[1]["flow:f1"]

    # the aggregate: mean and the 95 % CI half-width t(0.975, n-1) * s / sqrt(n), recomputed
    assert len(agg) == 4
    t975_1 = math.tan(math.pi * (0.975 - 0.5))     # Student's t with 1 degree of freedom is Cauchy's
    for a in agg:
        xs = [r["flow:f1"] for r in res.rows if r["flow[1].window"] == a["flow[1].window"]
              and r["defaults.switch.buffer"] == a["defaults.switch.buffer"]]
        assert a["n"] == len(xs) == 2
        mean = (xs[0] + xs[1]) / 2
        s = math.sqrt(((xs[0] - mean) ** 2 + (xs[1] - mean) ** 2) / 1)
        assert a["flow:f1"] == pytest.approx(mean)
        assert a["flow:f1:ci95"] == pytest.approx(t975_1 * s / math.sqrt(2))
    assert len(_csv(out / "aggregate.csv")) == 4
    assert len(pq.read_table(out / "aggregate.parquet")) == 4

    S.plot_sweep(agg, "flow:f1", KEYS[0], [KEYS[1]], out / "sweep.png")
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_interrupted_sweep_resumes_without_running_finished_points(tmp_path):
    out = tmp_path / "sw"
    pts = S.plan(GRID, seeds=1, base_seed=1)
    seen = []

    def stop_after_two(point, row):
        seen.append(point)
        if len(seen) == 2:
            raise KeyboardInterrupt

    first = S.run_sweep(SOURCE, pts, out, common=COMMON, workers=2, progress=False, on_row=stop_after_two)
    assert first.interrupted and first.ran == 2 and len(first.rows) == 2
    finished = {p.folder() for p in seen}
    stamps = {f: (out / "points" / f / "results.json").stat().st_mtime_ns for f in finished}

    second = S.run_sweep(SOURCE, pts, out, common=COMMON, workers=2, progress=False)
    assert (second.reused, second.ran, second.failed, second.interrupted) == (2, 2, [], False)
    assert [r["point"] for r in second.rows] == [p.folder() for p in pts]
    for f, stamp in stamps.items():                  # not run again
        assert (out / "points" / f / "results.json").stat().st_mtime_ns == stamp
    third = S.run_sweep(SOURCE, pts, out, common=COMMON, scheduler=S.SYNC, progress=False)
    assert (third.reused, third.ran) == (4, 0)
    assert json.dumps(third.rows) == json.dumps(second.rows)       # NaN (no victim) compares as text


def test_a_failing_point_is_reported_and_the_others_go_on(tmp_path, capsys):
    out = tmp_path / "sw"
    # window=0 is refused by the scenario; window=3's run folder cannot be written (a file is in its place)
    pts = S.plan(["flow[1].window=1,0,3"], base_seed=1)
    (out / "points").mkdir(parents=True)
    (out / "points" / pts[2].folder()).write_text("in the way")
    code = main(["sweep", SOURCE, "--grid", "flow[1].window=1,0,3", "--out", str(out), "--workers", "2", "-q",
                 *[a for c in COMMON for a in ("--set", c)]])
    err = capsys.readouterr().err
    assert code == 1
    assert "failed point flow[1].window=0 seed=1" in err and "must be at least 1" in err
    assert "failed point flow[1].window=3 seed=1" in err
    rows = _csv(out / "sweep.csv")
    assert [r["status"] for r in rows] == ["ok", "failed", "failed"]
    assert rows[0]["flow:f1"] and not rows[1]["flow:f1"]
    assert (out / "points" / pts[0].folder() / "point.json").exists()


def test_a_bad_grid_key_is_one_line_and_runs_nothing(tmp_path, capsys):
    out = tmp_path / "sw"
    code = main(["sweep", "quickstart", "--grid", "scenario.bogus=1,2", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "scenario.bogus: unknown key" in err and "Traceback" not in err
    assert not (out / "sweep.csv").exists()
    assert main(["sweep", "quickstart", "--grid", "flow[1].window"]) == 2
    assert "expected KEY=V1,V2" in capsys.readouterr().err


# ---------------------------------------------------------------- ibemu reproduce --full (Deliver 2)
class _Recorded(Exception):
    pass


def _recorder(calls):
    def mapper(fn, items):
        calls.append((fn, list(items)))
        raise _Recorded
    return mapper


def test_reproduce_full_hands_a_figures_whole_sweep_to_the_mapper_at_once():
    from ibemu.studies.cca.experiments import run_case_of
    from ibemu.studies.cca.reproduce import _fig4
    from ibemu.studies.hp.figure_runs import measure_spec
    from ibemu.studies.hp.figures import run_fig5
    from ibemu.studies.reproduction import RunCache
    from ibemu.units import PS_PER_MS
    calls = []
    with pytest.raises(_Recorded):             # the mapper stops it: nothing is run here
        run_fig5(None, True, RunCache(mapper=_recorder(calls)))
    (fn, specs), = calls
    assert fn is measure_spec
    assert len(specs) == 8 * 5                 # seed 003 Fig. 5: buffers 2..16 x thresholds none, 4, 6, 8, 16
    assert {s[0].duration for s in specs} == {500 * PS_PER_MS}
    assert len({s[0].name for s in specs}) == 40
    calls.clear()
    with pytest.raises(_Recorded):
        _fig4(None, True, RunCache(mapper=_recorder(calls)))
    (fn, cases), = calls
    assert fn is run_case_of and len(cases) == 7 * 3     # seed 002 Fig. 4: Marking_Rate x CCTI_Timer


def test_run_cache_map_on_dask_equals_the_runs_in_this_process():
    from ibemu.studies.hp.experiments import fig1
    from ibemu.studies.hp.figure_runs import measure_spec
    from ibemu.studies.reproduction import RunCache
    specs = [(fig1(2, 1, b, 2.0, victim=(0.5, 1.5), name="t%d" % b), 0.5, 2.0, None) for b in (2, 4, 8)]
    here = [measure_spec(s) for s in specs]
    with S.DaskPool(workers=2) as pool:
        cache = RunCache(mapper=pool.map)
        there = cache.get_many([("t", b) for b in (2, 4, 8)], measure_spec, specs)
        again = cache.get_many([("t", 4)], measure_spec, [None])     # memoised: not computed again
    strip = lambda ms: [{k: v for k, v in m.items() if k != "wall_s"} for m in ms]
    assert strip(there) == strip(here)
    assert strip(again) == strip(here[1:2])
    assert RunCache().map(len, ["ab", "c"]) == [2, 1]


# ---------------------------------------------------------------- an existing Dask cluster (--scheduler)
ROOT = Path(__file__).resolve().parent.parent


def _sweep_cli(*args: str, timeout: float = 120):
    """``python -m ibemu sweep ...`` in its own process, on this source tree."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ibemu", "sweep", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_sweep_on_an_existing_dask_cluster(tmp_path, monkeypatch):
    """A cluster started here (a scheduler and two single-threaded worker processes), the
    sweep command run against its address from another process: the points run on the
    cluster's workers (the scheduler saw them) and the table is the sequential one's."""
    import logging

    from distributed import Client, LocalCluster
    monkeypatch.setenv("PYTHONPATH", str(ROOT))          # the workers import this tree's ibemu
    grid = ["--grid", "flow[1].window=1,2", "--seeds", "2", *[a for c in COMMON for a in ("--set", c)], "-q"]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        p = _sweep_cli(SOURCE, *grid, "--out", str(tmp_path / "there"), "--scheduler", cluster.scheduler_address)
        assert p.returncode == 0, p.stderr
        ran = client.run_on_scheduler(lambda dask_scheduler: {     # tasks that finished, by prefix
            name: tp.state_counts["memory"] for name, tp in dask_scheduler.task_prefixes.items()})
    assert ran.get("ibemu-point") == 4, ran                 # 2 windows x 2 seeds, on the cluster
    assert "4 points: 4 ran, 0 reused, 0 failed" in p.stdout
    here = _sweep_cli(SOURCE, *grid, "--out", str(tmp_path / "here"), "--scheduler", "sync")
    assert here.returncode == 0, here.stderr
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith(("wall_s", "cpu_s"))} for r in rows]
    there_rows = _csv(tmp_path / "there" / "sweep.csv")
    assert len(there_rows) == 4 and {r["status"] for r in there_rows} == {"ok"}
    assert strip(there_rows) == strip(_csv(tmp_path / "here" / "sweep.csv"))
    assert strip(_csv(tmp_path / "there" / "aggregate.csv")) == strip(_csv(tmp_path / "here" / "aggregate.csv"))


def _closed_port() -> int:
    """A TCP port on the loopback that nothing listens on (bound, then released)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_fails_fast_with_one_line(tmp_path, capsys):
    import time
    address = "tcp://127.0.0.1:%d" % _closed_port()
    args = ["sweep", SOURCE, "--grid", "flow[1].window=1,2", "--out", str(tmp_path / "sw"), "-q",
            "--scheduler", address]
    t0 = time.monotonic()
    code = main(args)                          # the default connect timeout, CONNECT_TIMEOUT = 5 s
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2
    assert took < S.CONNECT_TIMEOUT + 5, took   # not Dask's own 30 s
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "--scheduler %s: cannot reach the Dask scheduler within 5 s" % address in err
    assert not (tmp_path / "sw" / "sweep.csv").exists()
    t0 = time.monotonic()
    assert main([*args, "--connect-timeout", "1"]) == 2
    assert time.monotonic() - t0 < 1 + 4
    assert "within 1 s" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        main([*args, "--connect-timeout", "0"])
    assert bad.value.code == 2 and "--connect-timeout: must be more than 0" in capsys.readouterr().err


def test_without_dask_installed_reproduce_full_is_one_line(tmp_path, capsys, monkeypatch):
    """`ibemu reproduce --full` runs its points on Dask by default; where the sweep extra is
    not installed that is one line naming the fix, not an ImportError's traceback."""
    monkeypatch.setitem(sys.modules, "distributed", None)      # `import distributed` now fails
    code = main(["reproduce", "congestion_tree", "--full", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "pip install 'ibemu[sweep]'" in err and "--scheduler sync" in err


def test_without_the_sweep_extra_a_sweep_is_one_line_and_runs_nothing(tmp_path, capsys, monkeypatch):
    """`ibemu sweep --scheduler sync` needs no Dask, but its tables need scipy and pyarrow:
    where they are missing, one line before any point runs."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a))
    code = main(["sweep", SOURCE, "--grid", "flow[1].window=1,2", "--out", str(tmp_path / "sw"), "-q",
                 "--scheduler", "sync"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "scipy" in err and "pip install 'ibemu[sweep]'" in err
    assert not (tmp_path / "sw" / "points").exists()
