"""The CA side of the IBA CCA (ibemu.cc.cca.hca): CCTI_Increase up to CCTI_Limit, the
per-SL CCTI_Timer down to CCTI_Min, the CCT injection delay, per-QP and per-SL CCTI,
Trigger_Threshold events (REFERENCE.md "IBA Congestion Control Annex")."""
from __future__ import annotations

import pytest
from test_hca_qp import A_LID, B_LID, ack_frame, credit, data, pair, run, take

from ibemu.build import build_fabric
from ibemu.cc.cca.hca import CCAResponse
from ibemu.cc.cca.settings import CASetting, cct_delay, default_cct
from ibemu.fabric.node import T_CALL
from ibemu.fabric.params import FlowSpec, HCAParams
from ibemu.fabric.recorder import Recorder
from ibemu.scenario.model import HCASpec, LinkSpec, Scenario
from ibemu.units import PS_PER_MS, PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP

TIMER_PS = 1_024_000            # one CCTI_Timer unit: 1.024 µs
TP = 2074 * 1000                # max packet time: 2048-byte payload + 26 bytes of headers at 1 GB/s


class Rec(Recorder):
    def __init__(self):
        self.traces, self.events = [], []

    def trace(self, kind, key, t, value):
        self.traces.append((kind, key, t, value))

    def event(self, t, source, text):
        self.events.append((t, source, text))


def setup(ca=None, flows=None):
    flows = flows or [FlowSpec("f", "a", "b", pattern="messages", count=0)]
    a, b, snd, rcv, _, fab = pair(flows[0])
    rec = Rec()
    resp = CCAResponse(a, ca or CASetting(), rec)
    snd.cc = resp
    return a, snd, resp, rec


def setup_two(ca, sl_other):
    """Like :func:`setup`, plus a second sender on HCA a (flow g, on SL *sl_other*): a real
    queue pair rather than a fake, so the test runs on the compiled core too (issue 30)."""
    f = FlowSpec("f", "a", "b", pattern="messages", count=0)
    g = FlowSpec("g", "a", "b", pattern="messages", count=0, sl=sl_other)
    scn = Scenario("t", duration=PS_PER_MS, seed=1,
                   hcas=[HCASpec("a", A_LID, HCAParams()), HCASpec("b", B_LID, HCAParams())],
                   links=[LinkSpec("a", "b")], flows=[f, g])
    fab = build_fabric(scn, Rec())
    a = fab.nodes["a"]
    snd, other = fab.qps["f"][0], fab.qps["g"][0]
    resp = CCAResponse(a, ca, Rec())
    snd.cc = other.cc = resp
    return a, snd, other, resp


def test_becn_raises_ccti_by_increase_up_to_limit():
    ca = CASetting(CCTI_Limit=7)
    for s in ca.sl:
        s.CCTI_Increase, s.CCTI_Timer = 3, 0
    a, snd, resp, _ = setup(ca)
    got = []
    for _ in range(4):
        resp.on_ack(snd, 0, 0, 1, 1)
        got.append(resp.ccti(snd))
    assert got == [3, 6, 7, 7]
    resp.on_ack(snd, 0, 0, 1, 0)                    # no BECN: no change
    assert resp.ccti(snd) == 7


def test_ccti_limit_zero_means_the_last_table_entry():
    ca = CASetting(CCT=[(0, i) for i in range(10)], CCTI_Limit=0)
    assert ca.limit() == 9
    a, snd, resp, _ = setup(ca)
    for _ in range(20):
        resp.on_cnp(snd, 0)
    assert resp.ccti(snd) == 9


def test_timer_lowers_one_per_expiry_down_to_min_then_stops():
    ca = CASetting()
    for s in ca.sl:
        s.CCTI_Timer, s.CCTI_Increase, s.CCTI_Min = 10, 5, 2
    a, snd, resp, rec = setup(ca)
    assert resp.ccti(snd) == 2                      # starts at its floor
    resp.on_becn(snd, 0)
    assert resp.ccti(snd) == 7
    assert [t for t in a.timers if t[2] == T_CALL and t[3][0] == resp._expire]   # the CCTI_Timer runs
    period = 10 * TIMER_PS
    values = []
    for k in range(1, 8):
        run(a, k * period)
        values.append(resp.ccti(snd))
    assert values == [6, 5, 4, 3, 2, 2, 2]
    assert not resp.timer_on[0]                     # stopped at CCTI_Min
    # a general deadline is (t, seq, T_CALL, (fn, args)) (fabric.node.Timer)
    assert not [t for t in a.timers if t[2] == T_CALL and t[3][0] == resp._expire]
    ccti = [(t, v) for kind, key, t, v in rec.traces if kind == "CCTI"]
    assert ccti[-1] == (5 * period, 2)


def test_timer_is_free_running_not_restarted_by_each_becn():
    ca = CASetting()
    for s in ca.sl:
        s.CCTI_Timer = 100
    a, snd, resp, _ = setup(ca)
    resp.on_becn(snd, 0)
    resp.on_becn(snd, 50 * TIMER_PS)                # does not push the expiry back
    run(a, 100 * TIMER_PS)
    assert resp.ccti(snd) == 1


def test_timer_zero_never_lowers():
    ca = CASetting()
    for s in ca.sl:
        s.CCTI_Timer = 0
    a, snd, resp, _ = setup(ca)
    resp.on_becn(snd, 0)
    run(a, 10 ** 9)
    assert resp.ccti(snd) == 1


def test_per_sl_timers_are_independent():
    ca = CASetting(Port_Control="sl")
    ca.sl[0].CCTI_Timer, ca.sl[1].CCTI_Timer = 10, 40
    a, snd, other, resp = setup_two(ca, 1)          # a second QP on SL 1 of the same port
    resp.on_becn(snd, 0)
    resp.on_becn(other, 0)
    run(a, 10 * TIMER_PS)
    assert (resp.ccti(snd), resp.ccti(other)) == (0, 1)
    run(a, 40 * TIMER_PS)
    assert resp.ccti(other) == 0


@pytest.mark.parametrize("shift,mult", [(0, 1), (1, 3), (2, 5), (3, 100)])
def test_cct_delay_formula(shift, mult):
    """Injection delay = (max packet time >> CCT_Shift) × CCT_Multiplier (hfi1 IPG)."""
    ca = CASetting(CCT=[(0, 0), (shift, mult)])
    a, snd, resp, _ = setup(ca)
    assert resp.max_packet_time == TP
    assert cct_delay((shift, mult), TP) == (TP >> shift) * mult
    base = 512 * 1000
    assert resp.gap(snd, 512, base) == base         # CCTI 0: entry (0, 0), no delay
    resp.on_becn(snd, 0)
    assert resp.gap(snd, 512, base) == base + (TP >> shift) * mult
    assert resp.gap(snd, 512, 10 ** 12) == 10 ** 12  # a slower static rate still wins


def test_injection_delay_spaces_packets_on_the_wire():
    flow = FlowSpec("f", "a", "b", pattern="greedy", message_size=2048)
    ca = CASetting(CCT=[(0, 0), (0, 1)])
    a, snd, resp, _ = setup(ca, [flow])
    resp.on_becn(snd, 0)                            # CCTI 1: delay = one max packet time
    credit(a, 0)
    run(a, 20 * TP)
    starts = [t for _, t in data(take(a))]
    gaps = {b - a_ for a_, b in zip(starts, starts[1:])}
    assert gaps == {2 * TP}                         # packet time + delay: half the link rate


def test_per_qp_versus_per_sl_state():
    for mode, shared in (("qp", False), ("sl", True)):
        a, snd, other, resp = setup_two(CASetting(Port_Control=mode), 0)   # both on SL 0
        resp.on_becn(snd, 0)
        assert resp.ccti(other) == (1 if shared else 0)
        assert (resp.state(other) is resp.state(snd)) == shared


def test_trigger_threshold_event_and_traces():
    ca = CASetting()
    for s in ca.sl:
        s.Trigger_Threshold, s.CCTI_Timer = 3, 0
    a, snd, resp, rec = setup(ca)
    for k in range(5):
        resp.on_becn(snd, k)
    assert rec.events == [(2, "a", "CCTI of f reached Trigger_Threshold 3")]
    rates = [v for kind, key, t, v in rec.traces if kind == "injection_rate" and key == "f"]
    assert rates == pytest.approx([1 / (1 + i / 4) for i in range(1, 6)])   # default CCT


def test_default_cct_range():
    cct = default_cct()
    assert len(cct) == 128 and cct[0] == (2, 0)
    rate = [TP / (TP + cct_delay(e, TP)) for e in cct]
    assert rate[0] == 1 and rate[4] == pytest.approx(0.5) and rate[127] < 0.04
    assert all(b < a for a, b in zip(rate, rate[1:]))


def test_becn_in_ack_and_cnp_reach_the_response():
    a, snd, resp, _ = setup()
    credit(a, 0)
    a.receive(1, ack_frame(snd, 0), False, 0)                       # no BECN
    assert resp.ccti(snd) == 0
    marked = codec.build(dlid=A_LID, slid=B_LID, opcode=OP.RC_ACKNOWLEDGE, psn=0, destqp=snd.qpn,
                         becn=1, ext={"AETH": {"syndrome": 0x1F, "msn": 0}})
    a.receive(1, marked, False, PS_PER_US)
    run(a, 2 * PS_PER_US)
    assert resp.ccti(snd) == 1
    cnp = codec.build(dlid=A_LID, slid=B_LID, opcode=OP.CNP, psn=0, destqp=snd.qpn, becn=1)
    a.receive(1, cnp, False, 3 * PS_PER_US)
    run(a, 4 * PS_PER_US)
    assert resp.ccti(snd) == 2
    assert a.counters["becn_received"] == 2


def test_rdma_read_responses_are_throttled_through_cnps():
    """Marked READ responses are answered with CNPs (IBA A10); the responder's CCTI
    (traced as "<flow>:responses") rises."""
    from ibemu.run import run_virtual
    from ibemu.scenario import scenario_from_dict
    raw = {"scenario": {"duration": "1ms"}, "switch": [{"name": "S"}],
           "hca": [{"name": "H1"}, {"name": "H2"}, {"name": "H3"}],
           "link": [{"a": "H1", "b": "S"}, {"a": "H2", "b": "S"}, {"a": "S", "b": "H3", "name": "root"}],
           "flow": [{"name": "r1", "src": "H3", "dst": "H1", "op": "read", "message_size": "64KiB"},
                    {"name": "r2", "src": "H3", "dst": "H2", "op": "read", "message_size": "64KiB"}],
           "output": {"plots": False}, "cc": {"scheme": "cca"}}
    r = run_virtual(scenario_from_dict(raw, label="t"))
    assert r.counters["S"]["FECN_marked:port3"] > 10
    assert r.counters["H3"]["cnp_sent"] > 10
    assert r.counters["H1"]["cnp_received"] + r.counters["H2"]["cnp_received"] == r.counters["H3"]["cnp_sent"]
    assert max(v for _, v in r.metrics.traces[("CCTI", "r1:responses")]) > 0
