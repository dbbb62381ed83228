"""DCMS Algorithms 2 and 3 (seed 002 §3.2) on synthetic counter readings, on the
testbed of seed 002 Figure 2: X, A on S1; B, C, D, Y on S2; S1:15 <-> S2:20."""
from __future__ import annotations

from ibemu.cc.dcms.algorithm import DCMS, DCMSParams

N = {("S1", 11): ("X", 1, True), ("S1", 12): ("A", 1, True), ("S1", 15): ("S2", 20, False),
     ("S2", 20): ("S1", 15, False), ("S2", 21): ("B", 1, True), ("S2", 22): ("C", 1, True),
     ("S2", 23): ("D", 1, True), ("S2", 24): ("Y", 1, True)}
ROOT, VICTIM = ("S2", 23), ("S1", 15)
P = DCMSParams(tau=1, T_C=8e6, T_W=27.4e6, T_D=0.5e8, T_I=3, low=0, default=128)


class Feed:
    """Running counter totals; each step adds per-sweep increments (W, C, D) per port."""

    def __init__(self, dcms):
        self.dcms = dcms
        self.tot = {p: [0, 0, 0] for p in dcms.neighbour}
        self.dcms.sweep({p: tuple(v) for p, v in self.tot.items()})

    def step(self, **inc):
        for key, (dw, dc, dd) in inc.items():
            p = ROOT if key == "root" else VICTIM if key == "victim" else (key.split("_")[0], int(key.split("_")[1]))
            t = self.tot[p]
            t[0] += dw
            t[1] += dc
            t[2] += dd
        return [(d.port, d.marking_rate) for d in self.dcms.sweep({p: tuple(v) for p, v in self.tot.items()})]


def test_localized_congestion_leaves_marking_rate_default():
    f = Feed(DCMS(P, N))
    for _ in range(5):       # B-D + C-D: root congested, the inter-switch port not waiting
        assert f.step(root=(0, 6e6 * 2, 0), victim=(0, 0, 2.7e8)) == []
    assert f.dcms.marking_rate(ROOT) == 128


def test_congested_root_with_victim_goes_low_and_stays_while_victim_recovers():
    f = Feed(DCMS(P, N))
    assert f.step(root=(0, 9e6, 0), victim=(2.8e7, 0, 1.8e8)) == [(ROOT, 0)]
    assert f.dcms.state[ROOT].victims == {VICTIM}
    assert f.step(root=(0, 1e6, 0), victim=(0, 0, 3.1e8)) == []          # utilisation rises: I = 2
    assert f.dcms.marking_rate(ROOT) == 0
    # I reaches T_I = 3 at the second sweep after the change: back to Default
    assert f.step(root=(0, 0, 0), victim=(0, 0, 3.1e8)) == [(ROOT, 128)]


def test_victim_utilisation_drop_removes_it_and_restores_default():
    f = Feed(DCMS(P, N))
    assert f.step(root=(0, 9e6, 0), victim=(2.8e7, 0, 1.8e8)) == [(ROOT, 0)]
    assert f.step(root=(0, 0, 0), victim=(0, 0, 1.7e8)) == []            # dropped by 0.1e8 < T_D
    assert f.step(root=(0, 0, 0), victim=(0, 0, 0.9e8)) == [(ROOT, 128)]  # dropped by 0.8e8 > T_D
    assert f.dcms.state[ROOT].victims == set()


def test_second_cycle_when_victim_still_suffers_after_T_I():
    f = Feed(DCMS(P, N))
    assert f.step(root=(0, 9e6, 0), victim=(2.8e7, 0, 1.8e8)) == [(ROOT, 0)]
    assert f.step(victim=(0, 0, 3e8)) == []
    assert f.step(victim=(0, 0, 3e8)) == [(ROOT, 128)]
    # Default again: congestion and the victim's waiting return; DCMS lowers it again
    assert f.step(root=(0, 9e6, 0), victim=(2.8e7, 0, 1.8e8)) == [(ROOT, 0)]


def test_host_facing_port_is_congested_by_wait_alone_and_victims_need_wait():
    f = Feed(DCMS(P, N))
    assert f.step(root=(3e7, 0, 0), victim=(1e7, 0, 0)) == []            # victim below T_W
    assert f.step(root=(3e7, 0, 0), victim=(3e7, 0, 0)) == [(ROOT, 0)]
    # a switch-facing port is not congested by ΔW alone
    f2 = Feed(DCMS(P, N))
    assert f2.step(S2_20=(5e7, 0, 0), victim=(3e7, 0, 0)) == []


def test_low_is_sent_once_for_several_victims():
    n = dict(N)
    n[("S3", 1)] = ("S2", 25, False)
    f = Feed(DCMS(P, n))
    assert f.step(root=(0, 9e6, 0), victim=(3e7, 0, 0), S3_1=(3e7, 0, 0)) == [(ROOT, 0)]
    assert f.dcms.state[ROOT].victims == {VICTIM, ("S3", 1)}
