"""Seed 003's results with the HP scheme (Figures 4–8), a comparison the papers do not
give (Figures 2–3's scenario under each control) and seed 000 §6.2's non-compliant CA,
for ``ibemu reproduce`` (and tests/test_reproduce.py, which runs each CI-sized).

The runners (:mod:`.figures`) only measure; the paper's statements and the ranges we
accept are here.  ``--full`` runs the paper's sweeps (minutes to an hour each).
"""
from __future__ import annotations

from ..reproduction import Check, Reproduction
from .figures import run_compare, run_fig4, run_fig5, run_fig6, run_fig7, run_fig8a, run_fig8b, run_noncompliant

__all__ = ["REPRODUCTIONS"]

REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "hp_fig4", "HP marking policies, L=10 R=10, buffer 4, LIPD", "seed 003 §5, Figure 4",
        None, None,
        [Check("naive:local share", "local flows take about 90 % of the root", 0.75, 0.97),
         Check("naive:root", "root fully used", 0.93, 1.01),
         Check("naive:victim", "victim gets high throughput (no spreading)", 0.3, 1.0),
         Check("input - naive: remote/local", "input-triggered fairer than naive", 0.2, 1.0, ""),
         Check("input:remote/local", "unfairness not entirely eliminated (remote < local)", 0.3, 1.0, ""),
         Check("input:root", "root fully used", 0.93, 1.01),
         Check("input:inter (victim on)", "inter-switch link highly used", 0.75, 1.01),
         Check("in-out-4:root", "root under-used (marking too frequent)", 0.6, 0.94),
         Check("in-out-8:root", "high root utilization", 0.93, 1.01),
         Check("in-out-8 - input: remote/local", "output triggering adds fairness", 0.0, 1.0, ""),
         Check("in-out-8:remote/local", "local ≈ remote (ours: remote keeps less in long runs)",
               0.35, 1.25, "")],
        runner=run_fig4),
    Reproduction(
        "hp_fig6", "Rate recovery Rmin→Rmax of FIMD, LIPD, AIMD", "seed 003 §6.2, Figure 6",
        None, None,
        [Check("fimd:continuous ms", "4.2 ms (FIMD, m=2)", 4.2 * 0.99, 4.2 * 1.01, "ms"),
         Check("fimd:discrete ms", "4.2 ms (FIMD, m=2)", 4.2 * 0.99, 4.2 * 1.01, "ms"),
         Check("lipd:continuous ms", "133.7 ms", 133.7 * 0.99, 133.7 * 1.01, "ms"),
         Check("lipd:discrete ms", "133.7 ms", 133.7 * 0.99, 133.7 * 1.01, "ms"),
         Check("aimd:continuous ms", "133.7 ms (AIMD, m=2)", 133.7 * 0.99, 133.7 * 1.01, "ms"),
         Check("aimd:discrete ms", "133.7 ms (AIMD, m=2)", 133.7 * 0.99, 133.7 * 1.01, "ms")],
        runner=run_fig6),
    Reproduction(
        "hp_fig7", "Response functions with static flows, L=10 R=10", "seed 003 §6.3.1, Figure 7",
        None, None,
        [Check("lipd discrete b4:root", "LIPD: almost 100 % root", 0.95, 1.01),
         Check("lipd continuous b4:root", "LIPD: almost 100 % root", 0.95, 1.01),
         Check("lipd discrete b4:inter", "LIPD: high inter-switch utilization", 0.75, 1.01),
         Check("fimd discrete b4:inter", "FIMD: high inter-switch utilization", 0.75, 1.01),
         Check("lipd discrete b2:inter", "LIPD tolerates victim marks at small buffers", 0.6, 1.01),
         Check("aimd discrete b2:inter", "AIMD: inter-switch low at small buffers", 0.0, 0.6),
         Check("b2: lipd inter - aimd inter", "AIMD's slow recovery costs the inter-switch link", 0.15, 1.0, ""),
         Check("lipd:max |discrete-continuous|", "discrete ≈ continuous", 0.0, 0.06),
         Check("fimd:max |discrete-continuous|", "discrete ≈ continuous", 0.0, 0.06)],
        runner=run_fig7),
    Reproduction(
        "hp_fig5", "Buffer size × output threshold, L=10 R=10, LIPD", "seed 003 §5, Figure 5",
        None, None,
        [Check("thr 4 b8:root", "threshold 4: root under-used", 0.5, 0.93),
         Check("thr 8 b8:root", "higher threshold: high root utilization (> 90 %)", 0.9, 1.01),
         Check("thr none b2:root", "small buffers (2–4): root under-used", 0.4, 0.9),
         Check("thr none b8:root", "input-triggered, buffer 8: high root utilization", 0.9, 1.01),
         Check("none: remote/local b8 - b2", "input-triggered: fairness improves with buffer size", 0.05, 1.0, ""),
         Check("b8: remote/local thr8 - thr4", "large buffers: locals get less as threshold goes 4 → 8",
               0.05, 1.0, ""),
         Check("thr 4: |remote/local b12 - b8|", "buffer > threshold: all output-triggered, ratio flat",
               0.0, 0.1, "")],
        runner=run_fig5),
    Reproduction(
        "hp_fig8a", "Half the flows ON/OFF, with and without persistent state", "seed 003 §6.3.2, Figure 8(a)",
        None, None,
        [Check("on 10us reset:dynamic/static", "short ON, no persistence: dynamic flows starve static ones",
               3.0, 100.0, "×"),
         Check("on 10us persistent:dynamic/static", "with persistent state: they share", 0.5, 1.5, "×"),
         Check("on 10us persistent:static", "static flows not penalized (≈ 0.5)", 0.4, 0.7)],
        runner=run_fig8a),
    Reproduction(
        "hp_fig8b", "All flows ON/OFF, FIMD vs LIPD vs AIMD", "seed 003 §6.3.2, Figure 8(b)",
        None, None,
        [Check("on 10us:lipd - fimd", "short ON (near static): LIPD best", 0.0, 0.3, ""),
         Check("on 10us:aimd below best", "AIMD about 10 % lower than the best", 0.05, 0.3, ""),
         Check("on 500us:fimd - lipd", "FIMD best in the 0.2–2 ms range (≥ LIPD)", 0.0, 0.3, ""),
         Check("on 500us:aimd below best", "AIMD about 10 % lower than the best", 0.05, 0.3, ""),
         Check("on 500us fimd:inter", "inter-switch highly used (no spreading)", 0.8, 1.01),
         Check("on 500us lipd:inter", "inter-switch highly used (no spreading)", 0.8, 1.01)],
        runner=run_fig8b),
    Reproduction(
        "hp_compare", "Figs 2–3 scenario: no control, window 1, HP with FIMD/LIPD/AIMD",
        "seed 003 Figs 2–3 scenario (not in the papers)", None, None,
        [Check("R=1 no control:victim", "spreading holds the victim near 1/6 (Fig. 2(a))", 0.1, 0.22),
         Check("R=1 window 1:victim", "window 1 lets the victim through (Fig. 2(b))", 0.7, 0.95),
         Check("R=1 HP LIPD:victim", "HP as good as window 1 (nothing to mark)", 0.7, 0.95),
         Check("R=5 window 1:victim", "window 1 fails with R=5 (Fig. 3(a))", 0.0, 0.25),
         Check("R=5 HP LIPD:victim", "HP: victim not held down", 0.35, 1.0),
         Check("R=5 HP FIMD:victim", "HP: victim not held down", 0.35, 1.0),
         Check("R=5 HP LIPD:root", "HP keeps the root busy", 0.9, 1.01)],
        runner=run_compare),
    Reproduction(
        "hp_noncompliant", "A non-compliant source paced by the subnet manager", "seed 000 §6.2",
        None, None,
        [Check("no manager:L1 share of root", "unpaced, the non-compliant source takes most of the root",
               0.6, 1.0),
         Check("manager:L1 share of root", "paced near its fair share (1/8)", 0.05, 0.25),
         Check("manager:root", "root still fully used", 0.9, 1.01)],
        runner=run_noncompliant),
]
