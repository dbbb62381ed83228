"""The rules that turn a trace's records into rank steps (ibemu/scenario/job_replay.py),
on records made here (no OTF2 file: tests/test_job_trace.py writes and reads those)."""
from __future__ import annotations

import pytest

from ibemu.scenario.job_replay import replay
from ibemu.scenario.job_trace import TraceError, TraceRecords

W = "w"                                     # the "where" of a record, for error messages


def records(*items, comms=None):
    n = len(items)
    return TraceRecords(n, [list(i) for i in items], comms or {0: ("WORLD", list(range(n)))})


def steps(rec, **kw):
    progs, names = replay(rec, {}, **kw)
    return [[(s.compute, s.sends, s.recvs) for s in p] for p in progs], names


def test_a_step_posts_its_sends_then_waits_and_a_send_after_a_receive_starts_the_next():
    # rank 0: send, recv, send, recv (a blocking ping-pong); rank 1 the mirror
    rec = records([("send", 1, 10), ("recv", 1, W), ("send", 1, 20), ("recv", 1, W)],
                  [("recv", 0, W), ("send", 0, 10), ("recv", 0, W), ("send", 0, 20)])
    got, names = steps(rec)
    assert got[0] == [(0, [(1, 10)], [1]), (0, [(1, 20)], [1])]
    assert got[1] == [(0, [], [0]), (0, [(0, 10)], [0]), (0, [(0, 20)], [])]
    assert names == ["p2p"]


def test_compute_goes_before_the_next_step_and_is_scaled():
    rec = records([("compute", 1000), ("send", 1, 5), ("compute", 3000), ("send", 1, 5), ("recv", 1, W)],
                  [("recv", 0, W), ("recv", 0, W), ("send", 0, 7)])
    got, _ = steps(rec, scale=0.5)
    # the first step's compute, then a step of its own after the 3000 ps between the sends
    assert got[0] == [(500, [(1, 5)], []), (1500, [(1, 5)], [1])]
    assert got[1] == [(0, [], [0, 0]), (0, [(0, 7)], [])]


def test_a_message_of_no_bytes_still_travels_and_messages_to_self_do_not():
    rec = records([("send", 1, 0), ("send", 0, 9), ("recv", 0, W)], [("recv", 0, W)])
    got, _ = steps(rec)
    assert got[0] == [(0, [(1, 1)], [])]


def test_collectives_over_all_ranks_are_iterations_of_their_operation():
    # allreduce of S = 64 bytes over 2 ranks recorded as N x S = 128 sent (Score-P)
    ar = ("coll", 0, "ALLREDUCE", 0xFFFFFFFF, 128, 128, W)
    rec = records([ar, ("compute", 10), ("send", 1, 3), ar], [ar, ("recv", 0, W), ar])
    progs, names = replay(rec, {})
    assert names == ["allreduce/ring", "p2p"]
    assert [(s.op, s.iteration, s.first, s.last) for s in progs[1]] == [
        (0, 0, True, False), (0, 0, False, True), (1, 0, True, True), (0, 1, True, False), (0, 1, False, True)]
    # the ring's chunks: S / N = 32 bytes per message
    assert progs[0][0].sends == [(1, 32)]
    # the compute before the p2p send stays with it; rank 1 has none
    assert progs[0][2].compute == 10 and progs[1][2].compute == 0


def test_the_jobs_algorithm_chooses_the_expansion():
    ar = ("coll", 0, "ALLREDUCE", 0xFFFFFFFF, 4 * 64, 4 * 64, W)
    progs, names = replay(records([ar], [ar], [ar], [ar]), {"allreduce": "recursive_doubling"})
    assert names == ["allreduce/recursive_doubling"]
    assert [s.sends for s in progs[0]] == [[(1, 64)], [(2, 64)]]


def test_a_receive_no_send_matches_is_refused():
    with pytest.raises(TraceError, match="no send matches it"):
        replay(records([("send", 1, 4)], [("recv", 0, W), ("recv", 0, "rank 1's MpiRecv")]), {})
