"""The crossbar input's read rate (ibemu.fabric.xport; issue 31): with a crossbar
speedup s an input reads its buffer at s times its link rate and feeds several outputs
at once while their rates add up to no more than that; an output still sends at its
link rate and a cut-through packet still leaves no earlier than its bytes arrive.  With
s = 1 the rules are seed 003's (one packet at a time) and issue 13's (a store-and-forward
input faster than its outputs feeds several slower ones)."""
from __future__ import annotations

import pytest

from ibemu.fabric.node import Port
from ibemu.fabric.params import SwitchParams
from ibemu.fabric.xport import SLOWER, SPEEDUP, WHOLE, Entry, XPort
from ibemu.units import PS_PER_US
from test_switch import DELAY, FC_PERIOD, GBPS, data_frame, data_out, feed, grant, make_switch, tx


def _Port(rate: int) -> Port:
    return Port(1, rate, 0, 1, 4 * 33, "sw:1", FC_PERIOD)


def _entry(tail: int = 0) -> Entry:
    return Entry(bytearray(64), 1, 0, 2, 0, 1, 0, tail, True)


def test_read_rules_arithmetic():
    g = GBPS
    # seed 003: one packet at a time, busy until its last byte left and arrived
    x = XPort(1, _Port(g), 1, None, WHOLE)
    assert x.can_feed(0, g)
    x.feed(_entry(tail=5), g, 10)
    assert (x.in_busy, x.in_share) == (10, 0) and not x.can_feed(9, g) and x.can_feed(10, g)
    # store-and-forward, 4 GB/s input: four 1 GB/s outputs at once (4 x 1 <= 4), not a fifth
    x = XPort(1, _Port(4 * g), 1, None, SLOWER)
    for _ in range(4):
        assert x.can_feed(0, g)
        x.feed(_entry(), g, 10)
    assert x.in_share == 4 * g and not x.can_feed(0, g)
    # speedup 2 on a 1 GB/s input: reads 2 GB/s, so two 1 GB/s outputs (1 + 1 <= 2), not three;
    # an output of 4 GB/s takes the whole read rate (it cannot be fed faster than 2 GB/s)
    x = XPort(1, _Port(g), 1, None, SPEEDUP, 2.0)
    assert x.read == 2 * g
    e1, e2 = _entry(), _entry()
    x.feed(e1, g, 10)
    assert x.can_feed(0, g) and not x.can_feed(0, 4 * g)
    x.feed(e2, g, 10)
    assert not x.can_feed(0, g)
    x.fed(e1)
    x.fed(e2)
    assert x.in_share == 0 and x.can_feed(0, 4 * g)
    e4 = _entry()
    x.feed(e4, 4 * g, 10)
    assert e4.share == 2 * g and not x.can_feed(0, 1)
    # port 0 (the switch's own input) is read whole whatever the rule
    assert XPort(-1, None, 0, None, SPEEDUP, 2.0).rule == WHOLE


def _burst(speedup: float, n_out: int) -> list[tuple[int, int]]:
    """Input 1 holds one 2 KiB packet for each of outputs 2 .. n_out + 1 (they arrive back
    to back, no output has credit); at T every output gets credit at once.  Returns the
    (output, start time) of each packet."""
    lft = {10 + o: o for o in range(2, n_out + 2)}
    sw = make_switch(nports=n_out + 1, lft=lft, params=SwitchParams(crossbar_speedup=speedup))
    sw.outbox.clear()
    frames = [data_frame(10 + o) for o in range(2, n_out + 2)]
    t = 1 * PS_PER_US
    events = []
    for f in frames:
        events.append((t, 1, f, False))
        t += tx(len(f))
    T = t + 10 * PS_PER_US                         # every byte is in by now
    out = feed(sw, events, T - 1)
    assert data_out(out) == []
    for o in range(2, n_out + 2):
        grant(sw, o, 1000, T)
    out = feed(sw, [], T + 20 * PS_PER_US)
    return sorted((p, t - T) for p, _, t in data_out(out))


def test_speedup_two_feeds_two_outputs_at_once_at_line_rate():
    n = len(data_frame(12))                        # 2048 B payload + headers, on the wire
    d = tx(n)                                      # its time at 1 GB/s, about 2.07 us
    # no speedup: the input sends one packet at a time, so output 3 waits for output 2's
    # packet to finish (seed 003 Table 1)
    assert _burst(1.0, 2) == [(2, 0), (3, d)]
    # speedup 2: the input reads 2 GB/s, each output takes 1 GB/s (1 + 1 <= 2): both
    # outputs start at once and each sends at its link rate
    assert _burst(2.0, 2) == [(2, 0), (3, 0)]
    # a third output needs 3 GB/s: it waits until one transfer ends
    assert _burst(2.0, 3) == [(2, 0), (3, 0), (4, d)]
    assert _burst(3.0, 3) == [(2, 0), (3, 0), (4, 0)]


@pytest.mark.parametrize("speedup", [1.0, 2.0])
def test_speedup_does_not_let_a_packet_leave_before_its_bytes_arrive(speedup):
    """Cut-through from a 1/4-rate input into a 1 GB/s output: the packet starts late
    enough that its last byte leaves the forwarding delay after its last byte came in,
    with or without speedup (the read rate cannot outrun the input link)."""
    sw = make_switch(lft={5: 2}, rates={1: GBPS // 4}, credits=1000,
                     params=SwitchParams(crossbar_speedup=speedup))
    sw.outbox.clear()
    f = data_frame(5)
    t0 = 1 * PS_PER_US
    tail = t0 + tx(len(f), GBPS // 4)
    start = tail + DELAY - tx(len(f), GBPS)
    out = feed(sw, [(t0, 1, f, False)], tail + PS_PER_US)
    assert [(p, t) for p, _, t in data_out(out)] == [(2, start)]
    assert sw.ports[2].busy_until == tail + DELAY   # sent at the output's own rate
