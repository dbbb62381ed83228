"""IBA congestion control at the source (annex A10; REFERENCE.md "IBA Congestion
Control Annex"; seed 002 §1): a source at CCTI k sends at the rate the CCT entry k
gives, and CCTI_Timer brings the CCTI down by one every CCTI_Timer x 1.024 us.

First principles.

- CCT entry (CCT_Shift s, CCT_Multiplier m): injection delay IPD = (Tp >> s) x m,
  Tp the time of a maximum-size packet on the source's link (Linux hfi1
  set_link_ipg: "(Tp >> shift) * mult").  With a 2048-byte MTU, Tp = (2048 + 26) / r:
  2.074 us at 4X SDR, 0.5185 us at 4X QDR.  A packet of time T is followed by the next
  no sooner than T + IPD after its start, so a greedy source sends n-byte packets at
  n / (T + IPD).  Tp >> s is taken in whole picoseconds (ibemu's time unit), so IPD may
  fall short of Tp x m / 2^s by less than m ps.
- CCTI_Timer: on expiry every CCTI of the SL above CCTI_Min drops by one and the timer
  re-arms while one is above; it runs freely (a BECN does not restart it).  So after
  the last increase the CCTI steps down by exactly one every CCTI_Timer x 1.024 us --
  the first step at most one period after the increase -- until CCTI_Min, and stays.
- A CCTI starts at the SL's CCTI_Min: pinning CCTI_Min = k holds a source at CCTI k
  with no congestion needed.
"""
from __future__ import annotations

import pytest

from ibemu.cc.cca.settings import CASetting, CCASpec, SLSetting, SwitchSetting, default_cct
from ibemu.cc.registry import CCSpec
from ibemu.fabric.params import FlowSpec
from ibemu.units import PS_PER_NS, PS_PER_S, PS_PER_US

from .harness import BASE, DETH, FCP_BYTES, QDR, SDR, link, ps, scenario, simulate

MTU = 2048
TIMER_UNIT = 1024 * PS_PER_NS                   # CCTI_Timer counts 1.024 us (an int: the compiled core takes int ps)
CCT = [(0, 0), (0, 1), (1, 3), (2, 5), (3, 100), (1, 20)]
RATES = {"sdr": SDR, "qdr": QDR}


def cca(ca: CASetting, switch: SwitchSetting | None = None) -> CCSpec:
    return CCSpec("cca", {"cca": CCASpec(switch=switch or SwitchSetting(), ca=ca)})


def expected_ipd(entry: tuple[int, int], rate: int) -> float:
    shift, mult = entry
    tp = ps(MTU + BASE, rate)                   # max packet time: a 2048-byte SEND packet
    return tp / 2 ** shift * mult


@pytest.mark.parametrize("transport", ["ud", "rc"])
@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("ccti", range(1, len(CCT)))
def test_source_at_ccti_k_sends_at_the_tables_rate(ccti, rate, transport):
    r = RATES[rate]
    ca = CASetting(CCT=CCT, sl=[SLSetting(CCTI_Min=ccti) for _ in range(16)])
    flow = FlowSpec("f", "A", "B", transport=transport, message_size=MTU)
    scn = scenario([link("A", "B", r)], [flow], cc=cca(ca), duration=400 * PS_PER_US)
    run = simulate(scn)
    n = MTU + BASE + (DETH if transport == "ud" else 0)       # UD 2082 bytes, RC SEND 2074
    ipd = expected_ipd(CCT[ccti], r)
    want_gap = ps(n, r) + ipd
    starts = [t for t, nb in run.tap.data_frames("A->B")]
    assert {nb for _, nb in run.tap.data_frames("A->B")} == {n}
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert len(gaps) >= 10
    # truncation of Tp >> s to whole ps: at most m ps short; an RC source's link also
    # carries its credit returns for the ACKs (6 bytes each), which may push one packet
    late = ps(FCP_BYTES, r) if transport == "rc" else 0
    assert min(gaps) >= want_gap - CCT[ccti][1] and max(gaps) <= want_gap + late, (min(gaps), max(gaps), want_gap)
    # the rate: n / (T + IPD)
    got = len(gaps) * n * PS_PER_S / (starts[-1] - starts[0])
    assert got == pytest.approx(n * PS_PER_S / want_gap, rel=2e-3)


@pytest.mark.parametrize("timer", [10, 30])
def test_ccti_timer_decay(timer):
    """Three greedy flows into one link under CCA (Threshold 15, Marking_Rate 0: mark
    every eligible packet; CCTI_Increase 4; default CCT: entry i = (2, i), IPD = i x
    Tp / 4).  Two stop at 300 us; after the last increase of f1's CCTI (no more marks
    once the congestion is gone) it falls by one every CCTI_Timer x 1.024 us to 0.  In
    each step f1 sends at the rate of its CCTI: start-to-start gap T + i x Tp / 4."""
    period = timer * TIMER_UNIT
    ca = CASetting(sl=[SLSetting(CCTI_Timer=timer, CCTI_Increase=4) for _ in range(16)])
    stop = 300 * PS_PER_US
    flows = [FlowSpec("f1", "H1", "D"), FlowSpec("f2", "H2", "D", stop=stop), FlowSpec("f3", "H3", "D", stop=stop)]
    links = [link("H1", "S"), link("H2", "S"), link("H3", "S"), link("S", "D")]
    duration = stop + 25 * period + 200 * PS_PER_US
    run = simulate(scenario(links, flows, switches=["S"], duration=duration,
                            cc=cca(ca, SwitchSetting(Threshold=15, Marking_Rate=0))))
    trace = run.tap.traces[("CCTI", "f1")]
    ups = [i for i in range(1, len(trace)) if trace[i][1] > trace[i - 1][1]]
    last_up = ups[-1]
    t_up, top = trace[last_up]
    assert top >= 8                             # congestion raised it
    decay = trace[last_up + 1:]
    assert [v for _, v in decay] == list(range(int(top) - 1, -1, -1))   # one by one, down to CCTI_Min 0
    times = [t_up] + [t for t, _ in decay]
    assert 0 < times[1] - times[0] <= period    # free-running: the first step within a period
    assert all(b - a == period for a, b in zip(times[1:], times[2:]))
    # the rate follows the CCTI step by step
    cct = default_cct()
    tp = ps(MTU + BASE, SDR)
    starts = [t for t, _ in run.tap.data_frames("H1->S") if t >= t_up]
    checked = 0
    for a, b in zip(starts, starts[1:]):
        ccti = [v for t, v in [(t_up, top)] + decay if t <= a][-1]     # the CCTI when a was sent
        if ccti == 0:
            break
        want = tp + (tp / 4) * cct[int(ccti)][1]
        assert want - cct[int(ccti)][1] <= b - a <= want + ps(FCP_BYTES, SDR), (a, ccti, b - a, want)
        checked += 1
    assert checked >= top
