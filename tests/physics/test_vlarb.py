"""VL arbitration shares: the IBA dual-priority weighted round robin at a switch output
(IBA 7.6.9; seed 004 "VL Arbitration", Figures 6 and 7) divides a saturated link among
backlogged VLs by the table's weights, and High priority is limited by the Limit of
High-Priority.

First principles.  Each flow is UD on its own SL (SL i -> VL i) from its own host into
D through switch S; every flow is greedy, so S's output to D is saturated and every VL
always has a packet ready.  Packets: 256-byte payload + LRH 8 + BTH 12 + DETH 8 +
ICRC 4 + VCRC 2 = 290 bytes (UD: no ACKs, so the output carries no per-packet
flow-control traffic either).

- A table entry (VL, w) may send while its remaining weight, w x 64 bytes, is
  positive; a packet larger than the remainder is still sent and ends the turn.  So an
  entry sends ceil(64 w / 290) packets per turn: w = 4 -> 1, w = 8 -> 2 (512 / 290 =
  1.77), w = 16 -> 4 (1024 / 290 = 3.53).  A VL's share is its packets per round of
  the table over the round's packets.
- High is served while it has packets and its counter has not reached the Limit of
  High-Priority, L x 4096 bytes (L = 255: no limit; L = 0: one packet); then Low sends
  one packet and the counter restarts.  High sends k packets per Low packet, k the
  smallest with 290 k >= 4096 L: L = 1 -> 15 (14 x 290 = 4060 < 4096), L = 2 -> 29
  (28 x 290 = 8120 < 8192), L = 0 -> 1.

Measured: each flow's packets delivered to D in a 300 us window (about 1034 packets at
4X SDR, 290 ns each).  Allowance: a window cuts a round, so a VL's count may differ from
share x total by at most one round's packets.
"""
from __future__ import annotations

import pytest

from ibemu.fabric.params import FlowSpec, HCAParams, SwitchParams, VLArbTable
from ibemu.units import PS_PER_US

from .harness import BASE, DETH, SDR, link, scenario, simulate

PAYLOAD = 256
N_BYTES = BASE + DETH + PAYLOAD                 # 290
T0, T1 = 100 * PS_PER_US, 400 * PS_PER_US


def per_turn(weight: int) -> int:
    return -(-64 * weight // N_BYTES)


def high_run(limit: int) -> int:
    """High packets sent before Low's turn under Limit of High-Priority *limit*."""
    budget = max(limit * 4096, 1)
    return -(-budget // N_BYTES)


def test_arithmetic():
    assert N_BYTES == 290
    assert (per_turn(4), per_turn(8), per_turn(16)) == (1, 2, 4)
    assert (high_run(0), high_run(1), high_run(2)) == (1, 15, 29)


def run_table(table: VLArbTable, vls: int, where: str = "switch"):
    """*where* = "switch": one host per VL into D through S, whose output arbitrates;
    "hca": one host sends every VL's flow to D over its own link, its HCA arbitrates
    (IBA: the same table at every port, CA ports included)."""
    if where == "switch":
        hosts = ["H%d" % v for v in range(vls)]
        links = [link(h, "S", SDR) for h in hosts] + [link("S", "D", SDR)]
        switches = ["S"]
        hca = HCAParams(mtu=PAYLOAD, data_vls=vls)
    else:
        hosts = ["H"] * vls
        links, switches = [link("H", "D", SDR)], []
        hca = HCAParams(mtu=PAYLOAD, data_vls=vls, vlarb=table)
    flows = [FlowSpec("vl%d" % v, h, "D", transport="ud", message_size=PAYLOAD, sl=v) for v, h in enumerate(hosts)]
    scn = scenario(links, flows, switches=switches, switch=SwitchParams(data_vls=vls, vlarb=table),
                   hca=hca, duration=T1)
    run = simulate(scn)
    counts = {}
    for v in range(vls):
        rx = [(t, n) for t, n, _ in run.tap.frx.get("vl%d" % v, ()) if T0 <= t < T1]
        assert all(n == PAYLOAD for _, n in rx)
        counts[v] = len(rx)
    return run, counts


def check_shares(counts: dict[int, int], per_round: dict[int, int]) -> None:
    total = sum(counts.values())
    rnd = sum(per_round.values())
    # saturated output: back to back 290-byte packets, less one at each edge
    assert total >= (T1 - T0) // (N_BYTES * 1000) - 2
    for vl, k in per_round.items():
        assert abs(counts[vl] - total * k / rnd) <= rnd, (vl, counts, per_round)


@pytest.mark.parametrize("where", ["switch", "hca"])
@pytest.mark.parametrize("low", [
    [(0, 8), (1, 4), (2, 16)],                  # 2 : 1 : 4
    [(0, 8), (1, 8), (0, 8), (2, 4)],           # a VL listed twice (seed 004 Figure 7 style): 4 : 2 : 1
    [(0, 4), (1, 4), (2, 4)],                   # equal weights: 1 : 1 : 1
])
def test_low_priority_weights(low, where):
    _, counts = run_table(VLArbTable(high=[], low=low), 3, where)
    per_round: dict[int, int] = {}
    for vl, w in low:
        per_round[vl] = per_round.get(vl, 0) + per_turn(w)
    check_shares(counts, per_round)


@pytest.mark.parametrize("where", ["switch", "hca"])
@pytest.mark.parametrize("limit", [0, 1, 2])
def test_limit_of_high_priority(limit, where):
    """High [(VL0, 1)], Low [(VL1, 255)]: VL0 sends high_run(limit) packets, VL1 one."""
    _, counts = run_table(VLArbTable(high=[(0, 1)], low=[(1, 255)], limit_of_high_priority=limit), 2, where)
    check_shares(counts, {0: high_run(limit), 1: 1})


def test_unlimited_high_priority_starves_low():
    """Limit 255: High never yields while it has packets; two High VLs of weight 1 (64
    bytes: one packet a turn) alternate, Low gets nothing."""
    _, counts = run_table(VLArbTable(high=[(0, 1), (1, 1)], low=[(2, 255)], limit_of_high_priority=255), 3)
    assert counts[2] == 0
    check_shares(counts, {0: 1, 1: 1, 2: 0})
