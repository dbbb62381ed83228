"""The IBA CCA settings as Congestion Control MAD attributes (annex A10.4.3; REFERENCE.md
"IBA Congestion Control Annex" and "Management packets and counters"): the
``node.cc_settings`` object the management agent (:mod:`ibemu.fabric.mad_agent`) calls
with ``get_attribute(attr_id, attr_mod, now)`` / ``set_attribute(attr_id, attr_mod,
data, now)``, each returning the attribute bytes (None: an attribute the node lacks).

Switches (:class:`SwitchCCSettings`):

- SwitchCongestionSetting (0x14): Control_Map, Victim_Mask (bit *p* = port *p*),
  Threshold, Packet_Size, Marking_Rate.  A Set applies the field groups whose
  Control_Map bit is set -- bit 0 Victim_Mask, bit 1 Credit_Mask, bit 2 Threshold and
  Packet_Size, bit 3 CS_Threshold and CS_ReturnDelay, bit 4 Marking_Rate (A10.4.3.4;
  opensm's default map 0x1F sets all) -- to the switch and to every port without a
  per-port override.  Credit starvation (Credit_Mask, CS_*) is not modelled: read as 0.
- SwitchPortCongestionSetting (0x15): block *b* (AttributeModifier) holds ports
  32·b .. 32·b+31; a Set applies the elements with Valid = 1 and Control_Type 0
  (congestion; 1 = credit starvation, ignored) to that port's marker
  (:meth:`ibemu.cc.cca.switch.PortCC.set`) -- what the DCMS manager sends.  A Get shows
  Valid = 1 for every port with a link and its effective settings.

HCAs (:class:`CACCSettings`):

- CACongestionSetting (0x16): Port_Control (bit 0: 1 = per SL), Control_Map (bit *n*:
  SL *n*'s entry is written by a Set), and per SL CCTI_Timer, CCTI_Increase,
  Trigger_Threshold, CCTI_Min.
- CongestionControlTable (0x17): block *b* = CCT entries 64·b .. 64·b+63 and CCTI_Limit.
  A Set writes the block's 64 entries and CCTI_Limit; the table then holds entries
  0 .. CCTI_Limit (as OpenSM programs it; CCTI_Limit 0 keeps the whole table, see
  settings.py), and every CCTI is clamped to the new limit.

Each node gets its own copy of the scenario's settings, so a Set changes one node.
Changes take effect at once; a running CCTI_Timer keeps its phase.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...wire import mad as M
from .settings import CASetting, PortSetting, SwitchSetting
from .switch import CCAMarker

if TYPE_CHECKING:
    from ...fabric.hca import HCA
    from ...fabric.switch import Switch
    from .hca import CCAResponse

CM_VICTIM, CM_CREDIT, CM_THRESHOLD, CM_CS, CM_MARKING_RATE = 1, 2, 4, 8, 16


class SwitchCCSettings:
    """``sw.cc_settings`` for a switch with a :class:`~ibemu.cc.cca.switch.CCAMarker`
    (put on the switch before this object is made)."""

    def __init__(self, sw: Switch, setting: SwitchSetting) -> None:
        marker: object = sw.marker
        if not isinstance(marker, CCAMarker):
            raise TypeError("switch %s has no CCA marker" % sw.name)
        self.sw = sw
        self.marker = marker
        self.setting = copy.deepcopy(setting)

    def get_attribute(self, attr_id: int, attr_mod: int, now: int) -> bytes | None:
        s = self.setting
        if attr_id == M.SWITCH_CONG_SETTING:
            return bytes(M.pack_fields(M.SWITCH_CONG_SETTING_FIELDS, {
                "Control_Map": s.Control_Map, "Victim_Mask": _mask(s.Victim_Mask),
                "Threshold": s.Threshold, "Packet_Size": s.Packet_Size, "Marking_Rate": s.Marking_Rate}))
        if attr_id == M.SWITCH_PORT_CONG_SETTING:
            base = attr_mod * M.SWITCH_PORT_ELEMENTS
            if base > 255:
                return None
            elements = []
            for p in range(base, base + M.SWITCH_PORT_ELEMENTS):
                pc = self.marker.ports.get(p)
                elements.append({} if pc is None else {
                    "Valid": 1, "Threshold": pc.threshold, "Packet_Size": pc.packet_size,
                    "Marking_Rate": pc.marking_rate})
            return bytes(M.pack_switch_port_settings(elements))
        return None

    def set_attribute(self, attr_id: int, attr_mod: int, data: bytes, now: int) -> bytes | None:
        s = self.setting
        ports = self.marker.ports
        if attr_id == M.SWITCH_CONG_SETTING:
            f = M.unpack_fields(M.SWITCH_CONG_SETTING_FIELDS, data)
            cm = f["Control_Map"]
            s.Control_Map = cm
            if cm & CM_VICTIM:
                s.Victim_Mask = frozenset(p for p in range(256) if f["Victim_Mask"] >> p & 1)
            if cm & CM_THRESHOLD:
                s.Threshold, s.Packet_Size = f["Threshold"], f["Packet_Size"]
            if cm & CM_MARKING_RATE:
                s.Marking_Rate = f["Marking_Rate"]
            for p, pc in ports.items():
                th, mr, pk, victim = s.port(p)
                pc.set(threshold=th, marking_rate=mr, packet_size=pk, victim=victim)
            self.sw.count("CC_settings_set")
            return self.get_attribute(attr_id, attr_mod, now)
        if attr_id == M.SWITCH_PORT_CONG_SETTING:
            base = attr_mod * M.SWITCH_PORT_ELEMENTS
            if base > 255:
                return None
            for i, el in enumerate(M.unpack_switch_port_settings(data)):
                p = base + i
                if not el["Valid"] or el["Control_Type"] or p not in ports:
                    continue
                s.ports[p] = PortSetting(el["Threshold"], el["Marking_Rate"], el["Packet_Size"])
                ports[p].set(threshold=el["Threshold"], marking_rate=el["Marking_Rate"],
                             packet_size=el["Packet_Size"])
                self.sw.count("CC_settings_set")
            return self.get_attribute(attr_id, attr_mod, now)
        return None


def _mask(ports: Iterable[int]) -> int:
    m = 0
    for p in ports:
        m |= 1 << p
    return m


class CACCSettings:
    """``hca.cc_settings``: the HCA's :class:`CASetting` and, when it sends, its
    :class:`~ibemu.cc.cca.hca.CCAResponse` (*response*), kept in step."""

    def __init__(self, hca: HCA, ca: CASetting, response: CCAResponse | None = None) -> None:
        self.hca = hca
        self.ca = copy.deepcopy(ca)
        self.response = response
        if response is not None:
            response.use_setting(self.ca)

    def get_attribute(self, attr_id: int, attr_mod: int, now: int) -> bytes | None:
        ca = self.ca
        if attr_id == M.CA_CONG_SETTING:
            entries = [{"CCTI_Timer": e.CCTI_Timer, "CCTI_Increase": e.CCTI_Increase,
                        "Trigger_Threshold": e.Trigger_Threshold, "CCTI_Min": e.CCTI_Min} for e in ca.sl]
            return bytes(M.pack_ca_setting(1 if ca.Port_Control == "sl" else 0, 0xFFFF, entries))
        if attr_id == M.CC_TABLE:
            lo = attr_mod * M.CC_TABLE_ENTRIES
            if lo >= 2 * M.CC_TABLE_ENTRIES:        # ibemu's CCT holds at most 128 entries
                return None
            return bytes(M.pack_cc_table(ca.CCTI_Limit, ca.CCT[lo:lo + M.CC_TABLE_ENTRIES]))
        return None

    def set_attribute(self, attr_id: int, attr_mod: int, data: bytes, now: int) -> bytes | None:
        ca = self.ca
        if attr_id == M.CA_CONG_SETTING:
            head, sl_entries = M.unpack_ca_setting(data)
            ca.Port_Control = "sl" if head["Port_Control"] & 1 else "qp"
            for sl, e in enumerate(sl_entries):
                if head["Control_Map"] >> sl & 1:
                    x = ca.sl[sl]
                    x.CCTI_Timer, x.CCTI_Increase = e["CCTI_Timer"], e["CCTI_Increase"]
                    x.Trigger_Threshold, x.CCTI_Min = e["Trigger_Threshold"], e["CCTI_Min"]
            self._apply(now)
            return self.get_attribute(attr_id, attr_mod, now)
        if attr_id == M.CC_TABLE:
            lo = attr_mod * M.CC_TABLE_ENTRIES
            if lo >= 2 * M.CC_TABLE_ENTRIES:
                return None
            limit, entries = M.unpack_cc_table(data)
            cct = list(ca.CCT) + [(0, 0)] * max(0, lo + len(entries) - len(ca.CCT))
            cct[lo:lo + len(entries)] = entries
            if limit:
                cct = cct[:limit + 1]
            ca.CCT, ca.CCTI_Limit = cct, limit
            self._apply(now)
            return self.get_attribute(attr_id, attr_mod, now)
        return None

    def _apply(self, now: int) -> None:
        """Bring the running response in step with the settings."""
        self.hca.count("CC_settings_set")
        r = self.response
        if r is None:
            return
        r.reconfigure(now)
