"""Pure functions over binned time series: the sliding-window rate of seed 003 §3 and
Jain's fairness index (the one implementation in ibemu).

Rates over time follow seed 003 §3: "the number of packets transmitted in a sliding
time window of duration 2ms centered on the corresponding time point" -- here bytes per
bin, summed over a centred window (:func:`sliding_rate`) and divided by the link rate.
All times are emulated picoseconds.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..units import PS_PER_S


def sliding_rate(counts_per_bin: Sequence[float] | np.ndarray, bin_ps: int, window_ps: int,
                 duration_ps: int | None = None) -> np.ndarray:
    """Per-bin rate (units per second) of *counts_per_bin* over a sliding window of
    *window_ps* centred on each bin's centre.

    Counts are taken as spread evenly inside their bin, so a window edge that cuts a bin
    takes that fraction of it.  At the edges only the part of the window inside the run
    ``[0, duration_ps]`` counts, and the sum is divided by that part's length.  The last
    bin may be partial (*duration_ps* not a multiple of *bin_ps*); *duration_ps* None means
    ``len(counts) * bin_ps``.
    """
    if bin_ps <= 0 or window_ps <= 0:
        raise ValueError("bin and window must be positive (got %r, %r)" % (bin_ps, window_ps))
    c = np.asarray(counts_per_bin, dtype=np.float64)
    n = len(c)
    if n == 0:
        return np.zeros(0)
    edges = bin_edges(n, bin_ps, duration_ps)
    end = edges[-1]
    cum = np.concatenate(([0.0], np.cumsum(c)))
    centres = (edges[:-1] + edges[1:]) / 2
    lo = np.clip(centres - window_ps / 2, 0.0, end)
    hi = np.clip(centres + window_ps / 2, 0.0, end)
    num = np.interp(hi, edges, cum) - np.interp(lo, edges, cum)
    result: np.ndarray = num / ((hi - lo) / PS_PER_S)
    return result


def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index (Σx)²/(n·Σx²): 1.0 when all are equal, 1/n when one takes
    everything; 1.0 for an empty list or all zeros."""
    xs = [float(v) for v in values]
    sq = sum(x * x for x in xs)
    if not xs or sq == 0.0:
        return 1.0
    s = sum(xs)
    return s * s / (len(xs) * sq)


def bin_edges(n: int, bin_ps: int, duration_ps: int | None) -> np.ndarray:
    """Edges (ps, float) of *n* bins; the last edge is the end of the run when it falls
    inside the last bin."""
    edges = np.arange(n + 1, dtype=np.float64) * bin_ps
    if duration_ps is not None and (n - 1) * bin_ps < duration_ps < n * bin_ps:
        edges[-1] = float(duration_ps)
    return edges


def between(series: Sequence[float] | np.ndarray, edges: np.ndarray, t0: float, t1: float) -> float:
    """Sum of a binned series over [t0, t1] (fractions of cut bins)."""
    if t1 <= t0:
        return 0.0
    cum = np.concatenate(([0.0], np.cumsum(np.asarray(series, dtype=np.float64))))
    return float(np.interp(t1, edges, cum) - np.interp(t0, edges, cum))
