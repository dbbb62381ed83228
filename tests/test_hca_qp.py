"""HCA and queue pairs (ibemu.fabric.hca, ibemu.fabric.qp) and the traffic generators
(ibemu.fabric.traffic).

Two HCAs are wired by ibemu.build.build_fabric from a tiny Scenario and then driven by
hand: flow-control and ACK frames are fed with ``receive``, timers run with ``wake``,
transmissions are read from ``outbox``.  One end-to-end check uses the VirtualEngine.
"""
from __future__ import annotations

import statistics

import pytest

from ibemu.build import build_fabric
from ibemu.fabric.credits import MAX_CAPACITY_BLOCKS
from ibemu.fabric.params import FlowSpec, HCAParams
from ibemu.fabric.qp import ACK_SYNDROME, NAK_PSN_SEQ, payload_len, wire_size
from ibemu.fabric.recorder import Recorder
from ibemu.fabric.traffic import INF, Greedy, Messages, OnOff, make_generator
from ibemu.scenario.model import HCASpec, LinkSpec, Scenario
from ibemu.sim.engine import VirtualEngine
from ibemu.units import PS_PER_MS, PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP
from ibemu.wire.linkpkt import LINK_LEN, OP_INIT, build_link

A_LID, B_LID = 1, 2


class Rec(Recorder):
    def __init__(self):
        self.tx, self.rx = [], []

    def flow_tx(self, flow, t, nbytes):
        self.tx.append((flow, t, nbytes))

    def flow_rx(self, flow, t, nbytes, wire, message_done):
        self.rx.append((flow, t, nbytes, message_done))


def pair(flow, a_params=None, b_params=None, seed=1):
    scn = Scenario("t", duration=PS_PER_MS, seed=seed,
                   hcas=[HCASpec("a", A_LID, a_params or HCAParams()),
                         HCASpec("b", B_LID, b_params or HCAParams())],
                   links=[LinkSpec("a", "b")], flows=[flow])
    rec = Rec()
    fab = build_fabric(scn, rec)
    snd, rcv = fab.qps[flow.name]
    return fab.nodes["a"], fab.nodes["b"], snd, rcv, rec, fab


def run(node, until):
    while True:
        d = node.next_deadline()
        if d is None or d > until:
            return
        node.wake(d)


def take(node):
    out = list(node.outbox)
    node.outbox.clear()
    return out


def data(out):
    return [(f, t) for _, f, link, t in out if not link]


def credit(node, now, fccl=2000, vl=0):
    """A flow-control packet granting *fccl*: the tests play a peer whose buffer takes
    any grant up to the largest (issue 14's sanity check: not the built peer's buffer)."""
    node.ports[1].tx[vl].limit = MAX_CAPACITY_BLOCKS
    node.receive(1, build_link(OP_INIT, 0, vl, fccl), True, now)


def tx_time(nbytes):
    return nbytes * 1000                # 1 GB/s (4X SDR default): 1000 ps per byte


def ack_frame(snd, psn, syndrome=ACK_SYNDROME, msn=0):
    return codec.build(dlid=A_LID, slid=B_LID, opcode=OP.RC_ACKNOWLEDGE, psn=psn,
                       destqp=snd.qpn, ext={"AETH": {"syndrome": syndrome, "msn": msn}})


def parsed(frames):
    return [codec.parse(f) for f, _ in frames]


SEND_PKT = wire_size(2048)              # 2074 bytes
T = tx_time(SEND_PKT)


# ----------------------------------------------------------------- RC requester

def test_no_credit_no_send_then_send_on_fcp():
    a, b, snd, rcv, rec, _ = pair(FlowSpec("f", "a", "b", window=2))
    a._try_send(0)
    assert take(a) == []
    credit(a, 5 * PS_PER_US, fccl=32)               # one block short of a packet
    assert data(take(a)) == []
    credit(a, 6 * PS_PER_US, fccl=33)
    out = data(take(a))
    assert [t for _, t in out] == [6 * PS_PER_US]
    assert a.port.tx[0].fctbs == 33


def test_rc_psns_window_and_ackreq():
    flow = FlowSpec("f", "a", "b", pattern="messages", count=1, message_size=10 * 2048, window=3)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 100 * PS_PER_US)
    out = data(take(a))
    pk = parsed(out)
    assert [p.psn for p in pk] == [0, 1, 2]                     # then the window is full
    assert [t for _, t in out] == [0, T, 2 * T]
    assert [p.opcode for p in pk] == [OP.RC_SEND_FIRST, OP.RC_SEND_MIDDLE, OP.RC_SEND_MIDDLE]
    assert [p.ackreq for p in pk] == [0, 0, 1]                   # AckReq fills the window
    assert all(p.destqp == rcv.qpn and p.dlid == B_LID and p.slid == A_LID for p in pk)
    assert snd.outs == 3 and not snd.window_open()
    # nothing until an ACK but the local ACK timeout (its callback re-arms at the deadline)
    assert a.next_deadline() == snd.timeout and snd._deadline == 2 * T + snd.timeout
    # a cumulative ACK for PSN 1 opens two slots
    t1 = 100 * PS_PER_US
    ack = ack_frame(snd, 1)
    a.receive(1, ack, False, t1)
    run(a, t1 + 100 * PS_PER_US)
    out = data(take(a))
    pk = parsed(out)
    start = t1 + tx_time(len(ack)) + tx_time(LINK_LEN)     # the ACK's tail, then the 6-byte FCP returning its credit
    assert [p.psn for p in pk] == [3, 4]
    assert [t for _, t in out] == [start, start + T]
    assert [p.ackreq for p in pk] == [0, 1]
    assert snd.outs == 3 and snd.una == 2
    # ACK for PSN 4 acknowledges 2..4: three more
    t2 = 300 * PS_PER_US
    a.receive(1, ack_frame(snd, 4), False, t2)
    run(a, t2 + 100 * PS_PER_US)
    pk = parsed(data(take(a)))
    assert [p.psn for p in pk] == [5, 6, 7] and [p.ackreq for p in pk] == [0, 0, 1]
    # the last two packets; AckReq on the message's last even with the window open
    t3 = 500 * PS_PER_US
    a.receive(1, ack_frame(snd, 7), False, t3)
    run(a, t3 + 100 * PS_PER_US)
    pk = parsed(data(take(a)))
    assert [p.psn for p in pk] == [8, 9]
    assert [p.opcode for p in pk] == [OP.RC_SEND_MIDDLE, OP.RC_SEND_LAST]
    assert [p.ackreq for p in pk] == [0, 1]
    assert snd.outs == 2
    # the message is done: nothing else is sent even when everything is acknowledged
    t4 = 700 * PS_PER_US
    a.receive(1, ack_frame(snd, 9), False, t4)
    run(a, t4 + 100 * PS_PER_US)
    assert data(take(a)) == []
    assert snd.outs == 0 and snd.una == 10


def test_stale_and_future_acks_do_not_corrupt_window():
    flow = FlowSpec("f", "a", "b", window=2)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 50 * PS_PER_US)
    assert [p.psn for p in parsed(data(take(a)))] == [0, 1]
    a.receive(1, ack_frame(snd, 0), False, 60 * PS_PER_US)
    run(a, 70 * PS_PER_US)
    assert [p.psn for p in parsed(data(take(a)))] == [2]
    a.receive(1, ack_frame(snd, 0), False, 80 * PS_PER_US)     # duplicate ACK
    a.receive(1, ack_frame(snd, 50), False, 81 * PS_PER_US)    # beyond what was sent
    run(a, 90 * PS_PER_US)
    assert data(take(a)) == []
    assert snd.outs == 2 and snd.una == 1


def test_nak_counted_window_unchanged_and_goes_back_n():
    """A PSN sequence error NAK: counted, the window unchanged, and every request from
    the NAKed PSN resent (go-back-N; tests/test_rc_recovery.py has the rest)."""
    flow = FlowSpec("f", "a", "b", window=2)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 50 * PS_PER_US)
    first = parsed(data(take(a)))
    a.receive(1, ack_frame(snd, 0, syndrome=NAK_PSN_SEQ), False, 60 * PS_PER_US)
    run(a, 70 * PS_PER_US)
    assert snd.naks == 1 and a.counters.get("naks_received") == 1
    again = parsed(data(take(a)))
    assert snd.outs == 2 and [p.psn for p in again] == [0, 1]
    assert [p.payload for p in again] == [p.payload for p in first]
    assert again[-1].ackreq == 1


@pytest.mark.parametrize("size, payloads, pads", [
    (5000, [2048, 2048, 904], [0, 0, 0]),
    (5001, [2048, 2048, 905], [0, 0, 3]),
    (2048, [2048], [0]),
    (1, [1], [3]),
])
def test_send_segmentation(size, payloads, pads):
    flow = FlowSpec("f", "a", "b", pattern="messages", count=1, message_size=size)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 100 * PS_PER_US)
    out = data(take(a))
    pk = parsed(out)
    n = len(payloads)
    expect = ([OP.RC_SEND_ONLY] if n == 1 else
              [OP.RC_SEND_FIRST] + [OP.RC_SEND_MIDDLE] * (n - 2) + [OP.RC_SEND_LAST])
    assert [p.opcode for p in pk] == expect
    assert [len(p.payload) for p in pk] == payloads
    assert [payload_len(f) for f, _ in out] == payloads
    assert [p.padcnt for p in pk] == pads
    assert [p.psn for p in pk] == list(range(n))
    assert [p.ackreq for p in pk] == [0] * (n - 1) + [1]       # no window: only the last
    assert all(p.ext == {} for p in pk)
    assert all(codec.vcrc_ok(f) and codec.icrc_ok(f) for f, _ in out)
    # back to back on the link
    times = [t for _, t in out]
    for (f, t), t_next in zip(out, times[1:]):
        assert t_next == t + tx_time(len(f))
    assert sum(nb for _, _, nb in rec.tx) == size


def test_rdma_write_has_reth_on_first_packet_only():
    flow = FlowSpec("f", "a", "b", op="write", pattern="messages", count=2, message_size=5000)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 100 * PS_PER_US)
    out = data(take(a))
    pk = parsed(out)
    assert [p.opcode for p in pk] == [OP.RC_RDMA_WRITE_FIRST, OP.RC_RDMA_WRITE_MIDDLE,
                                      OP.RC_RDMA_WRITE_LAST] * 2
    assert [list(p.ext) for p in pk] == [["RETH"], [], []] * 2
    assert pk[0].ext["RETH"]["dma_len"] == 5000
    assert [len(p.payload) for p in pk] == [2048, 2048, 904] * 2
    assert [payload_len(f) for f, _ in out] == [2048, 2048, 904] * 2
    assert [p.psn for p in pk] == list(range(6))
    # the responder takes them in order and completes two messages
    for f, _ in out:
        rcv.on_packet(0, f)
    assert rcv.msn == 2 and rcv.epsn == 6
    assert [(nb, done) for *_, nb, done in rec.rx] == [(2048, False), (2048, False), (904, True)] * 2


def test_rdma_write_only():
    flow = FlowSpec("f", "a", "b", op="write", pattern="messages", count=1, message_size=1000)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 100 * PS_PER_US)
    (p,) = parsed(data(take(a)))
    assert p.opcode == OP.RC_RDMA_WRITE_ONLY and p.ext["RETH"]["dma_len"] == 1000
    assert p.ackreq == 1


def test_rdma_read_request_and_responses():
    flow = FlowSpec("f", "a", "b", op="read", pattern="messages", count=1, message_size=5000)
    a, b, snd, rcv, rec, _ = pair(flow)
    assert rcv in b.senders                                     # the responder sends data
    credit(a, 0)
    credit(b, 0)
    run(a, 50 * PS_PER_US)
    out = data(take(a))
    assert len(out) == 1
    req, t_req = out[0]
    p = codec.parse(req)
    assert p.opcode == OP.RC_RDMA_READ_REQUEST
    assert p.ext["RETH"]["dma_len"] == 5000 and p.payload == b""
    assert p.psn == 0
    assert snd.psn == 3 and snd.outs == 3 and snd.reads_out == 1   # one PSN per response
    assert rec.tx == []                                         # a request carries no data
    # the responder
    take(b)
    b.receive(1, req, False, t_req)
    run(b, t_req + 100 * PS_PER_US)
    resp = data(take(b))
    rp = parsed(resp)
    assert [q.opcode for q in rp] == [OP.RC_RDMA_READ_RESPONSE_FIRST,
                                      OP.RC_RDMA_READ_RESPONSE_MIDDLE,
                                      OP.RC_RDMA_READ_RESPONSE_LAST]
    assert [q.psn for q in rp] == [0, 1, 2]
    assert [list(q.ext) for q in rp] == [["AETH"], [], ["AETH"]]
    assert [len(q.payload) for q in rp] == [2048, 2048, 904]
    assert all(q.destqp == snd.qpn and q.dlid == A_LID for q in rp)
    assert rcv.epsn == 3 and rcv.msn == 1
    # no ACK for the request itself: only the three responses left b
    assert len(resp) == 3
    # the requester counts the data as it arrives
    for f, t in resp:
        a.receive(1, f, False, t)
    run(a, resp[-1][1] + 100 * PS_PER_US)
    assert [(nb, done) for _, _, nb, done in rec.rx] == [(2048, False), (2048, False), (904, True)]
    assert snd.outs == 0 and snd.reads_out == 0 and snd.una == 3


def test_read_response_out_of_order_ignored():
    flow = FlowSpec("f", "a", "b", op="read", pattern="messages", count=1, message_size=5000)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 50 * PS_PER_US)
    take(a)
    f = codec.build(dlid=A_LID, slid=B_LID, opcode=OP.RC_RDMA_READ_RESPONSE_MIDDLE, psn=1,
                    destqp=snd.qpn, payload=bytes(2048))
    assert snd.on_packet(0, f) is None
    assert a.counters.get("read_response_out_of_order") == 1
    assert snd.outs == 3 and rec.rx == []


# ----------------------------------------------------------------- RC responder

def _req(rcv, psn, opcode=OP.RC_SEND_MIDDLE, ackreq=0, n=256):
    return codec.build(dlid=B_LID, slid=A_LID, opcode=opcode, psn=psn, destqp=rcv.qpn,
                       ackreq=ackreq, payload=bytes(n))


def _aeth(frame):
    p = codec.parse(frame)
    assert p.opcode == OP.RC_ACKNOWLEDGE
    return p.psn, p.ext["AETH"]["syndrome"], p.ext["AETH"]["msn"], p


def test_responder_acks_every_packet():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, rec, _ = pair(flow)
    for psn in range(5):
        ack = rcv.on_packet(psn, _req(rcv, psn))
        assert ack is not None
        apsn, syn, msn, p = _aeth(ack)
        assert (apsn, syn, msn) == (psn, ACK_SYNDROME, 0)
        assert p.destqp == snd.qpn and p.dlid == A_LID and p.slid == B_LID
        assert codec.vcrc_ok(ack) and codec.icrc_ok(ack)
    assert rcv.epsn == 5


def test_responder_ack_coalescing():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, rec, _ = pair(flow, b_params=HCAParams(ack_every=3))
    acked = []
    for psn in range(10):
        ackreq = 1 if psn == 4 else 0
        ack = rcv.on_packet(0, _req(rcv, psn, ackreq=ackreq))
        if ack is not None:
            acked.append(_aeth(ack)[0])
    # every third packet (2), AckReq (4) restarts the count, then 7
    assert acked == [2, 4, 7]
    assert rcv.since_ack == 2
    ack = rcv.on_packet(0, _req(rcv, 10, opcode=OP.RC_SEND_LAST, ackreq=1))
    apsn, syn, msn, _ = _aeth(ack)
    assert (apsn, syn, msn) == (10, ACK_SYNDROME, 1)            # MSN counts messages


def test_responder_duplicate_reacked_and_dropped():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, rec, _ = pair(flow)
    for psn in range(3):
        rcv.on_packet(0, _req(rcv, psn))
    n_rx = len(rec.rx)
    ack = rcv.on_packet(0, _req(rcv, 1))
    apsn, syn, _, _ = _aeth(ack)
    assert (apsn, syn) == (2, ACK_SYNDROME)                     # the last in-order PSN
    assert rcv.duplicates == 1 and b.counters.get("duplicates") == 1
    assert rcv.epsn == 3 and len(rec.rx) == n_rx                # dropped
    ack = rcv.on_packet(0, _req(rcv, 3))
    assert _aeth(ack)[0] == 3 and len(rec.rx) == n_rx + 1


def test_responder_out_of_sequence_naked():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, rec, _ = pair(flow)
    for psn in range(3):
        rcv.on_packet(0, _req(rcv, psn))
    n_rx = len(rec.rx)
    nak = rcv.on_packet(0, _req(rcv, 5))
    apsn, syn, _, _ = _aeth(nak)
    assert syn == NAK_PSN_SEQ == 0x60
    assert (syn >> 5) & 3 == OP.AETH_NAK and syn & 0x1F == 0    # NAK, PSN sequence error
    assert apsn == 3                                            # the expected PSN
    assert rcv.out_of_sequence == 1 and rcv.epsn == 3 and len(rec.rx) == n_rx
    # the requester sees it as a NAK
    assert snd.on_packet(0, nak) is None and snd.naks == 1


def test_responder_psn_wraps():
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, rec, _ = pair(flow)
    rcv.epsn = (1 << 24) - 1
    assert _aeth(rcv.on_packet(0, _req(rcv, (1 << 24) - 1)))[0] == (1 << 24) - 1
    assert rcv.epsn == 0
    assert _aeth(rcv.on_packet(0, _req(rcv, 0)))[1] == ACK_SYNDROME
    dup = rcv.on_packet(0, _req(rcv, (1 << 24) - 1))
    assert rcv.duplicates == 1 and _aeth(dup)[0] == 0


def test_hca_returns_ack_through_its_port():
    """A data packet at b: buffer held until its tail, then an FCP and the ACK go out."""
    flow = FlowSpec("f", "a", "b")
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(b, 0)
    take(b)
    f = _req(rcv, 0, opcode=OP.RC_SEND_ONLY, n=2048)
    t0 = 10 * PS_PER_US
    b.receive(1, f, False, t0)
    assert b.port.rx[0].used == 33
    run(b, t0 + T - 1)
    assert take(b) == []
    run(b, t0 + T + tx_time(LINK_LEN))
    out = take(b)
    assert b.port.rx[0].used == 0
    links = [(fr, t) for _, fr, link, t in out if link]
    assert len(links) == 1 and links[0][1] == t0 + T
    acks = data(out)
    assert len(acks) == 1 and acks[0][1] == t0 + T + tx_time(LINK_LEN)     # behind the 6-byte FCP
    assert _aeth(acks[0][0])[0] == 0
    assert rec.rx == [("f", t0 + T, 2048, True)]


# ----------------------------------------------------------------- rate limits

@pytest.mark.parametrize("ipd", [0, 1, 3])
def test_static_rate_limit_ipd(ipd):
    flow = FlowSpec("f", "a", "b", ipd=ipd)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    horizon = 20 * (ipd + 1) * T
    run(a, horizon)
    times = [t for _, t in data(take(a))]
    assert len(times) == 21
    for t0, t1 in zip(times, times[1:]):
        assert t1 >= t0 + (ipd + 1) * T
        assert t1 == t0 + (ipd + 1) * T                         # and no later
    assert times[0] == 0


def test_static_rate_limit_bytes_per_second():
    flow = FlowSpec("f", "a", "b", rate=250e6)                  # a quarter of 1 GB/s
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 40 * T)
    times = [t for _, t in data(take(a))]
    assert len(times) == 11
    assert all(t1 - t0 == 4 * T for t0, t1 in zip(times, times[1:]))


def test_ipd_with_window_waits_for_both():
    flow = FlowSpec("f", "a", "b", ipd=1, window=1)
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    run(a, 10 * T)
    assert [t for _, t in data(take(a))] == [0]
    a.receive(1, ack_frame(snd, 0), False, T)                   # ACK early: IPD still holds
    run(a, 10 * T)
    assert [t for _, t in data(take(a))] == [2 * T]


# ----------------------------------------------------------------- UD

def test_ud_send_has_deth_and_no_ack():
    flow = FlowSpec("u", "a", "b", transport="ud", pattern="messages", count=3, message_size=1024)
    a, b, snd, rcv, rec, _ = pair(flow)
    assert a.qps[snd.qpn] is snd                                # only CNPs come back
    credit(a, 0)
    credit(b, 0)
    take(b)
    run(a, 100 * PS_PER_US)
    out = data(take(a))
    pk = parsed(out)
    assert [p.opcode for p in pk] == [OP.UD_SEND_ONLY] * 3
    assert [p.psn for p in pk] == [0, 1, 2]
    for p in pk:
        assert p.ext["DETH"] == {"q_key": 0x11111111, "src_qp": snd.qpn}
        assert p.destqp == rcv.qpn and len(p.payload) == 1024 and p.ackreq == 0
    for f, t in out:
        b.receive(1, f, False, t)
    run(b, 200 * PS_PER_US)
    assert data(take(b)) == []                                  # no ACK
    assert [(nb, done) for _, _, nb, done in rec.rx] == [(1024, True)] * 3


def test_ud_greedy_not_windowed():
    flow = FlowSpec("u", "a", "b", transport="ud", window=1)    # window ignored for UD
    a, b, snd, rcv, rec, _ = pair(flow)
    credit(a, 0)
    t_ud = tx_time(wire_size(2048, 8))                          # DETH: 2082 bytes
    run(a, 10 * t_ud)
    assert [t for _, t in data(take(a))] == [k * t_ud for k in range(11)]


# ----------------------------------------------------------------- end to end

def test_rc_pair_end_to_end_with_engine():
    flow = FlowSpec("f", "a", "b", pattern="messages", count=5, message_size=5000, window=2)
    a, b, snd, rcv, rec, fab = pair(flow)
    eng = VirtualEngine(fab.nodes.values(), fab.wiring)
    eng.start(0)
    eng.run(1 * PS_PER_MS)
    assert sum(nb for _, _, nb, _ in rec.rx) == 25000
    assert sum(1 for *_, done in rec.rx if done) == 5
    assert snd.psn == 15 and rcv.epsn == 15 and snd.outs == 0
    assert rcv.duplicates == 0 and rcv.out_of_sequence == 0 and snd.naks == 0
    assert a.counters.get("ExcessiveBufferOverrunErrors") is None
    assert b.counters.get("ExcessiveBufferOverrunErrors") is None


# ----------------------------------------------------------------- generators

def test_greedy_generator():
    g = Greedy(100, 500)
    assert g.next_message(0) == (False, 100)
    assert g.next_message(100) == (True, None)
    assert g.next_message(499) == (True, None)
    assert g.next_message(500) == (False, None)
    assert Greedy(0, None).stop == INF


def test_messages_generator():
    g = Messages(10, None, 3)
    assert g.next_message(0) == (False, 10)
    for _ in range(3):
        assert g.next_message(20) == (True, None)
        g.taken()
    assert g.next_message(30) == (False, None)
    g = Messages(0, 50, 5)
    assert g.next_message(50) == (False, None)


def test_make_generator():
    assert isinstance(make_generator(FlowSpec("x", "a", "b"), 1), Greedy)
    g = make_generator(FlowSpec("x", "a", "b", pattern="messages", count=4), 1)
    assert isinstance(g, Messages) and g.remaining == 4
    g = make_generator(FlowSpec("x", "a", "b", pattern="onoff", mean_on=10, mean_off=20), 1)
    assert isinstance(g, OnOff)
    with pytest.raises(ValueError):
        make_generator(FlowSpec("x", "a", "b", pattern="poisson"), 1)


def _cycles(g, n):
    """Walk *n* ON/OFF cycles, checking the answers inside each; return (ons, offs)."""
    ons, offs = [], []
    cycle_start = g.start
    for _ in range(n):
        on_until, off_until = g.on_until, g.off_until
        assert cycle_start < on_until < off_until
        assert g.next_message(cycle_start) == (True, None)
        assert g.next_message(on_until - 1) == (True, None)
        assert g.next_message(on_until) == (False, off_until)
        assert g.next_message(off_until - 1) == (False, off_until)
        ons.append(on_until - cycle_start)
        offs.append(off_until - on_until)
        cycle_start = off_until
        assert g.next_message(cycle_start) == (True, None)     # next cycle
    return ons, offs


def test_onoff_deterministic_for_a_seed():
    mk = lambda seed, name: OnOff(0, None, 100 * PS_PER_US, 300 * PS_PER_US, seed, name)
    a = _cycles(mk(7, "f1"), 50)
    b = _cycles(mk(7, "f1"), 50)
    assert a == b
    assert _cycles(mk(8, "f1"), 50) != a
    assert _cycles(mk(7, "f2"), 50) != a                        # flows draw independently


def test_onoff_exponential_means():
    mean_on, mean_off = 100 * PS_PER_US, 300 * PS_PER_US
    g = OnOff(5 * PS_PER_US, None, mean_on, mean_off, 3, "flow")
    ons, offs = _cycles(g, 4000)
    assert statistics.fmean(ons) == pytest.approx(mean_on, rel=0.08)
    assert statistics.fmean(offs) == pytest.approx(mean_off, rel=0.08)
    # exponential: standard deviation close to the mean, median close to mean * ln 2
    assert statistics.pstdev(ons) == pytest.approx(mean_on, rel=0.12)
    assert statistics.median(offs) == pytest.approx(mean_off * 0.6931, rel=0.12)


def test_onoff_skips_whole_cycles_and_respects_stop():
    g = OnOff(0, 10 * PS_PER_MS, 100 * PS_PER_US, 100 * PS_PER_US, 1, "f")
    ok, t = g.next_message(5 * PS_PER_MS)                       # jump many cycles at once
    assert g.off_until > 5 * PS_PER_MS
    assert (ok, t) in ((True, None), (False, g.off_until))
    assert g.next_message(10 * PS_PER_MS) == (False, None)


def test_onoff_drives_an_hca_sender():
    """ON: back-to-back packets; OFF: silence until the next ON period."""
    flow = FlowSpec("f", "a", "b", pattern="onoff", mean_on=20 * PS_PER_US, mean_off=50 * PS_PER_US)
    a, b, snd, rcv, rec, _ = pair(flow, seed=5)
    g = snd.gen
    on1, off1 = g.on_until, g.off_until
    credit(a, 0)
    run(a, off1 + 1)
    times = [t for _, t in data(take(a))]
    # back to back while ON, silent while OFF, the next packet exactly when ON resumes
    assert times == [k * T for k in range(-(-on1 // T))] + [off1]


def test_queue_pair_package_shape():
    """Issue 12: the queue pairs are split by job, each module small; the RC responder
    shares only the sending part (rate limit, CC hook) and has no window or generator;
    RC and UD answer FECN with the one CNP builder."""
    from pathlib import Path

    import ibemu.fabric.qp as Q
    for path in Path(Q.__file__).parent.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, path.name
    assert issubclass(Q.RCResponder, Q.SenderBase) and not issubclass(Q.RCResponder, Q.FlowSource)
    assert issubclass(Q.RCRequester, Q.FlowSource) and issubclass(Q.UDSender, Q.FlowSource)
    flow = FlowSpec("f", "a", "b", transport="ud", count=1, pattern="messages")
    a, b, snd, rcv, rec, _ = pair(flow)
    marked = codec.build(dlid=B_LID, slid=A_LID, opcode=OP.UD_SEND_ONLY, destqp=rcv.qpn, fecn=1,
                         sl=3, pkey=0x8001, ext={"DETH": {"q_key": 0, "src_qp": snd.qpn}})
    cnp = codec.parse(rcv.on_packet(0, marked))
    assert (cnp.opcode, cnp.becn, cnp.dlid, cnp.slid, cnp.destqp, cnp.sl, cnp.pkey) == \
        (OP.CNP, 1, A_LID, B_LID, snd.qpn, 3, 0x8001)
    assert b.counters["cnp_sent"] == 1
