"""Port-counter samples kept as flat rows (ibemu/results/port_rows.py, through
Metrics.sample_rows): the series read back are those of sampling each port's dict
(Metrics.sample_ports), whatever mix of the two, with ports, counters or values that do
not fit a row taken one by one."""
from __future__ import annotations

import random

from ibemu.results.metrics import Metrics
from ibemu.units import PS_PER_MS

NAMES = ("PortXmitPkts", "PortXmitWait", "PortRcvFECN")


def _pair() -> tuple[Metrics, Metrics]:
    return Metrics(PS_PER_MS, PS_PER_MS // 10, {}, {}, {}), Metrics(PS_PER_MS, PS_PER_MS // 10, {}, {}, {})


def _both(rows: Metrics, dicts: Metrics, t: int, labels: list[str], names: tuple[str, ...], flat: list[int]) -> None:
    rows.sample_rows(t, labels, names, flat)
    n = len(names)
    dicts.sample_ports(t, {label: dict(zip(names, flat[i * n:(i + 1) * n])) for i, label in enumerate(labels)})


def test_rows_read_back_as_the_dict_samples() -> None:
    rng = random.Random(7)
    rows, dicts = _pair()
    labels = ["S%d:%d" % (s, p) for s in range(3) for p in range(1, 5)]
    for t in range(0, 50, 5):
        _both(rows, dicts, t, labels, NAMES, [rng.randrange(2**40) for _ in range(len(labels) * len(NAMES))])
    assert rows.port_times == dicts.port_times == list(range(0, 50, 5))
    assert rows.port_samples == dicts.port_samples
    assert rows.port_samples["S2:4"]["PortRcvFECN"][-1] == dicts.port_samples["S2:4"]["PortRcvFECN"][-1]


def test_a_mix_of_rows_dicts_new_ports_and_big_values() -> None:
    rng = random.Random(8)
    rows, dicts = _pair()
    a, b = ["S:1", "S:2"], ["S:2", "H:1"]           # a port first seen later: zeros before it
    for t in range(6):
        _both(rows, dicts, t, a, NAMES, [rng.randrange(100) for _ in range(6)])
    rows.sample_ports(6, {"S:1": {"PortXmitPkts": 5, "Other": 1}})   # a dict between rows, a new counter
    dicts.sample_ports(6, {"S:1": {"PortXmitPkts": 5, "Other": 1}})
    for t in range(7, 10):
        _both(rows, dicts, t, b, NAMES, [rng.randrange(100) for _ in range(6)])
    _both(rows, dicts, 10, b, NAMES, [2**70, 1, 2, 3, 4, 5])        # past 64 bits: taken as a dict
    _both(rows, dicts, 11, b, NAMES[:2], [1, 2, 3, 4])              # other counters: the same
    _both(rows, dicts, 12, b, NAMES, [9] * 6)
    assert rows.port_times == dicts.port_times == list(range(13))
    assert rows.port_samples == dicts.port_samples
    assert rows.port_samples["H:1"]["PortXmitPkts"][:7] == [0] * 7
    assert rows.port_samples["S:2"]["PortXmitPkts"][-3] == 2**70   # (S:2 was not in the dict at 6)


def test_merging_exports_with_rows_pending() -> None:
    """The wall clock's workers sample rows and export them: the export reads them."""
    whole, part = _pair()
    for t in (0, 10, 20):
        whole.sample_rows(t, ["S:1", "H:1"], NAMES, [t, 0, 1, t + 1, 0, 2])
        part.sample_rows(t, ["S:1", "H:1"], NAMES, [t, 0, 1, t + 1, 0, 2])
    merged = Metrics(PS_PER_MS, PS_PER_MS // 10, {}, {}, {})
    merged.merge_bins(part.export_bins())
    assert merged.port_times == whole.port_times
    assert merged.port_samples == whole.port_samples == {
        "S:1": {"PortXmitPkts": [0, 10, 20], "PortXmitWait": [0, 0, 0], "PortRcvFECN": [1, 1, 1]},
        "H:1": {"PortXmitPkts": [1, 11, 21], "PortXmitWait": [0, 0, 0], "PortRcvFECN": [2, 2, 2]}}
