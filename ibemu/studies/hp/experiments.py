"""Experiments of seed 003 §5–6 on the Figure 1 scenario with the HP scheme: scenario
builders and measurements shared by :mod:`.reproduce` and the tests.

``fig1(...)`` expands the ``santos_fig1`` template (:mod:`ibemu.scenario.templates`) and adds the
``[cc]`` table and, for §6.3.2, a mixture of static and ON/OFF flows.  ``measure(...)``
runs a scenario on the virtual-time engine and returns the fractions of link rate the
figures plot: root and inter-switch utilisation (data), each group's aggregate rate,
remote/local ratio and Jain's index among local and remote flows.

Seed 003's source response, not seed 000's RWL: with ``hp`` given, ``fig1`` sets
``rwl = false`` unless the table says otherwise.  Seed 003 §6 keeps "a fixed window
size of one packet" and "Upon receipt of an unmarked ACK, the source response must
increase the flow's rate limit"; it has no RWL flag.  Seed 000 §5.1's RWL ("neither
the window limit nor the rate limit is increased" when "some other factor, such as slow
generation of the packet by an application" held the packet back) freezes an ON/OFF
flow's rate: at short ON times nearly every packet starts an ON period and is
application-limited, so with persistent state the dynamic flows of Figure 8(a) kept
about half the static flows' rate (dynamic/static 0.68 at mean ON 10 µs, 20 ms; 0.61
at 60 ms).  With ``rwl = false`` they share, as the paper says (0.92; static 0.50).
Figures 4, 5 and 7 (static flows, always rate limited) do not change with it.

Likewise ``rpi_reset = true`` unless told otherwise: seed 003 §6.2 wants the rate increase
"independent of the past history of the flow rate, i.e. it should be independent of the
elapsed time since the last decrease", so a decrease reloads RPI for the new IPD (seed
000 §5.1.3.2 keeps it).  With it the discrete tables follow F as the continuous rates do
(Fig. 7, CI: AIMD buffer 2 inter-switch 0.26 vs continuous 0.27; FIMD within 1.1 points).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...results import jain_index
from ...run import RunResult, run_virtual
from ...scenario import Scenario, scenario_from_dict
from ...scenario.templates import expand_template
from ...units import PS_PER_MS
from ..figure_axes import rate_series

if TYPE_CHECKING:
    import numpy as np

__all__ = ["fig1", "measure", "measure_with_rates"]


def fig1(L: int = 10, R: int = 10, buffer_packets: int = 4, duration_ms: float = 20.0,
         victim: tuple[float, float] | Literal["all"] | None = "all", hp: dict[str, Any] | None = None,
         window: int | None = None, dynamic: Literal["half", "all"] | None = None,
         mean_on_us: float | None = None, seed: int = 1, name: str = "hp",
         switch: dict[str, Any] | None = None, flow_control: str = "ideal") -> Scenario:
    """The Figure 1 scenario as a :class:`~ibemu.scenario.Scenario`.

    *victim*: (start_ms, stop_ms), "all" (the whole run) or None.  *hp*: the ``[cc.hp]``
    table (None: no congestion control).  *window*: a static window for every flow (the
    window-only comparison).  *dynamic*: None, "half" (the first half of the local and of
    the remote flows ON/OFF, groups "static"/"dynamic", Figure 8(a)) or "all" (every
    local and remote flow ON/OFF, Figure 8(b)); mean OFF = mean ON = *mean_on_us*.  *switch*:
    settings added to ``[defaults.switch]`` (e.g. ``{"bypass_limit": 0}``; Table 1's otherwise).
    *flow_control*: ``"ideal"`` (seed 003's links, :data:`ibemu.studies.santos.LINKS`) or ``"wire"``.
    """
    params = {"L": L, "R": R, "buffer_packets": buffer_packets, "duration": "%gms" % duration_ms,
              "flow_control": flow_control}
    if victim is None:
        params["victim"] = False
    elif victim == "all":
        params["victim_start"], params["victim_stop"] = "0ms", "%gms" % duration_ms
    else:
        params["victim_start"], params["victim_stop"] = "%gms" % victim[0], "%gms" % victim[1]
    if window is not None:
        params["window"] = window
    gen, _, _ = expand_template("santos_fig1", params)
    gen["scenario"].update(name=name, seed=seed)
    if switch:
        gen["defaults"]["switch"].update(switch)
    if dynamic:
        assert mean_on_us is not None, "dynamic flows need mean_on_us"
        on = "%gus" % mean_on_us
        for f in gen["flow"]:
            if f["group"] not in ("local", "remote"):
                continue
            idx = int(f["name"][len(f["group"]):])
            half = (L if f["group"] == "local" else R) // 2
            if dynamic == "all" or idx <= half:
                f.update(pattern="onoff", mean_on=on, mean_off=on)
                if dynamic == "half":
                    f["group"] = "dynamic"
            elif dynamic == "half":
                f["group"] = "static"
        gen["output"]["plot_groups"] = ["static", "dynamic", "victim"] if dynamic == "half" else \
            gen["output"]["plot_groups"]
    if hp is not None:
        gen["cc"] = {"scheme": "hp", "hp": {"rwl": False, "rpi_reset": True, **hp}}
    return scenario_from_dict(gen, label=name)


def measure(scn: Scenario, t_from_ms: float, t_to_ms: float, out_dir: Path | None = None,
            extra_windows: dict[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """Run *scn* and return its figures over [t_from_ms, t_to_ms] (fractions of link
    rate); *extra_windows* {prefix: (from_ms, to_ms)} adds the same figures over other
    windows of the same run, as "prefix:metric"."""
    return _measure(scn, t_from_ms, t_to_ms, out_dir, extra_windows)[0]


def measure_with_rates(scn: Scenario, t_from_ms: float, t_to_ms: float,
                       extra_windows: dict[str, tuple[float, float]] | None = None
                       ) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """:func:`measure`, and the run's rates over time as seed 003 Figures 2-4 plot them
    (:func:`ibemu.studies.figure_axes.rate_series`: time in ms, root and inter-switch
    link, local, remote and victim aggregates, over the run's sliding window)."""
    m, r = _measure(scn, t_from_ms, t_to_ms, None, extra_windows)
    return m, rate_series(r.metrics)


def _measure(scn: Scenario, t_from_ms: float, t_to_ms: float, out_dir: Path | None,
             extra_windows: dict[str, tuple[float, float]] | None) -> tuple[dict[str, float], RunResult]:
    w = (int(t_from_ms * PS_PER_MS), int(t_to_ms * PS_PER_MS))
    r = run_virtual(scn, out_dir=out_dir, progress=False, window=w)
    m = _figures(r.summary)
    for prefix, (a, b) in (extra_windows or {}).items():
        for k, v in _figures(r.metrics.summary(int(a * PS_PER_MS), int(b * PS_PER_MS))).items():
            m[prefix + ":" + k] = v
    m["marked"] = sum(c.get("hp_marked", 0) for c in r.counters.values())
    m["wall_s"] = r.wall_seconds
    return m, r


def _figures(s: dict[str, Any]) -> dict[str, float]:
    m = {"root": s["links"]["root"]["window"]["data_utilization"],
         "inter": s["links"]["inter"]["window"]["data_utilization"]}
    for g, d in s["groups"].items():
        m[g] = d["window"]["normalized"]
    for f, d in s["flows"].items():
        if d.get("window"):
            m["flow:" + f] = d["window"]["normalized"]
    if "local" in m and "remote" in m:
        m["remote/local"] = m["remote"] / m["local"] if m["local"] else float("inf")
        tp = [f["window"]["throughput"] for f in s["flows"].values() if f["group"] in ("local", "remote")]
        m["jain"] = jain_index(tp)
    return m
