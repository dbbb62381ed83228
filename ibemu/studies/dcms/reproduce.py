"""Seed 002 §4.3 (Experiment II: DCMS) on the testbed with the manager host
(:mod:`.testbed`), registered with ``ibemu reproduce`` (ids ``dcms_fig5``, ``dcms_fig6``)
and the comparison of issue 7 item 6 (``dcms_compare``, :mod:`.compare`).

Scale: 1 s of the paper = 1 ms here (flows of 140 × 128 MiB become 18.8 MB; Experiment I
uses 0.25 ms: docs/dcms.md says why Experiment II needs the slower scale).  CI runs 28 s
of the paper -- X→Y, the victim, ends at about 24 s; ``--full`` runs 90 s, until every
contributor has finished.  Numbers are read from the runs (:func:`.experiments.exp2_values`);
the paper's words and the accepted ranges are only here.

Units: throughput as a fraction of SDR (wire bytes; the paper's "8 Gbps"); the growth
rates of Figure 5(b) as a fraction of time (PortXmitTimeCong, PortXmitWait: the paper's
ticks/s × 22 ns) or of SDR (PortXmitData: the paper's words/s × 4 B / 1 GB/s).  The plots
show them in the paper's ticks/s and words/s (:mod:`.figures`).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..reproduction import REGRESSION, Check, Reproduction, RunCache, Runner
from . import compare as C
from .experiments import exp2_values, run_exp2
from .figures import plot_exp2

__all__ = ["REPRODUCTIONS"]

CI_S, FULL_S = 28.0, 90.0


def _compare(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    res = C.compare(full, cache)
    values = {"%s_%s_%s" % (topo, s, m): v[m] for topo, rows in res.items()
              for s, v in rows.items() for m in C.METRICS}
    for topo, v in res.items():
        values[topo + "_dcms_victim_gain"] = v["cca_dcms"]["victim"] - v["cca_mr128"]["victim"]
        values[topo + "_dcms_contributor_gain"] = v["cca_dcms"]["contributors"] - v["cca_mr0"]["contributors"]
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        C.plot(res, out / "compare.png")
        (out / "compare.md").write_text(C.table(res) + "\n")
        (out / "compare.json").write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return values


def _runner(scenario: int) -> Runner:
    def run(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
        r = run_exp2(scenario, FULL_S if full else CI_S, cache=cache)
        values = exp2_values(r, scenario)
        if out_dir is not None:
            out = Path(out_dir)
            out.mkdir(parents=True, exist_ok=True)
            plot_exp2(r, scenario, out / ("fig%d.png" % (4 + scenario)))
            (out / ("fig%d.json" % (4 + scenario))).write_text(json.dumps(
                {"values": values, "decisions": r["decisions"]}, indent=1, sort_keys=True) + "\n")
        return values
    return run


S43 = "seed 002 §4.3"
F5, F6 = S43 + ", Figure 5", S43 + ", Figure 6"
# Bands (issue 13), as dcms_fig3's: "roughly 8 Gbps" / "8 Gbps" for a lone or recovered
# flow is at least 0.95 of SDR; "one-third" 1/3 ± 10 %; a number the text states (a
# counter's growth rate, a time) that number ± 15 % (rates) or the stated instant ± 0.5 s
# (times, one sweep τ = 1 s apart).  Counter rates are normalised as the manager does:
# PortXmitWait × 22 ns (the testbed's tick, §4.2) per second, PortXmitData × 4 B per
# second over SDR's 1 GB/s.
WAIT_CAUSE = ("ibemu's (S1, 15) always has a packet waiting when it is not sending (QDR busy 0.17 of the time "
              "with X→Y + A→D at 2/3 SDR: 1 - 0.17 = 0.83 waiting); the paper's 0.62 means its port also sat idle, "
              "with nothing queued, 0.2 of the time -- a pause upstream (hosts, PCIe) that ibemu does not model")
CONG_CAUSE = ("ibemu's (S2, 23) holds a standing queue while two full-rate flows share it and counts it congested "
              "all the time; the paper gives no tick for this counter and its counts do not fit a time-in-"
              "congestion counter (850K over a whole Experiment I run at Marking_Rate 8-128, 6.0×10^6/s here)")
TIMELINE_CAUSE = ("the paper's Default comes 3-4 s after Low + T_I in both scenarios (23 s, 17 s; Low at 7-8 s); "
                  "Algorithms 2-3 with any one sweep interval τ give Low + (T_I - 1) τ, and no τ fits both "
                  "(15/11 ≠ 9/5); ibemu keeps τ = 1 s, the thresholds' own per-second unit: 19 s and 13 s")
_COMMON = [
    Check("victim_before", "X→Y at 8 Gb/s before A→D starts (≥ 0.95 of SDR)", 0.95, 1.01,
          quote="The B-D flow enjoyed 8 Gbps when it started, as did the X-Y flow when it started.",
          section=F5 + "a"),
    Check("victim_hit", "X→Y falls from 8 to 2.67 Gb/s (1/3 ± 10 %) when A→D starts", 0.30, 0.367,
          quote="In addition, the throughput of the X-Y flow also dropped from 8 Gbps to 2.67 Gbps.",
          section=F5 + "a"),
    Check("first_low_s", "Low set after A→D starts at 7 s, in effect by 8.5 s", 7.0, 8.5, unit="s",
          quote="At 8.5s, as a result of setting `Marking_Rate` to `Low`, the sending rates of flows B-D, C-D, "
                "and A-D decreased", section=F5),
    Check("W_S1_15_before", "PortXmitWait (S1, 15) growth 0 before A→D", 0.0, 0.01,
          quote="`PortXmitWait` of port (S1, 15) remained unchanged (i.e., rate of increase, as seen in Fig. 5b, "
                "was 0) as the A-D flow had not yet started", section=F5 + "b"),
    Check("W_S1_15_hit", "2.8×10^7 ticks/s × 22 ns = 0.62 of the time (± 15 %)", 0.52, 0.71,
          quote="Fig. 5b shows that the `PortXmitWait` of port (S1, 15) started increasing at 2.8×10^7 ticks/s.",
          section=F5 + "b", departs=WAIT_CAUSE),
    Check("D_S1_15_before", "PortXmitData (S1, 15) 2.7×10^8 words/s = 1.08 SDR (± 15 %)", 0.92, 1.24,
          quote="`PortXmitData` of port (S1, 15) registered a growth rate of 2.7×10^8 words/s", section=F5 + "b"),
    Check("D_S1_15_hit", "drops to 1.8×10^8 words/s = 0.72 SDR (± 15 %)", 0.61, 0.83,
          quote="the growth-rate of `PortXmitData` of port (S1, 15) dropped from 2.7×10^8 words/s to 1.8×10^8 "
                "words/s", section=F5 + "b"),
    Check("D_S1_15_low", "rises to 3.1×10^8 words/s = 1.24 SDR (± 15 %) while Low", 1.05, 1.43,
          quote="the growth-rate of `PortXmitData` of port (S1, 15) grew to 3.1×10^8 words/s", section=F5 + "b"),
    Check("C_S2_23_two_flows", "PortXmitCongTime (S2, 23) with B→D + C→D: 6.0×10^6/s, below T_C = 8M "
          "(< 0.18 of the time in the manager's units)", 0.0, 0.18,
          quote="the rate of increase of `PortXmitCongTime` of port (S2, 23) increased at 4.8s from small values "
                "to 6.0×10^6 ticks/s", section=F5 + "b", departs=CONG_CAUSE),
    Check("contributors_low", "B→D + C→D + A→D fall to 3 × 1.23 Gb/s = 0.46 SDR (± 15 %) while Low", 0.39, 0.53,
          quote="causing their throughput to drop from 2.67 Gbps to 1.23 Gbps", section=F5 + "a",
          departs="as dcms_fig3's Marking_Rate 0 contributors: ibemu's Threshold 15 mapping (one packet of "
                  "contention) marks more at low load than the testbed's switch (ibemu/studies/cca/reproduce.py)"),
    Check("victim_recovered", "X→Y rebounds to roughly 8 Gb/s while Low (≥ 0.95 of SDR)", 0.95, 1.01,
          quote="the throughput of the victim X-Y flow rebounded from 2.67 to roughly 8 Gbps", section=F5 + "a"),
]
NO_NUMBER = "no published number: Low lasts T_I - 1 sweeps of τ = 1 s (docs/dcms.md, reading 3)"

REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "dcms_fig5", "DCMS Scenario 1: long Low-MR duration threshold (T_I 12 sweeps)",
        "seed 002 §4.3, Figure 5", None, None,
        _COMMON + [
            Check("default_s", "Default not restored before 23 s, soon after X→Y ends (23-24 s)", 23.0, 24.0,
                  unit="s", quote="From 8.5s to 23s, the controller did not reset the port (S2, 23) `Marking_Rate` "
                                  "to `Default` because the Low-MR duration threshold (12 s) was not crossed.",
                  section=F5, departs=TIMELINE_CAUSE),
            Check("low_duration_s", NO_NUMBER, 10.5, 11.5, unit="s", kind=REGRESSION),
            Check("lows_while_victim_runs", "one Low cycle: X→Y ends before the threshold", 1, 1, unit="cycles",
                  quote="In the first scenario, the victim flow ended before the threshold was reached",
                  section=S43),
            Check("victim_min_after_recovery", "X→Y held at roughly 8 Gb/s until it ends (≥ 0.95 of SDR)",
                  0.95, 1.01, quote="This allowed the X-Y flow to complete at 22 s as seen in Fig. 5a.",
                  section=F5 + "a"),
            Check("xy_done_s", "X→Y completes at 22 s (± 0.5 s)", 21.5, 22.5, unit="s",
                  quote="This allowed the X-Y flow to complete at 22 s as seen in Fig. 5a.", section=F5 + "a"),
            Check("contributors_after_threshold", "contributors recover: aggregate 8 Gb/s (≥ 0.95 of SDR)",
                  0.95, 1.01, quote="each of A-D, B-D, C-D flows recovered throughput from 1.23 Gbps to 2.67 Gbps "
                                    "(aggregate of 8 Gbps shown in Fig. 5a)", section=F5 + "a")],
        runner=_runner(1)),
    Reproduction(
        "dcms_fig6", "DCMS Scenario 2: short Low-MR duration threshold (T_I 6 sweeps)",
        "seed 002 §4.3, Figure 6", None, None,
        _COMMON + [
            Check("default_s", "Default restored at 17 s (± 0.5 s)", 16.5, 17.5, unit="s",
                  quote="which caused the DCMS to reset the `Marking_Rate` of port (S2, 23) to its default value at "
                        "17 sec", section=F6, departs=TIMELINE_CAUSE),
            Check("low_duration_s", NO_NUMBER, 4.5, 5.5, unit="s", kind=REGRESSION),
            Check("victim_second_drop", "X→Y suffers another drop (below 0.95 of SDR)", 0.0, 0.95,
                  quote="This operation caused the X-Y victim flow to suffer another drop in its throughput.",
                  section=F6),
            Check("lows_while_victim_runs", "a second Low cycle while X→Y runs", 2, 2, unit="cycles",
                  quote="resulting in a second reduction in the `Marking_Rate` of port (S2, 23)", section=F6),
            Check("victim_recovered_again", "X→Y recovers its throughput (≥ 0.95 of SDR)", 0.95, 1.01,
                  quote="which allowed the X-Y victim flow to recover its throughput", section=F6)],
        runner=_runner(2)),
]
_NONE = "no published number: no paper compares these schemes; a regression bound on ibemu's "
REPRODUCTIONS.append(Reproduction(
    "dcms_compare", "No control vs HP vs CCA fixed Marking_Rate vs CCA + DCMS (issue 7 item 6)",
    "seed 003 Figure 2 scenario and seed 002 testbed (no paper has this table)", None, None,
    [Check("santos_none_victim", _NONE + "victim with no control (≈ 1/6, as seed 003 Figure 2(a))", 0.11, 0.20,
           kind=REGRESSION),
     Check("testbed_none_victim", _NONE + "X→Y with no control (≈ 1/3, as seed 002 Figure 3(c))", 0.28, 0.40,
           kind=REGRESSION),
     Check("santos_hp_victim", _NONE + "victim under HP", 0.6, 1.0, kind=REGRESSION),
     Check("santos_hp_root", _NONE + "root link under HP", 0.85, 1.01, kind=REGRESSION),
     Check("testbed_cca_mr128_victim", _NONE + "X→Y at a fixed Marking_Rate 128", 0.28, 0.40, kind=REGRESSION),
     Check("testbed_cca_dcms_victim", _NONE + "X→Y under DCMS", 0.9, 1.01, kind=REGRESSION),
     Check("santos_dcms_victim_gain", _NONE + "DCMS victim minus Marking_Rate 128 victim", 0.3, 1.0,
           unit="of link", kind=REGRESSION),
     Check("santos_dcms_contributor_gain", _NONE + "DCMS contributors minus Marking_Rate 0 contributors",
           0.05, 1.0, unit="of link", kind=REGRESSION)],
    runner=_compare))
