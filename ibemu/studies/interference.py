"""The interference study (issue 29 Deliver 4): a collective job shares a fat tree with a
hot-spot job; how much the hot spot slows the collective down under no congestion
control, HP, the IBA CCA and DCMS.

The fabric is fat_tree2 (leaves of radix/2 hosts, radix/2 spines, non-blocking) with
OpenSM's ftree routing.  The collective is a ring allreduce over two hosts of every leaf
(:func:`placement`); the hot-spot job is greedy flows from the other hosts to h1 (a
``[[traffic]]`` hotspot), the last host left free for the DCMS manager.  The hot spot's
backlog fills the spine's input buffers on its flows' way, which the ring's messages
share: the collective is a victim of the congestion tree, not a contributor (seed 002
§2: "Flows that share one or more links with contributor flows can become victim
flows").  The collective starts at :data:`JOB_START`, once the tree has formed.

Cases: ``alone`` (the collective alone: the baseline of the slowdown), ``none``, ``hp``,
``cca``, ``dcms`` (the schemes as :mod:`.congestion_tree` sets them).  Each case's
figures: the collective's completion time, its slowdown (over ``alone``), its iteration
times, and the hot spot's link utilisation.  Expectations: ``alone`` within a few per
cent above its first-principles time (:func:`first_principles_ps`); a slowdown above 1
without congestion control; smaller with each scheme.
"""
from __future__ import annotations

import copy
import math
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..resources import SCENARIOS
from ..run import run_virtual
from ..scenario import scenario_from_dict
from ..units import PS_PER_US
from ..build import build_fabric
from .congestion_tree import DCMS_TAU, HP, flow_paths
from .outputs import write_table
from .reproduction import Check, Reproduction, RunCache

__all__ = ["CASES", "CI", "FULL", "JOB_START", "placement", "study_raw", "shared_links", "first_principles_ps",
           "run_case", "run_study", "format_table", "derived", "main", "REPRODUCTIONS"]

CASES = ("alone", "none", "hp", "cca", "dcms")
CI = {"radix": 8, "leaves": 4, "size": 57344, "iterations": 2, "duration": "4ms"}
"""16 hosts: a 7-rank ring allreduce of 56 KiB (8 KiB chunks) twice; 7 hot-spot senders."""
FULL = {"radix": 16, "leaves": 16, "size": 31 * 65536, "iterations": 2, "duration": "40ms"}
"""128 hosts: a 31-rank ring allreduce of 1.94 MiB (64 KiB chunks) twice; 95 hot-spot senders."""
JOB_START = 200 * PS_PER_US
MTU, PACKET_OVERHEAD, ACK = 2048, 8 + 12 + 4 + 2, 8 + 12 + 4 + 4 + 2   # LRH+BTH+ICRC+VCRC; + AETH
LINK_B_PER_PS = 1e9 / 1e12            # 4X SDR: 1 GB/s
SWITCH_PS, HOPS = 40_000, 3           # forwarding delay (seed 003 Table 1); leaf, spine, leaf


def placement(size: dict[str, Any]) -> tuple[list[str], list[str], str]:
    """(the collective's hosts in rank order, the hot spot's senders, its destination).

    With m hosts per leaf, the hot spot is h1 (leaf 0, position 1) and its senders every
    host at positions 2 .. m-1 but the last host (the DCMS manager's).  The ring visits
    h0, then on each further leaf the hosts at positions 1 and 0: every step into a new
    leaf but the last lands on position 1, like h1, so under ftree routing it climbs to the
    same spine as the hot spot's traffic from that leaf and waits behind it in that
    spine's input buffer (head-of-line blocking: the collective is a victim of the tree,
    never a contributor).  :func:`shared_links` checks this on the routed fabric."""
    m, leaves = size["radix"] // 2, size["leaves"]
    ring = ["h0"] + [h for leaf in range(1, leaves) for h in ("h%d" % (leaf * m + 1), "h%d" % (leaf * m))]
    last = m * leaves - 1
    senders = ["h%d" % (leaf * m + p) for leaf in range(leaves) for p in range(2, m) if leaf * m + p != last]
    return ring, senders, "h1"


def study_raw(size: dict[str, Any], case: str) -> dict[str, Any]:
    """The scenario of one case as a raw dict."""
    if case not in CASES:
        raise UserError("unknown case %r (known: %s)" % (case, ", ".join(CASES)))
    ring, senders, dest = placement(size)
    hosts = size["radix"] // 2 * size["leaves"]
    raw: dict[str, Any] = {
        "template": {"name": "fat_tree2", "radix": size["radix"], "leaves": size["leaves"]},
        "scenario": {"name": "interference_" + case, "duration": size["duration"], "seed": 1},
        "defaults": {"link": {"rate": "4x_sdr", "propagation": "10ns"}, "switch": {"buffer": "4 packets"}},
        "routing": {"engine": "ftree"},
        "output": {"bin": "50us", "window": "200us", "plots": False},
        "job": [{"name": "collective", "hosts": ring, "start": "%dus" % (JOB_START // PS_PER_US),
                 "ops": [{"type": "allreduce", "algorithm": "ring", "size": size["size"],
                          "iterations": size["iterations"]}]}]}
    if case != "alone":
        raw["traffic"] = [{"pattern": "hotspot", "destination": dest, "group": "hotspot",
                           "hosts": [dest] + senders}]
    if case == "hp":
        raw["cc"] = copy.deepcopy(HP)
    elif case in ("cca", "dcms"):
        raw["cc"] = {"scheme": "cca", "cca": {"opensm": (files(SCENARIOS) / "cca_opensm.conf").read_text()}}
        if case == "dcms":
            raw["cc"]["dcms"] = {"manager": "h%d" % (hosts - 1), "tau": DCMS_TAU}
    return raw


def shared_links(size: dict[str, Any]) -> int:
    """How many directed links both a collective's flow and a hot-spot flow cross (but
    the hot spot's last hop), walked through the routed fabric's LFTs."""
    scn = scenario_from_dict(study_raw(size, "none"), label="<interference>")
    paths = flow_paths(scn, build_fabric(scn))
    hot = [f.name for f in scn.flows if f.group == "hotspot"]
    root = {paths[n][-1] for n in hot}
    hot_links = {x for n in hot for x in paths[n]} - root
    job_links = {x for f in scn.flows if f.group == "collective" for x in paths[f.name]}
    return len(hot_links & job_links)


def first_principles_ps(ranks: int, size: int) -> float:
    """A ring allreduce of *size* bytes over *ranks* alone: 2(N - 1) steps, each the
    chunk's packets at the link rate (2048-byte payloads + 26 bytes of headers), the ACK
    of the message before (30 bytes) and three switches' forwarding delay (the step
    crossing leaves).  (Issue 29: "2(N-1)/N x S at the link rate, plus the latency terms".)"""
    chunk = -(-size // ranks)
    wire = chunk + -(-chunk // MTU) * PACKET_OVERHEAD
    return 2 * (ranks - 1) * ((wire + ACK) / LINK_B_PER_PS + HOPS * SWITCH_PS)


def run_case(size: dict[str, Any], case: str, out_dir: Path | None = None) -> dict[str, float]:
    """One case's figures."""
    scn = scenario_from_dict(study_raw(size, case), label="<interference %s>" % case)
    r = run_virtual(scn, out_dir=out_dir)
    job = r.summary["jobs"]["collective"]
    it = job.get("iteration") or {}
    nan = float("nan")
    hot = r.summary["groups"].get("hotspot")
    return {"completion_us": job["completion_ps"] / PS_PER_US if job["completed"] else nan,
            "iteration_p50_us": it["p50_ps"] / PS_PER_US if it else nan,
            "iteration_max_us": it["max_ps"] / PS_PER_US if it else nan,
            "ranks": float(job["ranks"]),
            "hotspot_rate": float(hot["normalized"]) if hot and hot["normalized"] is not None else nan}


def run_study(out_dir: Path | None, full: bool = False, cases: tuple[str, ...] = CASES) -> dict[str, dict[str, float]]:
    """Every case; each one's slowdown over ``alone``; the table, JSON and plot in *out_dir*."""
    size = FULL if full else CI
    values: dict[str, dict[str, float]] = {}
    for case in ("alone",) + tuple(c for c in cases if c != "alone"):
        values[case] = run_case(size, case, None if out_dir is None else Path(out_dir) / case)
    shared = float(shared_links(size))
    base = values["alone"]["completion_us"]
    ranks = int(values["alone"]["ranks"])
    for v in values.values():
        v["slowdown"] = v["completion_us"] / base
        v["shared_links"] = shared
        v["first_principles_us"] = first_principles_ps(ranks, size["size"]) * size["iterations"] / PS_PER_US
    if out_dir is not None:
        out = write_table(out_dir, "interference", format_table(values), values)
        _plot(values, out / "slowdown.png")
    return values


def format_table(values: dict[str, dict[str, float]]) -> str:
    """The cases side by side (a Markdown table)."""
    lines = ["| case | completion (µs) | slowdown | iteration p50 (µs) | iteration max (µs) | hot-spot group rate |",
             "|---|---:|---:|---:|---:|---:|"]
    for case, v in values.items():
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            case, _cell(v["completion_us"], "%.1f", "not done"), _cell(v["slowdown"], "%.3f", "not done"),
            _cell(v["iteration_p50_us"], "%.1f"), _cell(v["iteration_max_us"], "%.1f"),
            _cell(v["hotspot_rate"], "%.3f")))
    return "\n".join(lines)


def _cell(x: float, fmt: str, missing: str = "-") -> str:
    """*x* formatted, or *missing* for NaN: a collective that did not complete within the
    run has no completion time, and its slowdown is more than the run over its time alone."""
    return missing if math.isnan(x) else fmt % x


def _plot(values: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    cases = list(values)
    ax.bar(cases, [values[c]["slowdown"] for c in cases], color="#4878a8")
    ax.axhline(1.0, color="#888", lw=0.8)
    ax.set_ylabel("collective's slowdown\n(completion / alone)")
    ax.set_title("ring allreduce of %d ranks beside a hot spot" % int(values["alone"]["ranks"]))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def derived(values: dict[str, dict[str, float]]) -> dict[str, float]:
    """The figures the checks judge."""
    out = {"%s:%s" % (case, k): x for case, v in values.items() for k, x in v.items()}
    a = values["alone"]
    out["alone_vs_first_principles"] = a["completion_us"] / a["first_principles_us"]
    for case in ("hp", "cca", "dcms"):
        if case in values:
            out["slowdown_gain_" + case] = values["none"]["slowdown"] - values[case]["slowdown"]
    return out


def _runner(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    return derived(cache.get(("interference", full), lambda: run_study(out_dir, full)))


_INF = float("inf")
_GRAN = ("issue 29, quoting Gran et al. (IPDPS 2010): the IBA congestion control \"increases the performance of the "
         "well known HPC Challenge benchmark in a congested network\"")
REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "interference", "A ring allreduce beside a hot spot on a fat tree: its slowdown under none, HP, CCA, DCMS",
        "issue 29; seeds 002, 003; first principles", None, None,
        [Check("alone_vs_first_principles", "alone: 2(N-1) steps of S/N at the link rate plus latency", 0.98, 1.10,
               unit="x", quote="a ring allreduce of S bytes over N ranks alone needs 2(N-1)/N * S at the link rate, "
                               "plus the latency terms",
               section="issue 29 Deliver 4; first principles (first_principles_ps); 1.10: per-packet ACKs "
                       "meeting data in the crossbar"),
         Check("none:slowdown", "no CC: the hot spot's tree slows the collective", 1.05, _INF, unit="x",
               quote="Flows that share one or more links with contributor flows can become victim flows.",
               section="seed 002 §2"),
         Check("slowdown_gain_hp", "HP: a smaller slowdown than no CC", 1e-3, _INF, unit="x",
               quote="reducing the size of the congestion tree and thus reducing the number of flows impacted by "
                     "congestion spreading", section="seed 000 §3.1"),
         Check("slowdown_gain_cca", "CCA: a smaller slowdown than no CC", 1e-3, _INF, unit="x",
               quote="Throttling contributor flows could have a positive impact on victim flows.",
               section="seed 002 §2; " + _GRAN),
         Check("slowdown_gain_dcms", "DCMS: a smaller slowdown than no CC", 1e-3, _INF, unit="x",
               quote="dynamic congestion management can enable a network to serve both contributor flows and "
                     "victim flows effectively", section="seed 002 abstract")],
        runner=_runner),
]


def main(out_dir: str | None, full: bool, cases: str | None, scenario: str | None = None) -> int:
    """``ibemu study interference [--ci-size] [--cases ...] [--out DIR]``: every case, the
    collective's slowdown per case printed, the table and plot in *out_dir*."""
    if scenario is not None:
        raise UserError("%s: the interference study builds its own fabric and jobs; give no scenario file" % scenario)
    chosen = tuple(cases.split(",")) if cases else CASES
    for c in chosen:
        if c not in CASES:
            raise UserError("--cases: unknown case %r (known: %s)" % (c, ", ".join(CASES)))
    out = Path(out_dir or "studies/interference")
    values = run_study(out, full=full, cases=chosen)
    print(format_table(values))
    for case, v in values.items():
        print("%-6s collective slowdown %s" % (case, _cell(v["slowdown"], "%.3f", "not done within the run")))
    print("table (interference.md, interference.json) and slowdown.png in %s/" % out)
    return 0
