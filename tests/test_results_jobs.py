"""Job metrics (issue 29 Deliver 3) in results.json, the printed summary, load_run's
DataFrames and the HTML report; the statistics of ibemu.results.jobs on marks made by
hand."""
from __future__ import annotations

import json

import pytest

from ibemu.results.frames import load_run
from ibemu.results.jobs import job_summary, with_baseline
from ibemu.results.summary import format_summary_table
from ibemu.run import run_virtual
from ibemu.scenario.read import scenario_from_dict


def test_iteration_runs_from_first_start_to_last_end():
    info = {"j": {"ranks": 2, "start_ps": 100, "ops": ["allreduce/ring"], "iterations": [2]}}
    marks = [("j", 0, 0, 0, 100, 500), ("j", 1, 0, 0, 120, 600),      # iteration 0: 100 .. 600
             ("j", 0, 0, 1, 700, 900), ("j", 1, 0, 1, 650, 1000)]     # iteration 1: 650 .. 1000
    d = job_summary(marks, info)["j"]
    assert d["ops"][0]["iteration_ps"] == [500, 350]
    assert d["ops"][0]["time_ps"] == 900
    assert d["completion_ps"] == 900                                    # 1000 - start 100
    assert d["rank_completion"]["p50_ps"] == 800 and d["rank_completion"]["max_ps"] == 900
    assert d["iteration"]["max_ps"] == 500 and d["slowdown"] is None
    assert with_baseline({"j": d}, {"j": 450})["j"]["slowdown"] == 2.0


def test_unfinished_job_has_no_completion():
    info = {"j": {"ranks": 2, "start_ps": 0, "ops": ["barrier/dissemination"], "iterations": [1]}}
    d = job_summary([("j", 0, 0, 0, 0, 10)], info)["j"]
    assert not d["completed"] and d["completion_ps"] is None and d["ops"][0]["iteration_ps"] == [None]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("jobrun")
    raw = {"template": {"name": "fat_tree2", "radix": 4, "leaves": 2},
           "scenario": {"name": "jobs", "duration": "300us"},
           "output": {"plots": False},
           "job": [{"name": "ar", "hosts": {"first": 4},
                    "ops": [{"type": "allreduce", "size": "16KiB", "iterations": 3, "compute": "2us"},
                            {"type": "barrier"}]}]}
    r = run_virtual(scenario_from_dict(raw), out_dir=out)
    return out, r


def test_results_json_and_printed_summary_have_the_jobs(run_dir):
    out, r = run_dir
    jobs = json.loads((out / "results.json").read_text())["summary"]["jobs"]
    assert jobs["ar"]["completed"] and [o["op"] for o in jobs["ar"]["ops"]] == ["allreduce/ring",
                                                                                  "barrier/dissemination"]
    assert len(jobs["ar"]["ops"][0]["iteration_ps"]) == 3
    text = format_summary_table(r.summary)
    assert "allreduce/ring" in text and "slowdown" in text


def test_load_run_has_job_frames(run_dir):
    pytest.importorskip("pandas")
    out, r = run_dir
    run = load_run(out)
    df = run.jobs()
    assert df.loc["ar", "ranks"] == 4
    assert df.loc["ar", "completion_us"] == pytest.approx(r.summary["jobs"]["ar"]["completion_ps"] / 1e6)
    it = run.job_iterations()
    assert list(it["iteration"]) == [0, 1, 2, 0] and list(it["op"])[-1] == "barrier/dissemination"


def test_report_has_a_jobs_section(run_dir):
    pytest.importorskip("plotly")
    from ibemu.results.report import report_html
    out, _ = run_dir
    page = report_html(out)
    assert '<section id="jobs">' in page and "plot-jobs" in page
