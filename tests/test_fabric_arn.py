"""Adaptive routing notifications (ibemu.fabric.arn; issue 31): the trigger, the marks,
the link packet that carries them, the nodes that heed or ignore them, and what they do
on a CI-size fat tree."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.errors import UserError
from ibemu.fabric.arn import ARN_HOLD, Marks, Notifier
from ibemu.fabric.hca import HCA
from ibemu.fabric.switch import Switch
from ibemu.run import run_virtual
from ibemu.scenario import scenario_from_dict
from ibemu.studies.adaptive import SPEEDUP
from ibemu.wire.linkpkt import (ARN_VL, OP_ARN, build_arn, get_arn_dlid, get_link_op, get_link_vl,
                                link_crc_ok)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_adaptive import fat_tree  # noqa: E402


@pytest.mark.parametrize("dlid", [0, 1, 15, 16, 0x1234, 0xBFFF, 0xFFFF])
def test_an_arn_carries_its_dlid_on_vl15_with_a_good_lpcrc(dlid):
    frame = build_arn(dlid)
    assert len(frame) == 6 and link_crc_ok(frame)
    assert get_link_op(frame) == OP_ARN and get_link_vl(frame) == ARN_VL == 15
    assert get_arn_dlid(frame) == dlid


def test_summaries_and_the_scapy_layer_name_an_arn_and_its_dlid():
    from ibemu.layers import IBLink
    from ibemu.wire.summary import summarize
    frame = build_arn(649)
    assert summarize(frame, True) == "LINK arn DLID=649"
    pkt = IBLink(frame)
    assert pkt.op == OP_ARN and pkt.arn_dlid() == 649 and pkt.mysummary() == "LINK arn DLID=649"


def test_the_trigger_counts_bytes_ahead_and_waits_a_hold_per_input_and_dlid():
    n = Notifier(threshold=1, hold=1000, mtu=2048)
    assert not n.due(1, 7, 2047, 0)             # less than a full packet's bytes ahead (an ACK or two)
    assert n.due(1, 7, 2048, 0)                 # a full packet ahead
    assert not n.due(1, 7, 9000, 999)           # within the hold: not again for that input and DLID ...
    assert n.due(2, 7, 9000, 999) and n.due(1, 8, 9000, 999)     # ... but for another input or DLID
    assert n.due(1, 7, 9000, 1000)              # the hold is over
    assert Notifier(threshold=2, mtu=2048).ahead == 4096
    with pytest.raises(ValueError):
        Notifier(threshold=0)
    with pytest.raises(ValueError):
        Notifier(hold=0)


def test_marked_ports_are_avoided_for_their_dlid_until_the_hold_ends_unless_all_are():
    m = Marks(hold=1000)
    assert m.usable([5, 6, 7], 9, 0) == [5, 6, 7]
    m.notified(6, 9, 100)
    assert m.usable([5, 6, 7], 9, 500) == [5, 7]
    assert m.usable([5, 6, 7], 10, 500) == [5, 6, 7]        # another DLID: not marked
    assert m.usable([5, 6, 7], 9, 1100) == [5, 6, 7]        # the hold ended at 100 + 1000
    m.notified(5, 9, 2000)
    m.notified(7, 9, 2000)
    m.notified(6, 9, 2000)
    assert m.usable([5, 6, 7], 9, 2500) == [5, 6, 7]        # every port marked: all of them stay
    assert Marks().hold == ARN_HOLD


def _arn_fabric(arn: bool = True):
    raw = fat_tree("permutation", True, duration="20us", speedup=SPEEDUP)
    raw["routing"]["arn"] = arn
    return build_fabric(scenario_from_dict(raw, label="t"))


def test_a_leaf_heeds_an_arn_and_an_hca_counts_and_drops_it():
    fab = _arn_fabric()
    leaf, host = fab.nodes["L0"], fab.nodes["h0"]
    assert isinstance(leaf, Switch) and isinstance(host, HCA)
    assert leaf.notifier is not None and leaf.arn_marks is not None
    assert leaf.adaptive is not None and leaf.adaptive.marks is leaf.arn_marks
    up = max(leaf.ports)                        # a port to a spine
    leaf.receive(up, build_arn(42), True, 1000)
    assert leaf.arn_marks.marked(up, 42, 1001) and leaf.counters["arn_heeded"] == 1
    hp = host.port.index
    before = [(t.fctbs, t.fccl) for t in host.port.tx] + [(r.abr, r.used) for r in host.port.rx]
    host.receive(hp, build_arn(42), True, 1000)
    assert host.counters["arn_ignored"] == 1 and host.port.pc.rcv_errors == 0
    # the credits are untouched: an ARN is no flow-control packet
    assert before == [(t.fctbs, t.fccl) for t in host.port.tx] + [(r.abr, r.used) for r in host.port.rx]
    # a static fabric has neither side
    static = _arn_fabric(arn=False)
    assert all(n.arn_marks is None and n.notifier is None for n in static.nodes.values() if isinstance(n, Switch))


def test_a_corrupted_arn_is_dropped_and_counted():
    fab = _arn_fabric()
    leaf = fab.nodes["L0"]
    up = max(leaf.ports)
    bad = bytearray(build_arn(42))
    bad[1] ^= 0x10
    leaf.receive(up, bytes(bad), True, 1000)
    assert not leaf.arn_marks.marked(up, 42, 1001) and not leaf.arn_marks.marked(up, 42 ^ 0x100, 1001)
    assert leaf.port_of(up).pc.rcv_errors == 1 and leaf.counters["PortRcvErrors"] == 1


def test_on_a_fat_tree_spines_notify_and_leaves_spread_a_permutation_further():
    """CI size (32 hosts, 100 us), the study's switches.  Spines notify the leaves; with
    notifications the permutation's sum is higher than with the leaves' local view alone,
    and a shift by one leaf, which static ftree routes without contention, keeps its rate
    (issue 31: "loses at most 1 % under adaptive routing")."""
    def run(raw: dict) -> tuple[float, dict]:
        scn = scenario_from_dict(raw, label="t")
        r = run_virtual(scn, window=(scn.duration // 5, scn.duration), progress=False)
        g = r.summary["groups"][raw["traffic"][0]["pattern"]]
        return g["window"]["normalized"] / len(g["flows"]), r.summary["counters"]

    local = fat_tree("permutation", True, speedup=SPEEDUP)
    local["routing"]["arn"] = False
    notified = fat_tree("permutation", True, speedup=SPEEDUP)
    notified["routing"]["arn"] = True
    a_local, _ = run(local)
    a_arn, counters = run(notified)
    assert a_arn > a_local, (a_local, a_arn)
    sent = sum(c.get("arn_sent", 0) for name, c in counters.items() if name.startswith("S"))
    heeded = sum(c.get("arn_heeded", 0) for name, c in counters.items() if name.startswith("L"))
    assert sent > 0 and heeded > 0, counters
    shift = fat_tree("shift", False, k=4, duration="50us", speedup=SPEEDUP)
    shift_arn = fat_tree("shift", True, k=4, duration="50us", speedup=SPEEDUP)
    shift_arn["routing"]["arn"] = True
    s, _ = run(shift)
    a, _ = run(shift_arn)
    assert a >= 0.99 * s, (s, a)


@pytest.mark.parametrize("routing,key,reason", [
    ({"arn": True}, "routing.arn", "routing.adaptive"),
    ({"adaptive": True, "arn": True, "arn_threshold": 0}, "routing.arn_threshold", "between"),
    ({"adaptive": True, "arn": True, "arn_hold": "0us"}, "routing.arn_hold", "positive"),
    ({"adaptive": True, "arn": True, "arn_hold": "soon"}, "routing.arn_hold", ""),
    ({"adaptive": True, "arn": "yes"}, "routing.arn", "true or false"),
])
def test_bad_arn_keys_are_one_line_naming_the_key(routing, key, reason):
    raw = {"scenario": {"name": "bad", "duration": "1us"},
           "switch": [{"name": "S1"}], "hca": [{"name": "h1"}, {"name": "h2"}],
           "link": [{"a": "h1", "b": "S1"}, {"a": "h2", "b": "S1"}], "routing": routing}
    with pytest.raises(UserError) as e:
        scenario_from_dict(raw, label="bad.toml")
    msg = str(e.value)
    assert "\n" not in msg and "bad.toml" in msg and key in msg and reason in msg, msg
