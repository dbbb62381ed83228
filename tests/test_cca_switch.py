"""The switch side of the IBA CCA (ibemu.cc.cca.switch): Threshold detection, root vs
victim and Victim_Mask, Packet_Size, Marking_Rate spacing -- driven on a real Switch
by calling the marker's hooks with resident packets (Entry) we place ourselves."""
from __future__ import annotations

import statistics

import pytest
from test_switch import data_frame, make_switch

from ibemu.cc.cca.settings import PortSetting, SwitchSetting
from ibemu.cc.cca.switch import CCAMarker, threshold_blocks
from ibemu.fabric.xport import Entry

OUT, IN1, IN2, IN3 = 4, 1, 2, 3
CAP = 4 * 33                                    # input VL buffer: 4 packets of 33 blocks


def marker(setting=None, credits=2000, seed=1):
    sw = make_switch(4, cap_blocks=CAP, credits=credits)
    m = CCAMarker(sw, setting or SwitchSetting(), seed)
    sw.marker = m
    return sw, m


def entry(inp, blocks=33, eligible=100, data=True, payload=2048):
    return Entry(data_frame(9, payload=payload), inp, 0, OUT, 0, blocks, eligible, 0, data)


def depart(sw, m, e, now=100):
    """*e* starts on OUT at *now*; returns whether it left FECN-marked."""
    m.on_transmit(sw, e, now)
    return bool(e.frame[12] & 0x80)


def wait(sw, *entries):
    sw.queues[OUT][0][:] = list(entries)


@pytest.mark.parametrize("threshold,expected", [(1, 124), (8, 66), (12, 33), (15, 9)])
def test_threshold_mapping(threshold, expected):
    """ceil(C × (16 - Threshold) / 16) blocks of a C-block input buffer."""
    assert threshold_blocks(threshold, CAP) == expected
    assert threshold_blocks(0, CAP) is None


@pytest.mark.parametrize("threshold", [1, 4, 8, 12, 15])
def test_threshold_detection_at_the_boundary(threshold):
    thr = threshold_blocks(threshold, CAP)
    sw, m = marker(SwitchSetting(Threshold=threshold, Marking_Rate=0))
    wait(sw, entry(IN2, blocks=thr - 1))
    assert not depart(sw, m, entry(IN1))                  # just below: not congested
    wait(sw, entry(IN2, blocks=thr))
    assert depart(sw, m, entry(IN1))                      # at the threshold: marked
    assert sw.counters["FECN_marked:port4"] == 1


def test_threshold_zero_never_marks():
    sw, m = marker(SwitchSetting(Threshold=0))
    wait(sw, entry(IN2, blocks=CAP), entry(IN3, blocks=CAP))
    assert not depart(sw, m, entry(IN1))


def test_packets_still_arriving_do_not_count():
    sw, m = marker(SwitchSetting(Threshold=15))
    wait(sw, entry(IN2, eligible=500))                    # not yet forwardable at t=100
    assert not depart(sw, m, entry(IN1))


def test_waiting_behind_another_input_counts_but_not_behind_its_own():
    sw, m = marker(SwitchSetting(Threshold=15))
    assert not depart(sw, m, entry(IN1, eligible=100), now=100)
    assert depart(sw, m, entry(IN2, eligible=50), now=200)   # waited behind IN1's packet
    assert not depart(sw, m, entry(IN2, eligible=150), now=300)  # behind its own input's


def test_only_data_packets_are_marked():
    sw, m = marker()
    wait(sw, entry(IN2))
    assert not depart(sw, m, entry(IN1, data=False))


def test_already_marked_packet_is_not_eligible():
    sw, m = marker(SwitchSetting(Marking_Rate=1))
    e = entry(IN1)
    e.frame[12] |= 0x80
    wait(sw, entry(IN2))
    m.ports[OUT].countdown[0] = 0
    depart(sw, m, e)
    assert m.ports[OUT].countdown[0] == 0                 # not counted as an eligible packet
    assert "FECN_marked:port4" not in sw.counters


def test_packet_size_smaller_packets_not_marked():
    sw, m = marker(SwitchSetting(Packet_Size=8))          # 8 credits = 512 bytes
    wait(sw, entry(IN2))
    assert not depart(sw, m, entry(IN1, blocks=7, payload=256))
    assert depart(sw, m, entry(IN1, blocks=8, payload=480))


def test_victim_marks_only_with_its_victim_mask_bit():
    """No credits for the next waiting packet: the port is a victim of congestion
    further on; it marks only when its Victim_Mask bit is set."""
    for mask, marks in ((frozenset(), False), (frozenset({OUT}), True), (frozenset({2}), False)):
        sw, m = marker(SwitchSetting(Victim_Mask=mask), credits=None)   # no credit at all
        wait(sw, entry(IN2))
        assert depart(sw, m, entry(IN1)) == marks
        sw2, m2 = marker(SwitchSetting(Victim_Mask=mask))                # root: credits
        wait(sw2, entry(IN2))
        assert depart(sw2, m2, entry(IN1))


def test_victim_episode_lasts_until_the_backlog_drains():
    sw, m = marker(SwitchSetting(), credits=None)
    wait(sw, entry(IN2))
    assert not depart(sw, m, entry(IN1))                  # victim: no credits
    sw.ports[OUT].tx[0].update(2000)                      # a credit returns ...
    assert not depart(sw, m, entry(IN1))                  # ... same backlog: still a victim
    wait(sw)
    assert not depart(sw, m, entry(IN1))                  # backlog gone: episode over
    wait(sw, entry(IN2))
    assert depart(sw, m, entry(IN1))                      # a new episode, as root


def test_victim_episode_ends_when_the_backlog_of_the_credit_shortage_has_left():
    """A port that stays busy after the congestion beyond it cleared is a root again once
    the packets that were waiting when it found no credit have left (issue 31: a port
    kept full by its own flows stayed a victim for the rest of the run)."""
    sw, m = marker(SwitchSetting(), credits=None)
    backlog = entry(IN2)
    wait(sw, backlog)
    assert not depart(sw, m, entry(IN1))                  # victim: no credit for IN2's packet
    sw.ports[OUT].tx[0].update(2000)                      # credits flow again
    wait(sw, entry(IN3))                                  # IN2's packet leaves, IN3's waits behind it
    assert depart(sw, m, backlog)                         # the shortage's backlog is gone: a root
    wait(sw, entry(IN2))
    assert depart(sw, m, entry(IN3))                      # and stays one while credits flow


@pytest.mark.parametrize("rate", [1, 4, 16, 64])
def test_marking_rate_mean_gap_equals_the_setting(rate):
    sw, m = marker(SwitchSetting(Marking_Rate=rate), seed=7)
    wait(sw, entry(IN2))
    marks = [depart(sw, m, entry(IN1)) for _ in range(400 * (rate + 1))]
    idx = [i for i, x in enumerate(marks) if x]
    gaps = [b - a - 1 for a, b in zip(idx, idx[1:])]      # unmarked eligible packets between marks
    assert len(gaps) > 300
    assert statistics.mean(gaps) == pytest.approx(rate, rel=0.1)
    assert min(gaps) >= 0 and max(gaps) <= 2 * rate and len(set(gaps)) > 1   # spaced at random


def test_marking_rate_zero_marks_every_eligible_packet():
    sw, m = marker(SwitchSetting(Marking_Rate=0))
    wait(sw, entry(IN2))
    assert all(depart(sw, m, entry(IN1)) for _ in range(50))


def test_marking_is_deterministic_per_seed():
    def pattern(seed):
        sw, m = marker(SwitchSetting(Marking_Rate=8), seed=seed)
        wait(sw, entry(IN2))
        return [depart(sw, m, entry(IN1)) for _ in range(300)]
    assert pattern(3) == pattern(3)
    assert pattern(3) != pattern(4)


def test_per_port_settings_override_the_switch():
    setting = SwitchSetting(Threshold=15, Marking_Rate=0,
                            ports={OUT: PortSetting(Threshold=0), 3: PortSetting(Marking_Rate=9)})
    assert setting.port(OUT) == (0, 0, 0, False)
    assert setting.port(3) == (15, 9, 0, False)
    assert setting.port(2) == (15, 0, 0, False)
    sw, m = marker(setting)
    wait(sw, entry(IN2))
    assert not depart(sw, m, entry(IN1))                  # Threshold 0 on port 4


def test_set_changes_marking_rate_while_running():
    sw, m = marker(SwitchSetting(Marking_Rate=2048))
    wait(sw, entry(IN2))
    m.ports[OUT].set(marking_rate=0)
    assert all(depart(sw, m, entry(IN1)) for _ in range(10))


def test_port_xmit_time_cong_runs_while_the_port_is_congested_as_root():
    sw, m = marker()
    counters = sw.ports[OUT].pc
    wait(sw, entry(IN2))
    depart(sw, m, entry(IN1, eligible=1000), now=1000)   # congested from t = 1000
    depart(sw, m, entry(IN1, eligible=1500), now=1500)
    wait(sw)
    depart(sw, m, entry(IN1, eligible=4000), now=4000)   # no backlog: not congested
    assert counters.cong_ps(10_000) == 3000
    victim_sw, vm = marker(credits=None)
    wait(victim_sw, entry(IN2))
    depart(victim_sw, vm, entry(IN1))                     # a victim: not counted
    assert victim_sw.ports[OUT].pc.cong_ps(10_000) == 0
