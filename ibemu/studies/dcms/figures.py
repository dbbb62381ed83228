"""Plots of Experiment II runs in the manner of seed 002 Figures 5 and 6: (a) per-flow
throughput with the Marking_Rate DCMS set on (S2, 23), (b) the counter growth rates
DCMS watches.  Matplotlib's object API only (no pyplot state).

Panel (b) is in the paper's units (seed 002 §4.3: "6.0×10^6 ticks/s", "2.8×10^7 ticks/s",
"2.7×10^8 words/s"), converted from the run's growth rates (:mod:`.experiments`: a
fraction of time, or of SDR):

- PortXmitData counts 32-bit words, the packet's octets from the start-of-packet
  delimiter to the VCRC (excluded) divided by 4 (IBA 16.1.3.5; seed 002 §3: "in 32-bit
  words"): words/s = fraction of SDR × SDR (bytes/s, 1 GB/s for 4X SDR's 8 Gb/s) / 4.
- PortXmitWait (IBA 16.1.3.5) and PortXmitTimeCong (annex A10, seed 002's
  "PortXmitCongTime") count ticks.  ibemu's tick is the time one 64-byte credit block
  takes at the port's rate (ibemu/fabric/counters.py: ``TICK_BYTES``; 64 ns at 4X SDR,
  16 ns at 4X QDR), so raw counts of ports of different rates are not comparable with
  each other or with the paper's.  The plot counts the paper's testbed ticks instead:
  "a tick was 22ns in the testbed network" (seed 002 §4.2), the tick DCMS's thresholds
  are set in (``T_C`` 8M, ``T_W`` 27.4M per one-second sweep, ibemu/cc/dcms/config.py):
  ticks/s = fraction of time / 22 ns.  The paper gives no tick for PortXmitCongTime; it is
  taken to be the same 22 ns, as the manager and the checks (:mod:`.reproduce`) do.

"Per second" is per second of link time.  The time axis is the paper's seconds, each
emulated as 1 ms (:data:`.experiments.SCALE`); a counter grows at its link's real rate,
so its growth per emulated second is what the testbed's counter did per second."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..figure_axes import save_figure
from .experiments import FLOWS

__all__ = ["plot_exp2"]


TESTBED_TICK_S = 22e-9
"""The paper's testbed tick: "a tick was 22ns in the testbed network" (seed 002 §4.2)."""
WORD_BYTES = 4
"""PortXmitData's unit: one 32-bit word (IBA 16.1.3.5)."""
TICKS = "ticks/s"
WORDS = "words/s"

CAPTIONS = {1: "Scenario 1: Longer Low-MR duration threshold (12 sec)",
            2: "Scenario 2: Shorter Low-MR duration threshold (6 sec)"}
"""seed 002 Figures 5 and 6's captions."""


def _smooth(y: np.ndarray, k: int = 5) -> np.ndarray:
    return np.convolve(y, np.ones(k) / k, "same")


def plot_exp2(run: dict[str, Any], scenario: int, path: Path) -> None:
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 6.5), dpi=110)
    ax1, ax2 = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2)
    t = (np.arange(len(run["wire"]["XY"])) + 0.5) * run["bin_s"]
    for f in FLOWS:
        ax1.plot(t, 8 * _smooth(run["wire"][f]), label=f[0] + "-" + f[1], linewidth=1.2)
    ax1.set_ylabel("throughput (Gbps)")
    ax1.set_title("(a) per-flow throughput", fontsize=9)
    ax1.set_ylim(0, 10.5)
    mr = run["marking_rate"]
    if mr:
        ax3 = ax1.twinx()
        xs = [0.0] + [x for x, _ in mr] + [run["duration_s"]]
        ys = [run["default_mr"]] + [v for _, v in mr] + [mr[-1][1]]
        ax3.step(xs, ys, where="post", color="k", linestyle="--", linewidth=1, label="Marking_Rate (S2, 23)")
        ax3.set_ylabel("Marking_Rate (S2, 23)")
        ax3.set_ylim(-5, 165)
        ax3.legend(loc="upper right", fontsize="small")
    ax1.legend(loc="upper left", fontsize="small", ncol=4)
    ax1.grid(True, alpha=0.3)
    ct = run["counter_t_s"]
    c = run["counters"]
    ticks = 1.0 / TESTBED_TICK_S                           # fraction of time -> ticks/s
    words = run["sdr_bytes_per_s"] / WORD_BYTES            # fraction of SDR -> words/s
    lines = ax2.plot(ct, c["C_S2_23"] * ticks, label="PortXmitCongTime (S2, 23), " + TICKS)
    lines += ax2.plot(ct, c["W_S1_15"] * ticks, label="PortXmitWait (S1, 15), " + TICKS)
    ax4 = ax2.twinx()
    lines += ax4.plot(ct, c["D_S1_15"] * words, color="C2", label="PortXmitData (S1, 15), " + WORDS)
    ax4.set_ylabel("PortXmitData growth rate (%s)" % WORDS)
    ax4.set_ylim(0, 1.6 * words)             # the same height as the ticks: 1.6 of the time / of SDR
    ax2.set_title("(b) port counter growth rates", fontsize=9)
    for x, _text in run["decisions"]:
        for ax in (ax1, ax2):
            ax.axvline(x, color="grey", linewidth=0.6, linestyle=":")
    ax1.set_xlabel("time (s; 1 s = 1 ms emulated)")
    ax2.set_xlabel("time (s; 1 s = 1 ms emulated)")
    ax2.set_ylabel("growth rate (ticks/s; tick = 22 ns, the testbed's)")
    ax2.set_ylim(0, 1.6 * ticks)
    ax2.legend(handles=lines, loc="upper center", ncol=3, fontsize="small")
    ax2.grid(True, alpha=0.3)
    for ax in (ax1, ax2):
        ax.set_xlim(0, run["duration_s"])
    fig.suptitle("seed 002 Figure %d: %s (dotted: DCMS decisions)" % (4 + scenario, CAPTIONS[scenario]))
    fig.tight_layout()
    save_figure(fig, path, metadata={"Software": None})
