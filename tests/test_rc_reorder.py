"""The RC responder's reorder window (ibemu.fabric.qp.responder; issue 31 Deliver 2):
packets merely late are kept and taken in order without a NAK, a real loss is still
recovered, and under adaptive routing every message arrives exactly once and intact --
alone and with the fault matrix of issue 8 (loss, duplication, reordering, corruption)."""
from __future__ import annotations

import pytest
from test_faults import MATRIX, run_with_faults
from test_hca_qp import pair
from test_rc_recovery import _aeth, _req

from ibemu.fabric.faults import FaultSpec, LinkFaults
from ibemu.fabric.integrity import verify
from ibemu.fabric.params import FlowSpec, HCAParams, LinkParams
from ibemu.fabric.qp import ACK_SYNDROME, NAK_PSN_SEQ
from ibemu.scenario.model import HCASpec, LinkSpec, RoutingSpec, Scenario, SwitchSpec
from ibemu.testing import assert_no_credit_leak
from ibemu.units import PS_PER_MS, PS_PER_US
from ibemu.wire import codec
from ibemu.wire.fields import set_fecn


def _responder(window):
    a, b, snd, rcv, rec, _ = pair(FlowSpec("f", "a", "b"))
    rcv.reorder_window = window
    return b, rcv, rec


def test_late_packets_are_kept_and_taken_in_order_without_a_nak():
    b, rcv, rec = _responder(8)
    assert rcv.on_packet(0, _req(rcv, 0)) is not None
    # 1 is late: 2, 3, 4 arrive first and are kept; no NAK, no ACK beyond 0
    assert [rcv.on_packet(0, _req(rcv, psn)) for psn in (2, 4, 3)] == [None, None, None]
    assert rcv.epsn == 1 and len(rec.rx) == 1 and rcv.out_of_order == 3 and rcv.reorder_depth == 3
    # 1 arrives: 1..4 are taken in PSN order, one cumulative ACK of 4
    assert _aeth(rcv.on_packet(0, _req(rcv, 1))) == (4, ACK_SYNDROME)
    assert rcv.epsn == 5 and len(rec.rx) == 5 and not rcv.held
    assert b.counters.get("naks_sent", 0) == 0 and rcv.out_of_sequence == 0
    # a copy of a kept packet (duplication) is dropped, not delivered twice
    rcv.on_packet(0, _req(rcv, 7))
    assert rcv.on_packet(0, _req(rcv, 7)) is None and rcv.duplicates == 1
    rcv.on_packet(0, _req(rcv, 6))
    rcv.on_packet(0, _req(rcv, 5))
    assert rcv.epsn == 8 and len(rec.rx) == 8


def test_a_packet_beyond_the_window_naks_the_loss_once():
    b, rcv, rec = _responder(4)
    rcv.on_packet(0, _req(rcv, 0))
    # 1 is lost: 2, 3, 4 are kept (1..3 ahead: inside the window of 4), 5 is 4 ahead: NAK 1
    assert [rcv.on_packet(0, _req(rcv, psn)) for psn in (2, 3, 4)] == [None, None, None]
    assert _aeth(rcv.on_packet(0, _req(rcv, 5))) == (1, NAK_PSN_SEQ)
    assert rcv.on_packet(0, _req(rcv, 6)) is None                  # one NAK per sequence error
    # go-back-N from 1: 1 fills the hole, the kept 2..4 are taken, the resent 2..4 are duplicates
    assert _aeth(rcv.on_packet(0, _req(rcv, 1))) == (4, ACK_SYNDROME)
    for psn in (2, 3, 4):
        assert _aeth(rcv.on_packet(0, _req(rcv, psn))) == (4, ACK_SYNDROME)
    assert _aeth(rcv.on_packet(0, _req(rcv, 5))) == (5, ACK_SYNDROME)
    assert rcv.epsn == 6 and len(rec.rx) == 6 and b.counters["naks_sent"] == 1


def test_window_zero_is_go_back_n_as_before():
    b, rcv, rec = _responder(0)
    rcv.on_packet(0, _req(rcv, 0))
    assert _aeth(rcv.on_packet(0, _req(rcv, 2))) == (1, NAK_PSN_SEQ)
    assert rcv.out_of_order == 0 and not rcv.held


def test_a_marked_late_packet_is_answered_at_once_with_becn():
    b, rcv, rec = _responder(8)
    rcv.on_packet(0, _req(rcv, 0))
    marked = _req(rcv, 2)
    set_fecn(marked)
    ack = rcv.on_packet(0, marked)
    assert ack is not None and codec.parse(ack).becn == 1 and _aeth(ack) == (0, ACK_SYNDROME)


def fat_tree_faults(faults: LinkFaults | None, policy: str, count: int = 25, seed: int = 7,
                    arn: bool = False) -> Scenario:
    """The fault matrix's flows (test_faults.fault_matrix_scenario) on a fat tree: leaves
    L0 (A, B) and L1 (C, D), spines S0, S1, routed by ftree with adaptive routing (with
    notifications: *arn*), so the packets between the leaves take either spine."""
    hp = HCAParams(ack_timeout=200 * PS_PER_US)
    hcas = [HCASpec(n, i + 1, hp) for i, n in enumerate(("A", "B", "C", "D"))]
    lp = LinkParams(propagation=100 * 1000, fc_period=20 * PS_PER_US)
    links = [LinkSpec("A", "L0", 1, 1, params=lp), LinkSpec("B", "L0", 1, 2, params=lp),
             LinkSpec("C", "L1", 1, 1, params=lp), LinkSpec("D", "L1", 1, 2, params=lp)]
    links += [LinkSpec("L%d" % i, "S%d" % j, 3 + j, 1 + i, params=lp) for i in range(2) for j in range(2)]
    flows = [
        FlowSpec("send_AC", "A", "C", pattern="messages", count=count, message_size=5000),
        FlowSpec("write_BD", "B", "D", op="write", pattern="messages", count=count, message_size=7000, window=4),
        FlowSpec("read_CA", "C", "A", op="read", pattern="messages", count=count, message_size=6000),
        FlowSpec("send_DA", "D", "A", pattern="messages", count=count, message_size=1000, window=2),
        FlowSpec("send_BC", "B", "C", pattern="messages", count=count, message_size=9000),
        FlowSpec("ud_AD", "A", "D", transport="ud", pattern="messages", count=4 * count, message_size=1500,
                 rate=2e8),
    ]
    routing = RoutingSpec(engine="ftree", adaptive=True, adaptive_policy=policy, reorder_window=64, arn=arn)
    return Scenario("ar_faults", duration=20 * PS_PER_MS, seed=seed,
                    switches=[SwitchSpec(n) for n in ("L0", "L1", "S0", "S1")], hcas=hcas, links=links,
                    flows=flows, routing=routing, faults=FaultSpec(all=faults) if faults else None)


RC = ("send_AC", "write_BD", "read_CA", "send_DA", "send_BC")


def _total(fab, name):
    return sum(n.counters.get(name, 0) for n in fab.nodes.values())


@pytest.mark.parametrize("policy,arn", [("random", False), ("credits", False), ("credits", True)])
def test_adaptive_routing_alone_every_message_once_intact_no_nak(policy, arn):
    scn = fat_tree_faults(None, policy, count=20, arn=arn)
    fab, eng, check = run_with_faults(scn, 3 * PS_PER_MS)
    rec = check.export()
    assert verify(rec, ud_flows={"ud_AD"}) == []
    for flow in RC:
        assert len(rec["received"][flow]) == 20, flow
    assert len(rec["received"]["ud_AD"]) == 80                    # UD: nothing lost, nothing twice
    if policy == "random":                                        # half the packets take the other spine
        assert sum(fab.qps[f][1].out_of_order for f in RC) > 0
    assert _total(fab, "naks_sent") == 0 and _total(fab, "out_of_sequence") == 0
    assert_no_credit_leak(fab)
    if arn:                                                       # notifications were sent and heeded
        assert _total(fab, "arn_sent") > 0 and _total(fab, "arn_heeded") > 0


@pytest.mark.parametrize("seed,arn", [(7, False), (7, True)])
def test_adaptive_routing_with_the_fault_matrix_every_message_once_intact(seed, arn):
    """SEND and WRITE: every message once, intact, in order.  READ responses travel
    the other way and the requester takes them in order only (a hole is an implicit NAK,
    docs/adaptive.md): under random spraying and 5 % loss its retries may run out, as in
    test_faults.test_fault_matrix_more_seeds_never_wrong -- never a wrong message."""
    scn = fat_tree_faults(MATRIX, "random", count=25, seed=seed, arn=arn)
    fab, eng, check = run_with_faults(scn, 15 * PS_PER_MS)
    rec = check.export()
    for p in verify(rec, ud_flows={"ud_AD"}):
        assert p.startswith("read_CA:") and " messages delivered" in p and fab.qps["read_CA"][0].error, p
    for flow in RC:
        if flow != "read_CA":
            assert len(rec["received"][flow]) == 25, flow
    assert sum(fab.qps[f][1].out_of_order for f in RC) > 0
    assert _total(fab, "go_back_n") > 0 and _total(fab, "naks_sent") > 0     # losses NAKed and recovered
    assert_no_credit_leak(fab)
    if arn:                                                       # notifications, lost and duplicated too
        assert _total(fab, "arn_sent") > 0 and _total(fab, "arn_heeded") > 0
