"""A store-and-forward input faster than its outputs (ibemu.fabric.switch, issue 13):
it reads packets out at its own rate, so one 4 GB/s input feeds two 1 GB/s outputs at
once -- as seed 002's S2 port 20 (4X QDR) feeds ports 23 and 24 (4X SDR).  Driven
directly, as tests/test_switch.py does."""
from __future__ import annotations

from ibemu.fabric.node import Port
from ibemu.fabric.params import SwitchParams
from ibemu.fabric.switch import Switch
from ibemu.units import PS_PER_NS, PS_PER_US
from ibemu.wire import codec
from ibemu.wire import opcodes as OP
from ibemu.wire.linkpkt import OP_INIT, build_link

SDR, QDR = 1_000_000_000, 4_000_000_000     # bytes/s
DELAY = 40 * PS_PER_NS


def frame(dlid: int) -> bytearray:
    return codec.build(dlid=dlid, slid=1, opcode=OP.RC_SEND_ONLY, psn=0, destqp=0x42, payload=bytes(2048))


def switch() -> Switch:
    """Port 1 at 4 GB/s, ports 2-4 at 1 GB/s; store-and-forward; DLID 2 -> port 2, 3 -> 3."""
    params = SwitchParams(cut_through=False)
    sw = Switch("sw", params, {2: 2, 3: 3})
    for p, rate in ((1, QDR), (2, SDR), (3, SDR), (4, SDR)):
        sw.add_port(Port(p, rate, 0, params.data_vls, 16 * 33, "sw:%d" % p, 26 * PS_PER_US))
        for vl in range(params.data_vls):
            sw.receive(p, build_link(OP_INIT, 0, vl, 1000), True, 0)
    sw.outbox.clear()
    return sw


def feed(sw: Switch, events: list[tuple[int, int, bytearray]], until: int) -> list[tuple[int, int]]:
    """Deliver (time, port, frame) in order with the switch's timers in between; the
    data transmissions by *until* as (output port, start time)."""
    def run(t: int) -> None:
        while (d := sw.next_deadline()) is not None and d <= t:
            sw.wake(d)
    for t, p, f in events:
        run(t - 1)
        sw.receive(p, f, False, t)
    run(until)
    return [(o, t) for o, _, link, t in sw.outbox if not link]


def test_fast_input_feeds_two_slower_outputs_at_once():
    """B (port 1 -> 3) waits for port 3, busy with P0 from port 4; A (port 1 -> 2) starts
    on port 2 just before port 3 frees.  A reads out of port 1's buffer at 4 GB/s but
    takes only 1 GB/s of it for 1 GB/s port 2: B starts on port 3 the moment P0 ends,
    not a 4 GB/s read time later (which left seed 002's S2:24 idle behind S2:23)."""
    sw = switch()
    f0, fa, fb = frame(3), frame(2), frame(3)
    t_sdr = sw.ports[4].tx_time(len(f0))             # one packet at 1 GB/s
    t_qdr = sw.ports[1].tx_time(len(fa))             # ... at 4 GB/s
    p0_end = t_sdr + DELAY + t_sdr                   # P0: received by t_sdr, sent after the delay
    tail_a = p0_end - DELAY - 100 * PS_PER_NS        # A eligible 100 ns before port 3 frees
    start_b = tail_a - 2 * t_qdr                     # B then A, back to back on port 1
    out = feed(sw, [(0, 4, f0), (start_b, 1, fb), (start_b + t_qdr, 1, fa)], 20 * PS_PER_US)
    assert (2, tail_a + DELAY) in out                # A as soon as eligible
    assert (3, p0_end) in out                        # B as soon as port 3 is free
    assert p0_end < tail_a + DELAY + t_qdr           # ... which is inside A's 4 GB/s read time


def test_fast_input_shares_no_more_than_its_rate():
    """Five packets for 1 GB/s outputs can be fed at once only up to the input's 4 GB/s:
    with four outputs busy from port 1, a fifth transfer from it waits until one ends."""
    params = SwitchParams(cut_through=False)
    sw = Switch("sw", params, {d: d for d in range(2, 7)})
    sw.add_port(Port(1, QDR, 0, params.data_vls, 16 * 33, "sw:1", 26 * PS_PER_US))
    for p in range(2, 7):
        sw.add_port(Port(p, SDR, 0, params.data_vls, 16 * 33, "sw:%d" % p, 26 * PS_PER_US))
    for p in range(1, 7):
        for vl in range(params.data_vls):
            sw.receive(p, build_link(OP_INIT, 0, vl, 1000), True, 0)
    sw.outbox.clear()
    fs = [frame(d) for d in range(2, 7)]
    t_qdr = sw.ports[1].tx_time(len(fs[0]))
    t_sdr = sw.ports[2].tx_time(len(fs[0]))
    out = feed(sw, [(i * t_qdr, 1, f) for i, f in enumerate(fs)], 40 * PS_PER_US)
    starts = dict(out)
    for i, d in enumerate(range(2, 6)):              # four at once: each on its own eligibility
        assert starts[d] == (i + 1) * t_qdr + DELAY
    assert starts[6] == starts[2] + t_sdr            # the fifth when the first share ends
