"""Seed 002's experimental testbed (§4.1, Figure 2), scaled down in time.

Six hosts on two switches: X (port 11) and A (12) on S1; B (21), C (22), D (23) and Y
(24) on S2; S1 port 15 -- S2 port 20 is the inter-switch link.  HCA links 4X SDR
(1 GB/s of data, "≈ 8 Gb/s"), the inter-switch link 4X QDR (4 GB/s, "≈ 32 Gb/s").
Flows (Experiment I, §4.2): X→Y first, then B→D, C→D and A→D, each RC SEND.  Ports and
flows as the paper names them, so the victim X→Y crosses (S1, 15) -> (S2, 20) with the
contributor A→D, whose root of congestion is (S2, 23).

Scale (ibemu's; the testbed ran minutes of 140 × 128 MiB transfers): one second of the
paper is ``scale_ms_per_s`` (default 0.25) ms here -- flows start at 0, 8, 13 and 28 s ×
scale, and X→Y carries ``xy_bytes`` (default 10 MB: at SDR it finishes at ≈ 10.1 ms,
the paper's 40.32 s × 0.25).  The hardware settings are not scaled: CCTI_Timer stays
75-300 × 1.024 µs, so the CCTI dynamics run at the testbed's own speed.

Switch model choices for this topology (documented, not from the paper): store-and-
forward switching -- ibemu's cut-through crossbar would hold the 4X QDR output for the
whole arrival of a packet from a 4X SDR input, capping the inter-switch link at SDR,
while real switches do not cut through from a slower to a faster link -- and input
buffers of ``buffer_packets`` MTU packets per port and VL.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...scenario import Scenario, scenario_from_dict

__all__ = ["dcms_testbed", "dcms_testbed_dict", "PAPER_STARTS_S", "CONTRIBUTORS"]

PAPER_STARTS_S = {"XY": 0, "BD": 8, "CD": 13, "AD": 28}     # seed 002 §4.2
CONTRIBUTORS = ("BD", "CD", "AD")


def dcms_testbed_dict(marking_rate: int | None = 2048, ccti_timer: int = 75, threshold: int = 15,
                      ccti_increase: int = 1, ccti_limit: int = 0, scale_ms_per_s: float = 0.25,
                      xy_bytes: int = 10_000_000, duration_ms: float = 20.0,
                      starts_s: Mapping[str, float] | None = None, buffer_packets: int = 16, seed: int = 1,
                      name: str = "dcms_testbed", cca: dict[str, Any] | None = None,
                      output: dict[str, Any] | None = None) -> dict[str, Any]:
    """The scenario as a TOML-shaped dict.  ``marking_rate=None``: no congestion control
    (``[cc] scheme = "none"``); *cca*: extra ``[cc.cca]`` keys (e.g. per-port tables)."""
    starts = {**PAPER_STARTS_S, **(starts_s or {})}
    msg = 1_000_000
    count = max(1, -(-xy_bytes // msg))
    flows: list[dict[str, Any]] = [{"name": "XY", "src": "X", "dst": "Y", "pattern": "messages",
                                    "message_size": msg, "count": count, "group": "victim"}]
    for c in CONTRIBUTORS:
        flows.append({"name": c, "src": c[0], "dst": c[1], "group": "contributors"})
    for f in flows:
        f["start"] = "%.6gus" % (starts[f["name"]] * scale_ms_per_s * 1000)
    raw: dict[str, Any] = {
        "scenario": {"name": name, "duration": "%gms" % duration_ms, "seed": seed},
        "defaults": {"link": {"rate": "4x_sdr"},
                     "switch": {"buffer": "%d packets" % buffer_packets, "mode": "store-and-forward"}},
        "switch": [{"name": "S1"}, {"name": "S2"}],
        "hca": [{"name": h, "lid": i + 1} for i, h in enumerate("XABCDY")],
        "link": [{"a": "X", "b": "S1:11"}, {"a": "A", "b": "S1:12"},
                 {"a": "S1:15", "b": "S2:20", "rate": "4x_qdr", "name": "inter"},
                 {"a": "B", "b": "S2:21"}, {"a": "C", "b": "S2:22"},
                 {"a": "S2:23", "b": "D", "name": "root"}, {"a": "S2:24", "b": "Y"}],
        "flow": flows,
        "output": {"bin": "50us", "window": "500us", "plot_links": ["root", "inter"],
                   "plot_groups": ["victim", "contributors"]},
    }
    if marking_rate is None:
        raw["cc"] = {"scheme": "none"}
    else:
        raw["cc"] = {"scheme": "cca", "cca": {"Threshold": threshold, "Marking_Rate": marking_rate,
                                              "CCTI_Increase": ccti_increase, "CCTI_Timer": ccti_timer,
                                              "CCTI_Limit": ccti_limit, **(cca or {})}}
    if output:
        raw["output"].update(output)
    return raw


def dcms_testbed(**kw: Any) -> Scenario:
    """:func:`dcms_testbed_dict` validated into a Scenario (same keywords)."""
    return scenario_from_dict(dcms_testbed_dict(**kw), label="dcms_testbed()")
