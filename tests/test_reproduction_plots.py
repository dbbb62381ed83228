"""The reproductions' plots follow the papers' figures (issue 18 item 5): each plot's title
names the figure, and its panels have the paper's axes and series.  What is checked is the
drawn matplotlib Figure, as ibemu.studies.figure_axes.describe reads it back into the
``<name>.axes.json`` beside each PNG; the expected values are written here from the seed
papers' captions and text (seed 003 §3-§6, seed 002 §4).

The sweeps' measurements are replaced by a constant (the plots' axes and series do not
depend on them), so every figure is drawn in a second; seed 003 Figures 2-3 are drawn
from a real (short) run of the Figure 1 scenario."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ibemu.run import run_virtual
from ibemu.scenario.builders import santos_fig1
from ibemu.studies.cca import reproduce as cca
from ibemu.studies.dcms.figures import plot_exp2
from ibemu.studies.figure_axes import plot_rate_figure
from ibemu.studies.hp import figures as hp
from ibemu.studies.santos import FIGURES

RATE = ["root link", "inter-switch link", "local flows (aggregate)", "remote flows (aggregate)", "victim flow"]
FLOWS = ["X-Y", "B-D", "C-D", "A-D"]
TIMERS = ["CCTI_Timer 75", "CCTI_Timer 300"]            # the CI-sized sweep's timers (full: 75, 150, 300)

# figure file -> (title starts with, [(panel title, x label, y label, series), ...])
EXPECTED: dict[str, tuple[str, list[tuple[str, str, str, list[str]]]]] = {
    "fig2a": ("seed 003 Figure 2(a)", [("", "time (ms)", "normalized rate (fraction of link rate)", RATE)]),
    "fig3b": ("seed 003 Figure 3(b)", [("", "time (ms)", "normalized rate (fraction of link rate)", RATE)]),
    "fig4": ("seed 003 Figure 4: Comparison of Packet Marking Policies", [
        (panel, "time (ms)", "normalized rate (fraction of link rate)", RATE)
        for panel in ("(a) naive marking", "(b) input-triggered marking",
                      "(c) input-output-triggered, output threshold 4",
                      "(d) input-output-triggered, output threshold 8")]),
    "fig5": ("seed 003 Figure 5: Root link utilization and fairness between remote and local flows", [
        ("(a) root link utilization", "buffer size (packets)", "root link utilization",
         ["none (no output marking)", "output threshold 4", "output threshold 8"]),
        ("(b) fairness: remote / local", "buffer size (packets)", "remote / local aggregate rate",
         ["none (no output marking)", "output threshold 4", "output threshold 8"])]),
    "fig6": ("seed 003 Figure 6: F_inc(t) with Rmin = Rmax/256", [
        (None, "time (ms)", "F_inc(t) / Rmax", ["FIMD (m = 2)", "AIMD (m = 2)", "LIPD"])]),
    "fig7": ("seed 003 Figure 7: Performance of source response functions with static traffic pattern", [
        ("root link", "buffer size (packets)", "root link utilization",
         ["LIPD discrete", "LIPD continuous", "FIMD discrete", "FIMD continuous", "AIMD discrete"]),
        ("inter-switch link", "buffer size (packets)", "inter-switch link utilization",
         ["LIPD discrete", "LIPD continuous", "FIMD discrete", "FIMD continuous", "AIMD discrete"])]),
    "fig8a": ("seed 003 Figure 8(a): Mixture of static flows", [
        (None, "mean ON duration (ms)", "normalized aggregate rate",
         ["dynamic flows", "static flows", "dynamic flows (persistent state)", "static flows (persistent state)"])]),
    "fig8b": ("seed 003 Figure 8(b): Utilization of root link and inter-switch link", [
        ("root link", "mean ON duration (ms)", "root link utilization", ["FIMD", "LIPD", "AIMD"]),
        ("inter-switch link", "mean ON duration (ms)", "inter-switch link utilization", ["FIMD", "LIPD", "AIMD"])]),
    "dcms_fig3": ("seed 002 Figure 3: Per-flow throughput as a function of time", [
        (case, "time (s; 1 ms emulated = 4 s)", "throughput (Gbps)", FLOWS) for case in ("75-0", "300-0", "75-2048")]),
    "dcms_fig4": ("seed 002 Figure 4: Illustrates tradeoff between victim-flow and contributor-flow performance", [
        ("(a) victim flow X-Y", "Marking_Rate", "X-Y completion time (s; 1 ms emulated = 4 s)", TIMERS),
        ("(b) contributor flows A-D, B-D, C-D", "Marking_Rate", "total throughput (Gbps)", TIMERS)]),
    "dcms_fig5": ("seed 002 Figure 5: Scenario 1: Longer Low-MR duration threshold (12 sec)", [
        ("(a) per-flow throughput", "time (s; 1 s = 1 ms emulated)", "throughput (Gbps)", FLOWS),
        ("(b) port counter growth rates", "time (s; 1 s = 1 ms emulated)",
         "growth rate (ticks/s; tick = 22 ns, the testbed's)",
         ["PortXmitCongTime (S2, 23), ticks/s", "PortXmitWait (S1, 15), ticks/s",
          "PortXmitData (S1, 15), words/s"]),
        ("", "", "Marking_Rate (S2, 23)", ["Marking_Rate (S2, 23)"]),
        ("", "", "PortXmitData growth rate (words/s)", [])]),
}


class FakeCache:
    """Every run of a sweep measures 0.5 (the plots' axes and series do not depend on it)."""

    def map(self, fn: Any, items: list[Any]) -> list[dict[str, Any]]:
        t = np.arange(0.1, 60, 0.2)
        rates = {"t_ms": t, **{name: np.full(len(t), 0.5) for name in RATE}}
        return [defaultdict(lambda: 0.5, rates=rates) for _ in items]

    def get_many(self, keys: list[Any], fn: Any, items: list[Any]) -> list[dict[str, Any]]:
        wire = {f: np.full(100, 0.3) for f in ("XY", "BD", "CD", "AD")}
        return [defaultdict(lambda: 0.5, wire=wire, bin_ms=0.2) for _ in items]


def _exp2_run() -> dict[str, Any]:
    n = 50
    return {"wire": {f: np.full(n, 0.3) for f in ("XY", "BD", "CD", "AD")}, "bin_s": 0.5, "duration_s": 25.0,
            "marking_rate": [(7.0, 0), (20.0, 128)], "default_mr": 128, "counter_t_s": np.arange(n) * 0.5,
            "counters": {k: np.full(n, v) for k, v in (("C_S2_23", 0.25), ("W_S1_15", 0.5), ("D_S1_15", 1.0))},
            "decisions": [(7.0, "low")], "sdr_bytes_per_s": 1_000_000_000}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plots")
    cache: Any = FakeCache()
    for run in (hp.run_fig4, hp.run_fig5, hp.run_fig6, hp.run_fig7, hp.run_fig8a, hp.run_fig8b):
        run(out, False, cache)
    cca_dir = out / "cca"
    cca._fig3(cca_dir, False, cache)
    cca._fig4(cca_dir, False, cache)
    for name in ("fig3", "fig4"):
        (cca_dir / ("%s.axes.json" % name)).rename(out / ("dcms_%s.axes.json" % name))
    plot_exp2(_exp2_run(), 1, out / "dcms_fig5.png")
    for fig_id, kw in (("fig2a", {}), ("fig3b", {"R": 5, "window": 1, "rate": {"local": 0.1, "remote": 0.1}})):
        scn = santos_fig1(duration_ms=3, victim=(1, 2), name=fig_id, **kw)
        scn.output.plots = False
        plot_rate_figure(FIGURES[fig_id], run_virtual(scn, progress=False).metrics, out / (fig_id + ".png"))
    return out


@pytest.mark.parametrize("name", list(EXPECTED))
def test_plot_has_the_papers_axes_and_series(drawn: Path, name: str) -> None:
    got = json.loads((drawn / ("%s.axes.json" % name)).read_text())
    title, panels = EXPECTED[name]
    assert got["title"].startswith(title), got["title"]
    assert len(got["panels"]) == len(panels)
    for p, (ptitle, xlabel, ylabel, series) in zip(got["panels"], panels):
        if ptitle is not None:
            assert p["title"] == ptitle
        assert (p["xlabel"], p["ylabel"], p["series"]) == (xlabel, ylabel, series), name
    png = drawn / "cca" / (name[5:] + ".png") if name in ("dcms_fig3", "dcms_fig4") else drawn / (name + ".png")
    assert png.stat().st_size > 10_000


def test_a_plot_with_lines_has_their_points_as_csv(drawn: Path) -> None:
    """``<name>.csv`` beside the PNG: a row per drawn point (panel, panel title, series, x,
    y).  Figure 4: four panels of the five rate series, the sweep's constant 0.5 at the
    FakeCache's times; Figure 2(a), from a real run: the root link's points are the run's
    own series (plotted_rows reads the drawn lines back)."""
    import csv

    from ibemu.studies.figure_axes import SEED003_RATE_SERIES, plotted_rows, rate_series
    with (drawn / "fig4.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    t = np.arange(0.1, 60, 0.2)
    assert len(rows) == 4 * len(RATE) * len(t)
    assert {int(r["panel"]) for r in rows} == {1, 2, 3, 4}
    assert {r["panel_title"] for r in rows} == set(hp.FIG4_PANELS.values())
    assert [r["series"] for r in rows if r["panel"] == "1"][::len(t)] == RATE
    assert {float(r["y"]) for r in rows} == {0.5}
    assert [float(r["x"]) for r in rows[:len(t)]] == pytest.approx(list(t))
    scn = santos_fig1(duration_ms=3, victim=(1, 2), name="fig2a")
    scn.output.plots = False
    series = rate_series(run_virtual(scn, progress=False).metrics)
    with (drawn / "fig2a.csv").open(newline="") as fh:
        root = [float(r["y"]) for r in csv.DictReader(fh) if r["series"] == SEED003_RATE_SERIES[0]]
    assert root == pytest.approx(list(series[SEED003_RATE_SERIES[0]])) and max(root) > 0.5
    from matplotlib.figure import Figure
    fig = Figure()
    fig.add_subplot().axhline(1.0)                       # an unlabelled reference line: no rows
    assert plotted_rows(fig) == []


def test_santos_titles_name_the_figure_and_caption() -> None:
    assert FIGURES["fig2a"] == ("seed 003 Figure 2(a), no window: Congestion Spreading Example (L = 5, R = 1): "
                                "buffer capacity = 4 packets")
    assert FIGURES["fig3b"].startswith("seed 003 Figure 3(b), rate control: Congestion Spreading (L = 5, R = 5)")


def test_dcms_counter_rates_in_the_papers_units(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Seed 002 Fig. 5(b) in ticks/s and words/s: a counter growing 0.5 of the time is
    0.5 / 22 ns = 2.27e7 testbed ticks/s (seed 002 §4.2's tick); PortXmitData at 1.0 of
    SDR (1 GB/s) is 1e9 / 4 = 2.5e8 32-bit words/s (IBA 16.1.3.5)."""
    from matplotlib.figure import Figure
    saved: list[Figure] = []
    original = Figure.savefig

    def savefig(self: Figure, *args: Any, **kw: Any) -> None:
        saved.append(self)
        original(self, *args, **kw)

    monkeypatch.setattr(Figure, "savefig", savefig)
    plot_exp2(_exp2_run(), 1, tmp_path / "fig5.png")
    lines = {ln.get_label(): ln.get_ydata() for ax in saved[0].axes for ln in ax.get_lines()}
    assert lines["PortXmitCongTime (S2, 23), ticks/s"] == pytest.approx(0.25 / 22e-9)
    assert lines["PortXmitWait (S1, 15), ticks/s"] == pytest.approx(0.5 / 22e-9)
    assert lines["PortXmitData (S1, 15), words/s"] == pytest.approx(2.5e8)
