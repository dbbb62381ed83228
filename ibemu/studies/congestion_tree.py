"""The congestion-tree study (issue 15 Deliver 5): a hot spot on a two-level fat tree,
the background traffic it hurts, and what each congestion-control scheme does about it.

Tree saturation (seed 003 §1, seed 000 §2): a hot spot's backlog fills the buffers
towards its sources, and link-level flow control blocks the links behind them, so flows
that never reach the hot spot lose throughput.  Seed 002 §2 names them: "A 'victim flow'
is a flow whose path does not traverse a congested port, and yet (i) does not enjoy the
full spare capacity on its path ... Flows that share one or more links with contributor
flows can become victim flows."  Here the contributors are the hot spot's flows; the
*victims* are background flows whose path shares a link with a contributor but not the
hot spot's last hop; *bystanders* share no link with any contributor.  The paths are
walked through the switches' LFTs (the scenario's ``[routing]``), so the roles follow
from the routing, before any run.

The scenario is ``scenarios/congestion_tree.toml`` (or the user's copy): the fabric, the
routing and the traffic.  Five cases run from it: ``baseline`` (the background alone:
each hot-spot sender sends one message), ``none``, ``hp`` (seed 003's input-triggered
marking with LIPD), ``cca`` (the IBA CCA with the OpenSM-typical settings of
``scenarios/cca_opensm.conf``) and ``dcms`` (the CCA retuned by the DCMS manager of seed
002, on the host no traffic uses; its sweep interval τ = 100 µs, seed 002's 1 s scaled as
the DCMS studies scale it, 1 s → 100 µs here so that a 2 ms run sees 20 sweeps).

Measured over the last 80 % of the run: the hot spot's link (data utilisation), the
victims' and bystanders' mean normalised throughput and message latency (p50/p99), the
congestion tree's size -- directed links whose transmitter waited for credits
(PortXmitWait) for more than :data:`BLOCKED` of the time -- and the links' utilisation per
fabric level.  Plots: the three over time for every case (tree.png), and per case the
heatmaps per fabric level over time of link utilisation (heatmap_<case>.png) and of the
share of time each link was blocked for credits (blocked_<case>.png: the tree itself,
forming and, with congestion control, shrinking).
"""
from __future__ import annotations

import copy
import csv
import tomllib
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from ..build import build_fabric
from ..errors import UserError
from ..fabric.hca import HCA
from ..fabric.network import Fabric
from ..fabric.switch import Switch
from ..resources import SCENARIOS
from ..results.drawer import Drawer
from ..results.plot_worker import started
from ..results.summary import link_levels
from ..run import RunResult, run_virtual
from ..scenario import Scenario, scenario_from_dict
from ..scenario.read import read_scenario_file
from ..units import PS_PER_MS, PS_PER_S
from .outputs import write_table
from .reproduction import REGRESSION, TIE_ORDER, Check, Reproduction, RunCache
from .tree_figures import CaseFigures, case_figures, tree_figure

__all__ = ["CASES", "BLOCKED", "CI_SIZE", "flow_paths", "roles", "load_raw", "case_scenario", "run_case",
           "case_values", "blocked_series", "run_study", "format_table", "derived", "REPRODUCTIONS"]

CASES = ("baseline", "none", "hp", "cca", "dcms")
BLOCKED = 0.2
"""A link is in the congestion tree when its transmitter waited for credits more than this
share of the time (PortXmitWait x tick / time)."""
CI_SIZE = {"template.radix": 8, "template.leaves": 8, "scenario.duration": "2ms"}
"""The CI-sized study: 32 hosts (8 leaves of 4, 4 spines), 2 ms."""
HP = {"scheme": "hp", "hp": {"marking": "input", "response": "lipd", "rates": "discrete", "rwl": False,
                             "rpi_reset": True}}      # as scenarios/hp_santos_fig1.toml (seed 003 §6)
DCMS_TAU = "100us"
HOTSPOT_GROUPS = ("hotspot", "incast")


def load_raw(path: str | Path | None, full: bool) -> tuple[dict[str, Any], str]:
    """The study's scenario as a raw dict and its label: *path* (default the shipped
    congestion_tree.toml), shrunk to :data:`CI_SIZE` unless *full*."""
    if path is None:
        text = (files(SCENARIOS) / "congestion_tree.toml").read_text()
        label = "scenarios/congestion_tree.toml"
    else:
        label = str(path)
        text = read_scenario_file(path).decode("utf-8", "replace")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError("%s: %s" % (label, e)) from None
    if "cc" in raw:
        raise UserError("%s: cc: the study sets [cc] for each case (none, hp, cca, dcms); remove it" % label)
    if not full:
        for key, value in CI_SIZE.items():
            section, _, k = key.partition(".")
            if section in raw and isinstance(raw[section], dict):
                raw[section][k] = value
    return raw, label


def _manager(scn: Scenario) -> str:
    """The host no flow uses, for the DCMS manager (the last such HCA)."""
    used = {f.src for f in scn.flows} | {f.dst for f in scn.flows}
    free = [h.name for h in scn.hcas if h.name not in used]
    if not free:
        raise UserError("the dcms case needs a host that no flow uses, for its manager: add exclude = [\"<host>\"] "
                        "to the [[traffic]] tables")
    return free[-1]


def case_scenario(raw: dict[str, Any], label: str, case: str) -> Scenario:
    """The scenario of one case, its flows' groups set to their roles (:func:`roles`)."""
    return _case(raw, label, case)[0]


def _case(raw: dict[str, Any], label: str, case: str) -> tuple[Scenario, Fabric, dict[str, list[str]]]:
    """The case's scenario, the fabric built from it (its LFTs and link ends; the run
    builds its own) and every flow's path."""
    if case not in CASES:
        raise UserError("unknown case %r (known: %s)" % (case, ", ".join(CASES)))
    raw = copy.deepcopy(raw)
    raw.setdefault("scenario", {})["name"] = "congestion_tree_" + case
    for t in raw.get("traffic", []):                  # the last host stays free for the DCMS manager
        if isinstance(t, dict) and "hosts" not in t and "exclude" not in t:
            t["exclude"] = [raw_hosts_last(raw, label)]
    base = scenario_from_dict(raw, label=label)
    if case == "hp":
        raw["cc"] = copy.deepcopy(HP)
    elif case in ("cca", "dcms"):
        raw["cc"] = {"scheme": "cca", "cca": {"opensm": (files(SCENARIOS) / "cca_opensm.conf").read_text()}}
        if case == "dcms":
            raw["cc"]["dcms"] = {"manager": _manager(base), "tau": DCMS_TAU}
    scn = scenario_from_dict(raw, label=label) if "cc" in raw else base
    fabric = build_fabric(scn)
    paths = flow_paths(scn, fabric)
    role = roles(scn, fabric, paths)
    for f in scn.flows:
        f.group = role[f.name]
        if case == "baseline" and role[f.name] == "hotspot":
            f.pattern, f.count = "messages", 1     # the hot spot idle: the background alone
    return scn, fabric, paths


def raw_hosts_last(raw: dict[str, Any], label: str) -> str:
    """The last HCA of the scenario *raw* describes."""
    scn = scenario_from_dict({k: v for k, v in raw.items() if k != "traffic"}, label=label)
    if not scn.hcas:
        raise UserError("%s: the congestion-tree study needs HCAs" % label)
    return scn.hcas[-1].name


def flow_paths(scn: Scenario, fabric: Fabric) -> dict[str, list[str]]:
    """Every flow's directed links, source to destination, walked through the LFTs."""
    by_port = {(a, pa): label for label, (a, pa, _, _) in fabric.link_ends.items()}
    ends = {label: b for label, (_, _, b, _) in fabric.link_ends.items()}
    out: dict[str, list[str]] = {}
    for f in scn.flows:
        src, dst = fabric.nodes[f.src], fabric.nodes[f.dst]
        assert isinstance(src, HCA) and isinstance(dst, HCA) and bool(src.ports)
        dlid = dst.lid + (f.path or 0)
        label = by_port[(f.src, src.port.index)]
        path = [label]
        while ends[label] != f.dst:
            node = fabric.nodes[ends[label]]
            if not isinstance(node, Switch) or len(path) > 64:
                raise UserError("flow %s: no route from %s to %s (at %s)" % (f.name, f.src, f.dst, node.name))
            out_port = node.fwd.out(dlid)
            if out_port is None or (node.name, out_port) not in by_port:
                raise UserError("flow %s: switch %s has no route to LID %d" % (f.name, node.name, dlid))
            label = by_port[(node.name, out_port)]
            path.append(label)
        out[f.name] = path
    return out


def roles(scn: Scenario, fabric: Fabric, paths: dict[str, list[str]] | None = None) -> dict[str, str]:
    """Each flow's role: ``hotspot`` (a contributor: its traffic group is hotspot or
    incast), ``victim`` (shares a link with a contributor, not the hot spot's last hop)
    or ``bystander`` (shares none).  *paths*: :func:`flow_paths`, if already walked."""
    paths = paths if paths is not None else flow_paths(scn, fabric)
    hot = [f.name for f in scn.flows if f.group in HOTSPOT_GROUPS]
    if not hot:
        raise UserError("the congestion-tree study needs a [[traffic]] table of pattern hotspot or incast")
    last_hops = {paths[n][-1] for n in hot}
    hot_links = {lbl for n in hot for lbl in paths[n]}
    out = {}
    for f in scn.flows:
        if f.name in hot:
            out[f.name] = "hotspot"
        elif last_hops & set(paths[f.name]):
            out[f.name] = "root"           # a background flow into the hot spot itself: not a victim
        else:
            out[f.name] = "victim" if hot_links & set(paths[f.name]) else "bystander"
    return out


@dataclass
class CaseRun:
    case: str
    scenario: Scenario
    result: RunResult
    root: str                          # the hot spot's last hop (a link label)
    window: tuple[int, int]
    tx_port: dict[str, tuple[str, int]]  # link label -> its transmitting (node, port)


def run_case(raw: dict[str, Any], label: str, case: str, out_dir: Path | None = None) -> CaseRun:
    """Run one case over its whole duration; measured over its last 80 %."""
    scn, fabric, paths = _case(raw, label, case)
    window = (scn.duration // 5, scn.duration)
    # the run's plots drawn by a worker on the other core, as `ibemu run` draws them
    # (matplotlib imported while the case runs; issue 28)
    with started(scn, enabled=out_dir is not None) as plotter:
        result = run_virtual(scn, out_dir=out_dir, window=window, plotter=plotter)
    root = paths[next(f.name for f in scn.flows if f.group == "hotspot")][-1]
    return CaseRun(case, scn, result, root, window,
                   {lbl: (a, pa) for lbl, (a, pa, _, _) in fabric.link_ends.items()})


def blocked_series(run: CaseRun) -> tuple[np.ndarray, np.ndarray, dict[str, float], dict[str, np.ndarray]]:
    """(times in ms, links blocked per sample interval, each link's blocked share over the
    window, each link's blocked share per sample interval): PortXmitWait ticks x tick
    time / time, per transmitting port of a link."""
    m = run.result.metrics
    fabric_ends = run.tx_port
    times = np.asarray(m.port_times, dtype=np.int64)
    counts = np.zeros(max(0, len(times) - 1), dtype=np.int64)
    share, fractions = {}, {}
    i0 = int(np.searchsorted(times, run.window[0]))
    for lbl, (a, pa) in fabric_ends.items():
        series = m.port_samples.get("%s:%d" % (a, pa), {}).get("PortXmitWait")
        if series is None or len(times) < 2:
            continue
        tick = 64 * PS_PER_S / m.link_capacity[lbl]
        w = np.asarray(series, dtype=np.float64) * tick
        frac = np.diff(w) / np.maximum(np.diff(times), 1)
        counts += frac > BLOCKED
        fractions[lbl] = frac
        if len(times) - 1 > i0:
            share[lbl] = float((w[-1] - w[i0]) / max(1, times[-1] - times[i0]))
    return times[1:] / PS_PER_MS, counts, share, fractions


def case_values(run: CaseRun) -> dict[str, float]:
    """The figures of one case over its window."""
    s = run.result.summary
    groups = s["groups"]

    def mean_rate(g: str) -> float:
        if g not in groups:
            return float("nan")
        return float(groups[g]["window"]["normalized"]) / len(groups[g]["flows"])

    def lat(g: str, k: str) -> float:
        v = (groups.get(g, {}).get("window", {}).get("latency") or {}).get(k)
        return float(v) / 1e6 if v is not None else float("nan")

    _, _, share, _ = blocked_series(run)
    levels = link_levels(run.scenario)
    util: dict[str, list[float]] = {}
    for lbl, v in s["links"].items():
        util.setdefault(levels.get(lbl, "other"), []).append(v["window"]["data_utilization"])
    out = {"hotspot_link": float(s["links"][run.root]["window"]["data_utilization"]),
           "victims": mean_rate("victim"), "bystanders": mean_rate("bystander"),
           "victims_p50_us": lat("victim", "p50_ps"), "victims_p99_us": lat("victim", "p99_ps"),
           "tree_links": float(sum(1 for x in share.values() if x > BLOCKED)),
           "victim_flows": float(len(groups.get("victim", {}).get("flows", []))),
           "bystander_flows": float(len(groups.get("bystander", {}).get("flows", [])))}
    for lv, xs in sorted(util.items()):
        out["util_" + lv] = float(np.mean(xs))
    return out


COLUMNS = [("hotspot_link", "hot-spot link"), ("victims", "victims"), ("bystanders", "bystanders"),
           ("victims_p50_us", "victim p50 us"), ("victims_p99_us", "victim p99 us"),
           ("tree_links", "tree links"), ("util_up2", "util up2"), ("util_down2", "util down2")]


def format_table(values: dict[str, dict[str, float]]) -> str:
    """The schemes side by side (a Markdown table)."""
    cols = [c for c in COLUMNS if any(c[0] in v for v in values.values())]
    lines = ["| case | " + " | ".join(h for _, h in cols) + " |", "|---|" + "---:|" * len(cols)]
    for case, v in values.items():
        cells = []
        for k, _ in cols:
            x = v.get(k, float("nan"))
            cells.append("%.0f" % x if k == "tree_links" else "%.2f" % x if k.endswith("_us") else "%.3f" % x)
        lines.append("| %s | %s |" % (case, " | ".join(cells)))
    return "\n".join(lines)


def figures(run: CaseRun) -> CaseFigures:
    """What the case's figures read (:mod:`.tree_figures`)."""
    tb, counts, _, fractions = blocked_series(run)
    return CaseFigures(run.case, run.scenario.name, run.result.metrics, link_levels(run.scenario), run.root,
                       run.scenario.duration, tb, counts, fractions)


def run_study(out_dir: Path | None, full: bool, scenario: str | Path | None = None,
              cases: tuple[str, ...] = CASES) -> dict[str, dict[str, float]]:
    """Run the cases; write the table (tree.md, tree.csv, tree.json), tree.png and the
    heatmaps to *out_dir* (None: nothing written).  Returns {case: values}."""
    raw, label = load_raw(scenario, full)
    runs: list[CaseFigures] = []
    values = {}
    drawer = Drawer()                   # each case's figures drawn while the study goes on
    try:
        for case in cases:
            run = run_case(raw, label, case, None if out_dir is None else Path(out_dir) / case)
            values[case] = case_values(run)
            if out_dir is not None:
                runs.append(figures(run))
                drawer.draw(case_figures, runs[-1], Path(out_dir))
        if out_dir is not None:
            out = write_table(out_dir, "tree", format_table(values), values)
            keys = sorted({k for v in values.values() for k in v})
            with open(out / "tree.csv", "w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(["case", *keys])
                for case, v in values.items():
                    w.writerow([case, *(v.get(k, "") for k in keys)])
            tree_figure(runs, BLOCKED, out / "tree.png")
        drawer.join()
    finally:
        drawer.close()
    return values


def derived(values: dict[str, dict[str, float]]) -> dict[str, float]:
    """The figures the checks judge: every case's values as ``<case>:<key>``, and the
    comparisons between cases."""
    out = {"%s:%s" % (case, k): x for case, v in values.items() for k, x in v.items()}
    none = values["none"]
    out["victims_none_vs_baseline"] = none["victims"] / values["baseline"]["victims"]
    for case in ("hp", "cca", "dcms"):
        out["victims_gain_" + case] = values[case]["victims"] - none["victims"]
    out["tree_hp_minus_none"] = values["hp"]["tree_links"] - none["tree_links"]
    return out


def _runner(out_dir: Path | None, full: bool, cache: RunCache) -> dict[str, float]:
    values = cache.get(("congestion_tree", full), lambda: run_study(out_dir, full))
    return derived(values)


S000, S002, S003 = "seed 000 §3.1", "seed 002 §2", "seed 003 §1"
_INF = float("inf")
REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "congestion_tree", "Hot spot on a fat tree: the congestion tree under none, HP, CCA, DCMS",
        "issue 15; seeds 000, 002, 003 (victims, tree saturation)", None, None,
        [Check("none:tree_links", "no CC: the hot spot's backlog blocks links upstream", 1, _INF, unit="links",
               quote="The blocking can spread further upstream and eventually fill buffers all the way back to "
                     "the traffic sources.", section=S003),
         Check("victims_none_vs_baseline", "no CC: victims lose throughput (below the background alone)", 0, 0.95,
               unit="x", quote="Even flows that do not pass through congested ports can suffer from reduced "
                               "throughput.", section="seed 002 §1 (abstract); 0.95: ibemu's 5 % noise margin"),
         Check("tree_hp_minus_none", "HP marks propagating packets: a smaller tree", -_INF, -1, unit="links",
               quote="reducing the size of the congestion tree and thus reducing the number of flows impacted by "
                     "congestion spreading", section=S000),
         Check("victims_gain_hp", "HP: victims gain over no CC", 1e-3, _INF, unit="of link",
               quote="reducing the size of the congestion tree and thus reducing the number of flows impacted by "
                     "congestion spreading", section=S000),
         Check("hp:hotspot_link", "HP (input marking, LIPD): the hot spot's link stays nearly full", 0.95, 1.01,
               quote="LIPD performs the best for this static flow scenario, resulting in almost 100% utilization "
                     "of the root link", section="seed 003 §6.3.1; 'almost 100%' read as ≥ 95 %",
               departs=TIE_ORDER + "95 % or more before, 93.0 % now"),
         Check("victims_gain_cca", "CCA: victims gain over no CC", 1e-3, _INF, unit="of link",
               quote="Throttling contributor flows could have a positive impact on victim flows.", section=S002),
         Check("victims_gain_dcms", "DCMS: victims gain over no CC", 1e-3, _INF, unit="of link",
               quote="dynamic congestion management can enable a network to serve both contributor flows and "
                     "victim flows effectively", section="seed 002 abstract"),
         Check("none:hotspot_link", "no published number (no CC: the hot spot's link full)", 0.95, 1.01,
               kind=REGRESSION),
         Check("cca:hotspot_link", "no published number (CCA, OpenSM-typical: hot-spot link)", 0.3, 1.01,
               kind=REGRESSION),
         Check("dcms:hotspot_link", "no published number (DCMS: hot-spot link)", 0.3, 1.01, kind=REGRESSION)],
        runner=_runner),
]
