"""The in-band management agent (ibemu/fabric/mad_agent.py): PerfMgt Get/Set of
PortCounters and PortCountersExtended, CC attributes through the node's settings, the
CC_Key check, and bad MADs counted, never raised."""
from __future__ import annotations

from ibemu.fabric.counters import PortCounters
from ibemu.fabric.mad_agent import MADAgent
from ibemu.wire import mad as M
from ibemu.wire.codec import parse


class P:
    def __init__(self, index):
        self.index = index
        self.pc = PortCounters(10**9)


class FakeNode:
    lid = 9
    cc_key = 0

    def __init__(self, nports=3):
        self.ports = {i: P(i) for i in range(1, nports + 1)}
        self.counters = {}

    def count(self, name, value=1):
        self.counters[name] = self.counters.get(name, 0) + value


def ask(agent, method, attr_id, fields=None, cls=M.CLASS_PERF, layout=None, data=None, cc_key=0, tid=42):
    layout = layout or (M.PORT_COUNTERS_EXT_FIELDS if attr_id == M.PORT_COUNTERS_EXT else M.PORT_COUNTERS_FIELDS)
    attr = data if data is not None else M.pack_fields(layout, fields or {})
    frame = M.build_mad_packet(9, 3, M.build_mad(cls, method, attr_id, attr, tid=tid, cc_key=cc_key))
    out = agent.handle(frame, 1000)
    if out is None:
        return None, None
    f = parse(out)
    assert (f.dlid, f.slid, f.vl, f.destqp) == (3, 9, 15, 1)
    return M.parse_mad(M.mad_of(out)), layout


def test_get_port_counters_of_the_selected_port():
    node = FakeNode()
    node.ports[2].pc.xmit_bytes = 4000
    node.ports[2].pc.xmit_pkts = 3
    node.ports[2].pc.rcv_errors = 70000
    resp, layout = ask(MADAgent(node), M.GET, M.PORT_COUNTERS, {"PortSelect": 2})
    assert (resp.method, resp.tid, resp.status) == (M.GET_RESP, 42, 0)
    v = resp.fields()
    assert (v["PortSelect"], v["PortXmitData"], v["PortXmitPkts"], v["PortRcvErrors"]) == (2, 1000, 3, 0xFFFF)
    resp, _ = ask(MADAgent(node), M.GET, M.PORT_COUNTERS_EXT, {"PortSelect": 2})
    assert resp.fields()["PortXmitData"] == 1000


def test_set_clears_only_selected_counters_and_all_ports():
    node = FakeNode()
    for p in node.ports.values():
        p.pc.xmit_pkts, p.pc.rcv_pkts = 10, 20
    # CounterSelect bit 14 = PortXmitPkts
    resp, _ = ask(MADAgent(node), M.SET, M.PORT_COUNTERS, {"PortSelect": 0xFF, "CounterSelect": 1 << 14})
    assert resp.status == 0
    for p in node.ports.values():
        c = p.pc.port_counters(1000)
        assert (c["PortXmitPkts"], c["PortRcvPkts"]) == (0, 20)
        assert p.pc.extended(1000)["PortXmitPkts"] == 10                # the other view untouched


def test_unknown_port_attribute_and_method_get_error_status():
    agent = MADAgent(FakeNode())
    assert ask(agent, M.GET, M.PORT_COUNTERS, {"PortSelect": 7})[0].status == M.STATUS_BAD_FIELD
    assert ask(agent, M.GET, 0x31, data=b"")[0].status == M.STATUS_BAD_ATTRIBUTE
    assert ask(agent, M.TRAP, M.PORT_COUNTERS, {"PortSelect": 1})[0].status == M.STATUS_BAD_METHOD
    assert agent.node.counters["MADs_rejected"] == 3


class Settings:
    def __init__(self):
        self.values = {"Marking_Rate": 128, "Threshold": 15}

    def get_attribute(self, attr_id, attr_mod, now):
        if attr_id != M.SWITCH_CONG_SETTING:
            return None
        return M.pack_fields(M.SWITCH_CONG_SETTING_FIELDS, self.values)

    def set_attribute(self, attr_id, attr_mod, data, now):
        if attr_id != M.SWITCH_CONG_SETTING:
            return None
        self.values = {k: v for k, v in M.unpack_fields(M.SWITCH_CONG_SETTING_FIELDS, data).items()
                       if k in ("Marking_Rate", "Threshold")}
        return self.get_attribute(attr_id, attr_mod, now)


def test_cc_get_set_go_to_the_settings_and_cc_key_protects_set():
    node = FakeNode()
    node.cc_settings = Settings()
    node.cc_key = 0x1234
    agent = MADAgent(node)
    L = M.SWITCH_CONG_SETTING_FIELDS
    resp, _ = ask(agent, M.GET, M.SWITCH_CONG_SETTING, cls=M.CLASS_CC, layout=L)
    assert resp.fields()["Marking_Rate"] == 128
    assert ask(agent, M.SET, M.SWITCH_CONG_SETTING, {"Marking_Rate": 0, "Threshold": 15}, cls=M.CLASS_CC,
               layout=L, cc_key=0x9999) == (None, None)
    assert node.counters["CC_Key_violations"] == 1 and node.cc_settings.values["Marking_Rate"] == 128
    resp, _ = ask(agent, M.SET, M.SWITCH_CONG_SETTING, {"Marking_Rate": 0, "Threshold": 15}, cls=M.CLASS_CC,
                  layout=L, cc_key=0x1234)
    assert resp.status == 0 and resp.fields()["Marking_Rate"] == 0 == node.cc_settings.values["Marking_Rate"]
    assert ask(agent, M.GET, M.CC_TABLE, cls=M.CLASS_CC, layout=M.CC_TABLE_FIELDS)[0].status == M.STATUS_BAD_ATTRIBUTE


def test_garbage_is_dropped_and_counted():
    node = FakeNode()
    agent = MADAgent(node)
    frame = M.build_mad_packet(9, 3, M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS))
    assert agent.handle(frame[:-10], 0) is None
    bad = bytearray(frame)
    bad[28] = 7                                 # BaseVersion 7
    assert agent.handle(bad, 0) is None
    resp = M.build_mad_packet(9, 3, M.build_mad(M.CLASS_PERF, M.GET_RESP, M.PORT_COUNTERS))
    assert agent.handle(resp, 0) is None
    assert node.counters == {"MADs_malformed": 2, "MADs_unexpected_response": 1}


def test_port_xmit_con_ctrl_reports_congested_time_in_ticks():
    node = FakeNode()
    pc = node.ports[1].pc
    pc.congested(0, True)
    pc.congested(640 * 1000, False)                 # 640 ns = 10 ticks of 64 ns
    resp, _ = ask(MADAgent(node), M.GET, M.PORT_XMIT_CON_CTRL, {"PortSelect": 1}, layout=M.PORT_XMIT_CON_CTRL_FIELDS)
    assert resp.attribute_name == "PortXmitConCtrl" and resp.fields()["PortXmitTimeCong"] == 10
