"""Port counters (ibemu/fabric/counters.py): IBA units, saturation of PortCounters and
not of PortCountersExtended, PortXmitWait only while blocked for credits, and the
counters of a whole run in results.json and counters.csv."""
from __future__ import annotations

import csv
import json

from ibemu.fabric.counters import COUNTERS, OTHER, TICK_BYTES, TOTALS, PortCounters
from ibemu.run import run_virtual
from ibemu.scenario.builders import santos_fig1
from ibemu.units import PS_PER_MS

RATE = 10**9                                    # 4X SDR data rate, bytes/s


def test_units_words_and_packets():
    pc = PortCounters(RATE)
    for _ in range(3):
        pc.transmitted(2074)
    pc.received(bytearray(b"\x00" * 12 + b"\x80" + b"\x00" * 100))     # FECN set
    pc.received(bytearray(b"\x00" * 12 + b"\x40" + b"\x00" * 100))     # BECN set
    c = pc.port_counters(0)
    # IBA 16.1.3.5: octets from the start-of-packet delimiter to the VCRC, the VCRC
    # excluded, over 4 -- a 2074-byte frame is 2072 octets, its PktLen of 518 words
    assert c["PortXmitData"] == 3 * (2074 - 2) // 4 == 3 * 518 and c["PortXmitPkts"] == 3
    assert c["PortRcvData"] == 2 * (113 - 2) // 4 and c["PortRcvPkts"] == 2
    t = pc.totals(0)
    assert (t["PortRcvFECN"], t["PortRcvBECN"]) == (1, 1)


def test_port_counters_saturate_and_extended_do_not():
    pc = PortCounters(RATE)
    pc.xmit_bytes = 4 * (2**32 + 10)
    pc.xmit_pkts = 2**40
    pc.rcv_errors = 70000
    pc.excessive_buffer_overrun = 20
    c = pc.port_counters(0)
    assert c["PortXmitData"] == 2**32 - 1 and c["PortXmitPkts"] == 2**32 - 1
    assert c["PortRcvErrors"] == 2**16 - 1 and c["ExcessiveBufferOverrunErrors"] == 15
    x = pc.extended(0)
    assert x["PortXmitData"] == 2**32 + 10 and x["PortXmitPkts"] == 2**40
    pc.xmit_pkts = 2**64 + 3
    assert pc.extended(0)["PortXmitPkts"] == 3                          # wraps, never sticks


def test_reset_moves_the_baseline_of_one_view_only():
    pc = PortCounters(RATE)
    pc.xmit_pkts = 100
    pc.reset(0, names={"PortXmitPkts"})
    pc.xmit_pkts = 130
    assert pc.port_counters(0)["PortXmitPkts"] == 30
    assert pc.extended(0)["PortXmitPkts"] == 130
    pc.reset(0, extended=True)
    assert pc.extended(0)["PortXmitPkts"] == 0


def test_xmit_wait_counts_ticks_only_while_blocked():
    pc = PortCounters(RATE)
    tick = TICK_BYTES * 1000                   # ps at 1 GB/s
    assert pc.tick_ps == tick
    pc.waiting(0, False)
    pc.waiting(10 * tick, True)
    pc.waiting(15 * tick, True)                # still blocked: no restart
    assert pc.port_counters(20 * tick)["PortXmitWait"] == 10          # open interval counted
    pc.waiting(30 * tick, False)
    assert pc.port_counters(100 * tick)["PortXmitWait"] == 20
    pc.congested(0, True)
    pc.congested(5 * tick, False)
    assert pc.totals(100 * tick)["PortXmitTimeCong"] == 5


def test_run_reports_counters_where_congestion_blocks(tmp_path):
    scn = santos_fig1(L=3, R=1, buffer_packets=4, duration_ms=4, victim=None, name="cnt")
    scn.output.plots = False
    res = run_virtual(scn, out_dir=tmp_path, progress=False)
    ports = json.loads((tmp_path / "results.json").read_text())["ports"]
    assert ports == res.metrics.port_totals()
    # every data byte counted on the sending port is counted on the receiving port
    for label, (a, pa, b, pb) in _link_ends(scn).items():
        tx, rx = ports["%s:%d" % (a, pa)], ports["%s:%d" % (b, pb)]
        assert abs(tx["PortXmitPkts"] - rx["PortRcvPkts"]) <= 1, label
    # the root link's sender is never starved of credits (the destination drains at link
    # rate), while the inter-switch link waits: remote traffic is blocked behind the root
    root = ports["%s:%d" % _end(scn, "root")]
    inter = ports["%s:%d" % _end(scn, "inter")]
    assert root["PortXmitWait"] == 0
    assert inter["PortXmitWait"] > 0.2 * (4 * PS_PER_MS) / (TICK_BYTES * 1000)
    # a sending HCA of a local flow is blocked too: its switch input buffer is full
    assert ports["L1:1"]["PortXmitWait"] > 0
    rows = list(csv.reader((tmp_path / "counters.csv").open()))
    assert rows[0][0] == "time_ms" and len(rows) > 10
    col = rows[0].index("%s:%d:PortXmitWait" % _end(scn, "inter"))
    values = [int(r[col]) for r in rows[1:]]
    assert values == sorted(values) and values[-1] == inter["PortXmitWait"]


def _link_ends(scn):
    from ibemu.build import build_fabric
    return build_fabric(scn).link_ends


def _end(scn, name):
    ends = _link_ends(scn)
    label = next(l for l in ends if l == name or l.startswith(name))
    a, pa, _, _ = ends[label]
    return a, pa


def test_totals_follow_the_tables_in_their_order():
    """append_totals (the run's port samples) lists COUNTERS then OTHER, each value as the
    tables define it: an attribute, its words (bytes / 4), ticks of waiting or congested
    time, or 0 where the attribute is None (not modelled)."""
    pc = PortCounters(RATE)
    for k, attr in enumerate(("xmit_bytes", "rcv_bytes", "xmit_pkts", "rcv_pkts", "rcv_errors",
                              "rcv_switch_relay_errors", "xmit_discards", "rcv_constraint_errors",
                              "excessive_buffer_overrun", "vl15_dropped", "rcv_fecn", "rcv_becn")):
        setattr(pc, attr, 1000 * (k + 1) + k)        # a distinct value each
    tick = pc.tick_ps
    pc.waiting(0, True)
    pc.congested(3 * tick, True)
    now = 10 * tick + 1
    expected = []
    for name, attr in [(n, a) for n, a, _ in COUNTERS] + list(OTHER):
        if attr is None:
            expected.append(0)
        elif attr == "xmit_wait":
            expected.append(10)                      # waiting since 0: ten whole ticks by now
        elif attr == "xmit_time_cong":
            expected.append(7)                       # congested since tick 3
        else:
            expected.append(getattr(pc, attr))
    row: list[int] = []
    pc.append_totals(row, now)
    assert row == expected
    assert list(TOTALS) == [n for n, _, _ in COUNTERS] + [n for n, _ in OTHER]
    assert pc.totals(now) == dict(zip(TOTALS, expected))
