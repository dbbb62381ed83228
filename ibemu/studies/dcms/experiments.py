"""Seed 002 Experiment II runs (:mod:`.testbed`), measured as Figures 5 and 6 need; used
by :mod:`.reproduce` and the tests.

Per run: each flow's throughput per bin as a fraction of SDR (wire bytes, as
:mod:`ibemu.studies.cca.experiments`), the counter growth rates of Figure 5(b) from the
run's port-counter samples -- PortXmitTimeCong of (S2, 23) and PortXmitWait of (S1, 15)
as the fraction of time they grew (ticks × tick / time), PortXmitData of (S1, 15) as a
fraction of SDR (4 × words / (SDR × time)) -- and the manager's decisions with their
times.  Times are reported in the paper's seconds (emulated ms / scale).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ...cc.dcms.config import DCMSSpec
from ...run import run_virtual
from ...units import PS_PER_MS, PS_PER_S
from ..cca.testbed import CONTRIBUTORS
from ..reproduction import RunCache
from .testbed import experiment2

__all__ = ["FLOWS", "SCALE", "run_exp2", "mean", "counter_mean", "exp2_values"]

FLOWS = ("XY",) + CONTRIBUTORS
SCALE = 1.0                         # emulated ms per paper second (testbed.py)


def run_exp2(scenario: int = 1, duration_s: float = 30.0, cache: RunCache | None = None,
             **kw: Any) -> dict[str, Any]:
    """One Experiment II run, measured; memoised in *cache* on its arguments.  Keywords
    go to :func:`~ibemu.studies.dcms.testbed.experiment2_dict`."""
    if cache is None:
        return _run_exp2(scenario, duration_s, **kw)
    return cache.get(("dcms.run_exp2", scenario, duration_s, tuple(sorted(kw.items()))),
                     lambda: _run_exp2(scenario, duration_s, **kw))


def _run_exp2(scenario: int, duration_s: float, **kw: Any) -> dict[str, Any]:
    scn = experiment2(scenario=scenario, duration_s=duration_s, scale_ms_per_s=SCALE, **kw)
    r = run_virtual(scn, progress=False)
    m = r.metrics
    bin_s = m.bin / PS_PER_MS / SCALE
    sdr = m.flow_capacity["XY"]
    wire = {f: m.flow_bins(f, "rx_wire_bytes") / (m.bin / PS_PER_S) / sdr
            for f in FLOWS}
    t = np.array(m.port_times, dtype=float)
    dt = np.diff(t)

    def rate(label: str, name: str) -> np.ndarray:
        v = np.array(m.port_samples[label][name], dtype=float)
        return np.diff(v) / dt

    def tick_ps(rate_bps: float) -> float:                # a counter tick (ps): ibemu/fabric/counters.py
        return max(1, 64 * PS_PER_S // rate_bps)

    inter = m.link_capacity["inter"] if "inter" in m.link_capacity else 4 * sdr
    counters = {
        "C_S2_23": rate("S2:23", "PortXmitTimeCong") * tick_ps(sdr),
        "W_S1_15": rate("S1:15", "PortXmitWait") * tick_ps(inter),
        "D_S1_15": rate("S1:15", "PortXmitData") * 4 * PS_PER_S / sdr,
    }
    decisions = [(tt / PS_PER_MS / SCALE, text) for tt, src, text in m.events if src == "M"]
    mr = m.traces.get(("Marking_Rate", "S2:23"), [])
    msgs = np.cumsum(m.flow_bins("XY", "messages"))
    done = np.nonzero(msgs >= scn.flows[[f.name for f in scn.flows].index("XY")].count)[0]
    dcms = scn.cc.get("dcms", DCMSSpec) if scn.cc is not None else None
    return {"wire": wire, "bin_s": bin_s, "counter_t_s": (t[1:] + t[:-1]) / 2 / PS_PER_MS / SCALE,
            "counters": counters, "decisions": decisions, "sdr_bytes_per_s": sdr,
            "marking_rate": [(tt / PS_PER_MS / SCALE, v) for tt, v in mr],
            "lows": [tt for tt, text in decisions if "Marking_Rate %d " % dcms.low in text]
            if dcms else [],
            "defaults": [tt for tt, text in decisions if "Marking_Rate %d " % dcms.default in text]
            if dcms else [],
            "xy_done_s": float((done[0] + 1) * bin_s) if len(done) else None,
            "counters_raw": r.counters, "duration_s": duration_s,
            "default_mr": dcms.default if dcms else None}


def mean(run: dict[str, Any], flows: Iterable[str], t0_s: float, t1_s: float) -> float:
    """Mean throughput (fraction of SDR) of the sum of *flows* over [t0, t1) paper s."""
    a, b = round(t0_s / run["bin_s"]), round(t1_s / run["bin_s"])
    s = sum(run["wire"][f] for f in flows)
    return float(np.mean(s[a:b])) if b > a else float("nan")


def counter_mean(run: dict[str, Any], name: str, t0_s: float, t1_s: float) -> float:
    t = run["counter_t_s"]
    sel = (t >= t0_s) & (t < t1_s)
    return float(np.mean(run["counters"][name][sel])) if sel.any() else float("nan")


def exp2_values(run: dict[str, Any], scenario: int) -> dict[str, float]:
    """The numbers seed 002 §4.3 reports for Figure 5 (Scenario 1) or 6 (Scenario 2),
    measured on *run* (times in the paper's seconds, rates as fractions of SDR or of
    time: see the module docstring)."""
    lows, defaults = run["lows"], run["defaults"]
    done = run["xy_done_s"] or run["duration_s"]
    first_low = lows[0] if lows else float("nan")
    first_default = defaults[0] if defaults else float("nan")
    per_s = lambda f, a, b: [mean(run, f, t, t + 1) for t in range(int(a), int(b))]   # noqa: E731
    v = {"victim_before": mean(run, ["XY"], 3, 7),
         "victim_hit": mean(run, ["XY"], 7.25, 8.0),
         "first_low_s": first_low,
         "low_duration_s": first_default - first_low,
         "default_s": first_default,
         "xy_done_s": done,
         "lows_while_victim_runs": float(sum(1 for t in lows if t < done)),
         "C_S2_23_two_flows": counter_mean(run, "C_S2_23", 5.5, 7),
         "W_S1_15_before": counter_mean(run, "W_S1_15", 3, 6.5),
         "W_S1_15_hit": counter_mean(run, "W_S1_15", 7.25, 8),
         "D_S1_15_before": counter_mean(run, "D_S1_15", 3, 6.5),
         "D_S1_15_hit": counter_mean(run, "D_S1_15", 7.25, 8),
         "D_S1_15_low": counter_mean(run, "D_S1_15", 10, first_default if scenario == 1 else first_low + 5),
         "contributors_low": mean(run, CONTRIBUTORS, first_low + 2, first_default)}
    if scenario == 1:
        v["victim_recovered"] = mean(run, ["XY"], first_low + 1.5, done - 1)
        v["victim_min_after_recovery"] = min(per_s(["XY"], first_low + 1.5, done - 1))
        v["contributors_after_threshold"] = mean(run, CONTRIBUTORS, first_default + 2, first_default + 4)
    else:
        second = [t for t in lows if t > first_default]
        second_low = second[0] if second else done
        v["victim_recovered"] = mean(run, ["XY"], first_low + 1.5, first_default)
        v["victim_second_drop"] = min(per_s(["XY"], first_default, second_low + 1))
        v["second_low_after_default_s"] = second_low - first_default
        v["victim_recovered_again"] = mean(run, ["XY"], second_low + 1.5, done - 1)
    return v
