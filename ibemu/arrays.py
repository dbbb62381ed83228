"""The distinct values of an integer array, by sorting (issue 28).

NumPy 2.4's :func:`numpy.unique` finds the distinct values of an integer array with a
hash set and sorts them afterwards.  With millions of distinct values that is about 25
times slower than sorting the array first (5M distinct 64-bit values: 7.1 s against
0.09 s on the issue's machine), and the credit-loop check of the 11,664-host fat tree
and the outputs of large runs do exactly that.  These functions give the same results
as :func:`numpy.unique` (the values in increasing order; the inverse indices into them)
through :func:`numpy.sort` and :func:`numpy.argsort`.
"""
from __future__ import annotations

import numpy as np


def _starts(s: np.ndarray) -> np.ndarray:
    """True where the sorted array *s* holds a value not equal to the one before it."""
    flag = np.empty(s.size, dtype=bool)
    if s.size:
        flag[0] = True
        np.not_equal(s[1:], s[:-1], out=flag[1:])
    return flag


def unique(x: np.ndarray) -> np.ndarray:
    """``numpy.unique(x)``: the distinct values of *x*, increasing."""
    s = np.sort(x, axis=None)
    return s[_starts(s)]


def unique_inverse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``numpy.unique(x, return_inverse=True)`` for a 1-D *x*: the distinct values and,
    for each element of *x*, the index of its value among them."""
    order = np.argsort(x, kind="stable")
    s = x[order]
    flag = _starts(s)
    inverse = np.empty(x.size, dtype=np.intp)
    inverse[order] = np.cumsum(flag) - 1
    return s[flag], inverse


def runs(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a sorted 1-D *s*: its distinct values, the index of each one's first element,
    and how many elements hold it (``numpy.unique`` with ``return_index`` and
    ``return_counts``, for an array already sorted)."""
    first = np.flatnonzero(_starts(s))
    counts = np.diff(np.append(first, s.size))
    return s[first], first, counts
