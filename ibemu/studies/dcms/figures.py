"""Plots of Experiment II runs in the manner of seed 002 Figures 5 and 6: (a) per-flow
throughput with the Marking_Rate DCMS set on (S2, 23), (b) the counter growth rates
DCMS watches.  Matplotlib's object API only (no pyplot state)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..figure_axes import save_figure
from .experiments import FLOWS

__all__ = ["plot_exp2"]


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
    ax2.plot(ct, c["C_S2_23"], label="PortXmitCongTime (S2, 23): fraction of time")
    ax2.plot(ct, c["W_S1_15"], label="PortXmitWait (S1, 15): fraction of time")
    ax2.plot(ct, c["D_S1_15"], label="PortXmitData (S1, 15): fraction of SDR")
    ax2.set_title("(b) port counter growth rates", fontsize=9)
    for x, _text in run["decisions"]:
        for ax in (ax1, ax2):
            ax.axvline(x, color="grey", linewidth=0.6, linestyle=":")
    ax1.set_xlabel("time (s; 1 s = 1 ms emulated)")
    ax2.set_xlabel("time (s; 1 s = 1 ms emulated)")
    ax2.set_ylabel("counter growth rate (fraction)")
    ax2.set_ylim(0, 1.6)
    ax2.legend(loc="upper center", ncol=3, fontsize="small")
    ax2.grid(True, alpha=0.3)
    for ax in (ax1, ax2):
        ax.set_xlim(0, run["duration_s"])
    fig.suptitle("seed 002 Figure %d: %s (dotted: DCMS decisions)" % (4 + scenario, CAPTIONS[scenario]))
    fig.tight_layout()
    save_figure(fig, path, metadata={"Software": None})
