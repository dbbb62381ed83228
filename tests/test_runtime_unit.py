"""The real-time runtime's parts, in one process (issue 4): sequence checks, placement,
address maps, merging, and the trio loop itself against the virtual-time engine."""
import pytest
import trio

from ibemu.build import build_fabric
from ibemu.capture.erf import ErfPcapWriter, read_erf_pcap
from ibemu.errors import UserError
from ibemu.run import run_virtual
from ibemu.runtime.addrmap import assign, port_keys, read_map, write_map
from ibemu.runtime.delivery import SeqCheck
from ibemu.runtime.loop import NodeLoop
from ibemu.runtime.merge import merge_captures, new_metrics
from ibemu.runtime.partition import parse_placement, partition, placement
from ibemu.runtime.sockets import free_port_block, rcvbuf_bytes
from ibemu.scenario import load_scenario
from ibemu.scenario.builders import santos_fig1


def quickstart(duration="1ms"):
    return load_scenario("scenarios/quickstart.toml", ['scenario.duration="%s"' % duration])


# ------------------------------------------------------------------ sequence numbers

def test_seqcheck_counts_gaps_and_late_datagrams():
    s = SeqCheck()
    for q in (1, 2, 3, 6, 7):           # 4 and 5 lost
        s.update(q)
    assert (s.lost, s.late, s.received) == (2, 0, 5)
    s.update(5)                         # one of them was only late
    assert (s.lost, s.late) == (1, 1)
    s.update(8)
    assert s.lost == 1


def test_seqcheck_wraps_at_32_bits():
    s = SeqCheck()
    s.expect = 0xFFFFFFFE
    for q in (0xFFFFFFFE, 0xFFFFFFFF, 0, 1):
        s.update(q)
    assert s.lost == 0 and s.late == 0
    s.update(3)
    assert s.lost == 1


# ------------------------------------------------------------------ placement

def test_partition_keeps_each_switch_with_its_hcas():
    fab = build_fabric(santos_fig1(L=5, R=1))
    groups = partition(fab, 2)
    assert sorted(map(sorted, groups)) == sorted([sorted(["A", "AV", "R1"]),
                                                  sorted(["B", "BC", "BV", "L1", "L2", "L3", "L4", "L5"])])


def test_partition_splits_a_single_switch_and_never_exceeds_the_nodes():
    fab = build_fabric(quickstart())
    for n in (2, 3, 4):
        groups = partition(fab, n)
        assert len(groups) == n and all(groups)
        assert sorted(sum(groups, [])) == sorted(fab.nodes)
    assert len(partition(fab, 50)) == len(fab.nodes)
    assert partition(fab, 1) == [list(fab.nodes)]


def test_a_hand_placement_is_read_and_checked_against_the_fabric():
    """--place: a group per worker, every node once, each group in the fabric's order."""
    fab = build_fabric(santos_fig1(L=5, R=1))
    groups = parse_placement("BC / R1,L5,L4,L3,L2,L1,BV,AV,B,A")
    assert groups[0] == ["BC"] and len(groups) == 2
    assert placement(fab, groups) == [["BC"], [n for n in fab.nodes if n != "BC"]]


@pytest.mark.parametrize("text, message", [
    ("A,B/", "worker 2 has no nodes"),
    ("A,,B/BC", "an empty node name in worker 1"),
])
def test_a_hand_placement_with_bad_syntax_says_what(text, message):
    with pytest.raises(ValueError, match=message):
        parse_placement(text)


@pytest.mark.parametrize("text, message", [
    ("A,B,AV,BV,L1,L2,L3,L4,L5,R1/BC,X", "no node 'X' in the fabric"),
    ("A,B,AV,BV,L1,L2,L3,L4,L5,R1/BC,A", "node 'A' is placed twice \\(workers 1 and 2\\)"),
    ("A,B,AV,BV,L1,L2,L3/BC", "no worker runs L4, L5, R1"),
])
def test_a_hand_placement_that_does_not_fit_the_fabric_says_which_node(text, message):
    fab = build_fabric(santos_fig1(L=5, R=1))
    with pytest.raises(ValueError, match=message):
        placement(fab, parse_placement(text))


# ------------------------------------------------------------------ address maps

def test_address_map_round_trip_and_coverage(tmp_path):
    fab = build_fabric(quickstart())
    amap = assign(fab, lambda n: "10.0.0.1" if n == "S" else "127.0.0.1", 19000)
    assert len(amap) == len(port_keys(fab)) == 6
    assert sorted(u for _, u in amap.values()) == list(range(19000, 19006))
    f = tmp_path / "m.toml"
    write_map(f, amap)
    assert read_map(f, fab) == amap
    f.write_text('[ports]\n"S:1" = "127.0.0.1:19000"\n')
    with pytest.raises(UserError, match="no address for"):
        read_map(f, fab)
    f.write_text('[ports]\n"S:1" = "127.0.0.1"\n')
    with pytest.raises(UserError, match="expected NAME:NUMBER"):
        read_map(f)
    with pytest.raises(UserError, match="cannot read address map"):
        read_map(tmp_path / "missing.toml")


def test_receive_buffers_hold_what_the_credits_allow():
    fab = build_fabric(santos_fig1(L=5, R=1))
    for node in fab.nodes.values():
        for port in node.ports.values():
            credit_bytes = sum(rx.capacity for rx in port.rx) * 64
            assert rcvbuf_bytes(port) >= 2 * credit_bytes


# ------------------------------------------------------------------ merging

def test_metrics_export_and_merge_equal_one_recorder():
    scn = quickstart()
    whole, a, b = new_metrics(scn), new_metrics(scn), new_metrics(scn)
    events = [("l1", 5, 100, True), ("l2", 10**9 - 1, 7, False), ("l1", 3 * 10**9, 9, True)]
    for i, (link, t, n, data) in enumerate(events):
        whole.link_tx(link, t, n, data)
        (a if i % 2 else b).link_tx(link, t, n, data)
    a.flow_rx("f1", 5 * 10**8, 2048, 2074, True)
    whole.flow_rx("f1", 5 * 10**8, 2048, 2074, True)
    a.counter("S", "x", 2)
    whole.counter("S", "x", 2)
    for t in (0, 10, 20):
        whole.sample_ports(t, {"S:1": {"PortXmitPkts": t}, "H1:1": {"PortXmitPkts": t + 1}})
        a.sample_ports(t, {"S:1": {"PortXmitPkts": t}})
        b.sample_ports(t, {"H1:1": {"PortXmitPkts": t + 1}})
    for m in (whole, a):
        m.trace("CCTI", "H1", 5, 1.0)
        m.event(7, "H1", "something")
    b.trace("CCTI", "H2", 3, 2.0)
    whole.trace("CCTI", "H2", 3, 2.0)
    merged = new_metrics(scn)
    merged.merge_bins(a.export_bins())
    merged.merge_bins(b.export_bins())
    assert merged.summary() == whole.summary()
    assert merged.port_totals() == whole.port_totals()
    assert merged.port_times == whole.port_times
    assert merged.trace_summary() == whole.trace_summary()
    assert merged.events == whole.events
    b.sample_ports(30, {"H1:1": {"PortXmitPkts": 31}})     # a worker that ran longer
    merged = new_metrics(scn)
    merged.merge_bins(a.export_bins())
    merged.merge_bins(b.export_bins())
    assert merged.port_times == [0, 10, 20] and merged.port_samples["H1:1"]["PortXmitPkts"] == [1, 11, 21]


def test_capture_parts_merge_in_emulated_time_order(tmp_path):
    p1, p2 = tmp_path / "a.pcap", tmp_path / "b.pcap"
    with ErfPcapWriter(p1) as w:
        for t in (10, 30, 50):
            w.write(t, bytes([t]) * 6, True)
    with ErfPcapWriter(p2) as w:
        for t in (20, 30, 40):
            w.write(t, bytes([t + 1]) * 6, True)
    with open(p2, "ab") as f:               # a worker killed while writing
        f.write(b"\x01\x02\x03")
    out = tmp_path / "m.pcap"
    assert merge_captures([p1, p2, tmp_path / "missing.pcap"], out) == 6
    got = [(t, f[0]) for t, _, f in read_erf_pcap(out)]
    assert got == [(10, 10), (20, 21), (30, 30), (30, 31), (40, 41), (50, 50)]


# ------------------------------------------------------------------ the trio loop

def _loop(scn, dilation, **kw):
    metrics = new_metrics(scn)
    fab = build_fabric(scn, metrics)
    metrics.add_links(fab.link_capacity)
    metrics.add_flow_capacity(fab.flow_capacity)
    keys = port_keys(fab)
    amap = assign(fab, lambda n: "127.0.0.1", free_port_block("127.0.0.1", len(keys), 21000))
    loop = NodeLoop(fab.nodes.values(), fab.wiring, amap, dilation, scn.duration,
                    rcvbuf=lambda node, p: rcvbuf_bytes(node.ports[p]), **kw)
    return loop, metrics


async def test_one_process_loop_matches_the_virtual_engine_exactly():
    """Between nodes of one process every datagram is taken off its socket as it is
    sent, so the run is the virtual engine's, byte for byte in the counts."""
    scn = quickstart("1ms")
    loop, metrics = _loop(scn, 50)
    try:
        await loop.run(trio.current_time() + 0.02)
    finally:
        loop.close()
    st = loop.stats()
    assert loop.done and st["emulated_ps"] == scn.duration
    assert st["datagrams_sent"] == st["datagrams_received"] > 1000
    assert st["datagrams_lost"] == 0 and st["slips"] == 0
    v = run_virtual(scn).summary
    w = metrics.summary()
    for name in v["flows"]:
        assert w["flows"][name]["rx_bytes"] == v["flows"][name]["rx_bytes"]
    for label in v["links"]:
        assert w["links"][label]["bytes"] == v["links"][label]["bytes"]


async def test_direct_local_delivery_matches_the_virtual_engine_exactly():
    """local_datagrams=False: frames between nodes of the process skip their sockets,
    at the time their datagram would carry; the run is still the virtual engine's."""
    scn = quickstart("1ms")
    loop, metrics = _loop(scn, 50, local_datagrams=False)
    try:
        await loop.run(trio.current_time() + 0.02)
    finally:
        loop.close()
    st = loop.stats()
    assert loop.done and st["emulated_ps"] == scn.duration
    assert st["datagrams_sent"] == st["datagrams_received"] == 0 and st["frames_direct"] > 1000
    assert st["slips"] == 0
    v = run_virtual(scn).summary
    w = metrics.summary()
    for name in v["flows"]:
        assert w["flows"][name]["rx_bytes"] == v["flows"][name]["rx_bytes"]
    for label in v["links"]:
        assert w["links"][label]["bytes"] == v["links"][label]["bytes"]


def test_local_datagrams_default_follows_the_environment(monkeypatch):
    from ibemu.runtime.worker import LOCAL_DATAGRAMS_ENV, local_datagrams_default
    monkeypatch.delenv(LOCAL_DATAGRAMS_ENV, raising=False)
    assert local_datagrams_default() is True
    for off in ("0", "no", "off", " False "):
        monkeypatch.setenv(LOCAL_DATAGRAMS_ENV, off)
        assert local_datagrams_default() is False
    monkeypatch.setenv(LOCAL_DATAGRAMS_ENV, "1")
    assert local_datagrams_default() is True


async def test_lost_datagrams_are_counted():
    """Fault injection: every 7th link packet on every port is not sent.  The receivers
    must count exactly those (less at most one per link whose gap was not yet seen)."""
    scn = quickstart("1ms")
    loop, _ = _loop(scn, 50, drop_link_every=7)
    try:
        await loop.run(trio.current_time() + 0.02)
    finally:
        loop.close()
    st = loop.stats()
    assert st["datagrams_dropped_injected"] > 20
    assert st["datagrams_dropped_injected"] - len(loop.sockets) <= st["datagrams_lost"] \
        <= st["datagrams_dropped_injected"]
