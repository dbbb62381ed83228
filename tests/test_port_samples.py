"""Port-counter samples (ibemu/results/port_samples.py): samples given as flat rows read
the same as samples given by name, counters and ports new in a later sample start with
zeros, and a cut keeps the first samples."""
from __future__ import annotations

import pytest

from ibemu.results.port_samples import PortSamples

LABELS = ["S:1", "S:2", "H:1"]
NAMES = ["PortXmitPkts", "PortXmitWait"]


def _by_name(t: int) -> dict[str, dict[str, int]]:
    return {label: {name: 100 * t + 10 * i + j for j, name in enumerate(NAMES)} for i, label in enumerate(LABELS)}


def _flat(t: int) -> list[int]:
    return [v for values in _by_name(t).values() for v in values.values()]


def test_rows_read_as_the_same_samples_by_name() -> None:
    a, b = PortSamples(), PortSamples()
    for t in range(5):
        a.add(t, _by_name(t))
        b.add_rows(t, LABELS, NAMES, _flat(t))
    assert b.times == a.times == [0, 1, 2, 3, 4]
    assert b.series == a.series
    assert b.series["S:2"]["PortXmitWait"] == [11, 111, 211, 311, 411]


def test_rows_and_names_mixed_keep_the_order_of_the_samples() -> None:
    a, b = PortSamples(), PortSamples()
    for t in range(6):
        a.add(t, _by_name(t))
        if t in (2, 3):
            b.add(t, _by_name(t))               # takes the rows before it in first
        else:
            b.add_rows(t, LABELS, NAMES, _flat(t))
    assert b.series == a.series


def test_a_port_or_counter_new_in_a_later_row_has_zeros_before() -> None:
    s = PortSamples()
    s.add(0, {"S:1": {"PortXmitPkts": 1}})
    s.add_rows(1, LABELS, NAMES, _flat(1))
    assert s.series["S:1"] == {"PortXmitPkts": [1, 100], "PortXmitWait": [0, 101]}
    assert s.series["H:1"] == {"PortXmitPkts": [0, 120], "PortXmitWait": [0, 121]}


def test_totals_past_64_bits_are_kept_exactly() -> None:
    s = PortSamples()
    big = (1 << 64) + 7                         # running totals never wrap
    s.add_rows(0, ["S:1"], ["PortXmitData"], [big])
    s.add_rows(1, ["S:1"], ["PortXmitData"], [big + 1])
    assert s.series["S:1"]["PortXmitData"] == [big, big + 1]


def test_cut_keeps_the_first_samples() -> None:
    s = PortSamples()
    for t in range(4):
        s.add_rows(t, LABELS, NAMES, _flat(t))
    s.cut(2)
    assert s.times == [0, 1] and s.series["H:1"]["PortXmitPkts"] == [20, 120]


def test_a_row_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="3 ports x 2 counters has 5 values"):
        PortSamples().add_rows(0, LABELS, NAMES, [0] * 5)
