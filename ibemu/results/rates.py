"""Pure functions over binned time series: the sliding-window rate of seed 003 §3 and
Jain's fairness index (the one implementation in ibemu).

Rates over time follow seed 003 §3: "the number of packets transmitted in a sliding
time window of duration 2ms centered on the corresponding time point" -- here bytes per
bin, summed over a centred window (:func:`sliding_rate`) and divided by the link rate.
All times are emulated picoseconds.
"""
from __future__ import annotations

import math
from array import array
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
    c = np.asarray(counts_per_bin, dtype=np.float64)
    rate: np.ndarray = sliding_rates(c.reshape(1, c.size), bin_ps, window_ps, duration_ps)[0]
    return rate


ROWS_AT_ONCE = 4096
"""Rows of :func:`sliding_rates` computed together (its temporary arrays: a few times
this many rows)."""


def sliding_rates(counts: np.ndarray, bin_ps: int, window_ps: int, duration_ps: int | None = None) -> np.ndarray:
    """:func:`sliding_rate` of every row of the 2-D *counts* (issue 28: one call for the
    140k series of links.csv at 11,664 hosts, where a call per series cost its overhead
    140k times).  Every row has the same bins, so the window's ends and the bins they
    cut are found once; the arithmetic per value is :func:`numpy.interp`'s
    (:func:`interp_rows`), so each row is what ``sliding_rate(row)`` always gave."""
    if bin_ps <= 0 or window_ps <= 0:
        raise ValueError("bin and window must be positive (got %r, %r)" % (bin_ps, window_ps))
    c = np.asarray(counts, dtype=np.float64)
    rows, n = c.shape
    out = np.empty((rows, n))
    if n == 0:
        return out
    edges = bin_edges(n, bin_ps, duration_ps)
    end = edges[-1]
    centres = (edges[:-1] + edges[1:]) / 2
    lo = np.clip(centres - window_ps / 2, 0.0, end)
    hi = np.clip(centres + window_ps / 2, 0.0, end)
    span = (hi - lo) / PS_PER_S
    cum = np.empty((min(rows, ROWS_AT_ONCE), n + 1))
    for r0 in range(0, rows, ROWS_AT_ONCE):
        part = c[r0:r0 + ROWS_AT_ONCE]
        k = len(part)
        cum[:k, 0] = 0.0
        np.cumsum(part, axis=1, out=cum[:k, 1:])
        num = interp_rows(hi, edges, cum[:k]) - interp_rows(lo, edges, cum[:k])
        np.divide(num, span, out=out[r0:r0 + k])
    return out


def interp_rows(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``numpy.interp(x, xp, row)`` for every row of the 2-D *fp*, as NumPy computes it
    (numpy/_core/src/multiarray/compiled_base.c, ``arr_interp``): for ``xp[j] <= x <
    xp[j+1]``, ``slope * (x - xp[j]) + fp[j]`` with ``slope = (fp[j+1] - fp[j]) / (xp[j+1]
    - xp[j])``, and where that is NaN, ``slope * (x - xp[j+1]) + fp[j+1]``, then ``fp[j]``
    if the two are equal; ``fp[j]`` itself where ``x == xp[j]`` or at the last point;
    ``fp[0]`` left of *xp* and ``fp[-1]`` right of it, NaN at a NaN *x*.  *xp*: increasing,
    at least 2 points."""
    last = len(xp) - 1
    j = np.searchsorted(xp, x, side="right") - 1       # xp[j] <= x < xp[j+1]; last: at or past the end
    inner = (j >= 0) & (j < last)
    inner[inner] = xp[j[inner]] != x[inner]
    jj = np.clip(j, 0, last)
    out: np.ndarray = fp[:, jj]                          # x == xp[j], and the last point
    out[:, j < 0] = fp[:, :1]
    out[:, np.isnan(x)] = np.nan
    k = j[inner]
    if k.size:
        xi = x[inner]
        with np.errstate(invalid="ignore", over="ignore"):     # as quiet as numpy.interp
            slope = (fp[:, k + 1] - fp[:, k]) / (xp[k + 1] - xp[k])
            y = slope * (xi - xp[k]) + fp[:, k]
            bad = np.isnan(y)
            if bad.any():
                y2 = slope * (xi - xp[k + 1]) + fp[:, k + 1]
                same = np.isnan(y2) & (fp[:, k] == fp[:, k + 1])
                y = np.where(bad, np.where(same, fp[:, k], y2), y)
        out[:, inner] = y
    return out


def stack_bins(series: Sequence[array[int]], n: int) -> np.ndarray:
    """The *n*-bin series *series* (``array("q")``: int64 counts per bin), a row each, as
    float64."""
    if not series:
        return np.zeros((0, n))
    return np.frombuffer(b"".join(series), dtype=np.int64).reshape(len(series), n).astype(np.float64)


def per_capacity(rates: np.ndarray, caps: Sequence[int | None]) -> np.ndarray:
    """Each row of *rates* (bytes/s) divided by its capacity (bytes/s): a fraction of
    the link; NaN where there is no capacity."""
    cap = np.array([c if c else math.nan for c in caps], dtype=np.float64)
    out: np.ndarray = rates / cap.reshape(len(caps), 1)
    return out


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
