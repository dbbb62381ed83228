"""The numbers of a run's CSV files as text (issue 28: the outputs of large runs), by the
rules of :mod:`.outputs`: a float to 6 significant digits (``"%.6g"``, so -0.0 is ``-0``),
an empty cell for NaN and the infinities, a time in ms to 9 significant digits.

:func:`write_series` writes a time-series CSV (flows.csv, links.csv) from one 2-D array,
a row per column of the file: at 11,664 hosts links.csv has 140k columns, and formatting
them a column at a time cost a call per column.  Each distinct value (told apart by its
bits, so that -0.0 stays ``-0``) is formatted once, by Python's own ``"%.6g"``, and the
cells are joined a CSV row at a time.  tests/test_results_csvtext.py compares every cell
with ``"%.6g" % x``.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..arrays import unique_inverse
from ..atomic import atomic_open

CELLS_AT_ONCE = 1 << 21
"""Cells formatted together by :func:`write_series` (its strings: about this many)."""


def fmt(x: float) -> str:
    """One number as a CSV cell: ``"%.6g"``, empty when not finite."""
    x = float(x)
    return "" if not math.isfinite(x) else "%.6g" % x


def fmt_cells(values: np.ndarray) -> np.ndarray:
    """:func:`fmt` of every value of *values* (any shape): an object array of str of the
    same shape."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    bits, where = unique_inverse(x.reshape(-1).view(np.int64))
    distinct = bits.view(np.float64)
    text = np.array(["%.6g" % v for v in distinct.tolist()] + [""], dtype=object)
    empty = len(distinct)
    where[~np.isfinite(distinct)[where]] = empty
    cells: np.ndarray = text[where].reshape(x.shape)
    return cells


def write_header(fh: TextIO, writer: Any, names: list[str]) -> None:
    """The header row *names* through *writer* (a :func:`csv.writer` on *fh*), or, when
    no name needs quoting (none empty, none with a comma, a quote or a line break), the
    same text joined at once (counters.csv: 560k names at 11,664 hosts)."""
    text = ",".join(names)
    if "" in names or text.count(",") != len(names) - 1 or any(c in text for c in _QUOTED):
        writer.writerow(names)
    else:
        fh.write(text + "\n")


_QUOTED = ('"', "\r", "\n")


def write_series(path: Path, times_ms: np.ndarray, names: Sequence[str], values: np.ndarray) -> None:
    """A time-series CSV: ``time_ms`` then a column per name; *values*' row k holds column
    *names*[k] at each time.  The rows are joined directly: numbers and empty cells, which
    the csv module never quotes."""
    times = ["%.9g" % t for t in np.asarray(times_ms, dtype=np.float64).tolist()]
    if len(values) != len(names) or values.shape[1] < len(times):
        raise ValueError("%d series of %d times for %d names and %d times"
                         % (len(values), values.shape[1], len(names), len(times)))
    values = values[:, :len(times)]
    step = max(1, CELLS_AT_ONCE // max(1, len(names)))
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        write_header(fh, csv.writer(fh, lineterminator="\n"), ["time_ms", *names])
        for b0 in range(0, len(times), step):
            cells = fmt_cells(values[:, b0:b0 + step].T)
            fh.write("".join([",".join([t, *row]) + "\n"
                              for t, row in zip(times[b0:b0 + step], cells.tolist(), strict=False)]))
