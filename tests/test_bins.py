"""ibemu.fabric.bins: the sinks count what the recorder's own methods count (issue 28).

A port reports its frames through a :class:`LinkBins` and a QP its packets and messages
through a :class:`FlowBins`; both must leave the series exactly as the recorder's by-name
methods (``link_tx``, ``message_start``, ``message_done``) would, including frames across
bin edges (split by the sink itself when they end within the run) and messages numbered
out of order.
"""
from __future__ import annotations

import random

from ibemu.fabric.bins import BinnedRecorder
from ibemu.results.metrics import Metrics

BIN = 1_000_000                 # 1 us bins
DURATION = 20 * BIN
CAP = 10**9                     # 1 GB/s: 1,000 ps a byte, a 4,000-byte frame spans 4 bins


def _series(rec: BinnedRecorder, label: str) -> list[list[int]]:
    rec.flush()
    return [list(a) for a in rec._links[label]]


def test_link_sink_counts_frames_across_bin_edges_as_link_tx_does() -> None:
    rng = random.Random(7)
    by_name = BinnedRecorder(DURATION, BIN, {"a->b": CAP})
    by_sink = BinnedRecorder(DURATION, BIN, {"a->b": CAP})
    sink = by_sink.link_sink("a->b")
    frames = [(rng.randrange(0, DURATION + 3 * BIN), rng.choice([6, 70, 2_100, 4_000, 9_000]), rng.random() < 0.6)
              for _ in range(3_000)]
    frames += [(BIN - 1, 4_000, True), (DURATION - 1_000, 4_000, True), (2 * BIN - 6_000, 6, False)]
    for t, n, data in frames:
        by_name.link_tx("a->b", t, n, data)
        sink.tx(t, n, data)
    assert any(t // BIN != (t + n * 1_000 - 1) // BIN and t + n * 1_000 <= DURATION for t, n, _ in frames)
    assert _series(by_sink, "a->b") == _series(by_name, "a->b")
    assert by_sink._n == by_name._n > DURATION // BIN          # frames after the run grew both


def test_flow_sink_records_messages_as_the_recorder_does() -> None:
    by_name = Metrics(DURATION, BIN, {}, {}, {})
    by_sink = Metrics(DURATION, BIN, {}, {}, {})
    sinks = {f: by_sink.flow_sink(f) for f in ("f1", "f2")}
    # f1 in order; f2 starts at message 2 (a gap), then rewrites message 0
    starts = [("f1", 0, 10), ("f1", 1, 20), ("f2", 2, 30), ("f1", 2, 40), ("f2", 0, 50), ("f2", 3, 60)]
    dones = [("f1", 0, 15), ("f2", 2, 35), ("f1", 1, 45), ("f1", 2, 55)]
    for flow, seq, t in starts:
        by_name.message_start(flow, seq, t)
        sinks[flow].started(seq, t)
    for flow, seq, t in dones:
        by_name.message_done(flow, seq, t)
        sinks[flow].done(seq, t)
    assert list(by_sink.msg_start) == list(by_name.msg_start) == ["f1", "f2"]
    for flow in ("f1", "f2"):
        assert list(by_sink.msg_start[flow]) == list(by_name.msg_start[flow])
        assert [list(a) for a in by_sink.msg_done[flow]] == [list(a) for a in by_name.msg_done[flow]]
    assert list(by_sink.msg_start["f2"]) == [50, -1, 30, 60]
    assert [list(x) for x in by_sink.latencies("f1")] == [[5, 25, 15], [15, 45, 55]]


def test_merged_message_starts_reach_the_array_a_sink_holds() -> None:
    """A merge (the wall clock's workers) fills a flow's start times in place, so a sink
    made before it appends to the merged array."""
    worker = Metrics(DURATION, BIN, {}, {}, {})
    worker.message_start("f", 0, 10)
    parent = Metrics(DURATION, BIN, {}, {}, {})
    parent.message_start("g", 0, 5)
    sink = parent.flow_sink("f")
    sink.started(0, 1)                  # made the parent's own array for f ...
    parent.msg_start["f"][0] = -1       # ... left without a start, as a part that sent none
    parent.merge_bins(worker.export_bins())
    assert list(parent.msg_start["f"]) == [10]
    sink.started(1, 20)
    assert list(parent.msg_start["f"]) == [10, 20]


def test_port_samples_of_a_counter_that_appears_later_start_with_zeros() -> None:
    m = Metrics(DURATION, BIN, {}, {}, {})
    m.sample_ports(0, {"S:1": {"PortXmitPkts": 1}})
    m.sample_ports(1, {"S:1": {"PortXmitPkts": 2}})
    m.sample_ports(2, {"S:1": {"PortXmitPkts": 3, "PortXmitWait": 9}})
    assert m.port_samples["S:1"] == {"PortXmitPkts": [1, 2, 3], "PortXmitWait": [0, 0, 9]}
