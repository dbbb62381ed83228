"""Seed 002 §4.2 (Experiment I) on the DCMS testbed (:mod:`.testbed`), registered with
``ibemu reproduce`` (ids ``dcms_fig3`` and ``dcms_fig4``).

Scale: 1 s of the paper = 0.25 ms here (flows start at 0, 2, 3.25 and 7 ms; X→Y carries
10 MB, ≈ 10.1 ms at SDR); runs of 20 ms; CCTI_Timer, Threshold and Marking_Rate as the
paper's.  Windows: the victim after A→D settles, 8-15 ms (paper: 29.5-65 s), or with
Marking_Rate 0 while it would still run unhindered, 7.5-10 ms; the
contributors' aggregate with Marking_Rate 0 after X→Y is done, 11-20 ms (paper: 40.32-
301.8 s), with Marking_Rate ≥ 8 over 8-15 ms.  Rates are fractions of SDR (wire bytes).

Figure 4 in CI runs Marking_Rate {0, 64, 2048} × CCTI_Timer {75, 300}; ``--full`` runs
the paper's {0, 8, 16, 32, 64, 128, 2048} × {75, 150, 300}.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..reproduction import Check, Reproduction, RunCache
from .experiments import run_case
from .testbed import CONTRIBUTORS

__all__ = ["REPRODUCTIONS"]


def _fig3(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    cases = [(0, 75), (0, 300), (2048, 75)]
    res = {c: run_case(*c, cache=cache) for c in cases}
    if out_dir is not None:
        from matplotlib.figure import Figure
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig = Figure(figsize=(12, 3.8), dpi=110)
        for k, (mr, tm) in enumerate(cases):
            ax = fig.add_subplot(1, 3, k + 1)
            r = res[(mr, tm)]
            t = (np.arange(len(r["wire"]["XY"])) + 0.5) * r["bin_ms"]
            for f in ("XY",) + CONTRIBUTORS:
                ax.plot(t, np.convolve(r["wire"][f], np.ones(5) / 5, "same"), label=f, linewidth=1.2)
            ax.set_title("%d-%d" % (tm, mr))
            ax.set_xlabel("time (ms; 1 ms = 4 s of the paper)")
            ax.set_ylim(0, 1.05)
            ax.grid(True, alpha=0.3)
        fig.axes[0].set_ylabel("throughput (fraction of SDR)")
        fig.axes[0].legend(fontsize="small")
        fig.suptitle("seed 002 Figure 3: CCTI_Timer-Marking_Rate")
        fig.tight_layout()
        fig.savefig(Path(out_dir) / "fig3.png", metadata={"Software": None})
    r0, r300, r2048 = res[(0, 75)], res[(0, 300)], res[(2048, 75)]
    values = {"victim_75_2048": r2048["victim"], "contributors_75_2048": r2048["contributors"],
            "victim_75_0": r0["victim_early"], "victim_300_0": r300["victim_early"],
            "contributors_75_0": r0["contributors_after"], "contributors_300_0": r300["contributors_after"],
            "timer_effect": r0["contributors_after"] - r300["contributors_after"],
            "xy_done_75_0": r0["xy_completion_ms"], "xy_done_75_2048": r2048["xy_completion_ms"]}
    _write_values(out_dir, "fig3.json", values)
    return values


def _fig4(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    rates = (0, 8, 16, 32, 64, 128, 2048) if full else (0, 64, 2048)
    timers = (75, 150, 300) if full else (75, 300)
    res = {(mr, tm): run_case(mr, tm, cache=cache) for tm in timers for mr in rates}
    if out_dir is not None:
        from matplotlib.figure import Figure
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig = Figure(figsize=(10, 4), dpi=110)
        ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        xs = list(range(len(rates)))
        for tm in timers:
            ax1.plot(xs, [res[(mr, tm)]["xy_completion_ms"] for mr in rates], "o-", label="CCTI_Timer %d" % tm)
            ax2.plot(xs, [res[(mr, tm)]["contributors_after" if mr == 0 else "contributors"] for mr in rates],
                     "o-", label="CCTI_Timer %d" % tm)
        for ax, yl in ((ax1, "X→Y completion (ms)"), (ax2, "contributors' aggregate (fraction of SDR)")):
            ax.set_xticks(xs, [str(r) for r in rates])
            ax.set_xlabel("Marking_Rate")
            ax.set_ylabel(yl)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        fig.suptitle("seed 002 Figure 4: victim vs contributors")
        fig.tight_layout()
        fig.savefig(Path(out_dir) / "fig4.png", metadata={"Software": None})
    out = {}
    for (mr, tm), r in res.items():
        out["xy_done_%d_%d" % (tm, mr)] = r["xy_completion_ms"]
        out["contributors_%d_%d" % (tm, mr)] = r["contributors_after" if mr == 0 else "contributors"]
    out["victim_gain_ms"] = min(res[(2048, tm)]["xy_completion_ms"] - res[(0, tm)]["xy_completion_ms"]
                                for tm in timers)
    _write_values(out_dir, "fig4.json", out)
    return out


def _write_values(out_dir: Path | None, name: str, values: dict[str, float]) -> None:
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / name).write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")


REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "dcms_fig3", "DCMS testbed: Marking_Rate 2048 vs 0 (CCTI_Timer 75/300)",
        "seed 002 §4.2, Figure 3", None, (8, 15),
        [Check("victim_75_2048", "X→Y drops to one third of SDR (2.6 of 7.9 Gb/s)", 0.28, 0.40),
         Check("contributors_75_2048", "B→D + C→D + A→D ≈ SDR (8 Gb/s)", 0.93, 1.01),
         Check("victim_75_0", "7.9 Gb/s ≈ SDR (ibemu: dips as A→D starts)", 0.70, 1.01),
         Check("victim_300_0", "7.9 Gb/s ≈ SDR (ibemu: dips as A→D starts)", 0.60, 1.01),
         Check("contributors_75_0", "3.1 of 8 Gb/s (39 %): well below SDR", 0.25, 0.55),
         Check("contributors_300_0", "1.98 of 8 Gb/s (25 %): lower than 75", 0.12, 0.40),
         Check("timer_effect", "75 minus 300 > 0 (larger CCTI_Timer: lower)", 0.02, 1.0, unit="of SDR"),
         Check("xy_done_75_2048", "65 s × 0.25 = 16.25 ms", 14.5, 18.0, unit="ms"),
         Check("xy_done_75_0", "40.32 s × 0.25 = 10.1 ms", 10.0, 13.0, unit="ms")],
        runner=_fig3),
    Reproduction(
        "dcms_fig4", "DCMS testbed: victim vs contributors over Marking_Rate × CCTI_Timer",
        "seed 002 §4.2, Figure 4", None, (8, 20),
        [Check("xy_done_75_0", "40.32 s × 0.25 = 10.1 ms", 10.0, 13.0, unit="ms"),
         Check("xy_done_75_2048", "≈ 65 s × 0.25 = 16.25 ms", 14.5, 18.0, unit="ms"),
         Check("xy_done_75_64", "≈ 65 s × 0.25 = 16.25 ms for Marking_Rate ≥ 8", 13.5, 18.0, unit="ms"),
         Check("contributors_75_64", "8 Gb/s: SDR", 0.90, 1.01),
         Check("contributors_300_64", "8 Gb/s: SDR", 0.90, 1.01),
         Check("contributors_300_0", "2.1 of 8 Gb/s (26 %)", 0.12, 0.40),
         Check("victim_gain_ms", "Marking_Rate 0 finishes X→Y sooner (24.7 s × 0.25)", 2.0, 8.0, unit="ms")],
        runner=_fig4),
]
