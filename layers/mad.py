"""Scapy layers for management datagrams (MADs): the common header, PerfMgt
PortCounters / PortCountersExtended, and the Congestion Control class attributes.

Field names and offsets from IBA 13.4 and 16.1 and annex A10 as listed in
../shared/REFERENCE.md (rdma-core libibmad/fields.c, opensm ib_types.h).  A MAD rides
in a UD SEND-only packet to QP 0 or 1; the DETH's payload is a :class:`MAD` when the
BTH's DestQP is 0 or 1.  These layers are the reference the codec in
``ibemu/wire/mad.py`` is tested against.
"""
from __future__ import annotations

from scapy.fields import (
    BitEnumField,
    BitField,
    ByteEnumField,
    ByteField,
    IntField,
    LongField,
    PacketListField,
    ShortField,
    StrFixedLenField,
    X3BytesField,
    XByteField,
    XIntField,
    XLongField,
    XShortEnumField,
    XShortField,
)
from scapy.packet import Packet, Raw, bind_layers

ATTR_LEN = 192
MGMT_CLASSES = {0x04: "PerfMgt", 0x21: "CongestionControl"}
METHODS = {0x01: "Get", 0x02: "Set", 0x05: "Trap", 0x06: "Send", 0x07: "TrapRepress"}
ATTRIBUTES = {0x12: "PortCounters", 0x1D: "PortCountersExtended", 0x11: "CongestionInfo",
              0x14: "SwitchCongestionSetting", 0x15: "SwitchPortCongestionSetting",
              0x16: "CACongestionSetting", 0x17: "CongestionControlTable"}


class MAD(Packet):
    name = "MAD common header"
    fields_desc = [
        ByteField("base_version", 1),
        ByteEnumField("mgmt_class", 0x04, MGMT_CLASSES),
        ByteField("class_version", 1),
        BitField("r", 0, 1),
        BitEnumField("method", 1, 7, METHODS),
        XShortField("status", 0),
        XShortField("class_specific", 0),
        XLongField("tid", 0),
        XShortEnumField("attr_id", 0x12, ATTRIBUTES),
        ShortField("resv", 0),
        XIntField("attr_mod", 0),
    ]

    def mysummary(self):
        method = METHODS.get(self.method, "0x%02x" % self.method) + ("Resp" if self.r else "")
        return "MAD %s %s(%s)" % (MGMT_CLASSES.get(self.mgmt_class, "0x%02x" % self.mgmt_class),
                                  method, ATTRIBUTES.get(self.attr_id, "0x%04x" % self.attr_id))


class _ClassHeader(Packet):
    def guess_payload_class(self, payload):
        mad = self.underlayer
        attr = _ATTRS.get((getattr(mad, "mgmt_class", None), getattr(mad, "attr_id", None)))
        return attr or Raw


class PerfMgt(_ClassHeader):
    name = "PerfMgt class header"
    fields_desc = [StrFixedLenField("resv", b"\0" * 40, 40)]


class CCMgt(_ClassHeader):
    name = "Congestion Control class header"
    fields_desc = [XLongField("cc_key", 0), StrFixedLenField("log", b"\0" * 32, 32)]


def _pad(used: int) -> StrFixedLenField:
    return StrFixedLenField("pad", b"\0" * (ATTR_LEN - used), ATTR_LEN - used)


class _Attr(Packet):
    def extract_padding(self, s):
        return b"", s


class PortCounters(_Attr):
    name = "PortCounters"
    fields_desc = [
        ByteField("resv0", 0), ByteField("PortSelect", 0), XShortField("CounterSelect", 0),
        ShortField("SymbolErrorCounter", 0), ByteField("LinkErrorRecoveryCounter", 0),
        ByteField("LinkDownedCounter", 0), ShortField("PortRcvErrors", 0),
        ShortField("PortRcvRemotePhysicalErrors", 0), ShortField("PortRcvSwitchRelayErrors", 0),
        ShortField("PortXmitDiscards", 0), ByteField("PortXmitConstraintErrors", 0),
        ByteField("PortRcvConstraintErrors", 0), XByteField("CounterSelect2", 0),
        BitField("LocalLinkIntegrityErrors", 0, 4), BitField("ExcessiveBufferOverrunErrors", 0, 4),
        ShortField("resv1", 0), ShortField("VL15Dropped", 0),
        IntField("PortXmitData", 0), IntField("PortRcvData", 0), IntField("PortXmitPkts", 0),
        IntField("PortRcvPkts", 0), IntField("PortXmitWait", 0), _pad(44),
    ]


class PortCountersExtended(_Attr):
    name = "PortCountersExtended"
    fields_desc = [
        ByteField("resv0", 0), ByteField("PortSelect", 0), XShortField("CounterSelect", 0),
        IntField("resv1", 0),
        LongField("PortXmitData", 0), LongField("PortRcvData", 0), LongField("PortXmitPkts", 0),
        LongField("PortRcvPkts", 0), LongField("PortUnicastXmitPkts", 0),
        LongField("PortUnicastRcvPkts", 0), LongField("PortMulticastXmitPkts", 0),
        LongField("PortMulticastRcvPkts", 0), _pad(72),
    ]


class SwitchCongestionSetting(_Attr):
    name = "SwitchCongestionSetting"
    fields_desc = [
        XIntField("Control_Map", 0), BitField("Victim_Mask", 0, 256), BitField("Credit_Mask", 0, 256),
        BitField("Threshold", 0, 4), BitField("resv0", 0, 4), ByteField("Packet_Size", 0),
        BitField("CS_Threshold", 0, 4), BitField("resv1", 0, 12), ShortField("CS_ReturnDelay", 0),
        ShortField("Marking_Rate", 0), _pad(76),
    ]


class SwitchPortCongestionElement(_Attr):
    name = "SwitchPortCongestionSettingElement"
    fields_desc = [BitField("Valid", 0, 1), BitField("Control_Type", 0, 1), BitField("resv", 0, 2),
                   BitField("Threshold", 0, 4), ByteField("Packet_Size", 0), ShortField("Marking_Rate", 0)]


class SwitchPortCongestionSetting(_Attr):
    name = "SwitchPortCongestionSetting"
    fields_desc = [PacketListField("elements", [], SwitchPortCongestionElement, count_from=lambda p: 32),
                   _pad(128)]


class CACongestionEntry(_Attr):
    name = "CACongestionEntry"
    fields_desc = [ShortField("CCTI_Timer", 0), ByteField("CCTI_Increase", 0),
                   ByteField("Trigger_Threshold", 0), ByteField("CCTI_Min", 0), X3BytesField("resv", 0)]


class CACongestionSetting(_Attr):
    name = "CACongestionSetting"
    fields_desc = [ShortField("Port_Control", 0), XShortField("Control_Map", 0),
                   PacketListField("entries", [], CACongestionEntry, count_from=lambda p: 16), _pad(132)]


class CCTEntry(_Attr):
    name = "CCTEntry"
    fields_desc = [BitField("CCT_Shift", 0, 2), BitField("CCT_Multiplier", 0, 14)]


class CongestionControlTable(_Attr):
    name = "CongestionControlTable"
    fields_desc = [ShortField("CCTI_Limit", 0), ShortField("resv", 0),
                   PacketListField("entries", [], CCTEntry, count_from=lambda p: 64), _pad(132)]


_ATTRS = {(0x04, 0x12): PortCounters, (0x04, 0x1D): PortCountersExtended,
          (0x21, 0x14): SwitchCongestionSetting, (0x21, 0x15): SwitchPortCongestionSetting,
          (0x21, 0x16): CACongestionSetting, (0x21, 0x17): CongestionControlTable}

bind_layers(MAD, PerfMgt, mgmt_class=0x04)
bind_layers(MAD, CCMgt, mgmt_class=0x21)
