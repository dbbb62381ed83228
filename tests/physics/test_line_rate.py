"""Line rate for every operation: one greedy flow of RC SEND, RDMA WRITE, RDMA READ or
UD SEND through one cut-through switch fills its links with its packets back to back.

First principles.  A 4X SDR link carries 1e9 bytes/s (4 lanes x 2.5 Gb/s x 8/10), 4X
QDR 4e9.  Frame lengths with a 2048-byte MTU (IBA ch. 9; LRH 8 + BTH 12 + ICRC 4 +
VCRC 2 = 26 in every packet):

- RC SEND: 26 + 2048 = 2074 bytes;
- RDMA WRITE: first packet 26 + RETH 16 + 2048 = 2090, middle and last 2074;
- RDMA READ response: first and last 26 + AETH 4 + 2048 = 2078, middle 2074 (the
  request, 26 + RETH 16 = 42 bytes, goes the other way);
- UD SEND: 26 + DETH 8 + 2048 = 2082.

Throughput is counted in wire bytes of the data packets (the frame lengths the links
report), not from ibemu's normalised figures.  Allowance: the link also carries link
flow-control packets of 6 bytes; a node sends at most one per packet it frees, and the
sender of an RC flow frees one ACK per data packet, so the data link can lose at most
6 / (2074 + 6) = 0.29 % to them (the periodic ones, one per VL per 262 us, add 6 bytes
in 262,144 -- nothing).  So the data packets must fill at least 1 - 0.003 of the link
over the window, less one frame for the window's edges, and at most the link plus one
frame.
"""
from __future__ import annotations

import functools

import pytest

from ibemu.fabric.params import FlowSpec
from ibemu.units import PS_PER_S, PS_PER_US

from .harness import AETH, BASE, DETH, QDR, RETH, SDR, link, scenario, simulate

MTU = 2048
T0, T1 = 100 * PS_PER_US, 600 * PS_PER_US      # the measuring window (the flow runs from 0)
ALLOWANCE = 0.003                              # 6 / 2080 = 0.288 % < 0.3 %

OPS = {   # op -> (transport, op, message size, the frame lengths its data packets may have)
    "send": ("rc", "send", 64 * 1024, {BASE + MTU}),
    "write": ("rc", "write", 64 * 1024, {BASE + RETH + MTU, BASE + MTU}),
    "read": ("rc", "read", 64 * 1024, {BASE + AETH + MTU, BASE + MTU}),
    "ud": ("ud", "send", MTU, {BASE + DETH + MTU}),
}
RATES = {"sdr": SDR, "qdr": QDR}


@functools.cache
def greedy(op: str, rate: str):
    transport, verb, size, _ = OPS[op]
    flow = FlowSpec("f", "A", "B", transport=transport, op=verb, message_size=size)
    r = RATES[rate]
    scn = scenario([link("A", "S", r), link("S", "B", r)], [flow], switches=["S"], duration=T1)
    return simulate(scn)


def data_links(op: str) -> list[str]:
    """The directed links the data packets cross: READ responses flow from B back to A."""
    return ["B->S", "S->A"] if op == "read" else ["A->S", "S->B"]


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("op", OPS)
def test_frame_lengths(op, rate):
    run = greedy(op, rate)
    for label in data_links(op):
        lengths = {n for _, n in run.tap.data_frames(label)}
        assert lengths == OPS[op][3], label


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("op", OPS)
def test_data_packets_fill_the_link(op, rate):
    run = greedy(op, rate)
    r = RATES[rate]
    window = T1 - T0
    edge = max(OPS[op][3]) * PS_PER_S / window          # one frame at the window's edge, in bytes/s
    for label in data_links(op):
        got = run.tap.wire_rate(label, T0, T1)
        assert got >= (1 - ALLOWANCE) * r - edge, "%s: %.5f of the link" % (label, got / r)
        assert got <= r + edge, "%s: %.5f of the link" % (label, got / r)


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("op", OPS)
def test_goodput_from_payload(op, rate):
    """The destination's in-order payload, scaled by packet length / payload (worked
    out here for the packet mix), gives the same line rate: payload P per packet of
    P + h bytes, so wire = payload x (P + h) / P.  SEND: (2048 + 26) / 2048; UD:
    (2048 + 34) / 2048; WRITE of 64 KiB = 32 packets: (32 x 2074 + 16) / 65536;
    READ of 64 KiB: (32 x 2074 + 2 x 4) / 65536."""
    run = greedy(op, rate)
    r = RATES[rate]
    per_payload = {"send": (MTU + BASE) / MTU, "ud": (MTU + BASE + DETH) / MTU,
                   "write": (32 * (MTU + BASE) + RETH) / (32 * MTU),
                   "read": (32 * (MTU + BASE) + 2 * AETH) / (32 * MTU)}[op]
    window = T1 - T0
    wire = run.tap.rx_bytes("f", T0, T1) * per_payload * PS_PER_S / window
    edge = 2 * max(OPS[op][3]) * PS_PER_S / window   # a packet and a header at each edge
    assert (1 - ALLOWANCE) * r - edge <= wire <= r + edge, "%.5f of the link" % (wire / r)
