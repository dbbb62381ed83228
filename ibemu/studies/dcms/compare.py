"""Issue 7 item 6: the comparison none of the seeds offers -- no congestion control, the HP
scheme with its best response function for static flows (seed 003 §6.4: input-triggered
marking, LIPD, window 1), the IBA CCA at a fixed Marking_Rate (128, DCMS's Default, and
0, its Low) and the CCA with DCMS -- on two scenarios:

- ``santos``: seed 003 Figure 2 (two switches A, B; L = 5 local and R = 1 remote flows
  into BC, the victim AV→BV crossing the inter-switch link), buffers of 4 packets,
  cut-through.  CI: 20 ms with the victim at 8-16 ms, measured 10-16 ms; ``--full``:
  the paper's 100 ms, victim 40-60 ms, measured 45-55 ms.  DCMS: manager ``M`` on
  switch B, τ = 0.5 ms, T_I = 12 sweeps, other thresholds as on the testbed.
- ``testbed``: seed 002 Experiment II (:mod:`.testbed`, Scenario 1 settings), 20 s of the
  paper, measured 9-19 s (A→D running, X→Y the victim).

CCA settings on both: Threshold 15, CCTI_Increase 1, CCTI_Limit 0, CCTI_Timer 75.
Metrics over the window: victim throughput (fraction of its link), contributors' aggregate
(fraction of the root link), root link data utilisation, and Jain's fairness index over
the contributors, (Σx)² / (n·Σx²) (:func:`ibemu.results.jain_index`).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ...results import jain_index
from ...run import run_virtual
from ...scenario import scenario_from_dict
from ...scenario.templates import expand_template
from ...units import PS_PER_MS
from ..reproduction import RunCache
from .testbed import experiment2_dict

__all__ = ["SCHEMES", "LABELS", "METRICS", "santos_dict", "testbed_dict", "run_case", "run_case_of", "compare",
           "table", "plot"]

SCHEMES = ("none", "hp", "cca_mr128", "cca_mr0", "cca_dcms")
LABELS = {"none": "no control", "hp": "HP (input, LIPD)", "cca_mr128": "CCA MR 128",
          "cca_mr0": "CCA MR 0", "cca_dcms": "CCA + DCMS"}
METRICS = ("victim", "contributors", "root", "fairness")
HP = {"marking": "input", "response": "lipd", "rates": "discrete"}
CCA = {"Threshold": 15, "CCTI_Increase": 1, "CCTI_Limit": 0, "CCTI_Timer": 75}
DCMS = {"T_C": 0.18, "T_W": 0.60, "T_D": 0.03, "T_I": 12, "low": 0, "default": 128}
Window = tuple[float, float]


def _cc(scheme: str, manager: str, tau: str) -> dict[str, Any]:
    if scheme == "none":
        return {"scheme": "none"}
    if scheme == "hp":
        return {"scheme": "hp", "hp": dict(HP)}
    mr = {"cca_mr128": 128, "cca_mr0": 0, "cca_dcms": DCMS["default"]}[scheme]
    cc: dict[str, Any] = {"scheme": "cca", "cca": {**CCA, "Marking_Rate": mr}}
    if scheme == "cca_dcms":
        cc["dcms"] = {"manager": manager, "tau": tau, **DCMS}
    return cc


def santos_dict(scheme: str, full: bool = False) -> tuple[dict[str, Any], Window]:
    """The seed 003 Figure 2 scenario under *scheme*; returns (raw, window ms)."""
    dur, victim, window = ((100, (40, 60), (45, 55)) if full else (20, (8, 16), (10, 16)))
    gen, _, _ = expand_template("santos_fig1", {"L": 5, "R": 1, "buffer_packets": 4,
                                                "duration": "%dms" % dur, "victim_start": "%dms" % victim[0],
                                                "victim_stop": "%dms" % victim[1]})
    raw = copy.deepcopy(gen)
    raw["scenario"].update(name="compare_santos_" + scheme, seed=1)
    raw["output"]["window"] = "%dms" % (window[1] - window[0])
    if scheme == "cca_dcms":
        raw["hca"].append({"name": "M", "lid": max(h["lid"] for h in raw["hca"]) + 1})
        raw["link"].append({"a": "M", "b": "B", "name": "mgmt"})
    raw["cc"] = _cc(scheme, "M", "500us")
    return raw, window


def testbed_dict(scheme: str, full: bool = False) -> tuple[dict[str, Any], Window]:
    """Experiment II's flows on the DCMS testbed under *scheme*; (raw, window ms)."""
    raw = experiment2_dict(1, duration_s=20, scale_ms_per_s=1.0, dcms=scheme == "cca_dcms",
                           marking_rate={"cca_mr0": 0}.get(scheme, 128),
                           name="compare_testbed_" + scheme)
    if scheme in ("none", "hp"):
        raw["cc"] = _cc(scheme, "M", "1ms")
    return raw, (9, 19)


ROLES = {"santos": ("victim", ("local1", "local2", "local3", "local4", "local5", "remote1")),
         "testbed": ("XY", ("BD", "CD", "AD"))}


def run_case(topology: str, scheme: str, full: bool = False,
             cache: RunCache | None = None) -> dict[str, Any]:
    """One scenario under one scheme, measured over its window; memoised in *cache*."""
    if cache is None:
        return _run_case(topology, scheme, full)
    return cache.get(("dcms.compare", topology, scheme, full), lambda: _run_case(topology, scheme, full))


def _run_case(topology: str, scheme: str, full: bool) -> dict[str, Any]:
    raw, window = (santos_dict if topology == "santos" else testbed_dict)(scheme, full)
    scn = scenario_from_dict(raw, label="compare %s %s" % (topology, scheme))
    r = run_virtual(scn, progress=False, window=(int(window[0] * PS_PER_MS), int(window[1] * PS_PER_MS)))
    flows = r.summary["flows"]
    victim, contributors = ROLES[topology]
    xs = [flows[f]["window"]["normalized"] for f in contributors]
    return {"victim": flows[victim]["window"]["normalized"], "contributors": sum(xs),
            "root": r.summary["links"]["root"]["window"]["data_utilization"],
            "fairness": jain_index(xs),
            "window_ms": window, "decisions": len([e for e in r.metrics.events if e[1] == "M"])}


Results = dict[str, dict[str, dict[str, Any]]]


def compare(full: bool = False, cache: RunCache | None = None) -> Results:
    """{topology: {scheme: metrics}} for every topology and scheme."""
    cases = [(topo, s, full) for topo in ("santos", "testbed") for s in SCHEMES]
    if cache is not None:       # the missing runs together (on Dask under ``ibemu reproduce --full``)
        cache.get_many([("dcms.compare", *c) for c in cases], run_case_of, cases)
    return {topo: {s: run_case(topo, s, full, cache) for s in SCHEMES} for topo in ("santos", "testbed")}


def run_case_of(case: tuple[str, str, bool]) -> dict[str, Any]:
    """One (topology, scheme, full) case, unmemoised (module-level: it pickles)."""
    return _run_case(*case)


def table(results: Results) -> str:
    """A Markdown table of :func:`compare`'s results."""
    lines = ["| scenario | scheme | victim | contributors | root | fairness (Jain) | DCMS decisions |",
             "|---|---|---|---|---|---|---|"]
    for topo, rows in results.items():
        for s, m in rows.items():
            lines.append("| %s | %s | %.1f %% | %.1f %% | %.1f %% | %.3f | %s |" % (
                topo, LABELS[s], 100 * m["victim"], 100 * m["contributors"], 100 * m["root"], m["fairness"],
                m["decisions"] if s == "cca_dcms" else "-"))
    return "\n".join(lines)


def plot(results: Results, path: Path) -> None:
    import numpy as np
    from matplotlib.figure import Figure
    fig = Figure(figsize=(11, 4), dpi=110)
    for k, (topo, rows) in enumerate(results.items()):
        ax = fig.add_subplot(1, 2, k + 1)
        x = np.arange(len(METRICS))
        w = 0.8 / len(SCHEMES)
        for i, s in enumerate(SCHEMES):
            ax.bar(x + (i - (len(SCHEMES) - 1) / 2) * w, [rows[s][m] for m in METRICS], w, label=LABELS[s])
        ax.set_xticks(x, list(METRICS))
        ax.set_ylim(0, 1.1)
        ax.set_title({"santos": "seed 003 Figure 2 scenario (L=5, R=1)",
                      "testbed": "seed 002 testbed, Experiment II flows"}[topo])
        ax.grid(True, axis="y", alpha=0.3)
        if k == 0:
            ax.set_ylabel("fraction of link rate (fairness: Jain index)")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(SCHEMES), fontsize="small")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, metadata={"Software": None})
