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

Every band is read from the paper's words (quoted in each :class:`Check`; the rules for
"unhindered", "one-third" and stated numbers are above ``REPRODUCTIONS``).  Root causes
of the departures (issue 13, defect 7):

- Marking_Rate 0, the victim at 65-78 % of SDR instead of unhindered: a model bug, fixed.
  S2's 4X QDR input 20 carries X→Y (to port 24) and A→D (to port 23); the switch held
  that input whole for each packet's QDR read, so port 24 sat idle whenever an A→D
  packet was being read; X→Y's backlog at port 24 then made the CCA count the port
  congested and, at Marking_Rate 0, mark X→Y itself.  A store-and-forward input faster
  than its outputs now feeds several at once up to its own rate
  (:mod:`ibemu.fabric.switch`): X→Y runs at 1.00 of SDR and ends at 10.15 ms
  (paper: 40.32 s × 0.25 = 10.08 ms).
- Marking_Rate 0, contributors at 0.32 / 0.19 of SDR (CCTI_Timer 75 / 300) against the
  paper's 0.40 / 0.26: decided by the Threshold → buffer-occupancy mapping, which the
  spec leaves to the vendor and the paper does not state.  A small sweep at Marking_Rate 0
  (contributors over 11-20 ms, CCTI_Timer 75 / 300): one packet of contention makes
  (S2, 23) congested (ibemu's Threshold 15 on 16-packet buffers) 0.32 / 0.19; the same
  without counting the departing packet 0.74 / 0.59; two packets (32-packet buffers)
  0.81 / 0.51; the CCT's step (CCT_Shift 1, 2, 3) 0.33-0.34 / 0.17-0.21, i.e. no effect.
  The equilibrium is where the marks a flow draws per CCTI_Timer period equal one, so it
  is set by how readily contention counts as congestion.  ibemu keeps the one-packet
  rule, the nearer of the two; the departure stays listed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..figure_axes import save_figure
from ..reproduction import Check, Reproduction, RunCache
from .experiments import run_cases
from .testbed import CONTRIBUTORS

__all__ = ["REPRODUCTIONS"]


SDR_GBPS = 8.0          # seed 002 §4.1: "4xSDR rate (approx. 8 Gbps)"
PAPER_S_PER_MS = 4.0    # the testbed runs 1 ms emulated for 4 s of the paper (see the module text)


def _fig3(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    cases = [(0, 75), (0, 300), (2048, 75)]
    res = dict(zip(cases, run_cases(cases, cache)))
    if out_dir is not None:
        from matplotlib.figure import Figure
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig = Figure(figsize=(12, 3.8), dpi=110)
        for k, (mr, tm) in enumerate(cases):
            ax = fig.add_subplot(1, 3, k + 1)
            r = res[(mr, tm)]
            t = (np.arange(len(r["wire"]["XY"])) + 0.5) * r["bin_ms"] * PAPER_S_PER_MS
            for f in ("XY",) + CONTRIBUTORS:
                ax.plot(t, SDR_GBPS * np.convolve(r["wire"][f], np.ones(5) / 5, "same"), label=f[0] + "-" + f[1],
                        linewidth=1.2)
            ax.set_title("%d-%d" % (tm, mr))
            ax.set_xlabel("time (s; 1 ms emulated = %g s)" % PAPER_S_PER_MS)
            ax.set_ylabel("throughput (Gbps)")
            ax.set_ylim(0, 1.05 * SDR_GBPS)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        fig.suptitle("seed 002 Figure 3: Per-flow throughput as a function of time; CCTI_Timer-Marking_Rate "
                     "is shown above each graph")
        fig.tight_layout()
        save_figure(fig, Path(out_dir) / "fig3.png", metadata={"Software": None})
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
    cases = [(mr, tm) for tm in timers for mr in rates]
    res = dict(zip(cases, run_cases(cases, cache)))
    if out_dir is not None:
        from matplotlib.figure import Figure
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        fig = Figure(figsize=(10, 4), dpi=110)
        ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        xs = list(range(len(rates)))
        for tm in timers:
            ax1.plot(xs, [PAPER_S_PER_MS * res[(mr, tm)]["xy_completion_ms"] for mr in rates], "o-",
                     label="CCTI_Timer %d" % tm)
            ax2.plot(xs, [SDR_GBPS * res[(mr, tm)]["contributors_after" if mr == 0 else "contributors"]
                          for mr in rates], "o-", label="CCTI_Timer %d" % tm)
        for ax, title, yl in ((ax1, "(a) victim flow X-Y", "X-Y completion time (s; 1 ms emulated = %g s)"
                               % PAPER_S_PER_MS),
                              (ax2, "(b) contributor flows A-D, B-D, C-D", "total throughput (Gbps)")):
            ax.set_xticks(xs, [str(r) for r in rates])
            ax.set_xlabel("Marking_Rate")
            ax.set_ylabel(yl)
            ax.set_title(title, fontsize=9)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        fig.suptitle("seed 002 Figure 4: Illustrates tradeoff between victim-flow and contributor-flow performance")
        fig.tight_layout()
        save_figure(fig, Path(out_dir) / "fig4.png", metadata={"Software": None})
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


S42 = "seed 002 §4.2"
F3, F4 = S42 + ", Figure 3", S42 + ", Figure 4"
# Bands (issue 13): "unhindered" is at least 0.95 of what X→Y gets alone (1.00 of SDR,
# wire bytes) -- a victim losing more than 5 % is hindered; a completion time "the
# same duration as that of an unhindered X-Y flow" is at most 1/0.95 of the unhindered
# 10.15 ms (10 MB at SDR); "one-third" is 1/3 ± 10 %; a rate the paper states as a
# number (3.1 Gbps, 2.1 Gbps) is that number ± 15 % (a testbed's run-to-run spread, not
# fitted to ibemu); "close to 65" s is 65 s ± 5 % (the paper's own arithmetic: 7.9 Gb/s
# to 29.5 s, 2.6 Gb/s after, ends X→Y at 62.4 s).  SDR = 8 Gb/s (§4.1, "approx. 8 Gbps").
UNHINDERED = (10.0, 10.7)           # ms: 10.15 / 0.95 = 10.68
AT_65_S = (15.4, 17.1)              # ms: 65 s × 0.25 ± 5 %
THRESHOLD_CAUSE = ("ibemu's Threshold 15 (one packet of contention at (S2, 23) makes it congested; the mapping is "
                   "vendor-defined) marks more at low load than the testbed's switch: two packets give 0.74-0.81 "
                   "of SDR at CCTI_Timer 75, one gives 0.32; the CCT's step does not matter (docs/dcms.md)")

REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "dcms_fig3", "DCMS testbed: Marking_Rate 2048 vs 0 (CCTI_Timer 75/300)",
        "seed 002 §4.2, Figure 3", None, (8, 15),
        [Check("victim_75_2048", "X→Y drops to one third of SDR (2.6 of 7.9 Gb/s)", 0.30, 0.367,
               quote="The X-Y flow throughput dropped from 7.9 Gbps to 2.6 Gbps at time 29.5 s",
               section=F3 + "(c)"),
         Check("contributors_75_2048", "B→D + C→D + A→D close to SDR (8 Gb/s)", 0.90, 1.01,
               quote="the sum total throughput of the B-D, C-D, and A-D flows was close to the SDR theoretical "
                     "maximum rate of 8 Gbps", section=F3 + "(c)"),
         Check("victim_75_0", "X→Y unhindered at 7.9 Gb/s (≥ 0.95 of SDR)", 0.95, 1.01,
               quote="In these two cases, 75-0 and 300-0, the X-to-Y flow ran unhindered at 7.9 Gbps (close to SDR)",
               section=F3 + "(a)"),
         Check("victim_300_0", "X→Y unhindered at 7.9 Gb/s (≥ 0.95 of SDR)", 0.95, 1.01,
               quote="In these two cases, 75-0 and 300-0, the X-to-Y flow ran unhindered at 7.9 Gbps (close to SDR)",
               section=F3 + "(b)"),
         Check("contributors_75_0", "3.1 of 8 Gb/s (0.39 ± 15 %)", 3.1 / 8 * 0.85, 3.1 / 8 * 1.15,
               quote="the sum total of the throughput values for the B-D, C-D and A-D flows was only 3.1 Gbps from "
                     "time 40.32 s to 301.8 s in the 75-0 case", section=F3 + "(a)"),
         Check("contributors_300_0", "1.98 of 8 Gb/s (0.25 ± 15 %)", 0.21, 0.285,
               quote="This number is even lower at 1.98 Gbps for the 300-0 case", section=F3 + "(b)",
               departs=THRESHOLD_CAUSE),
         Check("timer_effect", "75 minus 300 > 0: lower with the larger CCTI_Timer", 0.01, 1.0, unit="of SDR",
               quote="At the higher value (300) of the `CCTI_Timer`, the CCTI of flows will be decreased at a lower "
                     "rate, and therefore inter-packet injection times stay high leading to a lower sending rate.",
               section=S42),
         Check("xy_done_75_2048", "X→Y ends at 65 s (× 0.25 = 16.25 ms, ± 5 %)", *AT_65_S, unit="ms",
               quote="stayed at this rate until the X-Y flow ended at 65 s", section=F3 + "(c)"),
         Check("xy_done_75_0", "completed in 40.32 s: unhindered (10.15 ms here, ≤ 1/0.95 of it)", *UNHINDERED,
               unit="ms", quote="the X-to-Y flow ran unhindered at 7.9 Gbps (close to SDR), and completed its "
                                "transfer in 40.32 s", section=F3 + "(a)")],
        runner=_fig3),
    Reproduction(
        "dcms_fig4", "DCMS testbed: victim vs contributors over Marking_Rate × CCTI_Timer",
        "seed 002 §4.2, Figure 4", None, (8, 20),
        [Check("xy_done_75_0", "40.32 s, the unhindered duration (10.15 ms here, ≤ 1/0.95 of it)", *UNHINDERED,
               unit="ms", quote="the X-Y flow duration was 40.32 sec under all three settings of the `CCTI_Timer` "
                                "(75, 150, and 300), which is the same duration as that of an unhindered X-Y flow",
               section=F4 + "a"),
         Check("xy_done_75_2048", "close to 65 s (× 0.25 = 16.25 ms, ± 5 %)", *AT_65_S, unit="ms",
               quote="The completion time of the X-Y flow was close to 65 for higher `Marking_Rate` values",
               section=F4 + "a"),
         Check("xy_done_75_64", "close to 65 s (× 0.25 = 16.25 ms, ± 5 %)", *AT_65_S, unit="ms",
               quote="The completion time of the X-Y flow was close to 65 for higher `Marking_Rate` values",
               section=F4 + "a"),
         Check("contributors_75_64", "8 Gb/s: SDR (± 5 %)", 0.95, 1.01,
               quote="With a `Marking_Rate` of 64, the aggregate throughput of the three contributor flows was 8 Gbps "
                     "for all three values of `CCTI_Timer`", section=F4 + "b"),
         Check("contributors_300_64", "8 Gb/s: SDR (± 5 %)", 0.95, 1.01,
               quote="With a `Marking_Rate` of 64, the aggregate throughput of the three contributor flows was 8 Gbps "
                     "for all three values of `CCTI_Timer`", section=F4 + "b"),
         Check("contributors_75_0", "3.18 of 8 Gb/s (0.40 ± 15 %)", 0.338, 0.457,
               quote="added up to only 3.18, 2.46, and 2.1 Gbps with `CCTI_Timer` values of 75, 150 and 300",
               section=F4 + "b", departs=THRESHOLD_CAUSE),
         Check("contributors_300_0", "2.1 of 8 Gb/s (0.26 ± 15 %)", 0.223, 0.302,
               quote="added up to only 3.18, 2.46, and 2.1 Gbps with `CCTI_Timer` values of 75, 150 and 300",
               section=F4 + "b", departs=THRESHOLD_CAUSE),
         Check("victim_gain_ms", "Marking_Rate 0 ends X→Y sooner: 65 − 40.32 s (× 0.25; from the two bands)",
               AT_65_S[0] - UNHINDERED[1], AT_65_S[1] - UNHINDERED[0], unit="ms",
               quote="In other words, when `Marking_Rate` is set to 0, the congestion dissipates faster.",
               section=F4 + "a")],
        runner=_fig4),
]
