"""The hybrid rate/window source response (ibemu.cc.hp.response): the per-flow state
CWND, OUTS, CIPD, RPI, APSN, RWL and the update rules of seed 000 §5.1.2–5.1.3 and
§5.2, on real queue pairs of a two-HCA fabric driven by hand."""
from __future__ import annotations

import pytest
from test_hca_qp import A_LID, B_LID, T, ack_frame, credit, data, run, take

from ibemu.build import build_fabric
from ibemu.cc import CCSpec
from ibemu.cc.hp.config import HPSpec
from ibemu.cc.hp.response import OTHER, RATE, WINDOW, HPResponse
from ibemu.fabric.params import FlowSpec, HCAParams
from ibemu.fabric.recorder import Recorder
from ibemu.scenario.model import HCASpec, LinkSpec, Scenario
from ibemu.units import PS_PER_MS, PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP


def pair_hp(flow, spec=None, a_params=None, flows=None):
    scn = Scenario("t", duration=PS_PER_MS, seed=1,
                   hcas=[HCASpec("a", A_LID, a_params or HCAParams()), HCASpec("b", B_LID, HCAParams())],
                   links=[LinkSpec("a", "b")], flows=flows or [flow],
                   cc=CCSpec("hp", {"hp": spec or HPSpec()}))
    fab = build_fabric(scn, Recorder())
    snd, rcv = fab.qps[flow.name]
    return fab.nodes["a"], fab.nodes["b"], snd, rcv, fab


def marked_ack(snd, psn):
    f = ack_frame(snd, psn)
    codec.set_becn(f)
    return f


def deliver(node, frame, t):
    """A frame arriving at *t*; run the node until it has been taken in (not further)."""
    node.receive(1, frame, False, t)
    run(node, t + len(frame) * 1000)


def sent_psns(node):
    return [codec.parse(f).psn for f, _ in data(take(node))]


# ---------------------------------------------------------------- state and limits
def test_initial_state_cwnd_one_cipd_sipd():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b", ipd=2))
    cc = snd.cc
    assert isinstance(cc, HPResponse)
    st = cc.state
    assert (st.cwnd, snd.cwnd, st.cipd, st.sipd, st.rpi, st.apsn) == (1, 1, 2, 2, 1, None)


def test_packets_are_spaced_cipd_plus_one_packet_times_and_cwnd_bounds_outs():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(cwnd_init=3, cwnd_max=3))
    snd.cc.state.cipd = 3
    credit(a, 0)
    run(a, 100 * T)
    times = [t for _, t in data(take(a))]
    assert times == [0, 4 * T, 8 * T]                  # then OUTS = CWND = 3 stops it
    assert snd.outs == 3


def test_cipd_never_below_the_static_ipd():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b", ipd=4), HPSpec(rates="discrete"))
    st = snd.cc.state
    st.rwl, st.rpi, st.cipd = RATE, 1, 5
    snd.psn, snd.outs, snd.una = 3, 3, 0
    snd.cc.on_ack(snd, 0, 0, 1, 0)
    assert st.cipd == 4
    st.rpi = 1
    snd.cc.on_ack(snd, 0, 1, 1, 0)
    assert st.cipd == 4                                 # SIPD is the ceiling of the rate


# ---------------------------------------------------------------- decrease (§5.1.3.2)
def test_first_mark_after_apsn_decreases_rate_and_window_later_marks_ignored():
    spec = HPSpec(cwnd_init=4, cwnd_max=8)
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), spec)
    credit(a, 0)
    run(a, 20 * T)
    assert sent_psns(a) == [0, 1, 2, 3]
    st = snd.cc.state
    deliver(a, marked_ack(snd, 0), 20 * T)
    assert (st.cipd, st.cwnd, snd.cwnd, st.apsn) == (1, 2, 2, 3)    # LIPD: IPD + 1; CWND halved
    deliver(a, marked_ack(snd, 1), 21 * T)                 # sent before the decrease
    deliver(a, marked_ack(snd, 2), 22 * T)
    assert (st.cipd, st.cwnd) == (1, 2)
    deliver(a, ack_frame(snd, 3), 23 * T)
    run(a, 40 * T)
    assert sent_psns(a) == [4, 5]
    deliver(a, marked_ack(snd, 4), 40 * T)                 # after APSN: counts
    assert (st.cipd, st.cwnd, st.apsn) == (2, 1, 5)


def test_rpi_is_not_reset_by_a_decrease():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(cwnd_init=4, cwnd_max=4))
    credit(a, 0)
    run(a, 20 * T)
    st = snd.cc.state
    st.rwl, st.rpi, st.cipd = RATE, 10, 6
    deliver(a, marked_ack(snd, 3), 20 * T)     # coalesced: 3 unmarked + 1 marked
    assert st.rpi == 7                                  # 10 - 3, and kept by the decrease
    assert st.cipd == 7


def test_a_flow_at_its_static_ipd_reloads_rpi_and_keeps_it_through_a_mark():
    # seed 000 §5.1.3.1: "Once RPI reaches zero, then an increase occurs in three steps" --
    # the next CIPD from the table, then "RPI is assigned a new value" that "depends on the
    # revised CIPD setting"; §5.1.3.2: "We chose not to re-initialize RPI when the rate or
    # window limit is decreased".  At CIPD = SIPD = 0 step 1 has nowhere to go, step 2 still
    # reloads RPI, so a flow marked at Rmax waits for unmarked ACKs before it is back.
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(rwl=False))
    credit(a, 0)
    run(a, 2 * T)
    st = snd.cc.state
    assert (st.cipd, st.rpi, st.apsn) == (0, 1, None)
    deliver(a, ack_frame(snd, 0), 3 * T)             # RPI 1 -> 0: nothing above IPD 0
    reload = 256 // 2                                # LIPD: IPD 1 -> 0 is T = 256 packet times,
    assert (st.cipd, st.rpi, st.apsn) == (0, reload, None)   # ACKs every 2: no adjustment, no APSN
    run(a, 5 * T)
    deliver(a, marked_ack(snd, 1), 6 * T)
    assert (st.cipd, st.rpi) == (1, reload)          # decreased, RPI kept
    run(a, 9 * T)
    deliver(a, ack_frame(snd, 2), 10 * T)
    assert (st.cipd, st.rpi) == (1, reload - 1)      # not back at Rmax on the next unmarked ACK
    st.rpi = 1
    run(a, 13 * T)
    deliver(a, ack_frame(snd, 3), 14 * T)
    assert (st.cipd, st.rpi) == (0, reload)          # increased to Rmax, RPI reloaded for IPD 0


def test_rpi_reset_reloads_rpi_for_the_new_rate_on_a_decrease():
    # seed 003 §6.2: "the time behavior of the rate increase should be independent of the past
    # history of the flow rate, i.e. it should be independent of the elapsed time since the
    # last decrease" -- a marked flow climbs back from its new rate alone
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(rwl=False, rpi_reset=True))
    credit(a, 0)
    run(a, 2 * T)
    st = snd.cc.state
    st.rpi, st.cipd = 3, 6
    deliver(a, marked_ack(snd, 0), 3 * T)
    assert st.cipd == 7
    assert st.rpi == round(256 / 8)                     # LIPD table at IPD 7: T / (IPD + 1)


def test_coalesced_marked_ack_is_n_minus_one_unmarked_then_one_marked():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(cwnd_init=4, cwnd_max=4))
    credit(a, 0)
    run(a, 20 * T)
    st = snd.cc.state
    st.rwl, st.rpi, st.cipd = RATE, 3, 6
    deliver(a, marked_ack(snd, 3), 20 * T)
    # three unmarked ACKs reach RPI = 0: increase to IPD 5 and APSN = 3; the marked one
    # is for a packet sent before that adjustment and is ignored (seed 000 §3, §5.1.3.2)
    assert st.cipd == 5 and st.apsn == 3


def test_cnp_decreases_a_reliable_flow_too():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"))
    snd.cc.on_cnp(snd, 0)
    assert snd.cc.state.cipd == 1


# ---------------------------------------------------------------- increase (§5.1.3.1)
@pytest.mark.parametrize("rwl,cipd,cwnd", [(RATE, 9, 2), (WINDOW, 10, 3), (OTHER, 10, 2)])
def test_only_the_limiting_factor_increases(rwl, cipd, cwnd):
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(cwnd_init=2, cwnd_max=8))
    credit(a, 0)
    run(a, 2 * T)
    st = snd.cc.state
    st.rwl, st.rpi, st.cipd = rwl, 1, 10
    deliver(a, ack_frame(snd, 0), 5 * T)
    assert (st.cipd, st.cwnd) == (cipd, cwnd)
    if rwl == OTHER:
        assert st.rpi == 1                              # not counted down either
    elif rwl == RATE:
        assert st.rpi == round(256 / 10)                # LIPD table at IPD 9
        assert st.apsn == 1                             # the last PSN sent
    else:
        assert st.rpi == 3                              # one window's worth at CWND 3


def test_without_rwl_every_unmarked_ack_works_towards_a_rate_increase():
    # seed 003 §6 (fixed window): the rate rises on unmarked ACKs whatever limited the flow
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(rwl=False))
    credit(a, 0)
    run(a, 2 * T)
    st = snd.cc.state
    st.rwl, st.rpi, st.cipd = WINDOW, 1, 10
    deliver(a, ack_frame(snd, 0), 5 * T)
    assert st.cipd == 9 and st.cwnd == 1


def test_rpi_counts_down_by_the_packets_an_ack_covers_without_crossing_zero():
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b"), HPSpec(cwnd_init=4, cwnd_max=4))
    credit(a, 0)
    run(a, 10 * T)
    st = snd.cc.state
    st.rwl, st.rpi, st.cipd = RATE, 5, 20
    deliver(a, ack_frame(snd, 1), 10 * T)      # covers 2
    assert st.rpi == 3 and st.cipd == 20
    deliver(a, ack_frame(snd, 3), 11 * T)      # covers 2 more
    assert st.rpi == 1
    st.rwl, st.rpi = RATE, 1
    snd.cc.on_ack(snd, 12 * T, 7, 5, 0)                 # more than needed: one increase
    assert st.cipd == 19


def test_rwl_records_rate_window_or_other():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, fab = pair_hp(flow)
    st = snd.cc.state
    st.cipd = 3                                         # packets 4T apart
    credit(a, 0)
    run(a, T)                                           # psn 0 at 0 (first: OTHER)
    assert st.rwl == OTHER
    deliver(a, ack_frame(snd, 0), 2 * T)       # ACK before the rate allows
    run(a, 10 * T)
    assert st.rwl == RATE
    deliver(a, ack_frame(snd, 1), 30 * T)      # ACK long after the rate allows
    run(a, 31 * T)
    assert st.rwl == WINDOW


def test_rpi_scales_with_pmtu_and_link_speed():
    spec = HPSpec(rpi_mtu=2048, rpi_rate=250_000_000)   # reference: 2048 B on a 1x link
    a, b, snd, rcv, fab = pair_hp(FlowSpec("f", "a", "b", message_size=1024), spec,
                                  a_params=HCAParams(mtu=1024))
    cc = snd.cc
    assert cc.scale == pytest.approx(2 * 4)             # half the PMTU, four times the speed
    st = cc.state
    st.cipd = 127
    assert cc._rpi_rate(st) == 8 * 2                    # table value 2 (256/128) times 8


# ---------------------------------------------------------------- unreliable (§5.2)
def test_unreliable_rate_only_rpi_counts_transmitted_packets():
    flow = FlowSpec("u", "a", "b", transport="ud", message_size=2048)
    a, b, snd, rcv, fab = pair_hp(flow, HPSpec(unreliable_initial_ipd=200))
    cc = snd.cc
    st = cc.state
    assert snd.cwnd is None and st.cipd == 200          # slow start below Rmax
    rpi0 = st.rpi
    assert rpi0 == round(256 / 201) or rpi0 == 1
    credit(a, 0)
    run(a, 201 * T * 3 + 1)
    assert st.cipd < 200                                 # increased by transmissions alone
    before = st.cipd
    cnp = codec.build(dlid=A_LID, slid=B_LID, opcode=OP.CNP, destqp=snd.qpn, becn=1)
    deliver(a, cnp, 700 * T)
    run(a, 701 * T)
    assert st.cipd == before + 1                         # a single CN packet decreases


def test_read_responses_are_rate_controlled_at_the_responder():
    flow = FlowSpec("r", "a", "b", op="read", message_size=4096)
    a, b, snd, rcv, fab = pair_hp(flow)
    assert isinstance(snd.cc, HPResponse) and snd.cc.reliable
    assert isinstance(rcv.cc, HPResponse) and not rcv.cc.reliable


def test_noncompliant_ca_gets_no_response():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, fab = pair_hp(flow, HPSpec(noncompliant_cas=["a"], manager="b"))
    assert snd.cc is None


# ---------------------------------------------------------------- consecutive flows (003 §6.3.2)
@pytest.mark.parametrize("persistent", [False, True])
def test_state_resets_for_a_new_flow_unless_persistent(persistent):
    flow = FlowSpec("f", "a", "b", pattern="onoff", mean_on=5 * PS_PER_US, mean_off=5 * PS_PER_US)
    a, b, snd, rcv, fab = pair_hp(flow, HPSpec(persistent=persistent))
    st = snd.cc.state
    st.cipd = 50                                        # the next packet 51T later: a new ON period
    credit(a, 0)
    run(a, 1)
    first_on = snd.gen.on_until
    deliver(a, ack_frame(snd, 0), 2 * T)
    run(a, 200 * PS_PER_US)
    assert snd.gen.on_until != first_on and snd.sent_packets == 2
    assert snd.cc.state.cipd == (50 if persistent else 0)


def test_persistent_state_is_shared_by_flows_of_the_same_pair():
    f1 = FlowSpec("f1", "a", "b")
    f2 = FlowSpec("f2", "a", "b", start=PS_PER_US)
    a, b, s1, r1, fab = pair_hp(f1, HPSpec(persistent=True), flows=[f1, f2])
    s2 = fab.qps["f2"][0]
    assert s1.cc.state is s2.cc.state
    a, b, s1, r1, fab = pair_hp(f1, HPSpec(), flows=[f1, f2])
    assert s1.cc.state is not fab.qps["f2"][0].cc.state
