"""Window-limited throughput: an RC flow with a window of W packets (CWND; at most W
sent and not yet acknowledged, seed 000 §3) over a long round trip sends W packets per
ACK round trip: throughput = W·n / RTT.

First principles.  A packet of n bytes takes T = n / r; the ACK (LRH 8 + BTH 12 +
AETH 4 + ICRC 4 + VCRC 2 = 30 bytes) takes T_ack = 30 / r; links have propagation p;
a switch forwards d = 40 ns after the first byte (cut-through, same rates).  The
responder acknowledges a packet once its last byte is in, and the requester sends the
next packet once the ACK's last byte is in:

- direct, A -- (p) -- B: RTT = p + T (data in) + p + T_ack (ACK in) = 2p + T + T_ack;
- through one switch, A -- (p) -- S -- (p) -- B: each way crosses two links and the
  switch: RTT = (2p + d + T) + (2p + d + T_ack) = 4p + 2d + T + T_ack.

For RDMA READ the window counts response packets (PSNs) outstanding: the requester
sends a request (LRH + BTH + RETH 16 + ICRC + VCRC = 42 bytes, T_req) when a response's
last byte is in, and the responder answers once the request's last byte is in, so with
one-packet READs (a 2048-byte READ_RESPONSE_ONLY: 26 + AETH 4 + 2048 = 2078 bytes, T):
RTT = 2p + T_req + T direct, 4p + 2d + T_req + T through the switch; measured on the
responses as they leave the responder.

When W·T < RTT, packet i + W starts exactly one RTT after packet i.  The receive
buffers are made large enough that credits never bind first (credit round trip
2p + T per hop, buffer >= W packets).  Allowance: flow-control packets of 6 bytes on
the wire (the lead's change) may delay the ACK (behind the responder's credit return)
and the next packet (behind the requester's), so a period may exceed RTT by two of
them, never fall below it.
"""
from __future__ import annotations

import functools

import pytest

from ibemu.fabric.params import FlowSpec, HCAParams, SwitchParams
from ibemu.units import PS_PER_S, PS_PER_US

from .harness import AETH, BASE, FCP_BYTES, RETH, FORWARDING_DELAY, SDR, link, ps, scenario, simulate

PROP = 10 * PS_PER_US
DURATION = 600 * PS_PER_US
BIG = HCAParams(buffer_bytes=64 * 1024)           # 1024 blocks: 31 packets of 2074 bytes (33 blocks)
ACK = BASE + AETH                                 # 30 bytes


@functools.cache
def windowed(topology: str, window: int, payload: int, op: str = "send"):
    flow = FlowSpec("f", "A", "B", op=op, message_size=payload, window=window)
    if topology == "direct":
        links, switches = [link("A", "B", SDR, PROP)], []
    else:
        links, switches = [link("A", "S", SDR, PROP), link("S", "B", SDR, PROP)], ["S"]
    scn = scenario(links, [flow], switches=switches, hca=BIG,
                   switch=SwitchParams(buffer_bytes=64 * 1024), duration=DURATION)
    return simulate(scn)


@pytest.mark.parametrize("op", ["send", "read"])
@pytest.mark.parametrize("payload", [2048, 256])
@pytest.mark.parametrize("window", [1, 3, 8])
@pytest.mark.parametrize("topology", ["direct", "switch"])
def test_window_limited_throughput(topology, window, payload, op):
    run = windowed(topology, window, payload, op)
    if op == "send":
        n = payload + BASE                      # SEND_ONLY
        back = ps(ACK, SDR)                     # the ACK
        data_link = "A->B" if topology == "direct" else "A->S"
        back_link = "B->A" if topology == "direct" else "S->A"
        back_len = ACK
    else:
        n = payload + BASE + AETH               # READ_RESPONSE_ONLY
        back = ps(BASE + RETH, SDR)             # the next request
        data_link = "B->A" if topology == "direct" else "B->S"
        back_link = "A->B" if topology == "direct" else "S->B"
        back_len = BASE + RETH
    t_data = ps(n, SDR)
    if topology == "direct":
        rtt = 2 * PROP + t_data + back
    else:
        rtt = 4 * PROP + 2 * FORWARDING_DELAY + t_data + back
    assert window * t_data < rtt
    frames = run.tap.data_frames(data_link)
    assert {nb for _, nb in frames} == {n}
    starts = [t for t, _ in frames]
    periods = [b - a for a, b in zip(starts, starts[window:])]
    assert len(periods) >= 5 * window
    # flow-control packets go between packets (issue 13): the credit of every packet a
    # node takes in goes back in a 6-byte FCP, which holds up the node's next packet on
    # that link -- at the receiver the ACK (or response) waits behind the FCP for the
    # request, at the sender the next packet behind the FCP for the ACK: rtt + 2 FCPs
    # per round trip in the steady state.  The first round went back to back; from the
    # second on, an ACK arrives during each packet, so every packet of the window is
    # preceded by an FCP: packet k of round 2 is k+1 FCPs later than in round 1, up to
    # W+1.  A periodic FCP (one per fc_period) may add one more at either end.
    fcp = ps(FCP_BYTES, SDR)
    late = (window + 1 + 2) * fcp
    steady = sorted(periods[window:])
    assert steady[len(steady) // 2] == rtt + 2 * fcp, (steady[len(steady) // 2], rtt)
    assert min(periods) >= rtt and max(periods) <= rtt + late, (min(periods), max(periods), rtt)
    # and in bytes/s over whole round trips: W·n / RTT
    m = len(periods) // window * window
    got = m * n * PS_PER_S / (starts[m] - starts[0])
    want = window * n * PS_PER_S / rtt
    assert want * rtt / (rtt + late) <= got <= want
    # one ACK (or request) per packet goes the other way
    assert {nb for _, nb in run.tap.frames(back_link)} == {back_len}
