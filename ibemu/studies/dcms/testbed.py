"""Seed 002 Experiment II (§4.3, Figures 5 and 6) on the DCMS testbed
(:mod:`ibemu.studies.cca.testbed`), with the DCMS manager attached as a seventh host.

- Flows (§4.3): B→D at 0 s, X→Y at 2 s, C→D at 5 s (the text's results say 4.5 s; the
  setup says 5 s, taken here), A→D at 7 s.  Each flow of the paper carries 140 messages
  of 128 MiB (§4.1); ibemu scales bytes with time: 1 s of the paper = ``scale_ms_per_s``
  (default 1) ms at the testbed's own link rates, so a flow is 140 × 128 MiB × scale × 1e-3 =
  4.70 MB at 0.25 ms per second, 18.8 MB at 1 ms (the scale Experiment II uses:
  docs/dcms.md), sent as ten messages.
- CC settings (§4.3, §4.2): Threshold 15, CCTI_Increase 1, CCTI_Limit 0 (the whole
  table, see ibemu/cc/cca/settings.py), CCTI_Timer 75, Default Marking_Rate 128, Low 0.
- DCMS (§4.3): the manager ``M`` is an HCA on S2 port 25 (the paper ran OpenSM and DCMS on
  one of the hosts; which port is not said).  τ = 1 s of the paper (the paper's
  thresholds are ticks per one-second sweep), T_W = 27.4M and T_C = 8M ticks of 22 ns
  per second = 0.60 and 0.18 of τ, T_D = 0.03 of a port's capacity (the paper gives no
  value), T_I = 12 sweeps (Scenario 1, "12 sec") or 6 (Scenario 2, "6 sec").
"""
from __future__ import annotations

from typing import Any

from ...scenario import Scenario, scenario_from_dict
from ..cca.testbed import dcms_testbed_dict

__all__ = ["experiment2_dict", "experiment2", "EXP2_STARTS_S", "FLOW_BYTES_PER_S"]

EXP2_STARTS_S = {"BD": 0, "XY": 2, "CD": 5, "AD": 7}      # seed 002 §4.3
PAPER_FLOW_BYTES = 140 * 128 * 2**20                        # seed 002 §4.1
FLOW_BYTES_PER_S = 1e-3                                     # bytes of a 1 ms-per-s scale


def experiment2_dict(scenario: int = 1, T_I: int | None = None, duration_s: float = 30.0,
                     scale_ms_per_s: float = 1.0, tau_s: float = 1.0, T_C: float = 0.18,
                     T_W: float = 0.60, T_D: float = 0.03, default: int = 128, low: int = 0,
                     ccti_timer: int = 75, dcms: bool = True, marking_rate: int | None = None,
                     contributors_bytes: int | None = None, seed: int = 1,
                     name: str | None = None) -> dict[str, Any]:
    """Experiment II as a TOML-shaped dict.  *scenario* 1 or 2 picks T_I (12 or 6 sweeps)
    unless *T_I* is given; *duration_s* is in the paper's seconds; ``dcms=False`` runs
    the same flows at a fixed *marking_rate* (default: *default*) without a manager;
    *contributors_bytes* (default: the scaled 140 × 128 MiB) sizes B→D, C→D and A→D."""
    t_i = T_I if T_I is not None else {1: 12, 2: 6}[scenario]
    flow_bytes = int(PAPER_FLOW_BYTES * scale_ms_per_s * FLOW_BYTES_PER_S)
    raw = dcms_testbed_dict(marking_rate=default if marking_rate is None else marking_rate,
                            ccti_timer=ccti_timer, scale_ms_per_s=scale_ms_per_s, xy_bytes=flow_bytes,
                            duration_ms=duration_s * scale_ms_per_s, starts_s=EXP2_STARTS_S, seed=seed,
                            name=name or ("dcms_exp2_s%d" % scenario if dcms else "dcms_exp2_fixed"))
    msg = -(-flow_bytes // 10)                              # ten messages per flow
    cbytes = flow_bytes if contributors_bytes is None else contributors_bytes
    for f in raw["flow"]:
        f["pattern"], f["message_size"] = "messages", msg
        f["count"] = max(1, round((flow_bytes if f["name"] == "XY" else cbytes) / msg))
    if dcms:
        raw["hca"].append({"name": "M", "lid": 7})
        raw["link"].append({"a": "S2:25", "b": "M", "name": "mgmt"})
        tau_us = tau_s * scale_ms_per_s * 1000
        raw["cc"]["dcms"] = {"manager": "M", "tau": "%gus" % tau_us, "T_C": T_C, "T_W": T_W,
                             "T_D": T_D, "T_I": t_i, "low": low, "default": default}
    return raw


def experiment2(**kw: Any) -> Scenario:
    """:func:`experiment2_dict` validated into a Scenario (same keywords)."""
    return scenario_from_dict(experiment2_dict(**kw), label="experiment2()")
