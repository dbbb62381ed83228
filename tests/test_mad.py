"""Management datagrams: the codec (ibemu/wire/mad.py) against the Scapy layers
(layers/mad.py) for every attribute, and stock tshark decoding a PerfMgt capture.

Field layouts: REFERENCE.md "Management packets and counters" (libibmad fields.c)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ibemu.capture.erf import ErfPcapWriter
from ibemu.layers import (
    BTH,
    LRH,
    MAD,
    CACongestionEntry,
    CACongestionSetting,
    CCMgt,
    CCTEntry,
    CongestionControlTable,
    PerfMgt,
    PortCounters,
    PortCountersExtended,
    SwitchCongestionSetting,
    SwitchPortCongestionElement,
    SwitchPortCongestionSetting,
)
from ibemu.wire import mad as M
from ibemu.wire.codec import parse
from ibemu.wire.fields import icrc_ok, vcrc_ok


def values_for(layout):
    return st.fixed_dictionaries({name: st.integers(0, (1 << w) - 1) for name, _, w in layout})


@settings(max_examples=60, deadline=None)
@given(values_for(M.PORT_COUNTERS_FIELDS), st.integers(0, 2**64 - 1), st.booleans())
def test_port_counters_codec_equals_scapy(values, tid, resp):
    method = M.GET_RESP if resp else M.GET
    ours = M.build_mad(M.CLASS_PERF, method, M.PORT_COUNTERS, M.pack_fields(M.PORT_COUNTERS_FIELDS, values), tid=tid)
    ref = bytes(MAD(mgmt_class=4, r=int(resp), method=1, attr_id=0x12, tid=tid) / PerfMgt() / PortCounters(**values))
    assert ours == ref
    m = M.parse_mad(ref)
    assert (m.method, m.tid, m.attribute_name) == (method, tid, "PortCounters")
    assert m.fields() == values
    assert MAD(ours)[PortCounters].PortXmitWait == values["PortXmitWait"]


@settings(max_examples=40, deadline=None)
@given(values_for(M.PORT_COUNTERS_EXT_FIELDS))
def test_port_counters_extended_codec_equals_scapy(values):
    ours = M.build_mad(M.CLASS_PERF, M.GET_RESP, M.PORT_COUNTERS_EXT, M.pack_fields(M.PORT_COUNTERS_EXT_FIELDS, values))
    ref = bytes(MAD(mgmt_class=4, r=1, method=1, attr_id=0x1D) / PerfMgt() / PortCountersExtended(**values))
    assert ours == ref
    assert M.parse_mad(ours).fields() == values


@settings(max_examples=40, deadline=None)
@given(values_for(M.SWITCH_CONG_SETTING_FIELDS), st.integers(0, 2**64 - 1))
def test_switch_congestion_setting_codec_equals_scapy(values, key):
    ours = M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_CONG_SETTING,
                       M.pack_fields(M.SWITCH_CONG_SETTING_FIELDS, values), cc_key=key)
    ref = bytes(MAD(mgmt_class=0x21, class_version=2, method=2, attr_id=0x14) / CCMgt(cc_key=key)
                / SwitchCongestionSetting(**values))
    assert ours == ref
    m = M.parse_mad(ours)
    assert (m.cc_key, m.fields()) == (key, values)


@settings(max_examples=30, deadline=None)
@given(st.lists(values_for(M.SWITCH_PORT_ELEMENT_FIELDS), min_size=32, max_size=32), st.integers(0, 8))
def test_switch_port_congestion_setting_block(elements, block):
    ours = M.build_mad(M.CLASS_CC, M.GET_RESP, M.SWITCH_PORT_CONG_SETTING,
                       M.pack_switch_port_settings(elements), attr_mod=block)
    ref = bytes(MAD(mgmt_class=0x21, class_version=2, r=1, method=1, attr_id=0x15, attr_mod=block) / CCMgt()
                / SwitchPortCongestionSetting(elements=[SwitchPortCongestionElement(**e) for e in elements]))
    assert ours == ref
    assert M.unpack_switch_port_settings(M.parse_mad(ours).attr) == elements


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF),
       st.lists(values_for(M.CA_CONG_ENTRY_FIELDS), min_size=16, max_size=16))
def test_ca_congestion_setting(port_control, control_map, entries):
    ours = M.build_mad(M.CLASS_CC, M.SET, M.CA_CONG_SETTING, M.pack_ca_setting(port_control, control_map, entries))
    ref = bytes(MAD(mgmt_class=0x21, class_version=2, method=2, attr_id=0x16) / CCMgt()
                / CACongestionSetting(Port_Control=port_control, Control_Map=control_map,
                                      entries=[CACongestionEntry(**e) for e in entries]))
    assert ours == ref
    head, got = M.unpack_ca_setting(M.parse_mad(ours).attr)
    assert head == {"Port_Control": port_control, "Control_Map": control_map} and got == entries


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 127), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2**14 - 1)), min_size=64, max_size=64))
def test_congestion_control_table(limit, entries):
    ours = M.build_mad(M.CLASS_CC, M.SET, M.CC_TABLE, M.pack_cc_table(limit, entries))
    ref = bytes(MAD(mgmt_class=0x21, class_version=2, method=2, attr_id=0x17) / CCMgt()
                / CongestionControlTable(CCTI_Limit=limit, entries=[CCTEntry(CCT_Shift=s, CCT_Multiplier=m)
                                                                    for s, m in entries]))
    assert ours == ref
    assert M.unpack_cc_table(M.parse_mad(ours).attr) == (limit, entries)


def test_response_mirrors_request_and_bad_input_is_refused():
    req = M.parse_mad(M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS, M.pack_fields(M.PORT_COUNTERS_FIELDS, {"PortSelect": 3}),
                                  tid=77, attr_mod=5))
    resp = M.parse_mad(M.response(req, M.pack_fields(M.PORT_COUNTERS_FIELDS, {"PortSelect": 3, "PortXmitPkts": 9})))
    assert (resp.method, resp.tid, resp.attr_mod, resp.fields()["PortXmitPkts"]) == (M.GET_RESP, 77, 5, 9)
    with pytest.raises(M.MADError):
        M.parse_mad(bytes(100))
    with pytest.raises(M.MADError):
        M.pack_fields(M.PORT_COUNTERS_FIELDS, {"PortRcvErrors": 1 << 16})
    with pytest.raises(M.MADError):
        M.pack_fields(M.PORT_COUNTERS_FIELDS, {"NoSuchCounter": 1})
    with pytest.raises(M.MADError):
        M.build_mad(0x07, M.GET, 1)


def test_mad_packet_on_vl15_to_the_gsi_dissects_in_scapy():
    mad = M.build_mad(M.CLASS_PERF, M.GET_RESP, M.PORT_COUNTERS,
                      M.pack_fields(M.PORT_COUNTERS_FIELDS, {"PortSelect": 2, "PortXmitData": 1234}))
    frame = M.build_mad_packet(7, 1, mad)
    f = parse(frame)
    assert (f.vl, f.destqp, f.ext["DETH"]["q_key"]) == (15, 1, M.GSI_QKEY)
    assert vcrc_ok(frame) and icrc_ok(frame)
    assert M.mad_of(frame) == mad
    pkt = LRH(bytes(frame))
    assert pkt[BTH].destqp == 1 and pkt[PortCounters].PortXmitData == 1234
    assert "PortCounters" in pkt.summary()


@pytest.mark.wireshark
def test_tshark_decodes_perfmgt_port_counters(run_tshark, tmp_path):
    values = {"PortSelect": 3, "PortRcvErrors": 11, "PortXmitDiscards": 4, "PortRcvConstraintErrors": 2,
              "PortXmitData": 123456789, "PortRcvData": 98765, "PortXmitPkts": 4321, "PortRcvPkts": 1234}
    ext = {"PortSelect": 3, "PortXmitData": 2**40 + 5, "PortRcvPkts": 2**33}
    pcap = tmp_path / "mad.pcap"
    w = ErfPcapWriter(pcap)
    w.write(1000, M.build_mad_packet(2, 1, M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS, tid=1)), False)
    w.write(2000, M.build_mad_packet(1, 2, M.build_mad(M.CLASS_PERF, M.GET_RESP, M.PORT_COUNTERS,
                                                       M.pack_fields(M.PORT_COUNTERS_FIELDS, values), tid=1)), False)
    w.write(3000, M.build_mad_packet(1, 2, M.build_mad(M.CLASS_PERF, M.GET_RESP, M.PORT_COUNTERS_EXT,
                                                       M.pack_fields(M.PORT_COUNTERS_EXT_FIELDS, ext), tid=2)), False)
    w.close()
    names = ["portselect", "portrcverrors", "portxmitdiscards", "portrcvconstrainterrors",
             "portxmitdata", "portrcvdata", "portxmitpkts", "portrcvpkts"]
    out = run_tshark("-r", str(pcap), "-Y", "infiniband.portcounters", "-T", "fields",
                     "-e", "infiniband.mad.method", "-e", "infiniband.mad.mgmtclass",
                     *sum((["-e", "infiniband.portcounters." + n] for n in names), []))
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert len(rows) == 2                               # the Get and the GetResp
    resp = rows[1]
    assert int(resp[0], 0) == 0x81 and int(resp[1], 0) == 0x04
    expected = [values[k] for k in ("PortSelect", "PortRcvErrors", "PortXmitDiscards", "PortRcvConstraintErrors",
                                    "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts")]
    assert [int(x, 0) for x in resp[2:]] == expected
    out = run_tshark("-r", str(pcap), "-Y", "infiniband.portcounters_ext", "-T", "fields",
                     "-e", "infiniband.portcounters_ext.portxmitdata", "-e", "infiniband.portcounters_ext.portrcvpkts")
    assert [int(x) for x in out.split()] == [ext["PortXmitData"], ext["PortRcvPkts"]]
    assert "Malformed" not in run_tshark("-r", str(pcap))
