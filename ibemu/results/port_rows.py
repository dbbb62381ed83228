"""Port-counter samples as the run takes them: one flat row of 64-bit values per sample,
every port's counters one after another, turned into :attr:`Metrics.port_samples`'
series (``"node:port"`` -> counter -> values) only when they are read.

A run samples every port 200 times (``ibemu.run.PORT_SAMPLES``).  Appending each value
to its own list as it came took 8 million appends at 648 hosts (2,592 ports, 16
counters), about 1.5 % of a 10 ms study case (issue 28); one ``array("q")`` per sample is a
copy in C, and the series are cut from them with numpy, a column at a time.
"""
from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np


class PortRows:
    """The rows not yet in the series: all of the same ports and counters, in order."""

    def __init__(self) -> None:
        self.labels: Sequence[str] = ()
        self.names: Sequence[str] = ()
        self.rows: list[array[int]] = []

    def __bool__(self) -> bool:
        return bool(self.rows)

    def add(self, labels: Sequence[str], names: Sequence[str], values: Sequence[int]) -> bool:
        """Keep one sample: ``len(names)`` values of each of *labels*, port after port.
        False, and nothing kept, when rows of other ports or counters are waiting, the
        values are not as many, or one does not fit 64 bits (the caller then samples
        them one by one)."""
        if self.rows and (labels is not self.labels or names is not self.names) and (
                list(labels) != list(self.labels) or list(names) != list(self.names)):
            return False
        if len(values) != len(labels) * len(names):
            return False
        try:
            row = array("q", values)
        except OverflowError:
            return False
        self.labels, self.names = labels, names
        self.rows.append(row)
        return True

    def flush(self, samples: dict[str, dict[str, list[int]]], total: int) -> None:
        """Append the rows to *samples*, the series of *total* samples, these rows the
        last of them; a port or counter new here has zeros for the samples before."""
        rows, self.rows = self.rows, []
        n = len(rows)
        before = total - n
        names = list(self.names)
        table = np.array(rows, dtype=np.int64).reshape(n, len(self.labels), len(names))
        # per port, per counter, its n values: the ints made in one call (half the time of a
        # call per port; the 8 million ints themselves cost the rest)
        nested = table.transpose(1, 2, 0).tolist()
        for label, columns in zip(self.labels, nested):
            series = samples.get(label)
            if series is None and not before:
                samples[label] = dict(zip(names, columns))
                continue
            if series is None:
                series = samples[label] = {}
            for name, column in zip(names, columns):
                got = series.get(name)
                if got is None:
                    got = series[name] = [0] * before
                got.extend(column)
