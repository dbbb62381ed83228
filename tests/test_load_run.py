"""ibemu.load_run (issue 18 item 4): a virtual run's folder as pandas DataFrames, each compared
with results.json (the CSV files round to 6 significant digits, hence rel=1e-5)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ibemu
from ibemu.resources import shipped_scenario

pd = pytest.importorskip("pandas", reason="pandas is the analysis extra: pip install 'ibemu[analysis]'")

DURATION_MS = 1


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cca")
    scn = ibemu.load_scenario(str(shipped_scenario("cca_opensm")), ['scenario.duration="%dms"' % DURATION_MS])
    scn.output.plots = False
    ibemu.run_virtual(scn, out_dir=out, progress=False)
    return out


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def test_scenario_and_summary(run_dir: Path, results: dict) -> None:
    run = ibemu.load_run(run_dir)
    assert isinstance(run, ibemu.Run)
    assert (run.name, run.seed, run.duration_ms) == ("cca_opensm", results["seed"], DURATION_MS)
    assert run.summary == results["summary"]
    assert run.scenario == json.loads((run_dir / "config.json").read_text())
    assert {h["name"] for h in run.scenario["hca"]} == {"H1", "H2", "H3", "H4"}   # the TOML tables, resolved


def test_flow_and_link_tables_match_results_json(run_dir: Path, results: dict) -> None:
    run = ibemu.load_run(run_dir)
    flows = run.flow_table()
    assert isinstance(flows, pd.DataFrame)
    s = results["summary"]
    assert sorted(flows.index) == sorted(s["flows"]) == ["rc1", "rc2", "ud3"]
    for name, f in s["flows"].items():
        row = flows.loc[name]
        assert row["rx_bytes"] == f["rx_bytes"] and row["rx_packets"] == f["rx_packets"]
        assert row["normalized"] == pytest.approx(f["normalized"], rel=1e-5)
        assert row["throughput_gbps"] == pytest.approx(f["throughput_gbps"], rel=1e-5)
        # a rate is its bytes over its active time: derived here, not read
        active_s = (f["stop_ps"] - f["start_ps"]) * 1e-12
        assert row["throughput_gbps"] == pytest.approx(f["rx_bytes"] * 8e-9 / active_s, rel=1e-5)
        assert row["p99_us"] == pytest.approx(f["latency"]["p99_ps"] / 1e6, rel=1e-5)
    links = run.link_table()
    assert sorted(links.index) == sorted(s["links"])
    for label, d in s["links"].items():
        assert links.loc[label, "bytes"] == d["bytes"]
        assert links.loc[label, "utilization"] == pytest.approx(d["utilization"], rel=1e-5)
        # utilization: the link's bytes over its capacity for the whole run
        assert links.loc[label, "utilization"] == pytest.approx(
            d["bytes"] / (d["capacity"] * DURATION_MS * 1e-3), rel=1e-5)


def test_time_series(run_dir: Path, results: dict) -> None:
    run = ibemu.load_run(run_dir)
    bin_ms = results["summary"]["bin_ps"] / 1e9
    nbins = round(DURATION_MS / bin_ms)
    flows = run.flows()
    assert list(flows.columns) == ["rc1", "rc2", "ud3"]
    np.testing.assert_allclose(flows.index, (np.arange(nbins) + 0.5) * bin_ms, rtol=1e-9)   # bin centres
    assert ((flows >= 0) & (flows <= 1.05)).all().all()
    # rc2 starts at 0.2 ms: zero in every bin whose centred window (seed 003 §3) ends before,
    # nonzero soon after
    start_ms = results["summary"]["flows"]["rc2"]["start_ps"] / 1e9
    half_ms = ibemu.parse_time(run.scenario["output"]["window"]) / 2e9
    assert (flows.loc[flows.index + half_ms < start_ms, "rc2"] == 0).all()
    assert (flows.loc[flows.index - half_ms > start_ms + 0.01, "rc2"] > 0).all()
    links = run.links()
    data = run.links(data=True)
    assert sorted(links.columns) == sorted(data.columns) == sorted(results["summary"]["links"])
    assert (data <= links + 1e-6).all().all()       # data frames are a part of all frames
    # the port counters' running totals end at results.json's port totals
    ports = run.ports()
    assert ports.index[-1] == pytest.approx(DURATION_MS)
    totals = run.port_totals()
    assert totals.to_dict(orient="index") == results["ports"]
    for (port, counter) in ports.columns:
        assert ports[port, counter].iloc[-1] == results["ports"][port][counter], (port, counter)
        assert ports[port, counter].is_monotonic_increasing


def test_latency_traces_events(run_dir: Path, results: dict) -> None:
    run = ibemu.load_run(run_dir)
    lat = run.latency()
    for name, f in results["summary"]["flows"].items():
        assert lat.loc[name, "messages"] == f["latency"]["count"]
        assert lat.loc[name, "p50_us"] == pytest.approx(f["latency"]["p50_ps"] / 1e6)
    tr = run.traces()
    assert list(tr.columns) == ["kind", "key", "time_ms", "value"]
    for kind, keys in results["traces"].items():
        for key, st in keys.items():
            sel = tr[(tr.kind == kind) & (tr.key == key)]
            assert len(sel) == st["changes"]
            assert sel.value.max() == pytest.approx(st["max"]) and sel.value.iloc[-1] == pytest.approx(st["last"])
            assert sel.time_ms.is_monotonic_increasing
    ev = run.events()
    assert ev.to_dict(orient="records") == results["events"]


def test_a_run_without_the_optional_files(tmp_path: Path) -> None:
    """quickstart has no congestion control: empty traces and events, with their columns."""
    scn = ibemu.quickstart(duration_ms=0.2)
    scn.output.plots = False
    ibemu.run_virtual(scn, out_dir=tmp_path, progress=False)
    run = ibemu.load_run(tmp_path)
    assert run.traces().empty and list(run.traces().columns) == ["kind", "key", "time_ms", "value"]
    assert run.events().empty
    assert run.link_table().loc["bottleneck", "utilization"] > 0.9


def test_the_docs_example_compares_two_runs(tmp_path: Path) -> None:
    """docs/examples/compare_runs.py: seed 003 Figure 1 without and with the HP scheme; the
    victim, stuck behind the congested switch without congestion control, gets its link
    back under HP (seed 003 §6, Figure 4)."""
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(root / "docs" / "examples" / "compare_runs.py"), str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "normalized throughput per flow group" in r.stdout
    a, b = ibemu.load_run(tmp_path / "no_cc"), ibemu.load_run(tmp_path / "hp")
    victim_a = a.flow_table().set_index("group").loc["victim", "normalized"]
    victim_b = b.flow_table().set_index("group").loc["victim", "normalized"]
    assert victim_a < 0.05 < 0.3 < victim_b
