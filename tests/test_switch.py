"""The input-buffered crossbar switch (ibemu.fabric.switch), driven directly: frames are
fed with ``receive(port, frame, link, now)``, timers run with ``wake(now)`` at
``next_deadline()``, and transmissions are read from ``outbox``.  No engine.

Seed 003 Table 1: 1 GB/s links, 40 ns forwarding delay, input buffers, FIFO per output
with bypass of a head whose input is busy, at most 4 times.
"""
from __future__ import annotations

import pytest

from ibemu.fabric.credits import blocks_of
from ibemu.fabric.node import Port
from ibemu.fabric.params import SwitchParams, VLArbTable
from ibemu.fabric.switch import Switch
from ibemu.units import PS_PER_NS, PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP
from ibemu.wire.linkpkt import OP_INIT, OP_NORMAL, build_link, link_crc_ok, parse_link

GBPS = 1_000_000_000                    # 1 GB/s: 1000 ps per byte
DELAY = 40 * PS_PER_NS
FC_PERIOD = 26 * PS_PER_US


def data_frame(dlid, payload=2048, sl=0, vl=0, slid=1, psn=0):
    return codec.build(dlid=dlid, slid=slid, opcode=OP.RC_SEND_ONLY, psn=psn, destqp=0x42,
                       sl=sl, vl=vl, payload=bytes(payload))


def make_switch(nports=4, lft=None, params=None, cap_blocks=4 * 33, rates=None, credits=None):
    """A switch with ports 1..nports.  *credits*: FCCL granted on every port and VL by an
    init flow-control packet at time 0 (None: no credit anywhere)."""
    params = params or SwitchParams()
    sw = Switch("sw", params, dict(lft or {}))
    rates = rates or {}
    for p in range(1, nports + 1):
        sw.add_port(Port(p, rates.get(p, GBPS), 0, params.data_vls, cap_blocks, "sw:%d" % p,
                         FC_PERIOD))
    if credits is not None:
        for p in range(1, nports + 1):
            for vl in range(params.data_vls):
                grant(sw, p, credits, 0, vl)
    return sw


def grant(sw, port, fccl, now, vl=0, fctbs=0, op=OP_INIT):
    """The peer on *port* sends a flow-control packet granting credit limit *fccl*."""
    sw.receive(port, build_link(op, fctbs, vl, fccl), True, now)


def run(sw, until):
    """Run the switch's timers due up to *until* (each at its own time)."""
    while True:
        d = sw.next_deadline()
        if d is None or d > until:
            return
        sw.wake(d)


def feed(sw, events, until):
    """Deliver (time, port, frame, link) events in time order, running the switch's
    timers in between; return (and clear) everything it transmitted by *until*."""
    for t, port, frame, link in sorted(events, key=lambda e: e[0]):
        run(sw, t - 1)
        sw.receive(port, frame, link, t)
    run(sw, until)
    out = list(sw.outbox)
    sw.outbox.clear()
    return out


def data_out(out):
    return [(p, f, t) for p, f, link, t in out if not link]


def fcps_out(out):
    return [(p, parse_link(f), t) for p, f, link, t in out if link]


def tx(nbytes, rate=GBPS):
    return -(-nbytes * 10**12 // rate)


# ----------------------------------------------------------------- routing and timing

def test_routing_by_dlid():
    sw = make_switch(nports=4, lft={0x10: 2, 0x11: 3, 0x12: 4, 0x13: 1}, credits=1000)
    sw.outbox.clear()
    frames = {dlid: data_frame(dlid, payload=256) for dlid in (0x10, 0x11, 0x12, 0x13)}
    t = 1 * PS_PER_US
    out = []
    for i, dlid in enumerate((0x10, 0x11, 0x12)):
        out += feed(sw, [(t + i * 10 * PS_PER_US, 1, frames[dlid], False)], t + (i + 1) * 10 * PS_PER_US)
    out += feed(sw, [(100 * PS_PER_US, 2, frames[0x13], False)], 200 * PS_PER_US)
    sent = data_out(out)
    assert [(p, codec.get_dlid(f)) for p, f, _ in sent] == [(2, 0x10), (3, 0x11), (4, 0x12), (1, 0x13)]
    for _, f, _ in sent:
        assert codec.vcrc_ok(f) and codec.icrc_ok(f)


def test_cut_through_departs_forwarding_delay_after_first_byte():
    sw = make_switch(lft={5: 2}, credits=1000)
    sw.outbox.clear()
    f = data_frame(5)
    t0 = 3 * PS_PER_US
    out = feed(sw, [(t0, 1, f, False)], t0 + DELAY - 1)
    assert data_out(out) == []                       # not before 40 ns
    assert sw.next_deadline() == t0 + DELAY
    out = feed(sw, [], t0 + 10 * PS_PER_US)
    sent = data_out(out)
    assert len(sent) == 1
    p, frame, t = sent[0]
    assert (p, t) == (2, t0 + DELAY)
    assert frame == f
    assert sw.ports[2].busy_until == t0 + DELAY + tx(len(f))


def test_store_and_forward_departs_after_tail_plus_delay():
    sw = make_switch(lft={5: 2}, params=SwitchParams(cut_through=False), credits=1000)
    sw.outbox.clear()
    f = data_frame(5)
    t0 = 3 * PS_PER_US
    tail = t0 + tx(len(f))
    out = feed(sw, [(t0, 1, f, False)], tail + DELAY - 1)
    assert data_out(out) == []
    out = feed(sw, [], tail + 10 * PS_PER_US)
    assert [(p, t) for p, _, t in data_out(out)] == [(2, tail + DELAY)]


def test_cut_through_cannot_finish_before_the_tail_arrives():
    """Slow input (1/4 rate), fast output (issue 13, defect 1): the output must not run
    out of bytes, so the packet starts late enough that its last byte leaves the
    forwarding delay after its last byte came in -- and it occupies the output for
    exactly its length at the output's rate, so the receiver's tail is that time."""
    sw = make_switch(lft={5: 2}, rates={1: GBPS // 4}, credits=1000)
    sw.outbox.clear()
    f = data_frame(5)
    t0 = 1 * PS_PER_US
    tail = t0 + tx(len(f), GBPS // 4)
    last_out = tail + DELAY                         # last byte in, plus the forwarding delay
    start = last_out - tx(len(f), GBPS)             # at the output's (4x faster) rate
    assert start > t0 + DELAY                       # later than the head's cut-through time
    out = feed(sw, [(t0, 1, f, False)], tail + PS_PER_US)
    assert [(p, t) for p, _, t in data_out(out)] == [(2, start)]
    assert sw.ports[2].busy_until == last_out
    fcps = fcps_out(out)                            # the buffer is freed when the last byte left
    assert [(p, t) for p, _, t in fcps] == [(1, last_out)]


def test_cut_through_fast_into_slow_starts_at_the_head():
    """Fast input, slow output: nothing to wait for; it leaves 40 ns after its head."""
    sw = make_switch(lft={5: 2}, rates={2: GBPS // 4}, credits=1000)
    sw.outbox.clear()
    f = data_frame(5)
    t0 = 1 * PS_PER_US
    out = feed(sw, [(t0, 1, f, False)], t0 + 100 * PS_PER_US)
    assert [(p, t) for p, _, t in data_out(out)] == [(2, t0 + DELAY)]
    assert sw.ports[2].busy_until == t0 + DELAY + tx(len(f), GBPS // 4)


def test_fifo_order_on_one_output():
    sw = make_switch(lft={5: 3}, credits=1000, cap_blocks=1000)
    sw.outbox.clear()
    events = []
    for i in range(3):
        events.append((i * 2100 * PS_PER_NS, 1, data_frame(5, psn=i), False))
        events.append((i * 2100 * PS_PER_NS + 10, 2, data_frame(5, psn=100 + i), False))
    out = feed(sw, events, 100 * PS_PER_US)
    psns = [codec.parse(f).psn for _, f, _ in data_out(out)]
    assert psns == [0, 100, 1, 101, 2, 102]
    times = [t for _, _, t in data_out(out)]
    for a, b in zip(times, times[1:]):
        assert b >= a + tx(2074)                    # one packet at a time on the output


# ----------------------------------------------------------------- credits

def test_no_credit_no_departure_until_fcp_grants_it():
    sw = make_switch(lft={5: 2})                    # no credit anywhere
    f = data_frame(5)
    blocks = blocks_of(len(f))
    assert blocks == 33
    out = feed(sw, [(0, 1, f, False)], 50 * PS_PER_US)
    assert data_out(out) == []
    assert sw.next_deadline() is None               # waits for a flow-control packet
    assert sw.queued[2] == 1
    # a grant one block short is not enough
    out = feed(sw, [(60 * PS_PER_US, 2, build_link(OP_INIT, 0, 0, blocks - 1), True)], 70 * PS_PER_US)
    assert data_out(out) == []
    # a normal FCP granting the whole packet releases it at once
    t = 80 * PS_PER_US
    out = feed(sw, [(t, 2, build_link(OP_NORMAL, 0, 0, blocks), True)], 100 * PS_PER_US)
    assert [(p, tt) for p, _, tt in data_out(out)] == [(2, t)]
    assert sw.ports[2].tx[0].fctbs == blocks
    assert sw.ports[2].tx[0].available() == 0
    # the next packet waits again
    f2 = data_frame(5, psn=1)
    out = feed(sw, [(200 * PS_PER_US, 1, f2, False)], 300 * PS_PER_US)
    assert data_out(out) == []
    out = feed(sw, [(310 * PS_PER_US, 2, build_link(OP_NORMAL, 0, 0, 2 * blocks), True)], 400 * PS_PER_US)
    assert [(p, tt) for p, _, tt in data_out(out)] == [(2, 310 * PS_PER_US)]


def test_input_buffer_freed_and_fcp_returned_at_departure_end():
    cap = 4 * 33
    sw = make_switch(lft={5: 2}, credits=1000, cap_blocks=cap)
    sw.outbox.clear()
    f = data_frame(5)
    b = blocks_of(len(f))
    t0 = 1 * PS_PER_US
    start = t0 + DELAY
    end = start + tx(len(f))
    out = feed(sw, [(t0, 1, f, False)], end - 1)
    assert sw.ports[1].rx[0].used == b             # still buffered
    assert fcps_out(out) == []
    out = feed(sw, [], end)
    assert sw.ports[1].rx[0].used == 0
    fcps = fcps_out(out)
    assert len(fcps) == 1
    port, (op, fctbs, vl, fccl, _crc), t = fcps[0]
    assert (port, op, vl, t) == (1, OP_NORMAL, 0, end)
    assert fctbs == 0                               # the switch sent nothing on port 1
    assert fccl == b + cap                          # ABR (b) + the whole buffer free
    # a second packet: FCCL advances again by its size, modulo 4096
    f2 = data_frame(5, psn=1)
    out = feed(sw, [(20 * PS_PER_US, 1, f2, False)], 30 * PS_PER_US)
    assert [fccl for _, (_, _, _, fccl, _), _ in fcps_out(out)] == [2 * b + cap]


def test_fcp_frames_have_valid_lpcrc():
    sw = make_switch(lft={5: 2}, credits=1000)
    sw.outbox.clear()
    out = feed(sw, [(0, 1, data_frame(5), False)], 10 * PS_PER_US)
    links = [f for _, f, link, _ in out if link]
    assert links and all(link_crc_ok(f) for f in links)


def test_sender_fcp_resyncs_abr():
    """An FCP from the upstream sender sets ABR = its FCTBS (IBA 7.9.4)."""
    cap = 132
    sw = make_switch(lft={5: 2}, credits=1000, cap_blocks=cap)
    sw.outbox.clear()
    grant(sw, 1, 0, 0, fctbs=4000, op=OP_NORMAL)
    assert sw.ports[1].rx[0].abr == 4000
    # ABR moved (packets were lost on the way): the corrected FCCL goes back at once (issue 8)
    assert [(p, fccl) for p, (_, _, _, fccl, _), _ in fcps_out(sw.outbox)] == [(1, (4000 + cap) % 4096)]
    sw.outbox.clear()
    grant(sw, 1, 0, 0, fctbs=4000, op=OP_NORMAL)                # in step: nothing to answer
    assert fcps_out(sw.outbox) == []
    f = data_frame(5)
    out = feed(sw, [(1 * PS_PER_US, 1, f, False)], 10 * PS_PER_US)
    assert [fccl for _, (_, _, _, fccl, _), _ in fcps_out(out)] == [(4000 + 33 + cap) % 4096]


def test_overrun_counted_and_dropped():
    sw = make_switch(lft={5: 2}, cap_blocks=40)     # room for one 33-block packet; no credit out
    sw.receive(1, data_frame(5), False, 0)
    sw.receive(1, data_frame(5, psn=1), False, 3 * PS_PER_US)
    assert sw.counters.get("ExcessiveBufferOverrunErrors") == 1
    assert sw.queued[2] == 1
    assert sw.ports[1].rx[0].used == 33


# ----------------------------------------------------------------- errors

def test_unknown_dlid_counted_not_crashing():
    sw = make_switch(lft={5: 2}, credits=1000)
    sw.outbox.clear()
    out = feed(sw, [(0, 1, data_frame(0x77), False),
                    (10 * PS_PER_US, 2, data_frame(5), False)],   # routed back to its input
               50 * PS_PER_US)
    assert sw.counters.get("PortRcvSwitchRelayErrors") == 2
    assert data_out(out) == []
    assert all(q == 0 for q in sw.queued.values())
    assert sw.ports[1].rx[0].used == 0 and sw.ports[2].rx[0].used == 0
    # the switch still forwards good packets afterwards
    out = feed(sw, [(60 * PS_PER_US, 1, data_frame(5), False)], 100 * PS_PER_US)
    assert [p for p, _, _ in data_out(out)] == [2]


def test_runt_and_bad_vl_and_bad_fcp_counted():
    sw = make_switch(lft={5: 2}, credits=1000)
    sw.receive(1, bytearray(20), False, 0)
    assert sw.counters.get("PortRcvErrors") == 1
    sw.receive(1, data_frame(5, vl=3), False, 1)    # only VL0 is operational
    assert sw.counters.get("PortRcvErrors") == 2
    bad = bytearray(build_link(OP_NORMAL, 0, 0, 99))
    bad[4] ^= 1
    sw.receive(2, bytes(bad), True, 2)
    assert sw.counters.get("PortRcvErrors") == 3
    assert sw.ports[2].tx[0].fccl == 1000           # the corrupted grant was ignored
    sw.receive(9, data_frame(5), False, 3)
    assert sw.counters.get("dropped_no_port") == 1


# ----------------------------------------------------------------- SL to VL

def test_sl_to_vl_rewrites_lrh_vl_and_keeps_vcrc_valid():
    params = SwitchParams(data_vls=2, sl2vl=[0, 1] * 8,
                          vlarb=VLArbTable(low=[(0, 255), (1, 255)]))
    sw = make_switch(lft={5: 2}, params=params, credits=1000)
    sw.outbox.clear()
    f1 = data_frame(5, sl=1, vl=0)                  # arrives on VL0, SL1 -> VL1
    f0 = data_frame(5, sl=2, vl=0, psn=1)           # SL2 -> VL0
    orig1, orig0 = bytes(f1), bytes(f0)
    out = feed(sw, [(0, 1, f1, False), (3 * PS_PER_US, 1, f0, False)], 20 * PS_PER_US)
    sent = data_out(out)
    assert len(sent) == 2
    (_, g1, _), (_, g0, _) = sent
    assert codec.get_vl(g1) == 1 and codec.get_sl(g1) == 1
    assert codec.vcrc_ok(g1)
    assert codec.icrc_ok(g1)                         # the LRH is variant in the ICRC
    assert bytes(g1)[1:-2] == orig1[1:-2]           # nothing else changed
    assert bytes(g1) != orig1
    assert codec.get_vl(g0) == 0 and bytes(g0) == orig0
    # credits were taken on the output VL, returned on the input VL
    assert sw.ports[2].tx[1].fctbs == 33 and sw.ports[2].tx[0].fctbs == 33
    assert [vl for _, (_, _, vl, _, _), _ in fcps_out(out)] == [0, 0]


def test_sl_to_vl_waits_for_credit_on_the_output_vl():
    params = SwitchParams(data_vls=2, sl2vl=[1] * 16,
                          vlarb=VLArbTable(low=[(0, 255), (1, 255)]))
    sw = make_switch(lft={5: 2}, params=params)
    grant(sw, 2, 1000, 0, vl=0)                     # credit only on VL0
    sw.outbox.clear()
    out = feed(sw, [(1 * PS_PER_US, 1, data_frame(5, sl=0), False)], 20 * PS_PER_US)
    assert data_out(out) == []
    out = feed(sw, [(30 * PS_PER_US, 2, build_link(OP_INIT, 0, 1, 100), True)], 40 * PS_PER_US)
    sent = data_out(out)
    assert [(p, codec.get_vl(f), t) for p, f, t in sent] == [(2, 1, 30 * PS_PER_US)]
    assert codec.vcrc_ok(sent[0][1])


# ----------------------------------------------------------------- FIFO bypass

SMALL = 256                                     # payload; a 282-byte frame, 282 ns


def _bypass_case(bypass_limit=4, n_newer=6, data_vls=1):
    """Input 1 is busy for a long time sending a big packet P to the slow port 4
    (1/8 rate); H (input 1 -> port 5) heads port 5's FIFO; newer packets A1..An from
    inputs 2 and 3 queue behind H for port 5."""
    params = SwitchParams(bypass_limit=bypass_limit, data_vls=data_vls,
                          vlarb=VLArbTable(low=[(vl, 255) for vl in range(data_vls)]))
    sw = make_switch(nports=5, lft={4: 4, 5: 5}, params=params, credits=2000,
                     cap_blocks=2000, rates={4: GBPS // 8})
    sw.outbox.clear()
    P = data_frame(4, payload=2048, psn=1000)
    H = data_frame(5, payload=SMALL, psn=0)
    t_p = 0
    t_h = tx(len(P))                                # right behind P on link 1
    p_end = t_p + DELAY + tx(len(P), GBPS // 8)     # input 1 busy until then
    events = [(t_p, 1, P, False), (t_h, 1, H, False)]
    t_a = 3 * PS_PER_US
    small = len(H)
    for k in range(n_newer):
        port = 2 + (k % 2)
        t = t_a + (k // 2) * tx(small)
        events.append((t, port, data_frame(5, payload=SMALL, psn=k + 1), False))
    return sw, events, p_end, small


@pytest.mark.parametrize("data_vls", [1, 2])      # single-VL fast path and VL-arbitrated path
def test_bypass_of_busy_head_limited_to_four(data_vls):
    sw, events, p_end, small = _bypass_case(data_vls=data_vls)
    out = feed(sw, events, p_end + 20 * PS_PER_US)
    on5 = [(codec.parse(f).psn, t) for p, f, t in data_out(out) if p == 5]
    psns = [psn for psn, _ in on5]
    # four newer packets bypass H, then port 5 waits for H, then the rest
    assert psns == [1, 2, 3, 4, 0, 5, 6]
    times = dict(on5)
    t_a = 3 * PS_PER_US
    T = tx(small)
    # A1 leaves 40 ns after its arrival, the following ones back to back
    assert times[1] == t_a + DELAY
    assert times[2] == times[1] + T
    assert times[3] == times[2] + T
    assert times[4] == times[3] + T
    # after four bypasses the output idles until H's input is free
    assert times[0] == p_end
    assert times[5] == p_end + T
    assert times[6] == times[5] + T
    on4 = [(codec.parse(f).psn, t) for p, f, t in data_out(out) if p == 4]
    assert on4 == [(1000, DELAY)]


@pytest.mark.parametrize("data_vls", [1, 2])
def test_single_newer_packet_bypasses_without_another_event(data_vls):
    """Regression: the newer packet becomes eligible 40 ns after it arrives while the
    head waits for its busy input; the switch must wake then by itself (it used to
    arm a timer only for the head, so the packet waited ~13.6 us for P to finish and
    then went *after* the head: no bypass at all)."""
    sw, events, p_end, small = _bypass_case(n_newer=1, data_vls=data_vls)
    out = feed(sw, events, p_end + 20 * PS_PER_US)
    on5 = [(codec.parse(f).psn, t) for p, f, t in data_out(out) if p == 5]
    assert on5 == [(1, 3 * PS_PER_US + DELAY), (0, p_end)]


def test_bypass_limit_configurable():
    sw, events, p_end, small = _bypass_case(bypass_limit=2)
    out = feed(sw, events, p_end + 20 * PS_PER_US)
    on5 = [(codec.parse(f).psn, t) for p, f, t in data_out(out) if p == 5]
    assert [psn for psn, _ in on5] == [1, 2, 0, 3, 4, 5, 6]
    assert dict(on5)[0] == p_end


def test_bypass_limit_zero_is_strict_fifo():
    sw, events, p_end, small = _bypass_case(bypass_limit=0)
    out = feed(sw, events, p_end + 20 * PS_PER_US)
    on5 = [(codec.parse(f).psn, t) for p, f, t in data_out(out) if p == 5]
    assert [psn for psn, _ in on5] == [0, 1, 2, 3, 4, 5, 6]
    assert on5[0][1] == p_end


def test_no_bypass_when_head_input_is_free():
    """The head is sent first when its input is idle, even if newer packets wait."""
    sw = make_switch(nports=3, lft={5: 3}, credits=1000, cap_blocks=1000)
    sw.outbox.clear()
    events = [(0, 1, data_frame(5, payload=SMALL, psn=0), False),
              (1, 2, data_frame(5, payload=SMALL, psn=1), False)]
    out = feed(sw, events, 10 * PS_PER_US)
    assert [codec.parse(f).psn for _, f, _ in data_out(out)] == [0, 1]
    assert all(e.bypassed == 0 for q in sw.queues.values() for vq in q for e in vq)


def test_a_packet_that_comes_as_bytes_goes_on_as_it_came_or_as_a_rewritten_copy():
    """Issue 28: an HCA sends bytes (read natively in the compiled core); a switch forwards
    the same object when it rewrites nothing, and a bytearray copy when the SL-to-VL table
    moves the packet to another VL (the bytes it was given stay as they were)."""
    params = SwitchParams(data_vls=2, sl2vl=[0, 1] * 8,
                          vlarb=VLArbTable(low=[(0, 255), (1, 255)]))
    sw = make_switch(lft={5: 2}, params=params, credits=1000)
    sw.outbox.clear()
    same = bytes(data_frame(5, sl=2, vl=0))          # SL2 -> VL0: nothing to rewrite
    moved = bytes(data_frame(5, sl=1, vl=0, psn=1))  # SL1 -> VL1
    out = data_out(feed(sw, [(0, 1, same, False), (3 * PS_PER_US, 1, moved, False)], 20 * PS_PER_US))
    assert [f for _, f, _ in out][0] is same
    g = out[1][1]
    assert isinstance(g, bytearray) and codec.get_vl(g) == 1 and codec.vcrc_ok(g)
    assert codec.get_vl(moved) == 0 and g[1:-2] == moved[1:-2]


def test_a_marker_rewrites_a_bytes_packet_through_entry_frame():
    """A marker sets FECN in place on ``Entry.frame`` (the Marker API): for a packet that
    came as bytes that is a bytearray copy, and the copy is what the switch sends."""
    class MarkAll:
        def on_arrival(self, sw, e, now):
            pass

        def on_transmit(self, sw, e, now):
            codec.set_fecn(e.frame)

        def on_departure(self, sw, e, now):
            pass

    sw = make_switch(lft={5: 2}, credits=1000)
    sw.attach_marker(MarkAll())
    sw.outbox.clear()
    f = bytes(data_frame(5))
    (_, g, _), = data_out(feed(sw, [(0, 1, f, False)], 20 * PS_PER_US))
    assert codec.get_fecn(g) == 1 and codec.vcrc_ok(g) and codec.icrc_ok(g)
    assert codec.get_fecn(f) == 0
