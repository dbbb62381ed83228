"""Max-min fair shares: greedy flows through FIFO switches get the max-min fair
allocation of the link capacities -- N flows into one link get 1/N each; a flow
limited elsewhere (by a static rate, by a slower link of its own, by another shared
link) keeps that rate and the others split the remainder.

First principles: max-min fairness by progressive filling (Bertsekas & Gallager,
"Data Networks", §6.5.2): raise every flow's rate together; when a link is full, its
flows are frozen at their rate; repeat with the rest.  Computed below
(:func:`max_min`) from the link capacities and the flows' routes -- nothing taken from
ibemu.  Capacities: 4X SDR 1e9 B/s, 1X SDR 2.5e8 B/s; a static rate limit is a private
link of that capacity.

Measured: each flow's data packets as its source started them, in wire bytes (payload
+ 26 bytes of LRH, BTH, ICRC and VCRC per RC SEND packet), over a 1 ms window; where a
host has one flow, also its source link's data frames (their lengths as the link
reports them).  Allowances, derived: (1) the links also carry 6-byte
flow-control packets, at most one per 2074-byte packet (0.29 %, tests/physics/README.md),
so a link's data capacity lies between 0.997 r and r: the expectation is the allocation
with capacities 0.997 r and with r, and each flow must lie between the two;
(2) FIFO service in arrival order gives the backlogged inputs one packet each per
round, so over a window a flow's count differs from its share by at most one packet at
each edge: +-2 packets (2 x 2074 bytes) per window.
"""
from __future__ import annotations

import pytest

from ibemu.fabric.params import FlowSpec, SwitchParams
from ibemu.units import PS_PER_S, PS_PER_US

from .harness import BASE, DDR, SDR, SDR_1X, link, scenario, simulate

T0, T1 = 200 * PS_PER_US, 1200 * PS_PER_US
N_BYTES = BASE + 2048
TOLERANCE = 2 * N_BYTES * PS_PER_S / (T1 - T0)      # bytes/s: +-2 packets per window
FC_ALLOWANCE = 0.003


def max_min(capacity: dict[str, float], routes: dict[str, list[str]]) -> dict[str, float]:
    """Progressive filling: the max-min fair rate of every flow."""
    rate = dict.fromkeys(routes, 0.0)
    active = set(routes)
    left = dict(capacity)
    while active:
        # the increment every active flow can take before some link is full
        inc = min(left[l] / sum(1 for f in active if l in routes[f])
                  for l in capacity if any(l in routes[f] for f in active))
        for f in active:
            rate[f] += inc
        for l in capacity:
            left[l] -= inc * sum(1 for f in active if l in routes[f])
        full = {l for l in capacity if left[l] <= 1e-9 * capacity[l]}
        active = {f for f in active if not full.intersection(routes[f])}
    return rate


def test_max_min_by_hand():
    """The water-filling on the textbook cases: 3 flows on one link get 1/3 each; a
    flow capped at 0.1 leaves 0.9 to the 3 others (0.3 each); the parking lot below."""
    assert max_min({"L": 1.0}, {"a": ["L"], "b": ["L"], "c": ["L"]}) == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})
    got = max_min({"L": 1.0, "cap": 0.1}, {"a": ["cap", "L"], "b": ["L"], "c": ["L"], "d": ["L"]})
    assert got == pytest.approx({"a": 0.1, "b": 0.3, "c": 0.3, "d": 0.3})
    got = max_min({"X": 1.0, "Y": 1.0}, {"f1": ["X", "Y"], "f2": ["X"], "f3": ["X"], "g": ["Y"]})
    assert got == pytest.approx({"f1": 1 / 3, "f2": 1 / 3, "f3": 1 / 3, "g": 2 / 3})


def star(sources: dict[str, int], limits: dict[str, float] | None = None, cut_through: bool = True,
         ipds: dict[str, int] | None = None, sink: int = SDR):
    """Hosts (name -> link rate) each with one greedy flow into D through switch S.
    *limits*: static rates (bytes/s); *ipds*: static inter-packet delays -- IBA static
    rate control, rate R / (IPD + 1) (seed 004 "static rate control"), a private link of
    that capacity."""
    limits = dict(limits or {})
    ipds = ipds or {}
    links = [link(h, "S", r) for h, r in sources.items()] + [link("S", "D", sink)]
    flows = [FlowSpec("f_" + h, h, "D", rate=limits.get(h), ipd=ipds.get(h)) for h in sources]
    for h, ipd in ipds.items():
        limits[h] = sources[h] / (ipd + 1)
    routes = {"f_" + h: ["%s->S" % h, "S->D"] + (["cap_" + h] if h in limits else []) for h in sources}
    capacity = {"%s->S" % h: float(r) for h, r in sources.items()} | {"S->D": float(sink)}
    capacity |= {"cap_" + h: float(v) for h, v in limits.items()}
    scn = scenario(links, flows, switches=["S"], switch=SwitchParams(cut_through=cut_through), duration=T1)
    measured = {"f_" + h: "%s->S" % h for h in sources}
    return scn, capacity, routes, measured


def parking_lot():
    """A1, A2, A3 -> S1 -> S2 (link X) -> D1, D2, D3; B -> S2 -> D1 (link Y).  X is
    shared by f1, f2, f3 (1/3 each); Y by f1 (held to 1/3 by X) and g, which takes the
    remaining 2/3."""
    links = [link("A1", "S1"), link("A2", "S1"), link("A3", "S1"), link("S1", "S2"), link("B", "S2"),
             link("S2", "D1"), link("S2", "D2"), link("S2", "D3")]
    flows = [FlowSpec("f1", "A1", "D1"), FlowSpec("f2", "A2", "D2"), FlowSpec("f3", "A3", "D3"),
             FlowSpec("g", "B", "D1")]
    routes = {"f1": ["A1->S1", "S1->S2", "S2->D1"], "f2": ["A2->S1", "S1->S2", "S2->D2"],
              "f3": ["A3->S1", "S1->S2", "S2->D3"], "g": ["B->S2", "S2->D1"]}
    capacity = {l: float(SDR) for r in routes.values() for l in r}
    scn = scenario(links, flows, switches=["S1", "S2"], duration=T1)
    measured = {"f1": "A1->S1", "f2": "A2->S1", "f3": "A3->S1", "g": "B->S2"}
    return scn, capacity, routes, measured


def one_host_three_qps():
    """H1 runs three QPs (to D1, D2, D3) -- its link is their bottleneck, 1/3 each, the
    HCA serving its QPs in turn; H2 -> D1 shares S -> D1 with H1's first and takes the
    remaining 2/3."""
    links = [link("H1", "S"), link("H2", "S"), link("S", "D1"), link("S", "D2"), link("S", "D3")]
    flows = [FlowSpec("a", "H1", "D1"), FlowSpec("b", "H1", "D2"), FlowSpec("c", "H1", "D3"),
             FlowSpec("g", "H2", "D1")]
    routes = {"a": ["H1->S", "S->D1"], "b": ["H1->S", "S->D2"], "c": ["H1->S", "S->D3"], "g": ["H2->S", "S->D1"]}
    capacity = {l: float(SDR) for r in routes.values() for l in r}
    scn = scenario(links, flows, switches=["S"], duration=T1)
    return scn, capacity, routes, {"g": "H2->S"}


CASES = {
    "2-into-1": lambda: star({"H1": SDR, "H2": SDR}),
    "3-into-1": lambda: star({"H1": SDR, "H2": SDR, "H3": SDR}),
    "5-into-1": lambda: star({"H%d" % i: SDR for i in range(1, 6)}),
    # one flow held to 1e8 B/s by a static rate limit (FlowSpec.rate), three greedy
    "rate-limited": lambda: star({"H%d" % i: SDR for i in range(1, 5)}, limits={"H1": 1e8}),
    # one flow at IPD 3: a quarter of its link; the other two split 0.75 (0.375 each)
    "ipd-limited": lambda: star({"H1": SDR, "H2": SDR, "H3": SDR}, ipds={"H1": 3}),
    # one flow from a 1X SDR host (2.5e8 B/s): the others split 7.5e8
    "slow-source-store-and-forward": lambda: star({"H1": SDR_1X, "H2": SDR, "H3": SDR}, cut_through=False),
    "slow-source-cut-through": lambda: star({"H1": SDR_1X, "H2": SDR, "H3": SDR}),
    # three SDR hosts into a DDR link (2e9 B/s): 2e9 / 3 = 6.67e8 each, below their own 1e9
    "3-sdr-into-ddr-cut-through": lambda: star({"H1": SDR, "H2": SDR, "H3": SDR}, sink=DDR),
    "3-sdr-into-ddr-store-and-forward": lambda: star({"H1": SDR, "H2": SDR, "H3": SDR}, sink=DDR,
                                                     cut_through=False),
    # two SDR hosts into a DDR link: the DDR link has room for both, each is held by its own link
    "2-sdr-into-ddr": lambda: star({"H1": SDR, "H2": SDR}, sink=DDR),
    "parking-lot": parking_lot,
    "one-host-three-qps": one_host_three_qps,
}


@pytest.mark.parametrize("case", CASES)
def test_max_min_fair_shares(case):
    scn, capacity, routes, measured = CASES[case]()
    run = simulate(scn)
    high = max_min(capacity, routes)
    low = max_min({l: c * (1 - FC_ALLOWANCE) for l, c in capacity.items()}, routes)
    for flow in routes:
        got = sum(n + BASE for t, n in run.tap.ftx[flow] if T0 <= t < T1) * PS_PER_S / (T1 - T0)
        assert low[flow] - TOLERANCE <= got <= high[flow] + TOLERANCE, \
            "%s: %.4g B/s, max-min share %.4g..%.4g" % (flow, got, low[flow], high[flow])
        if flow in measured:                    # the only flow on its source link: the same on the wire
            assert run.tap.wire_rate(measured[flow], T0, T1) == got
