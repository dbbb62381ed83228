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
ticks/s × 22 ns) or of SDR (PortXmitData: the paper's words/s × 4 B / 1 GB/s).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..reproduction import Check, Reproduction, RunCache, Runner
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


_COMMON = [
    Check("victim_before", "X→Y ≈ 8 Gb/s before A→D starts", 0.93, 1.01),
    Check("victim_hit", "X→Y falls to one third of SDR (2.67 Gb/s) when A→D starts", 0.20, 0.45),
    Check("first_low_s", "Marking_Rate of (S2, 23) set Low at ≈ 7-8.5 s", 7.0, 9.0, unit="s"),
    Check("W_S1_15_before", "PortXmitWait (S1, 15) growth 0 before A→D", 0.0, 0.02),
    Check("W_S1_15_hit", "grows at 2.8×10^7 ticks/s (0.62 of the time) > T_W", 0.60, 1.0),
    Check("D_S1_15_before", "PortXmitData (S1, 15) 2.7×10^8 words/s (1.08 SDR)", 0.9, 1.1),
    Check("D_S1_15_hit", "drops to 1.8×10^8 words/s (0.72 SDR)", 0.5, 0.85),
    Check("D_S1_15_low", "rises to 3.1×10^8 words/s (1.24 SDR) while Low", 0.95, 1.3),
    Check("C_S2_23_two_flows", "PortXmitTimeCong (S2, 23) with B→D+C→D: 0.13 of the time "
          "(ibemu: ≈ 1, docs/dcms.md)", 0.10, 1.01),
    Check("contributors_low", "B→D+C→D+A→D fall to 3 × 1.23 Gb/s (0.46 SDR) while Low", 0.2, 0.6),
    Check("victim_recovered", "X→Y rebounds to ≈ 8 Gb/s while Low", 0.93, 1.01),
]

REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "dcms_fig5", "DCMS Scenario 1: long Low-MR duration threshold (T_I 12 sweeps)",
        "seed 002 §4.3, Figure 5", None, None,
        _COMMON + [
            Check("low_duration_s", "Low held until T_I (12 s) or no victims", 10.0, 12.5, unit="s"),
            Check("lows_while_victim_runs", "one Low cycle while X→Y runs", 1, 1, unit="cycles"),
            Check("victim_min_after_recovery", "X→Y not hit again before it ends", 0.9, 1.01),
            Check("xy_done_s", "X→Y completes at 22 s", 20.0, 26.0, unit="s"),
            Check("contributors_after_threshold", "contributors recover: 3 × 2.67 = 8 Gb/s", 0.85, 1.01)],
        runner=_runner(1)),
    Reproduction(
        "dcms_fig6", "DCMS Scenario 2: short Low-MR duration threshold (T_I 6 sweeps)",
        "seed 002 §4.3, Figure 6", None, None,
        _COMMON + [
            Check("low_duration_s", "Default restored after T_I (6 s) while X→Y runs", 4.5, 6.5, unit="s"),
            Check("victim_second_drop", "X→Y suffers another drop", 0.2, 0.8),
            Check("lows_while_victim_runs", "a second Low cycle while X→Y runs", 2, 3, unit="cycles"),
            Check("victim_recovered_again", "X→Y recovers its throughput again", 0.9, 1.01)],
        runner=_runner(2)),
]
REPRODUCTIONS.append(Reproduction(
    "dcms_compare", "No control vs HP vs CCA fixed Marking_Rate vs CCA + DCMS (issue 7 item 6)",
    "seed 003 Figure 2 scenario and seed 002 testbed (no paper has this table)", None, None,
    [Check("santos_none_victim", "no control: victim ≈ 1/6 (seed 003 Figure 2(a))", 0.11, 0.20),
     Check("testbed_none_victim", "no control: X→Y ≈ 1/3 (seed 002 Figure 3(c))", 0.28, 0.40),
     Check("santos_hp_victim", "HP removes spreading: victim takes most of its link (seed 003)", 0.6, 1.0),
     Check("santos_hp_root", "HP keeps the root link busy (seed 003 §6.4: ≈ 100 %)", 0.85, 1.01),
     Check("testbed_cca_mr128_victim", "Marking_Rate 128 behaves like no control (seed 002 §4.2)", 0.28, 0.40),
     Check("testbed_cca_dcms_victim", "DCMS protects the victim (seed 002 §4.3)", 0.9, 1.01),
     Check("santos_dcms_victim_gain", "DCMS victim minus Marking_Rate 128 victim", 0.3, 1.0, unit="of link"),
     Check("santos_dcms_contributor_gain", "DCMS contributors minus Marking_Rate 0 contributors",
           0.05, 1.0, unit="of link")],
    runner=_compare))
