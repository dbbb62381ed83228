"""Management datagrams (MADs): the common header, PerfMgt and Congestion Control
attributes, as plain bytes for the sans-I/O nodes (the Scapy reference is layers/mad.py).

Layouts (../shared/REFERENCE.md "Management packets and counters"; rdma-core
libibmad/fields.c; opensm include/iba/ib_types.h):

- a MAD is 256 bytes: the 24-byte common header (BaseVersion, MgmtClass, ClassVersion,
  R|Method, Status, ClassSpecific, TransactionID, AttributeID, reserved,
  AttributeModifier), then 232 bytes of class data;
- PerfMgt (class 0x04): 40 reserved bytes, then the 192-byte attribute;
- Congestion Control (class 0x21, class version 2): CC_Key (8 bytes), the 32-byte
  CongestionLog area, then the 192-byte attribute.

Both classes put the attribute at byte 64.  Attribute fields are given as
``(name, bit offset, bit width)`` with bits numbered from the attribute's first byte,
most significant first (the offsets libibmad lists).

On the wire a MAD travels in a UD SEND-only packet to QP1 (the GSI) with Q_Key
0x80010000 (IBA 13.5); ibemu sends it on VL15, as the white paper (seed 004) describes
management traffic: not flow controlled, ahead of data.
"""
from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Final

from .codec import build
from .fields import get_destqp, get_lnh, get_ud_payload
from .layout import DETH_LEN, PACKET_OVERHEAD, Buf
from .opcodes import LNH_IBA_LOCAL, UD_SEND_ONLY

Layout = Sequence[tuple[str, int, int]]
"""An attribute's fields: (name, bit offset, bit width)."""

MAD_LEN = 256
ATTR_OFFSET = 64
ATTR_LEN = 192
GSI_QP = 1
GSI_QKEY = 0x80010000

CLASS_PERF = 0x04
CLASS_CC = 0x21
CLASS_VERSION = {CLASS_PERF: 1, CLASS_CC: 2}

GET, SET, GET_RESP, TRAP = 0x01, 0x02, 0x81, 0x05
METHOD_NAMES = {GET: "Get", SET: "Set", GET_RESP: "GetResp", TRAP: "Trap"}

# MAD status (IBA 13.4.7): bits 2-4 "invalid field" codes
STATUS_OK = 0x0000
STATUS_BAD_VERSION = 0x0004
STATUS_BAD_METHOD = 0x0008
STATUS_BAD_ATTRIBUTE = 0x000C
STATUS_BAD_FIELD = 0x001C

_HDR = struct.Struct(">BBBBHHQHHI")

PORT_COUNTERS = 0x12
PORT_COUNTERS_EXT = 0x1D
PORT_XMIT_CON_CTRL = 0x34
SWITCH_CONG_SETTING = 0x14
SWITCH_PORT_CONG_SETTING = 0x15
CA_CONG_SETTING = 0x16
CC_TABLE = 0x17

ATTRIBUTE_NAMES = {
    (CLASS_PERF, PORT_COUNTERS): "PortCounters",
    (CLASS_PERF, PORT_COUNTERS_EXT): "PortCountersExtended",
    (CLASS_PERF, PORT_XMIT_CON_CTRL): "PortXmitConCtrl",
    (CLASS_CC, SWITCH_CONG_SETTING): "SwitchCongestionSetting",
    (CLASS_CC, SWITCH_PORT_CONG_SETTING): "SwitchPortCongestionSetting",
    (CLASS_CC, CA_CONG_SETTING): "CACongestionSetting",
    (CLASS_CC, CC_TABLE): "CongestionControlTable",
}

PORT_COUNTERS_FIELDS = (
    ("PortSelect", 8, 8), ("CounterSelect", 16, 16), ("SymbolErrorCounter", 32, 16),
    ("LinkErrorRecoveryCounter", 48, 8), ("LinkDownedCounter", 56, 8),
    ("PortRcvErrors", 64, 16), ("PortRcvRemotePhysicalErrors", 80, 16),
    ("PortRcvSwitchRelayErrors", 96, 16), ("PortXmitDiscards", 112, 16),
    ("PortXmitConstraintErrors", 128, 8), ("PortRcvConstraintErrors", 136, 8),
    ("CounterSelect2", 144, 8), ("LocalLinkIntegrityErrors", 152, 4),
    ("ExcessiveBufferOverrunErrors", 156, 4), ("VL15Dropped", 176, 16),
    ("PortXmitData", 192, 32), ("PortRcvData", 224, 32), ("PortXmitPkts", 256, 32),
    ("PortRcvPkts", 288, 32), ("PortXmitWait", 320, 32),
)
PORT_COUNTERS_EXT_FIELDS = (
    ("PortSelect", 8, 8), ("CounterSelect", 16, 16),
    ("PortXmitData", 64, 64), ("PortRcvData", 128, 64), ("PortXmitPkts", 192, 64),
    ("PortRcvPkts", 256, 64), ("PortUnicastXmitPkts", 320, 64), ("PortUnicastRcvPkts", 384, 64),
    ("PortMulticastXmitPkts", 448, 64), ("PortMulticastRcvPkts", 512, 64),
)
# PortXmitConCtrl (annex A10): PortXmitTimeCong, the time the port was congested
PORT_XMIT_CON_CTRL_FIELDS = (("PortSelect", 8, 8), ("CounterSelect", 16, 16), ("PortXmitTimeCong", 32, 32))
SWITCH_CONG_SETTING_FIELDS = (
    ("Control_Map", 0, 32), ("Victim_Mask", 32, 256), ("Credit_Mask", 288, 256),
    ("Threshold", 544, 4), ("Packet_Size", 552, 8), ("CS_Threshold", 560, 4),
    ("CS_ReturnDelay", 576, 16), ("Marking_Rate", 592, 16),
)
# SwitchPortCongestionSetting: 32 elements of 32 bits per block (AttributeModifier = block)
SWITCH_PORT_ELEMENT_FIELDS = (
    ("Valid", 0, 1), ("Control_Type", 1, 1), ("Threshold", 4, 4), ("Packet_Size", 8, 8),
    ("Marking_Rate", 16, 16),
)
SWITCH_PORT_ELEMENTS = 32
# CACongestionSetting: Port_Control, Control_Map, then 16 per-SL entries of 64 bits
CA_CONG_SETTING_FIELDS = (("Port_Control", 0, 16), ("Control_Map", 16, 16))
CA_CONG_ENTRY_FIELDS = (
    ("CCTI_Timer", 0, 16), ("CCTI_Increase", 16, 8), ("Trigger_Threshold", 24, 8),
    ("CCTI_Min", 32, 8),
)
# CongestionControlTable: CCTI_Limit, then 64 entries of (CCT_Shift 2 bits, CCT_Multiplier 14)
CC_TABLE_FIELDS = (("CCTI_Limit", 0, 16),)
CC_TABLE_ENTRIES = 64

FIELDS = {
    (CLASS_PERF, PORT_COUNTERS): PORT_COUNTERS_FIELDS,
    (CLASS_PERF, PORT_COUNTERS_EXT): PORT_COUNTERS_EXT_FIELDS,
    (CLASS_PERF, PORT_XMIT_CON_CTRL): PORT_XMIT_CON_CTRL_FIELDS,
    (CLASS_CC, SWITCH_CONG_SETTING): SWITCH_CONG_SETTING_FIELDS,
    (CLASS_CC, CA_CONG_SETTING): CA_CONG_SETTING_FIELDS,
    (CLASS_CC, CC_TABLE): CC_TABLE_FIELDS,
}


class MADError(ValueError):
    """Bytes that are not a MAD this codec knows (wrong length, version or class)."""


# ---------------------------------------------------------------- bit fields

def _get(data: Buf, off: int, width: int) -> int:
    first, last = off // 8, (off + width - 1) // 8
    chunk = int.from_bytes(data[first:last + 1], "big")
    return (chunk >> ((last + 1) * 8 - off - width)) & ((1 << width) - 1)


def _put(data: bytearray, off: int, width: int, value: int) -> None:
    if not 0 <= value < (1 << width):
        raise MADError("value %r does not fit in %d bits" % (value, width))
    first, last = off // 8, (off + width - 1) // 8
    n = last + 1 - first
    shift = n * 8 - (off - first * 8) - width
    chunk = int.from_bytes(data[first:last + 1], "big")
    chunk = (chunk & ~(((1 << width) - 1) << shift)) | (value << shift)
    data[first:last + 1] = chunk.to_bytes(n, "big")


def pack_fields(layout: Layout, values: Mapping[str, int], data: bytearray | None = None,
                base: int = 0) -> bytearray:
    """Write *values* (name -> int) into *data* (default: 192 zero bytes) at bit *base*."""
    data = bytearray(ATTR_LEN) if data is None else data
    known = {name for name, _, _ in layout}
    for name in values:
        if name not in known:
            raise MADError("unknown field %r" % name)
    for name, off, width in layout:
        if name in values:
            _put(data, base + off, width, int(values[name]))
    return data


def unpack_fields(layout: Layout, data: Buf, base: int = 0) -> dict[str, int]:
    return {name: _get(data, base + off, width) for name, off, width in layout}


# ---------------------------------------------------------------- attributes with arrays

def pack_switch_port_settings(elements: Sequence[Mapping[str, int]]) -> bytearray:
    """One SwitchPortCongestionSetting block: up to 32 element dicts."""
    if len(elements) > SWITCH_PORT_ELEMENTS:
        raise MADError("a block holds at most %d ports" % SWITCH_PORT_ELEMENTS)
    data = bytearray(ATTR_LEN)
    for i, el in enumerate(elements):
        pack_fields(SWITCH_PORT_ELEMENT_FIELDS, el, data, 32 * i)
    return data


def unpack_switch_port_settings(data: Buf) -> list[dict[str, int]]:
    return [unpack_fields(SWITCH_PORT_ELEMENT_FIELDS, data, 32 * i) for i in range(SWITCH_PORT_ELEMENTS)]


def pack_ca_setting(port_control: int, control_map: int,
                    entries: Sequence[Mapping[str, int]]) -> bytearray:
    """CACongestionSetting: *entries* per SL (at most 16)."""
    if len(entries) > 16:
        raise MADError("CACongestionSetting has 16 SL entries")
    data = pack_fields(CA_CONG_SETTING_FIELDS, {"Port_Control": port_control, "Control_Map": control_map})
    for sl, e in enumerate(entries):
        pack_fields(CA_CONG_ENTRY_FIELDS, e, data, 32 + 64 * sl)
    return data


def unpack_ca_setting(data: Buf) -> tuple[dict[str, int], list[dict[str, int]]]:
    head = unpack_fields(CA_CONG_SETTING_FIELDS, data)
    return head, [unpack_fields(CA_CONG_ENTRY_FIELDS, data, 32 + 64 * sl) for sl in range(16)]


def pack_cc_table(ccti_limit: int, entries: list[tuple[int, int]]) -> bytearray:
    """One CongestionControlTable block: CCTI_Limit and up to 64 (shift, multiplier)."""
    if len(entries) > CC_TABLE_ENTRIES:
        raise MADError("a CongestionControlTable block holds %d entries" % CC_TABLE_ENTRIES)
    data = pack_fields(CC_TABLE_FIELDS, {"CCTI_Limit": ccti_limit})
    for i, (shift, mult) in enumerate(entries):
        _put(data, 32 + 16 * i, 2, shift)
        _put(data, 34 + 16 * i, 14, mult)
    return data


def unpack_cc_table(data: Buf) -> tuple[int, list[tuple[int, int]]]:
    return (_get(data, 0, 16),
            [(_get(data, 32 + 16 * i, 2), _get(data, 34 + 16 * i, 14)) for i in range(CC_TABLE_ENTRIES)])


# ---------------------------------------------------------------- whole MADs

def build_mad(mgmt_class: int, method: int, attr_id: int, attr: Buf = b"", *, tid: int = 0,
              attr_mod: int = 0, status: int = 0, cc_key: int = 0) -> bytes:
    """A 256-byte MAD of class PerfMgt or CC carrying the 192-byte attribute *attr*."""
    if mgmt_class not in CLASS_VERSION:
        raise MADError("unsupported management class 0x%02x" % mgmt_class)
    if len(attr) > ATTR_LEN:
        raise MADError("attribute data is %d bytes, at most %d" % (len(attr), ATTR_LEN))
    hdr = _HDR.pack(1, mgmt_class, CLASS_VERSION[mgmt_class], method, status, 0, tid, attr_id, 0, attr_mod)
    middle = struct.pack(">Q", cc_key) + bytes(32) if mgmt_class == CLASS_CC else bytes(40)
    return hdr + middle + bytes(attr) + bytes(ATTR_LEN - len(attr))


class MAD:
    """A parsed MAD: header fields, the CC_Key (CC class) and the attribute bytes."""
    __slots__ = ("base_version", "mgmt_class", "class_version", "method", "status",
                 "class_specific", "tid", "attr_id", "attr_mod", "cc_key", "attr")
    base_version: int
    mgmt_class: int
    class_version: int
    method: int
    status: int
    class_specific: int
    tid: int
    attr_id: int
    attr_mod: int
    cc_key: int
    attr: bytes

    @property
    def attribute_name(self) -> str:
        return ATTRIBUTE_NAMES.get((self.mgmt_class, self.attr_id), "0x%04x" % self.attr_id)

    def fields(self) -> dict[str, int]:
        """The attribute's scalar fields (for the attributes with a plain layout)."""
        layout = FIELDS.get((self.mgmt_class, self.attr_id))
        if layout is None:
            raise MADError("no field layout for %s" % self.attribute_name)
        return unpack_fields(layout, self.attr)


def parse_mad(buf: Buf) -> MAD:
    if len(buf) != MAD_LEN:
        raise MADError("a MAD is %d bytes, got %d" % (MAD_LEN, len(buf)))
    m = MAD()
    (m.base_version, m.mgmt_class, m.class_version, m.method, m.status, m.class_specific,
     m.tid, m.attr_id, _, m.attr_mod) = _HDR.unpack_from(buf, 0)
    if m.base_version != 1:
        raise MADError("BaseVersion %d (expected 1)" % m.base_version)
    m.cc_key = struct.unpack_from(">Q", buf, 24)[0] if m.mgmt_class == CLASS_CC else 0
    m.attr = bytes(buf[ATTR_OFFSET:ATTR_OFFSET + ATTR_LEN])
    return m


def response(req: MAD, attr: Buf, status: int = STATUS_OK) -> bytes:
    """The GetResp to *req* (same class, attribute, modifier and TransactionID)."""
    return build_mad(req.mgmt_class, GET_RESP, req.attr_id, attr, tid=req.tid, attr_mod=req.attr_mod,
                     status=status, cc_key=req.cc_key)


def build_mad_packet(dlid: int, slid: int, mad: bytes, *, sl: int = 0, src_qp: int = GSI_QP,
                     dest_qp: int = GSI_QP) -> bytearray:
    """The frame carrying *mad*: LRH (VL15) / BTH UD SEND-only to the GSI / DETH / MAD."""
    return build(dlid=dlid, slid=slid, opcode=UD_SEND_ONLY, destqp=dest_qp, vl=15, sl=sl,
                 payload=mad, ext={"DETH": {"q_key": GSI_QKEY, "src_qp": src_qp}})


def mad_of(frame: Buf) -> bytes | None:
    """The MAD bytes of a frame to QP 0/1 with LRH/BTH/DETH, or None."""
    if len(frame) != PACKET_OVERHEAD + DETH_LEN + MAD_LEN or get_lnh(frame) != LNH_IBA_LOCAL:
        return None
    if get_destqp(frame) > GSI_QP:
        return None
    return get_ud_payload(frame, MAD_LEN)


# ------------------------------------------------------------------ MAD header (IBA 13.4.3)
MAD_METHOD: Final = 3        # R(1) | Method(7)
MAD_TID: Final = 8           # TransactionID, 64 bits
_TID = struct.Struct(">Q")


def mad_is_response(mad: Buf) -> bool:
    """The R bit of R|Method: the MAD is a response (GetResp, ...)."""
    return bool(mad[MAD_METHOD] & 0x80)


def mad_tid(mad: Buf) -> int:
    """The MAD's TransactionID."""
    tid: int = _TID.unpack_from(mad, MAD_TID)[0]
    return tid


def mad_with_tid(mad: bytes, tid: int) -> bytes:
    """A copy of *mad* with its TransactionID replaced (*tid* must fit in 64 bits)."""
    return mad[:MAD_TID] + _TID.pack(tid) + mad[MAD_TID + _TID.size:]
