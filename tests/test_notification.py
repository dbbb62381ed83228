"""Congestion notification in the transport (ibemu.fabric.qp): BECN echo in RC ACKs,
forced ACKs for marked packets, CNPs for marked UD packets and ACKs, and the
source-side CC hooks (seed 000 §3; IBA A10 as in REFERENCE.md)."""
from __future__ import annotations

from test_hca_qp import A_LID, B_LID, ack_frame, credit, pair, run, take

from ibemu.fabric.params import FlowSpec, HCAParams
from ibemu.units import PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP


def data_frame(snd, psn, fecn, ackreq=0, opcode=OP.RC_SEND_ONLY, ext=None):
    return codec.build(dlid=B_LID, slid=A_LID, opcode=opcode, psn=psn, destqp=snd.remote_qpn,
                       fecn=fecn, ackreq=ackreq, payload=bytes(256), ext=ext)


def replies(node, until):
    run(node, until)
    return [codec.parse(f) for _, f, link, _ in take(node) if not link]


def test_marked_packet_is_acked_at_once_with_becn():
    flow = FlowSpec("f", "a", "b", pattern="messages", count=0)
    a, b, snd, rcv, _, _ = pair(flow, b_params=HCAParams(ack_every=4))
    credit(b, 0)
    take(b)
    b.receive(1, data_frame(snd, 0, fecn=0), False, 0)
    assert replies(b, 3 * PS_PER_US) == []                      # coalesced
    b.receive(1, data_frame(snd, 1, fecn=1), False, 3 * PS_PER_US)
    acks = replies(b, 20 * PS_PER_US)
    assert [(f.opcode, f.psn, f.becn) for f in acks] == [(OP.RC_ACKNOWLEDGE, 1, 1)]
    b.receive(1, data_frame(snd, 2, fecn=0, ackreq=1), False, 20 * PS_PER_US)
    acks = replies(b, 30 * PS_PER_US)
    assert [(f.psn, f.becn) for f in acks] == [(2, 0)]          # BECN of the packet it acks


def test_marked_ud_packet_gets_one_cnp_to_its_source():
    flow = FlowSpec("u", "a", "b", transport="ud", pattern="messages", count=0)
    a, b, snd, rcv, _, _ = pair(flow)
    credit(b, 0)
    take(b)
    ext = {"DETH": {"q_key": 1, "src_qp": snd.qpn}}
    for psn, fecn in ((0, 1), (1, 0), (2, 1)):
        b.receive(1, data_frame(snd, psn, fecn, opcode=OP.UD_SEND_ONLY, ext=ext), False, psn * 10 * PS_PER_US)
    cnps = replies(b, 100 * PS_PER_US)
    assert [(f.opcode, f.becn, f.dlid, f.destqp, len(f.payload)) for f in cnps] == \
        [(OP.CNP, 1, A_LID, snd.qpn, 0)] * 2
    assert b.counters["cnp_sent"] == 2


class Spy:
    def __init__(self):
        self.calls = []

    def on_sent(self, qp, now, frame):
        self.calls.append(("sent", codec.parse(frame).psn))

    def on_ack(self, qp, now, psn, n, becn):
        self.calls.append(("ack", psn, n, becn))

    def on_cnp(self, qp, now):
        self.calls.append(("cnp",))

    def gap(self, qp, nbytes, t):
        return 3 * t


def test_cc_hooks_see_sends_acks_becn_and_cnps_and_can_stretch_the_gap():
    flow = FlowSpec("f", "a", "b", pattern="messages", count=2, message_size=256)
    a, b, snd, rcv, _, _ = pair(flow)
    spy = snd.cc = Spy()
    credit(a, 0)
    run(a, 10 * PS_PER_US)
    sent = [(f, t) for _, f, link, t in take(a) if not link]
    assert len(sent) == 2
    assert sent[1][1] - sent[0][1] == 3 * len(sent[0][0]) * 1000    # gap tripled
    marked = ack_frame(snd, 0)
    codec.set_becn(marked)
    a.receive(1, marked, False, 20 * PS_PER_US)
    a.receive(1, ack_frame(snd, 1), False, 30 * PS_PER_US)
    cnp = codec.build(dlid=A_LID, slid=B_LID, opcode=OP.CNP, destqp=snd.qpn, becn=1)
    a.receive(1, cnp, False, 40 * PS_PER_US)
    run(a, 100 * PS_PER_US)
    assert spy.calls == [("sent", 0), ("sent", 1), ("ack", 0, 1, 1), ("ack", 1, 1, 0), ("cnp",)]


def test_fecn_marked_ack_is_answered_with_a_cnp():
    flow = FlowSpec("f", "a", "b", pattern="messages", count=1, message_size=256)
    a, b, snd, rcv, _, _ = pair(flow)
    credit(a, 0)
    run(a, 10 * PS_PER_US)
    take(a)
    ack = ack_frame(snd, 0)
    codec.set_fecn(ack)
    a.receive(1, ack, False, 20 * PS_PER_US)
    cnps = replies(a, 100 * PS_PER_US)
    assert [(f.opcode, f.dlid, f.destqp) for f in cnps] == [(OP.CNP, B_LID, rcv.qpn)]


def test_coalesced_packets_without_ackreq_are_acked_when_the_stream_pauses():
    """ACK coalescing never strands packets: with ack_every=4, two packets and then
    silence get one ACK after four packet times (a window that shrank after they left
    cannot stall the source until its ACK timeout)."""
    flow = FlowSpec("f", "a", "b", pattern="messages", count=0)
    a, b, snd, rcv, _, _ = pair(flow, b_params=HCAParams(ack_every=4))
    credit(b, 0)
    take(b)
    b.receive(1, data_frame(snd, 0, fecn=0, opcode=OP.RC_SEND_FIRST), False, 0)
    b.receive(1, data_frame(snd, 1, fecn=0, opcode=OP.RC_SEND_MIDDLE), False, 3 * PS_PER_US)
    assert replies(b, 5 * PS_PER_US) == []
    acks = replies(b, 30 * PS_PER_US)
    assert [(f.opcode, f.psn) for f in acks] == [(OP.RC_ACKNOWLEDGE, 1)]
    assert b.counters["acks_flushed"] == 1
