"""The exact clock's protocol without I/O (ibemu/runtime/syncproto.py) and the order of
simultaneous events it relies on (ibemu/sim/scheduler.py): each term of a promise, the
message codec, the round bookkeeping and the stop rule."""
from __future__ import annotations

import random

import pytest

from ibemu.runtime.syncproto import (FOREVER, MESSAGE, PHASE_A, PHASE_B, InLink, Rounds, bound, decode, distances,
                                     encode, hop, least, relay_steps)
from ibemu.sim.scheduler import (DEPTH_SHIFT, INF, LSEQ_MASK, MAX_DEPTH, MAX_PORT, WAKE_PORT, depth_of, order,
                                 port_rank)

D1 = 1 << DEPTH_SHIFT


# ---------------------------------------------------------------- the promise's terms

def test_propagation_term_moves_the_key_to_a_later_instant():
    # a frame sent at t arrives at t + propagation: any depth at that later instant
    assert hop(5_000, 3 * D1 + 77, 10_000) == (15_000, 0)


def test_depth_term_on_a_link_without_propagation():
    # arriving at the instant of the event that sent it, one causal step deeper
    assert hop(5_000, 3 * D1 + 77, 0) == (5_000, 4 * D1)
    assert hop(5_000, 0, 0) == (5_000, D1)
    assert hop(5_000, MAX_DEPTH * D1, 0) == (5_000, MAX_DEPTH * D1)      # capped, as the key's field


def test_nothing_pending_promises_nothing_ever():
    assert hop(INF, 0, 0) == (FOREVER, 0) and hop(INF, 0, 10) == (FOREVER, 0)


def test_a_path_adds_its_propagations_or_its_hops():
    assert bound(1_000, D1, 0, 3) == (1_000, 4 * D1)                     # three links without delay
    assert bound(1_000, D1, 20_000, 3) == (21_000, 0)                    # any delay: a later instant
    assert bound(1_000, 5, 0, 0) == (1_000, 5)


def test_cheapest_paths_between_workers():
    # a ring 0 -> 1 -> 2 -> 0 with no delay, and a direct 0 -> 2 with 40 ns
    d = distances(3, [(0, 1, 0), (1, 2, 0), (2, 0, 0), (0, 2, 40_000)])
    assert d[0][1] == (0, 1) and d[1][2] == (0, 1)
    assert d[0][2] == (0, 2)            # two links without delay beat one with: (0, 2) < (40000, 1)
    assert d[1][0] == (0, 2) and d[0][0] is None
    assert distances(2, [(0, 1, 0)])[1][0] is None                      # no way back: no bound


def test_bound_of_the_least_weight_is_the_least_of_every_path():
    rnd = random.Random(1)
    for _ in range(500):
        t, s = rnd.randrange(10**6), rnd.randrange(4) * D1
        paths = [(rnd.choice([0, 0, 10, 300]), rnd.randrange(1, 5)) for _ in range(4)]
        best = min(paths)
        assert bound(t, s, *best) == min(bound(t, s, p, h) for p, h in paths)


# ---------------------------------------------------------------- the order of one instant

def test_order_fields_and_depth():
    k = order(3, 17, 5, 9)
    assert depth_of(k) == 3 and k & LSEQ_MASK == 9
    assert order(0, 1, WAKE_PORT) > order(0, 1, 508, LSEQ_MASK)          # deliveries before the timers
    assert order(1, 0, 0) > order(0, 200_000, WAKE_PORT)                 # depth first: causes before effects


def test_port_rank_is_a_permutation_that_changes_from_instant_to_instant():
    ports = range(MAX_PORT + 1)
    firsts = set()
    for t in range(0, 2_068_000 * 40, 2_068_000):        # every 2068-byte packet time at 1 GB/s
        ranks = [port_rank(t, 3, p) for p in ports]
        assert sorted(ranks) == list(range(1, 509))       # a permutation of 1..508: no two ports tie
        firsts.add(min((port_rank(t, 3, p), p) for p in (1, 2, 3, 4))[1])
    assert firsts == {1, 2, 3, 4}                          # no port wins every tie


def test_port_1_against_port_2_is_about_even():
    wins = sum(port_rank(t, 7, 1) < port_rank(t, 7, 2) for t in range(0, 2_068_000 * 2000, 2_068_000))
    assert 800 < wins < 1200                               # 2000 instants, about half each


# ---------------------------------------------------------------- messages and rounds

def test_message_codec_and_strays():
    m = encode(PHASE_B, 7, 123, D1, 0b101, step=1)
    assert len(m) == MESSAGE.size == 40
    assert decode(m) == (PHASE_B, 1, 7, 123, D1, 0b101)
    assert decode(m[:-1]) is None and decode(bytes(40)) is None          # phase 0: not a message
    link = InLink("S:1")
    assert link.take(*decode(encode(PHASE_A, 0, 5)), last_step=1)
    assert not link.take(*decode(encode(PHASE_A, 2, 9)), last_step=1)    # a round ahead of turn
    assert not link.take(*decode(encode(PHASE_A, 0, 5)), last_step=1)    # a replay
    assert link.a_round == 0 and link.a_count == 5 and link.strays == 2
    assert link.take(PHASE_B, 0, 0, 10, 0, 0, last_step=1)
    assert not link.take(PHASE_B, 0, 1, 10, 0, 0, last_step=1)           # step 1 of round 0 comes first
    assert link.take(PHASE_B, 1, 0, 20, 0, 3, last_step=1)
    assert link.bits == {0: 3} and link.key() == (20, D1)


def test_relay_steps_reach_every_worker():
    assert relay_steps(2) == 1 and relay_steps(3) == 2 and relay_steps(1) == 1


def test_stop_rule_needs_every_worker_idle_in_one_round():
    # two workers: round r's bit 1 says "I was idle at r - 1 and so was my neighbour"
    a, b = Rounds(1), Rounds(1)
    la, lb = InLink("a"), InLink("b")          # a's view of b's messages, b's view of a's
    history = [(False, False), (True, False), (True, True), (True, True)]
    done = []
    for r, (ia, ib) in enumerate(history):
        ba, bb = a.idle_bits(r, ia, [la]), b.idle_bits(r, ib, [lb])
        la.bits[r], lb.bits[r] = bb, ba
        done.append((a.done(ba), b.done(bb)))
    assert done == [(False, False), (False, False), (False, False), (True, True)]    # together


def test_least():
    assert least([]) == (INF, 0) and least([(5, 2), (5, 1), (6, 0)]) == (5, 1)


@pytest.mark.parametrize("t", [0, 1, 2**40 + 12345])
def test_port_rank_depends_on_the_node_too(t):
    assert [port_rank(t, 1, p) for p in range(8)] != [port_rank(t, 2, p) for p in range(8)]
