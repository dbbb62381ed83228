"""VL arbitration (ibemu.fabric.vlarb): the IBA dual-priority weighted round robin,
checked against the example of seed 004 ("VL Arbitration", Figure 7).

The arbiter is driven as an output port drives it: *ready* is the set of VLs with a
sendable packet, ``vl = choose(ready)`` and then ``sent(vl, nbytes, ready)``.
"""
from __future__ import annotations

from collections import Counter

import pytest

from ibemu.fabric.vlarb import UNLIMITED, VLArbiter

# seed 004 Figure 7: weights in 64-byte units
FIG7_HIGH = [(0, 1), (1, 1)]
FIG7_LOW = [(2, 8), (3, 8), (2, 8), (4, 4), (5, 4), (2, 8), (7, 4), (6, 4)]
PKT = 256                               # bytes: weight 8 = two packets, weight 4 = one


def drive(arb, backlog, n, size=PKT):
    """Send *n* packets; *backlog* maps VL -> packets waiting (None: infinite).
    Returns the sequence of VLs sent."""
    seq = []
    for _ in range(n):
        ready = {vl for vl, b in backlog.items() if b is None or b > 0}
        vl = arb.choose(ready)
        if vl is None:
            break
        assert vl in ready
        nbytes = size(vl) if callable(size) else size
        arb.sent(vl, nbytes, ready)
        if backlog[vl] is not None:
            backlog[vl] -= 1
        seq.append(vl)
    return seq


def fig7(limit=UNLIMITED):
    return VLArbiter(FIG7_HIGH, FIG7_LOW, limit)


# ----------------------------------------------------------------- (a) High table

def test_fig7_high_vls_alternate():
    arb = fig7()
    seq = drive(arb, {0: None, 1: None}, 100)
    assert seq == [0, 1] * 50


def test_fig7_high_vls_alternate_with_low_backlogged_and_unlimited():
    arb = fig7()
    seq = drive(arb, {vl: None for vl in range(8)}, 200)
    assert seq == [0, 1] * 100           # Limit 255: Low never gets a turn


def test_fig7_single_high_vl_keeps_the_link():
    arb = fig7()
    assert drive(arb, {1: None}, 10) == [1] * 10


def test_choose_empty_ready_is_none():
    arb = fig7()
    assert arb.choose(set()) is None
    assert arb.choose({8, 9}) is None    # VLs in no table are never chosen


# ----------------------------------------------------------------- (b) Low table shares

def test_fig7_low_round_exact_order():
    arb = fig7()
    seq = drive(arb, {vl: None for vl in range(2, 8)}, 12)
    assert seq == [2, 2, 3, 3, 2, 2, 4, 5, 2, 2, 7, 6]


def test_fig7_low_bandwidth_split():
    arb = fig7()
    rounds = 100
    seq = drive(arb, {vl: None for vl in range(2, 8)}, 12 * rounds)
    c = Counter(seq)
    assert c[2] == 6 * rounds            # 50 %
    assert c[3] == 2 * rounds            # 16.67 %
    for vl in (4, 5, 6, 7):
        assert c[vl] == rounds           # 8.33 % each
    total = len(seq)
    assert c[2] / total == pytest.approx(0.5)
    assert c[3] / total == pytest.approx(1 / 6)
    assert c[4] / total == pytest.approx(1 / 12)
    # every 12-packet window is exactly one round
    for r in range(rounds):
        assert Counter(seq[12 * r:12 * r + 12]) == {2: 6, 3: 2, 4: 1, 5: 1, 6: 1, 7: 1}


def test_fig7_low_skips_idle_vls_and_shares_among_the_rest():
    arb = fig7()
    seq = drive(arb, {2: None, 3: None}, 800)
    c = Counter(seq)
    assert c[2] == 600 and c[3] == 200   # 3 : 1, entries of empty VLs are skipped


def test_fig7_high_preempts_low_when_it_becomes_ready():
    arb = fig7()
    backlog = {vl: None for vl in range(2, 8)}
    seq = drive(arb, backlog, 3)
    assert seq == [2, 2, 3]
    backlog[0] = 2
    backlog[1] = 1
    seq = drive(arb, backlog, 5)
    assert seq == [0, 1, 0, 3, 2]        # High first, then Low resumes where it was


# ----------------------------------------------------------------- (c) Limit of High-Priority

def _low_gaps(seq, low_vls):
    """Number of High packets before each Low packet."""
    gaps, run = [], 0
    for vl in seq:
        if vl in low_vls:
            gaps.append(run)
            run = 0
        else:
            run += 1
    return gaps


@pytest.mark.parametrize("limit, high_per_low", [
    (0, 1),                             # 0: one High packet, then a Low opportunity
    (1, 4096 // PKT),                   # 16 packets of 256 B = 4096 B
    (2, 2 * 4096 // PKT),
    (3, 3 * 4096 // PKT),
])
def test_limit_of_high_priority(limit, high_per_low):
    arb = fig7(limit)
    backlog = {vl: None for vl in range(8)}
    seq = drive(arb, backlog, 40 * (high_per_low + 1))
    gaps = _low_gaps(seq, set(range(2, 8)))
    assert len(gaps) == 40
    assert all(g == high_per_low for g in gaps), gaps
    # Low still follows its own WRR order through those single opportunities
    low = [vl for vl in seq if vl >= 2]
    assert low[:12] == [2, 2, 3, 3, 2, 2, 4, 5, 2, 2, 7, 6]
    # High alternates VL0/VL1 regardless of the interruptions
    high = [vl for vl in seq if vl < 2]
    assert high[:20] == [0, 1] * 10


def test_limit_counts_bytes_not_packets():
    """Limit 1 = 4096 bytes; with 300-byte High packets the 14th packet crosses the
    limit (13 * 300 = 3900 < 4096) and is still sent, then Low gets one packet."""
    arb = fig7(1)
    backlog = {vl: None for vl in range(8)}
    seq = drive(arb, backlog, 10 * 15, size=lambda vl: 300 if vl < 2 else PKT)
    gaps = _low_gaps(seq, set(range(2, 8)))
    assert gaps[:10] == [14] * 10


def test_limit_255_starves_low():
    arb = fig7(255)
    seq = drive(arb, {vl: None for vl in range(8)}, 2000)
    assert set(seq) == {0, 1}


def test_limit_expired_but_low_empty_high_continues():
    arb = fig7(0)
    seq = drive(arb, {0: None, 1: None}, 10)
    assert seq == [0, 1] * 5
    # Low becomes ready: after one High packet (limit 0) it gets its opportunity
    seq = drive(arb, {0: None, 1: None, 3: None}, 6)
    # the counter expired after the last High packet: Low first, then alternate
    assert seq == [3, 0, 3, 1, 3, 0]


def test_low_only_when_high_empty_resets_counter():
    arb = fig7(1)
    backlog = {0: None, 1: None, 2: None}
    seq = drive(arb, backlog, 17)
    assert seq[:16] == [0, 1] * 8 and seq[16] == 2
    backlog.pop(0)
    backlog.pop(1)
    drive(arb, backlog, 3)                # Low alone
    backlog.update({0: None, 1: None})
    seq = drive(arb, backlog, 17)
    assert seq.count(2) == 1 and seq[-1] == 2 and seq[:16].count(2) == 0


# ----------------------------------------------------------------- (d) weights

def test_weight_zero_entries_are_skipped():
    arb = VLArbiter([], [(2, 0), (3, 4), (4, 0), (5, 4)], UNLIMITED)
    seq = drive(arb, {2: None, 3: None, 4: None, 5: None}, 20)
    assert seq == [3, 5] * 10
    assert 2 not in seq and 4 not in seq


def test_all_weights_zero_never_chosen():
    arb = VLArbiter([(1, 0)], [(2, 0)], UNLIMITED)
    assert arb.choose({1, 2}) is None


def test_packet_larger_than_weight_is_sent_and_ends_entry():
    # weight 1 = 64 bytes, packets of 2074 bytes: one packet per turn
    arb = VLArbiter([], [(0, 1), (1, 1)], UNLIMITED)
    assert drive(arb, {0: None, 1: None}, 10, size=2074) == [0, 1] * 5
    # weight 8 = 512 bytes, packets of 300: the first leaves 212 > 0, so a second one
    # (larger than the remainder) is still sent and ends the entry
    arb = VLArbiter([], [(0, 8), (1, 8)], UNLIMITED)
    assert drive(arb, {0: None, 1: None}, 12, size=300) == [0, 0, 1, 1] * 3
    # weight 8 with 256-byte packets: exactly two packets, not three
    arb = VLArbiter([], [(0, 8), (1, 8)], UNLIMITED)
    assert drive(arb, {0: None, 1: None}, 12, size=256) == [0, 0, 1, 1] * 3
    # weight 255 = 16320 bytes: 8 packets of 2074 (7 leave 1802 > 0, the 8th ends it)
    arb = VLArbiter([], [(0, 255), (1, 255)], UNLIMITED)
    assert drive(arb, {0: None, 1: None}, 28, size=2074) == ([0] * 8 + [1] * 8) + [0] * 8 + [1] * 4


def test_vl_in_both_tables():
    """A VL may appear in both tables (seed 004); High serves it first."""
    arb = VLArbiter([(2, 1)], [(2, 8), (3, 8)], 0)
    seq = drive(arb, {2: None, 3: None}, 12)
    # limit 0: High and Low alternate; High always sends VL2, Low follows its own
    # order (2, 2, 3, 3, 2, 2, ...)
    assert seq == [2, 2, 2, 2, 2, 3, 2, 3, 2, 2, 2, 2]
    assert seq[1::2] == [2, 2, 3, 3, 2, 2]
    arb = VLArbiter([(2, 1)], [(2, 8), (3, 8)], UNLIMITED)
    assert drive(arb, {2: None, 3: None}, 12) == [2] * 12     # High never yields


def test_single_vl_fast_path_flag():
    assert VLArbiter([], [(0, 255)]).single == 0
    assert VLArbiter([(1, 1)], [(1, 255)]).single == 1
    assert VLArbiter(FIG7_HIGH, FIG7_LOW).single is None
