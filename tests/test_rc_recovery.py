"""RC recovery (ibemu.fabric.qp; issue 8 item 4): PSN checks at the responder, go-back-N
at the requester on a NAK, a READ-response hole or the local ACK timeout, the retry
count and the QP error state.  Nodes are driven by hand as in test_hca_qp.py."""
from __future__ import annotations

from test_hca_qp import A_LID, B_LID, ack_frame, credit, data, pair, parsed, run, take, tx_time

from ibemu.fabric.params import FlowSpec, HCAParams
from ibemu.fabric.qp import ACK_SYNDROME, NAK_PSN_SEQ
from ibemu.fabric.recorder import Recorder
from ibemu.units import PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP
from ibemu.wire.linkpkt import LINK_LEN

TIMEOUT = 50 * PS_PER_US


def _req(rcv, psn, opcode=OP.RC_SEND_MIDDLE, ackreq=0, n=256, ext=None, slid=A_LID):
    return codec.build(dlid=B_LID, slid=slid, opcode=opcode, psn=psn, destqp=rcv.qpn,
                       ackreq=ackreq, payload=bytes(n), ext=ext)


def _aeth(frame):
    p = codec.parse(frame)
    assert p.opcode == OP.RC_ACKNOWLEDGE
    return p.psn, p.ext["AETH"]["syndrome"]


# ----------------------------------------------------------------- responder

def test_responder_naks_once_per_sequence_error():
    a, b, snd, rcv, rec, _ = pair(FlowSpec("f", "a", "b"))
    for psn in (0, 1):
        rcv.on_packet(0, _req(rcv, psn))
    # 2 is lost: 3, 4, 5 arrive; one NAK (expected PSN 2), then silence
    replies = [rcv.on_packet(0, _req(rcv, psn)) for psn in (3, 4, 5)]
    assert _aeth(replies[0]) == (2, NAK_PSN_SEQ)
    assert replies[1:] == [None, None]
    assert rcv.out_of_sequence == 3 and b.counters["naks_sent"] == 1
    # the retransmission of 2 ends the error; 3 is taken
    assert _aeth(rcv.on_packet(0, _req(rcv, 2))) == (2, ACK_SYNDROME)
    assert _aeth(rcv.on_packet(0, _req(rcv, 3))) == (3, ACK_SYNDROME)
    # a new sequence error is NAKed again
    assert _aeth(rcv.on_packet(0, _req(rcv, 6))) == (4, NAK_PSN_SEQ)
    assert b.counters["naks_sent"] == 2
    assert len(rec.rx) == 4 and rcv.epsn == 4                  # 0..3, each once


def test_responder_drops_requests_from_a_stranger_and_bad_opcodes():
    a, b, snd, rcv, rec, _ = pair(FlowSpec("f", "a", "b"))
    assert rcv.on_packet(0, _req(rcv, 0, slid=77)) is None         # not the connected peer
    assert rcv.on_packet(0, _req(rcv, 0, opcode=OP.RC_ACKNOWLEDGE, n=0,
                                 ext={"AETH": {"syndrome": 0x1F}})) is None
    assert b.counters == {"dropped_bad_source": 1, "dropped_bad_opcode": 1}
    assert rcv.epsn == 0 and rec.rx == []


def test_duplicate_read_request_is_executed_again_from_its_psn():
    flow = FlowSpec("f", "a", "b", op="read", pattern="messages", count=0)
    a, b, snd, rcv, rec, _ = pair(flow)
    req = _req(rcv, 0, opcode=OP.RC_RDMA_READ_REQUEST, n=0, ext={"RETH": {"dma_len": 5000}})
    rcv.on_packet(0, req)
    assert rcv.epsn == 3
    sent = [codec.parse(rcv.next_packet(0)) for _ in range(3)]
    assert [p.psn for p in sent] == [0, 1, 2] and not rcv.reads
    # the requester lost response 1 and asks again from PSN 1 for the rest
    again = _req(rcv, 1, opcode=OP.RC_RDMA_READ_REQUEST, n=0,
                 ext={"RETH": {"va": 2048, "dma_len": 5000 - 2048}})
    assert rcv.on_packet(0, again) is None
    assert rcv.epsn == 3 and rcv.msn == 1 and b.counters["duplicates"] == 1
    resent = [codec.parse(rcv.next_packet(0)) for _ in range(2)]
    assert [(p.psn, p.opcode, len(p.payload)) for p in resent] == \
        [(1, OP.RC_RDMA_READ_RESPONSE_MIDDLE, 2048), (2, OP.RC_RDMA_READ_RESPONSE_LAST, 904)]
    assert [p.payload for p in resent] == [p.payload for p in sent[1:]]
    assert b.counters["retransmitted_packets"] == 2


# ----------------------------------------------------------------- requester

def _sender(window=None, count=4, size=2048, op="send", timeout=TIMEOUT, retry_cnt=7):
    flow = FlowSpec("f", "a", "b", pattern="messages", count=count, message_size=size,
                    window=window, op=op)
    a, b, snd, rcv, rec, fab = pair(flow, a_params=HCAParams(ack_timeout=timeout, retry_cnt=retry_cnt))
    credit(a, 0)
    return a, snd, rec


def test_nak_acknowledges_before_and_resends_from_its_psn():
    a, snd, _ = _sender(count=4)
    run(a, 20 * PS_PER_US)
    orig = {p.psn: p for p in parsed(data(take(a)))}
    assert sorted(orig) == [0, 1, 2, 3]
    a.receive(1, ack_frame(snd, 2, syndrome=NAK_PSN_SEQ), False, 30 * PS_PER_US)
    run(a, 40 * PS_PER_US)
    again = parsed(data(take(a)))
    assert [p.psn for p in again] == [2, 3]
    assert snd.una == 2 and snd.outs == 2                       # 0 and 1 acknowledged by the NAK
    assert [p.payload for p in again] == [orig[2].payload, orig[3].payload]
    assert snd.retransmitted == 2 and a.counters["go_back_n"] == 1
    assert snd.retries_left == 6
    a.receive(1, ack_frame(snd, 3), False, 50 * PS_PER_US)      # progress restores the retries
    run(a, 60 * PS_PER_US)
    assert snd.outs == 0 and snd.retries_left == 7


def test_stale_nak_is_ignored():
    a, snd, _ = _sender(count=2)
    run(a, 20 * PS_PER_US)
    take(a)
    a.receive(1, ack_frame(snd, 1), False, 30 * PS_PER_US)
    a.receive(1, ack_frame(snd, 0, syndrome=NAK_PSN_SEQ), False, 31 * PS_PER_US)   # behind una
    run(a, 40 * PS_PER_US)
    assert data(take(a)) == [] and a.counters["naks_ignored"] == 1


def test_timeout_resends_everything_unacknowledged():
    a, snd, _ = _sender(count=3)
    run(a, 20 * PS_PER_US)
    first = data(take(a))
    t_last = first[-1][1]
    ack = ack_frame(snd, 0)
    a.receive(1, ack, False, 20 * PS_PER_US)
    t_ack = 20 * PS_PER_US + len(ack) * 1000                    # its tail: then it is taken
    run(a, t_ack + TIMEOUT - 1)
    assert data(take(a)) == []                                  # not yet
    run(a, t_ack + TIMEOUT + 10 * PS_PER_US)
    again = data(take(a))
    assert [p.psn for p in parsed(again)] == [1, 2]
    assert again[0][1] == t_ack + TIMEOUT                        # timer restarted by the ACK
    assert t_last < 20 * PS_PER_US
    assert snd.timeouts == 1 and a.counters["local_ack_timeouts"] == 1


def test_retry_count_exceeded_puts_the_qp_in_error():
    events = []

    class Rec(Recorder):
        def event(self, t, source, text):
            events.append((t, source, text))

    a, snd, _ = _sender(count=1, retry_cnt=2)
    a.recorder = Rec()
    run(a, 20 * PS_PER_US)
    assert len(data(take(a))) == 1
    run(a, 20 * PS_PER_US + 10 * TIMEOUT)
    resent = data(take(a))
    # two retries, each a timeout after the previous send; the third timeout is fatal
    assert [t for _, t in resent] == [TIMEOUT, 2 * TIMEOUT]
    assert snd.error and a.counters["qp_retry_exceeded"] == 1
    assert len(events) == 1 and events[0][0] == 3 * TIMEOUT and "retry count exceeded" in events[0][2]
    a.receive(1, ack_frame(snd, 0), False, 20 * TIMEOUT)         # too late: stays in error
    run(a, 30 * TIMEOUT)
    assert data(take(a)) == [] and snd.ready(30 * TIMEOUT) == (False, None)


def test_ack_during_go_back_n_prunes_the_resends():
    a, snd, _ = _sender(count=6, window=6)
    run(a, 20 * PS_PER_US)
    take(a)
    now = 30 * PS_PER_US
    nak = ack_frame(snd, 0, syndrome=NAK_PSN_SEQ)
    a.receive(1, nak, False, now)
    # the resend of 0 starts when the NAK is in and the flow-control packet returning
    # its credit has gone (6 bytes); an ACK through 3 is in while 0 is going out
    resend = now + tx_time(len(nak)) + tx_time(LINK_LEN)
    ack = ack_frame(snd, 3)
    a.receive(1, ack, False, resend + 1 - tx_time(len(ack)))
    run(a, now + 40 * PS_PER_US)
    psns = [p.psn for p in parsed(data(take(a)))]
    assert psns == [0, 4, 5]


def test_read_response_hole_triggers_one_go_back():
    flow = FlowSpec("f", "a", "b", op="read", pattern="messages", count=1, message_size=3 * 2048)
    a, b, snd, rcv, rec, _ = pair(flow, a_params=HCAParams(ack_timeout=TIMEOUT))
    credit(a, 0)
    run(a, 10 * PS_PER_US)
    (req,) = parsed(data(take(a)))
    resp = lambda psn, op: codec.build(dlid=A_LID, slid=B_LID, opcode=op, psn=psn, destqp=snd.qpn,  # noqa: E731
                                       payload=bytes(2048), ext={"AETH": {"syndrome": ACK_SYNDROME}})
    a.receive(1, resp(0, OP.RC_RDMA_READ_RESPONSE_FIRST), False, 20 * PS_PER_US)
    # 1 is lost; 2 arrives: one re-request, for PSN 1 on, with the rest of the length
    a.receive(1, resp(2, OP.RC_RDMA_READ_RESPONSE_LAST), False, 25 * PS_PER_US)
    a.receive(1, resp(2, OP.RC_RDMA_READ_RESPONSE_LAST), False, 26 * PS_PER_US)
    run(a, 40 * PS_PER_US)
    raw = data(take(a))
    assert len(raw) == 1 and a.counters["go_back_n"] == 1
    assert codec.icrc_ok(raw[0][0]) and codec.vcrc_ok(raw[0][0])
    p = codec.parse(raw[0][0])
    assert p.opcode == OP.RC_RDMA_READ_REQUEST and p.psn == 1
    assert p.ext["RETH"]["dma_len"] == 2048 * 2 and p.ext["RETH"]["va"] == 2048
    assert [nb for _, _, nb, _ in rec.rx] == [2048]             # only the in-order response
    assert snd.reads_out == 1 and snd.outs == 2 and req.psn == 0


def test_set_ackreq_keeps_crcs_valid():
    from ibemu.fabric.qp import set_ackreq
    f = codec.build(dlid=1, slid=2, opcode=OP.RC_SEND_MIDDLE, psn=9, payload=b"x" * 100)
    set_ackreq(f)
    p = codec.parse(f)
    assert p.ackreq == 1 and p.psn == 9 and codec.icrc_ok(f) and codec.vcrc_ok(f)


def test_second_nak_for_the_same_psn_during_a_retry_is_ignored():
    """Two NAKs for PSN 1 (the responder NAKed two sequence errors before the resend
    reached it): one go-back, one retry used; the timeout covers a failed resend."""
    a, snd, _ = _sender(count=4)
    run(a, 20 * PS_PER_US)
    take(a)
    a.receive(1, ack_frame(snd, 1, syndrome=NAK_PSN_SEQ), False, 30 * PS_PER_US)
    a.receive(1, ack_frame(snd, 1, syndrome=NAK_PSN_SEQ), False, 31 * PS_PER_US)
    run(a, 45 * PS_PER_US)
    assert [p.psn for p in parsed(data(take(a)))] == [1, 2, 3]
    assert a.counters["go_back_n"] == 1 and a.counters["naks_during_retry"] == 1
    assert snd.retries_left == 6
    # progress (ACK of 1), then a NAK for 2: a new error, a new go-back
    a.receive(1, ack_frame(snd, 1), False, 50 * PS_PER_US)
    a.receive(1, ack_frame(snd, 2, syndrome=NAK_PSN_SEQ), False, 51 * PS_PER_US)
    run(a, 70 * PS_PER_US)
    assert [p.psn for p in parsed(data(take(a)))] == [2, 3] and a.counters["go_back_n"] == 2


def test_recovery_across_the_psn_wrap():
    """PSNs wrap at 2^24: go-back-N, duplicate detection and READ re-execution keep
    working across it (the fault matrix with every QP starting 40 PSNs before the wrap)."""
    from test_faults import MATRIX, fault_matrix_scenario

    from ibemu.build import build_fabric
    from ibemu.fabric.faults import engine_faults
    from ibemu.fabric.integrity import attach, verify
    from ibemu.sim.engine import VirtualEngine
    from ibemu.testing import assert_no_credit_leak, settle
    from ibemu.units import PS_PER_MS
    scn = fault_matrix_scenario(MATRIX, count=25, seed=11)
    fab = build_fabric(scn)
    start = (1 << 24) - 40
    for name, (snd, rcv) in fab.qps.items():
        if not name.startswith("ud"):
            snd.psn = snd.una = start
            rcv.epsn = rcv._resp_hi = start
    check = attach(fab)
    eng = VirtualEngine(fab.nodes.values(), fab.wiring, faults=engine_faults(fab.injectors))
    eng.start(0)
    eng.run(15 * PS_PER_MS)
    settle(eng, fab)
    assert verify(check.export(), ud_flows={"ud_AD"}) == []
    snd = fab.qps["read_CA"][0]
    assert snd.psn < start and snd.una == snd.psn                  # wrapped, all acknowledged
    assert sum(n.counters.get("go_back_n", 0) for n in fab.nodes.values()) > 0
    assert_no_credit_leak(fab)


def test_send_queue_depth_bounds_unacknowledged_packets():
    """A greedy RC flow without a window stops at max_outstanding unacknowledged packets
    (and asks for an ACK there), instead of keeping copies without bound."""
    flow = FlowSpec("f", "a", "b", message_size=4096)           # two packets a message
    a, b, snd, rcv, _, _ = pair(flow, a_params=HCAParams(max_outstanding=7, ack_timeout=TIMEOUT))
    credit(a, 0)
    run(a, 40 * PS_PER_US)
    sent = [codec.parse(f) for f, _ in data(take(a))]
    assert len(sent) == 7 and snd.outs == 7 and len(snd._unacked) == 7
    assert sent[-1].ackreq == 1                                 # the full queue asks for an ACK
    assert sent[2].ackreq == 0                                  # a FIRST packet, queue not full
    a.receive(1, ack_frame(snd, 3), False, 41 * PS_PER_US)     # four acknowledged: four more go
    run(a, 80 * PS_PER_US)
    assert len(data(take(a))) == 4 and snd.outs == 7
