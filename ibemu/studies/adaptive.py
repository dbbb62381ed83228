"""The adaptive-routing study (issue 31 Deliver 5): what spreading packets over the
equal-cost up-ports of a fat tree does to permutations, and to a hot spot's congestion
tree under each congestion-control scheme.

- **Permutations** on fat_tree2 (ftree routes; greedy RC flows of 2 KiB messages), static
  against adaptive routing (policy ``credits``, :mod:`ibemu.fabric.adaptive`): a random
  permutation, a shift by one host (mostly inside a leaf) and a shift by one leaf (every
  flow crosses the spines; static ftree routes it without contention).  Reported over
  the last 80 % of the run: the flows' mean throughput as a share of their link, their
  message latency (p50, p99), and the packets the responders took out of order.
- **Hot spot**: the congestion-tree study's scenario (:mod:`.congestion_tree`) with no
  congestion control, HP and the IBA CCA, each under static and adaptive routing: the
  victims' mean throughput, the links in the congestion tree (blocked for credits more
  than :data:`~.congestion_tree.BLOCKED` of the time) and how many spines the tree
  reaches (a spine with a tree link into or out of it).  The roles (victim, bystander)
  are those of the LFT paths, as in the congestion-tree study.

Adaptive routing here is the policy ``credits`` with adaptive routing notifications
(:data:`ARN`; ``[routing] arn``, :mod:`ibemu.fabric.arn`): a spine whose down port is
congested tells the leaf that sent the packet to route that destination through another
spine for a while.  Without them the leaves see only their own ports, and a random
permutation on the 128-host fat tree stopped at 0.84-0.85 of the line rate
(docs/adaptive.md); ``arn=False`` runs that variant.

Every run, static and adaptive alike, has switches with a crossbar speedup of
:data:`SPEEDUP` (``crossbar_speedup``, :mod:`ibemu.fabric.xport`): a combined
input-output queued switch with speedup 2 can emulate an output-queued switch exactly
(Chuang, Goel, McKeown, Prabhakar, IEEE JSAC 1999), and without it ibemu's crossbar
(seed 003 Table 1: an input sends one packet at a time) loses the line rate adaptive
routing wins to head-of-line blocking at every switch stage (docs/adaptive.md).

CI size: 32 hosts (radix 8, 8 leaves of 4 hosts, 4 spines), permutations 100 µs, the
hot spot at the congestion-tree study's CI size.  Full size: 128 hosts (radix 16), 200 µs;
the hot spot at its full size.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..run import run_virtual
from ..scenario import Scenario, scenario_from_dict
from . import congestion_tree as tree
from .outputs import write_table
from .reproduction import REGRESSION, Check, Reproduction, RunCache

__all__ = ["SPEEDUP", "ARN", "PATTERNS", "HOT_CASES", "ROUTINGS", "run_permutation", "run_hotspot", "run_study",
           "derived", "format_table", "main", "REPRODUCTIONS"]

PATTERNS = ("permutation", "shift", "shift_leaf")
HOT_CASES = ("none", "hp", "cca")
ROUTINGS = ("static", "adaptive")
SPEEDUP = 2.0           # the switches' crossbar speedup, static and adaptive alike (module docstring)
ARN = True              # adaptive routing with notifications (module docstring)
CI = {"radix": 8, "duration": "100us"}
FULL = {"radix": 16, "duration": "200us"}


def permutation_scenario(pattern: str, routing: str, full: bool, speedup: float = SPEEDUP,
                         arn: bool = ARN, seed: int = 1, duration: str | None = None,
                         routing_keys: dict[str, Any] | None = None) -> Scenario:
    """fat_tree2 with one [[traffic]] table of *pattern* ("shift_leaf": a shift by the
    hosts of one leaf), routed by ftree, statically or adaptively (with notifications:
    *arn*), its switches with a crossbar *speedup*; the study's *seed* and *duration*
    unless given, and more ``[routing]`` keys in *routing_keys* (benchmarks/adaptive_seeds.py)."""
    size = FULL if full else CI
    radix = int(size["radix"])
    traffic: dict[str, Any] = {"pattern": "shift" if pattern.startswith("shift") else pattern}
    if pattern == "shift_leaf":
        traffic["k"] = radix // 2                  # hosts per leaf: every flow to the next leaf
    raw = {"template": {"name": "fat_tree2", "radix": radix, "leaves": radix},
           "scenario": {"name": "adaptive_%s_%s" % (pattern, routing), "duration": duration or size["duration"],
                        "seed": seed},
           "routing": {"engine": "ftree", "adaptive": routing == "adaptive", "arn": arn and routing == "adaptive",
                       **(routing_keys or {})},
           "defaults": {"link": {"rate": "4x_sdr", "propagation": "10ns"},
                        "switch": {"buffer": "4 packets", "crossbar_speedup": speedup}},
           "traffic": [traffic], "output": {"bin": "10us", "plots": False}}
    return scenario_from_dict(raw, label="adaptive study")


def run_permutation(pattern: str, routing: str, full: bool, out_dir: Path | None = None,
                    speedup: float = SPEEDUP, arn: bool = ARN, seed: int = 1,
                    duration: str | None = None, routing_keys: dict[str, Any] | None = None) -> dict[str, float]:
    """One permutation run: throughput (mean share of link per flow), latency p50/p99 in
    µs and the packets taken out of order, over the last 80 % of the run."""
    scn = permutation_scenario(pattern, routing, full, speedup, arn, seed, duration, routing_keys)
    r = run_virtual(scn, out_dir=out_dir, window=(scn.duration // 5, scn.duration), progress=False)
    g = r.summary["groups"]["shift" if pattern.startswith("shift") else pattern]
    w = g["window"]
    lat = w.get("latency") or {}
    flows = r.summary["flows"].values()
    return {"throughput": float(w["normalized"]) / len(g["flows"]),
            "p50_us": float(lat.get("p50_ps") or 0) / 1e6, "p99_us": float(lat.get("p99_ps") or 0) / 1e6,
            "out_of_order": float(sum(f.get("out_of_order", 0) for f in flows)),
            "reorder_depth": float(max((f.get("reorder_depth", 0) for f in flows), default=0))}


def _spines(run: tree.CaseRun, share: dict[str, float]) -> float:
    """Switches without hosts that a tree link (blocked > BLOCKED) enters or leaves."""
    scn = run.scenario
    hosts = {h.name for h in scn.hcas}
    leaves = {end for link in scn.links for end, other in ((link.a, link.b), (link.b, link.a)) if other in hosts}
    spines = {s.name for s in scn.switches} - leaves
    reached = set()
    for label, x in share.items():
        if x > tree.BLOCKED:
            a, _, b = label.partition("->")
            reached |= {a, b} & spines
    return float(len(reached))


def run_hotspot(case: str, routing: str, full: bool, out_dir: Path | None = None,
                speedup: float = SPEEDUP, arn: bool = ARN) -> dict[str, float]:
    """One hot-spot case of the congestion-tree study under *routing* (adaptive: with
    notifications, *arn*), its switches with a crossbar *speedup*."""
    raw, label = tree.load_raw(None, full)
    raw.setdefault("routing", {})["adaptive"] = routing == "adaptive"
    raw["routing"]["arn"] = arn and routing == "adaptive"
    raw.setdefault("defaults", {}).setdefault("switch", {})["crossbar_speedup"] = speedup
    run = tree.run_case(raw, label, case, out_dir)
    values = tree.case_values(run)
    _, _, share, _ = tree.blocked_series(run)
    values["spines"] = _spines(run, share)
    return values


def run_study(out_dir: Path | None, full: bool) -> dict[str, dict[str, float]]:
    """Every run; the table (adaptive.md, adaptive.json) and plot (adaptive.png) in *out_dir*."""
    values: dict[str, dict[str, float]] = {}
    for pattern in PATTERNS:
        for routing in ROUTINGS:
            values["%s:%s" % (pattern, routing)] = run_permutation(pattern, routing, full)
    for case in HOT_CASES:
        for routing in ROUTINGS:
            values["hot_%s:%s" % (case, routing)] = run_hotspot(case, routing, full)
    if out_dir is not None:
        out = write_table(out_dir, "adaptive", format_table(values), values)
        _plot(values, out / "adaptive.png")
    return values


def format_table(values: dict[str, dict[str, float]]) -> str:
    """Two Markdown tables: the permutations, then the hot spot."""
    lines = ["| pattern | routing | throughput | p50 us | p99 us | out of order |", "|---|---|---:|---:|---:|---:|"]
    for key, v in values.items():
        if not key.startswith("hot_"):
            p, r = key.split(":")
            lines.append("| %s | %s | %.3f | %.2f | %.2f | %d |" % (p, r, v["throughput"], v["p50_us"], v["p99_us"],
                                                                   v["out_of_order"]))
    lines += ["", "| hot spot | routing | victims | bystanders | hot-spot link | tree links | spines |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for key, v in values.items():
        if key.startswith("hot_"):
            c, r = key[4:].split(":")
            lines.append("| %s | %s | %.3f | %.3f | %.3f | %d | %d |" % (c, r, v["victims"], v["bystanders"],
                                                                        v["hotspot_link"], v["tree_links"],
                                                                        v["spines"]))
    return "\n".join(lines)


def _plot(values: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    x = np.arange(len(PATTERNS))
    for i, routing in enumerate(ROUTINGS):
        axes[0].bar(x + 0.4 * i, [values["%s:%s" % (p, routing)]["throughput"] for p in PATTERNS], 0.4,
                    label=routing)
    axes[0].set_xticks(x + 0.2, PATTERNS)
    axes[0].set_ylabel("mean flow throughput (share of link)")
    axes[0].set_ylim(0, 1.05)
    xh = np.arange(len(HOT_CASES))
    for i, routing in enumerate(ROUTINGS):
        axes[1].bar(xh + 0.4 * i, [values["hot_%s:%s" % (c, routing)]["victims"] for c in HOT_CASES], 0.4,
                    label=routing)
        axes[2].bar(xh + 0.4 * i, [values["hot_%s:%s" % (c, routing)]["tree_links"] for c in HOT_CASES], 0.4,
                    label=routing)
    for ax, title in ((axes[1], "victims' mean throughput (share of link)"), (axes[2], "links in the congestion tree")):
        ax.set_xticks(xh + 0.2, HOT_CASES)
        ax.set_ylabel(title)
    for ax in axes:
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    fig.suptitle("Adaptive against static routing on a fat tree: permutations (left), a hot spot (middle, right)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def derived(values: dict[str, dict[str, float]]) -> dict[str, float]:
    """The figures the checks judge: every value as ``<run>:<key>``, and the comparisons."""
    out = {"%s:%s" % (k, m): x for k, v in values.items() for m, x in v.items()}
    for p in PATTERNS:
        s, a = values[p + ":static"]["throughput"], values[p + ":adaptive"]["throughput"]
        out[p + "_gain"] = a - s
        out[p + "_loss"] = 1 - a / s
    for c in HOT_CASES:
        out["hot_%s_spines_gain" % c] = values["hot_%s:adaptive" % c]["spines"] - values["hot_%s:static" % c]["spines"]
    return out


def _runner(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    return derived(cache.get(("adaptive", full), lambda: run_study(out_dir, full)))


def main(out_dir: str | None, full: bool, scenario: str | None = None) -> int:
    """``ibemu study adaptive [--ci-size] [--out DIR]``: every run, the tables printed."""
    from ..errors import UserError
    if scenario is not None:
        raise UserError("%s: the adaptive study builds its own fabrics; give no scenario file" % scenario)
    out = Path(out_dir or "studies/adaptive")
    print(format_table(run_study(out, full)))
    print("tables (adaptive.md, adaptive.json) and adaptive.png in %s/" % out)
    return 0


ISSUE = "issue 31, Acceptance"
_INF = float("inf")
REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "adaptive", "Adaptive routing on a fat tree: permutations and a hot spot's congestion tree",
        "issue 31; seeds 000, 003 (tree saturation)", None, None,
        [Check("permutation_gain", "adaptive routing evens out the load static routing piles onto one spine",
               1e-3, _INF, unit="of link",
               quote="adaptive routing evens out the load that static routing piles onto one spine", section=ISSUE),
         Check("permutation:adaptive:throughput", "a random permutation: at least 0.85 of line rate", 0.85, 1.01,
               quote="A random permutation on the 128-host fat_tree2 delivers at least 0.85 of the line rate in "
                     "sum with adaptive routing", section=ISSUE),
         Check("shift_loss", "a shift (k = 1) loses at most 1 %", -_INF, 0.01,
               quote="A shift permutation, which static ftree routes without contention, loses at most 1 % under "
                     "adaptive routing.", section=ISSUE),
         Check("shift_leaf_loss", "a shift by a leaf loses at most 1 %", -_INF, 0.01,
               quote="A shift permutation, which static ftree routes without contention, loses at most 1 % under "
                     "adaptive routing.", section=ISSUE),
         Check("hot_none:static:tree_links", "no CC: the hot spot's backlog blocks links upstream", 1, _INF,
               unit="links", quote="The blocking can spread further upstream and eventually fill buffers all the "
                                   "way back to the traffic sources.", section="seed 003 §1"),
         Check("hot_none_spines_gain", "no published number (adaptive: the tree reaches as many spines or more)",
               0, _INF, unit="spines", kind=REGRESSION),
         Check("hot_none:adaptive:victims", "no published number (no CC, adaptive: victims' share)", 0, 1.01,
               kind=REGRESSION)],
        runner=_runner),
]
