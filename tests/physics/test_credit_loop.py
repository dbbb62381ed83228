"""Credit-limited throughput over long links: when the round trip of a credit is longer
than the time to send the receiver's whole buffer, a sender sends one buffer per round
trip -- throughput = buffer / RTT -- for a switch's input buffer and for an HCA's
receive buffer.

First principles (IBA 7.9.4 credits of 64-byte blocks; a packet of n bytes holds
ceil(n / 64) blocks).  A buffer of B bytes is B // 64 blocks and holds
N = floor((B // 64) / ceil(n / 64)) packets of n bytes; a sender never has more than N
of them unacknowledged by credit.  A flow-control packet returns the credit of a
packet the moment its buffer space is freed, and takes the link's propagation p to get
back.  With T = n / r:

- HCA receive buffer, sender -- (p) -- HCA: the HCA frees a packet when its last byte is
  in, p + T after the sender started it; the credit is back p later: RTT = 2p + T;
- switch input buffer, sender -- (p) -- switch -- (short) -- sink: the switch frees the
  packet when its last byte has left, cut-through d + T after its first byte came
  in (RTT = 2p + d + T), store-and-forward T + d + T after (RTT = 2p + 2T + d).

When N·T < RTT the sender sends N packets back to back, then waits: packet i + N starts
exactly one RTT after packet i, and throughput = N·n / RTT.  The flows are UD (no ACKs
share the links).  Allowance: if the flow-control packet occupies its link for its 6
bytes (the lead's change), a credit comes back up to 6 bytes' time later: the period
may exceed RTT by that, never fall below it.
"""
from __future__ import annotations

import functools

import pytest

from ibemu.fabric.params import FlowSpec, HCAParams, SwitchParams
from ibemu.units import PS_PER_S, PS_PER_US

from .harness import BASE, DETH, FCP_BYTES, FORWARDING_DELAY, QDR, SDR, blocks, link, ps, scenario, simulate

PROP = 10 * PS_PER_US               # 10 us: about 2 km of fibre
DURATION = 400 * PS_PER_US
N_BYTES = BASE + DETH + 2048        # a UD SEND packet of 2048 bytes: 2082 bytes, 33 blocks
RATES = {"sdr": SDR, "qdr": QDR}


def packets_in(buffer_bytes: int) -> int:
    return (buffer_bytes // 64) // blocks(N_BYTES)


def check_periodic(starts: list[int], n: int, rtt: float, rate: int) -> None:
    """Packet i + n starts one RTT after packet i (up to one flow-control packet late),
    and the sender does send n back to back (the credit, not the link, limits it)."""
    assert n * ps(N_BYTES, rate) < rtt          # the credit-limited condition
    late = ps(FCP_BYTES, rate)
    periods = [b - a for a, b in zip(starts, starts[n:])]
    assert len(periods) > 5 * n
    assert min(periods) >= rtt, "a credit came back before its round trip"
    assert max(periods) <= rtt + late, "period %d ps, RTT %d ps" % (max(periods), rtt)
    # steady state: the throughput over whole periods is n packets per RTT
    m = len(periods) // n * n
    span = starts[m] - starts[0]
    got = m * N_BYTES * PS_PER_S / span
    want = n * N_BYTES * PS_PER_S / rtt
    assert want * rtt / (rtt + late) <= got <= want


@functools.cache
def hca_loop(rate: str, buffer_bytes: int):
    r = RATES[rate]
    flow = FlowSpec("f", "A", "B", transport="ud", message_size=2048)
    scn = scenario([link("A", "B", r, PROP)], [flow],
                   hca_params={"B": HCAParams(buffer_bytes=buffer_bytes)}, duration=DURATION)
    return simulate(scn)


@functools.cache
def switch_loop(rate: str, buffer_bytes: int, cut_through: bool):
    r = RATES[rate]
    flow = FlowSpec("f", "A", "B", transport="ud", message_size=2048)
    scn = scenario([link("A", "S", r, PROP), link("S", "B", r)], [flow], switches=["S"],
                   switch=SwitchParams(buffer_bytes=buffer_bytes, cut_through=cut_through), duration=DURATION)
    return simulate(scn)


def test_buffer_arithmetic():
    """8000 bytes = 125 blocks = 3 packets of 33 blocks (26 blocks unused); 8448 bytes
    (the default 4 packets of the largest 2090-byte frame: 4 x 33 blocks) = 4."""
    assert blocks(N_BYTES) == 33 and packets_in(8000) == 3 and packets_in(8448) == 4
    assert packets_in(16 * 1024) == 7           # 256 blocks // 33


@pytest.mark.parametrize("buffer_bytes", [8000, 16 * 1024])
@pytest.mark.parametrize("rate", RATES)
def test_hca_receive_buffer(rate, buffer_bytes):
    """RTT = 2p + T: at SDR 20 us + 2.082 us; 3 packets per RTT = 0.2829 of the link."""
    r = RATES[rate]
    run = hca_loop(rate, buffer_bytes)
    starts = [t for t, _ in run.tap.data_frames("A->B")]
    rtt = 2 * PROP + ps(N_BYTES, r)
    check_periodic(starts, packets_in(buffer_bytes), rtt, r)


@pytest.mark.parametrize("mode", ["cut-through", "store-and-forward"])
@pytest.mark.parametrize("buffer_bytes", [8000, 16 * 1024])
@pytest.mark.parametrize("rate", RATES)
def test_switch_input_buffer(rate, buffer_bytes, mode):
    """RTT = 2p + d + T (cut-through) or 2p + 2T + d (store-and-forward)."""
    r = RATES[rate]
    ct = mode == "cut-through"
    run = switch_loop(rate, buffer_bytes, ct)
    starts = [t for t, _ in run.tap.data_frames("A->S")]
    tx = ps(N_BYTES, r)
    rtt = 2 * PROP + FORWARDING_DELAY + (tx if ct else 2 * tx)
    check_periodic(starts, packets_in(buffer_bytes), rtt, r)
    # the short link to the sink is no bottleneck: every packet passed on at once (all
    # but those still on the long link, or in the switch, when the run stopped)
    done = [t for t in starts if t + PROP + FORWARDING_DELAY + (0 if ct else tx) < DURATION]
    assert len(run.tap.data_frames("S->B")) == len(done)
