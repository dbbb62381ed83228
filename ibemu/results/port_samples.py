"""Port-counter samples over a run: the sample times and, for every port (``"node:port"``),
one series per counter (IBA units, running totals; :mod:`ibemu.fabric.counters`).

A run samples every port a few hundred times (``run.PORT_SAMPLES``).  At 648 hosts that
is 2,592 ports x 16 counters each time, about 8 million values in all: taken one by one
into lists, they cost 4 of a 56 s run (issue 28).  So a run hands each sample over whole,
as one flat list of every port's totals in a fixed order (:meth:`PortSamples.add_rows`),
and the rows are turned into the per-counter series in one numpy transpose when they are
first read.  Samples given by name (:meth:`PortSamples.add`: the wall clock's workers,
tests) go straight into the series; either way the series read the same.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


class PortSamples:
    """The samples: :attr:`times` (ps) and :attr:`series` (label -> counter -> values).

    A counter or a port that first appears in a later sample has zeros for the samples
    before it.
    """

    def __init__(self) -> None:
        self.times: list[int] = []
        self._series: dict[str, dict[str, list[int]]] = {}
        # rows not yet in the series: (sample index, labels, names, values), values flat
        # by label then name
        self._rows: list[tuple[int, Sequence[str], Sequence[str], list[int]]] = []

    @property
    def series(self) -> dict[str, dict[str, list[int]]]:
        """Label -> counter -> one value per sample time (rows taken in first)."""
        if self._rows:
            self._take_rows()
        return self._series

    @series.setter
    def series(self, value: dict[str, dict[str, list[int]]]) -> None:
        self._rows.clear()
        self._series = value

    def add(self, t: int, totals: Mapping[str, Mapping[str, int]]) -> None:
        """A sample at *t*: ``{label: {counter: value}}``."""
        series_of = self.series
        self.times.append(t)
        k = len(self.times) - 1
        for label, values in totals.items():
            series = series_of.get(label)
            if series is None:
                series = series_of[label] = {name: [0] * k for name in values}
            for name, v in values.items():
                got = series.get(name)
                if got is None:                 # (a counter new since the first sample: zeros before;
                    got = series[name] = [0] * k    # not setdefault's default, made on every call)
                got.append(v)

    def add_rows(self, t: int, labels: Sequence[str], names: Sequence[str], values: list[int]) -> None:
        """A sample at *t* of every port of *labels*, each with the counters *names*:
        *values* holds ``len(names)`` values per label, label after label
        (:func:`ibemu.fabric.counters.sample_totals`)."""
        if len(values) != len(labels) * len(names):
            raise ValueError("a sample of %d ports x %d counters has %d values"
                             % (len(labels), len(names), len(values)))
        self._rows.append((len(self.times), labels, names, values))
        self.times.append(t)

    def _take_rows(self) -> None:
        """Put the pending rows into the series: each run of rows with the same labels and
        names is one array (samples x labels x names), read out counter by counter."""
        rows, self._rows = self._rows, []
        i = 0
        while i < len(rows):
            first, labels, names, _ = rows[i]
            j = i
            while j < len(rows) and rows[j][1] is labels and rows[j][2] is names and rows[j][0] == first + j - i:
                j += 1
            try:
                block = np.array([r[3] for r in rows[i:j]], dtype=np.int64)
            except OverflowError:               # a total past 2**63 (they never wrap): as Python ints
                block = np.array([r[3] for r in rows[i:j]], dtype=object)
            columns = block.reshape(j - i, len(labels), len(names)).transpose(1, 2, 0).tolist()
            for label, per_name in zip(labels, columns):
                series = self._series.get(label)
                if series is None:
                    series = self._series[label] = {}
                for name, vals in zip(names, per_name):
                    got = series.get(name)
                    if got is None:
                        got = series[name] = [0] * first
                    got.extend(vals)
            i = j

    def cut(self, k: int) -> None:
        """Keep the first *k* samples only."""
        series_of = self.series
        del self.times[k:]
        for series in series_of.values():
            for vals in series.values():
                del vals[k:]

