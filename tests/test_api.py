"""The public API (issue 12 item 8): what a script needs is importable from ``ibemu``
itself -- load or build a scenario, run it, read its results back -- and ``import
ibemu`` alone stays cheap (numpy, matplotlib and trio come with the names that need them)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ibemu

ROOT = Path(__file__).resolve().parent.parent


def test_import_ibemu_loads_nothing_heavy() -> None:
    code = ("import sys, ibemu; heavy = ('numpy', 'matplotlib', 'trio', 'scapy'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith('ibemu.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout
    assert out.strip() == "[]"


def test_every_exported_name_resolves() -> None:
    assert sorted(ibemu.__all__) == sorted(["__version__", *ibemu._EXPORTS])
    for name in ibemu.__all__:
        assert getattr(ibemu, name) is not None, name
    assert set(ibemu.__all__) <= set(dir(ibemu))
    with pytest.raises(AttributeError):
        ibemu.no_such_name  # noqa: B018


def test_template_run_and_results_read_back(tmp_path: Path) -> None:
    """quickstart for 1 ms on the virtual clock; the output folder read back agrees."""
    scn = ibemu.quickstart(duration_ms=1)
    scn.output.plots = False
    r = ibemu.run_virtual(scn, out_dir=tmp_path, progress=False)
    assert isinstance(r, ibemu.RunResult) and r.out_dir == tmp_path

    res = ibemu.load_results(tmp_path)
    assert isinstance(res, ibemu.Results)
    assert (res.scenario, res.seed, res.duration_ps) == ("quickstart", 1, ibemu.PS_PER_MS)
    assert res.summary == json.loads((tmp_path / "results.json").read_text())["summary"]
    for name in ("f1", "f2"):                                   # the same numbers as the run's
        assert res.summary["flows"][name]["rx_bytes"] == r.summary["flows"][name]["rx_bytes"] > 0
    assert res.summary["fairness"]["jain"] == pytest.approx(r.summary["fairness"]["jain"])
    assert res.data["extra"]["clock"] == "virtual"

    flows = res.flows()
    assert list(flows) == ["time_ms", "f1", "f2"]
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in flows.values())
    assert len(flows["time_ms"]) == r.metrics.nbins == 10
    np.testing.assert_allclose(flows["f1"], r.metrics.flow_rate_series("f1"), rtol=1e-5)
    links = res.links()
    assert "bottleneck" in links and "bottleneck:data" in links
    assert 0.9 < np.nanmean(links["bottleneck"]) < 1.01                 # the shared link is busy
    assert res.counters()["time_ms"][0] == 0.0
    assert res.traces() == {}                                           # no congestion control
    assert res.config()["scenario"]["name"] == "quickstart"
    assert "f1" in ibemu.format_summary_table(res.summary)


def test_scenario_file_with_overrides() -> None:
    scn = ibemu.load_scenario(ROOT / "scenarios" / "quickstart.toml",
                              ['scenario.duration="1ms"', "scenario.seed=7"])
    assert isinstance(scn, ibemu.Scenario)
    assert (scn.duration, scn.seed) == (ibemu.parse_time("1ms"), 7)
    with pytest.raises(ibemu.ScenarioError):
        ibemu.load_scenario(ROOT / "scenarios" / "quickstart.toml", ["scenario.nope=1"])


def test_scenario_built_in_python(tmp_path: Path) -> None:
    """Spec classes only: two HCAs through a switch, one flow for half a millisecond."""
    scn = ibemu.Scenario(
        "two", duration=ibemu.PS_PER_MS // 2,
        switches=[ibemu.SwitchSpec("S")],
        hcas=[ibemu.HCASpec("A", lid=1), ibemu.HCASpec("B", lid=2)],
        links=[ibemu.LinkSpec("A", "S", params=ibemu.LinkParams(rate=ibemu.ib_rate("4x_sdr"))),
               ibemu.LinkSpec("S", "B", name="down")],
        flows=[ibemu.FlowSpec("ab", "A", "B", group="g")],
        output=ibemu.OutputSpec(bin=50 * ibemu.PS_PER_US, plots=False))
    ibemu.run_virtual(scn, out_dir=tmp_path, progress=False)
    res = ibemu.load_results(tmp_path)
    assert res.summary["flows"]["ab"]["rx_packets"] > 0
    assert res.summary["groups"]["g"]["flows"] == ["ab"]
    assert list(res.flows()) == ["time_ms", "ab", "group:g"]
    assert ibemu.jain_index([1.0, 1.0]) == 1.0
