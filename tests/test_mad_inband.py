"""MADs answered in band by switches and HCAs (issue 7 item 2; ibemu/fabric/switch.py
port 0, ibemu/fabric/hca.py QP1, ibemu/cc/cca/mad_settings.py): PerfMgt Gets across the
fabric, CC Get/Set changing a running switch's and HCA's settings, CC_Key, and VL15
getting through a link without credits."""
from __future__ import annotations

from ibemu.build import build_fabric
from ibemu.fabric.credits import CreditTx
from ibemu.sim.engine import VirtualEngine
from ibemu.studies.cca.testbed import dcms_testbed
from ibemu.units import PS_PER_US
from ibemu.wire import mad as M
from ibemu.wire.codec import parse


class Collect:
    name = "probe"

    def __init__(self):
        self.got = []

    def on_packet(self, now, frame):
        self.got.append((now, M.parse_mad(M.mad_of(frame)), parse(frame)))
        return None


def setup(marking_rate=2048, **kw):
    scn = dcms_testbed(marking_rate=marking_rate, duration_ms=1.0, **kw)
    fab = build_fabric(scn)
    return fab, VirtualEngine(fab.nodes.values(), fab.wiring)


def ask(fab, eng, src, dst, mad, at_us, until_us, **kw):
    """Send *mad* from HCA *src* to the LID of node *dst* at *at_us*; run to *until_us*."""
    hca = fab.nodes[src]
    probe = hca.qps[1] = Collect()
    lid = fab.nodes[dst].lid

    def send(now):
        hca.ctrl.append((M.build_mad_packet(lid, hca.lid, mad, **kw), 15))
        hca.kick(now)
    hca.at(at_us * PS_PER_US, send)
    if not eng.heap:
        eng.start(0)
    else:
        eng._after(hca)
    eng.run(until_us * PS_PER_US)
    return probe.got


def test_switch_answers_port_counters_in_band_across_the_fabric():
    fab, eng = setup()
    req = M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS, M.pack_fields(M.PORT_COUNTERS_FIELDS,
                      {"PortSelect": 23}), tid=77)
    got = ask(fab, eng, "X", "S2", req, 5, 20)         # X -> S1 -> S2 and back: two switch hops
    assert len(got) == 1
    t, resp, lrh = got[0]
    assert (resp.method, resp.tid, resp.status) == (M.GET_RESP, 77, 0)
    assert (lrh.vl, lrh.slid, lrh.dlid) == (15, fab.nodes["S2"].lid, fab.nodes["X"].lid)
    f = resp.fields()
    assert f["PortSelect"] == 23
    # no data flowed yet: the port sent only flow-control packets, not counted
    assert f["PortXmitPkts"] == 0
    assert fab.nodes["S2"].counters["MADs_received"] == 1
    assert "MADs_received" not in fab.nodes["S1"].counters       # S1 only forwarded it


def test_counters_read_in_band_match_the_port_and_extended_does_not_saturate():
    fab, eng = setup()
    req = M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS_EXT,
                      M.pack_fields(M.PORT_COUNTERS_EXT_FIELDS, {"PortSelect": 24}))
    got = ask(fab, eng, "A", "S2", req, 300, 320)       # X->Y has been running for 300 µs
    port = fab.nodes["S2"].ports[24]
    words = got[0][1].fields()["PortXmitData"]
    assert words > 250_000 // 4                           # ≈ 300 µs at 1 GB/s
    assert words * 4 <= port.pc.xmit_bytes                # read before the run went on


def test_hca_answers_on_qp1():
    fab, eng = setup()
    req = M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS, M.pack_fields(M.PORT_COUNTERS_FIELDS,
                      {"PortSelect": 1}), tid=5)
    got = ask(fab, eng, "A", "Y", req, 50, 80)
    assert got and got[0][1].status == 0 and got[0][1].fields()["PortRcvPkts"] > 0   # Y receives X->Y
    assert fab.nodes["Y"].counters["MADs_received"] == 1


def _port_set(port, mr, threshold=15):
    elements = [{} for _ in range(port % 32)] + [{"Valid": 1, "Threshold": threshold, "Marking_Rate": mr}]
    return M.pack_switch_port_settings(elements)


def test_cc_set_changes_a_running_switch_port_and_get_reads_it_back():
    fab, eng = setup(marking_rate=2048)
    marker = fab.nodes["S2"].marker
    assert marker.ports[23].marking_rate == 2048
    got = ask(fab, eng, "X", "S2", M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_PORT_CONG_SETTING,
                                               _port_set(23, 0), tid=9), 10, 30)
    assert got[0][1].status == 0
    assert marker.ports[23].marking_rate == 0 and marker.ports[21].marking_rate == 2048
    got = ask(fab, eng, "X", "S2", M.build_mad(M.CLASS_CC, M.GET, M.SWITCH_PORT_CONG_SETTING, b""), 40, 60)
    el = M.unpack_switch_port_settings(got[0][1].attr)
    assert (el[23]["Valid"], el[23]["Marking_Rate"], el[21]["Marking_Rate"], el[5]["Valid"]) == (1, 0, 2048, 0)


def test_switch_congestion_setting_obeys_control_map():
    fab, eng = setup(marking_rate=2048)
    marker = fab.nodes["S1"].marker
    data = M.pack_fields(M.SWITCH_CONG_SETTING_FIELDS, {"Control_Map": 1 << 4, "Marking_Rate": 64,
                                                        "Threshold": 3})
    got = ask(fab, eng, "X", "S1", M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_CONG_SETTING, data), 10, 20)
    f = M.unpack_fields(M.SWITCH_CONG_SETTING_FIELDS, got[0][1].attr)
    assert (f["Marking_Rate"], f["Threshold"]) == (64, 15)       # Threshold's bit (2) was not set
    assert {p.marking_rate for p in marker.ports.values()} == {64}
    assert {p.threshold for p in marker.ports.values()} == {15}
    assert fab.nodes["S2"].marker.ports[23].marking_rate == 2048  # another switch: untouched


def test_cc_key_mismatch_is_dropped_and_counted():
    fab, eng = setup()
    for n in ("S1", "S2"):
        fab.nodes[n].cc_key = 0x1234
    got = ask(fab, eng, "X", "S2", M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_PORT_CONG_SETTING,
                                               _port_set(23, 0), cc_key=0x9999), 10, 30)
    assert got == [] and fab.nodes["S2"].counters["CC_Key_violations"] == 1
    assert fab.nodes["S2"].marker.ports[23].marking_rate == 2048
    got = ask(fab, eng, "X", "S2", M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_PORT_CONG_SETTING,
                                               _port_set(23, 0), cc_key=0x1234), 40, 60)
    assert got[0][1].status == 0 and fab.nodes["S2"].marker.ports[23].marking_rate == 0


def test_ca_settings_set_in_band_change_the_running_source():
    fab, eng = setup(marking_rate=0, ccti_timer=75)
    b = fab.nodes["B"]
    entries = [{"CCTI_Timer": 300, "CCTI_Increase": 2, "CCTI_Min": 1}] * 16
    data = M.pack_ca_setting(0, 0x0001, entries)                      # Control_Map: SL 0 only
    got = ask(fab, eng, "X", "B", M.build_mad(M.CLASS_CC, M.SET, M.CA_CONG_SETTING, data), 10, 30)
    head, sl = M.unpack_ca_setting(got[0][1].attr)
    assert (sl[0]["CCTI_Timer"], sl[0]["CCTI_Increase"], sl[0]["CCTI_Min"]) == (300, 2, 1)
    assert sl[1]["CCTI_Timer"] == 75                                   # not in the Control_Map
    assert b.cc_settings.response.ca.sl[0].CCTI_Timer == 300 and fab.nodes["C"].cc_settings.response.ca.sl[0].CCTI_Timer == 75
    # a CCT of 8 entries, CCTI_Limit 7: every CCTI of B is clamped to 7, delays follow the table
    cct = [(0, 0)] + [(1, 3)] * 7
    got = ask(fab, eng, "X", "B", M.build_mad(M.CLASS_CC, M.SET, M.CC_TABLE, M.pack_cc_table(7, cct)), 40, 60)
    limit, back = M.unpack_cc_table(got[0][1].attr)
    assert limit == 7 and back[:8] == cct and back[8] == (0, 0)
    assert b.cc_settings.response.limit == 7 and len(b.cc_settings.response.delays) == 8
    assert b.cc_settings.response.delays[3] == (b.cc_settings.response.max_packet_time >> 1) * 3
    eng.run(4000 * PS_PER_US)                                          # B->D congests D's port
    assert b.cc_settings.response.states and max(st.value for st in b.cc_settings.response.states.values()) <= 7
    assert min(st.value for st in b.cc_settings.response.states.values()) >= 1          # CCTI_Min 1


class NoCredit(CreditTx):
    def update(self, fccl):
        pass


def test_vl15_passes_a_port_without_credits():
    """Management packets are not flow controlled (seed 004): a MAD reaches S2 through
    S1:15 while that port has no data credits at all."""
    fab, eng = setup()
    s1 = fab.nodes["S1"]
    s1.ports[15].tx = [NoCredit() for _ in s1.ports[15].tx]     # no data credit, ever
    req = M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS, M.pack_fields(M.PORT_COUNTERS_FIELDS,
                      {"PortSelect": 20}), tid=3)
    got = ask(fab, eng, "A", "S2", req, 100, 130)
    assert len(got) == 1 and got[0][1].tid == 3
    assert s1.queues[15][0]                                  # data is stuck behind the credits
