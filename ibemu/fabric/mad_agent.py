"""The management agent of a switch or HCA: answers PerfMgt and Congestion Control MADs
in band (IBA 16.1 performance management; annex A10 congestion control), sans-I/O.

:meth:`MADAgent.handle` takes a received management frame (UD SEND-only to QP 1, see
:mod:`ibemu.wire.mad`) and returns the response frame to send back, or None.

- PerfMgt Get(PortCounters / PortCountersExtended / PortXmitConCtrl) answers from the selected port's
  :class:`~ibemu.fabric.counters.PortCounters` at emulated time *now*; Set clears the
  counters that CounterSelect (and CounterSelect2 for PortXmitWait) selects, on one port
  or on all (PortSelect 0xFF), and answers with the new values.
- Congestion Control Get/Set go to the node's congestion-control settings object
  (``node.cc_settings``, provided by the IBA CCA scheme) through
  ``get_attribute(attr_id, attr_mod, now)`` and ``set_attribute(attr_id, attr_mod, data, now)``,
  each returning the attribute bytes or None for an attribute it does not have.  A Set
  whose CC_Key differs from the node's (``node.cc_key``, 0 = none) is dropped and counted
  (IBA A10.4.1: the CC_Key protects the settings).
- Anything else gets a GetResp with an "unsupported" status (IBA 13.4.7) or, when it is
  not even a MAD, is dropped and counted.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..wire import mad as M
from ..wire.fields import get_sl, get_slid
from ..wire.layout import Buf

if TYPE_CHECKING:
    from .node import Node

ALL_PORTS = 0xFF
# PortCounters CounterSelect bits (IBA 16.1.3.5), then CounterSelect2 bit 0
_SELECT = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
           "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
           "PortXmitConstraintErrors", "PortRcvConstraintErrors", "LocalLinkIntegrityErrors",
           "ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitData", "PortRcvData",
           "PortXmitPkts", "PortRcvPkts")
_SELECT_EXT = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
               "PortUnicastRcvPkts", "PortMulticastXmitPkts", "PortMulticastRcvPkts")


class MADAgent:
    def __init__(self, node: Node) -> None:
        self.node = node

    def handle(self, frame: Buf, now: int) -> bytearray | None:
        node = self.node
        raw = M.mad_of(frame)
        if raw is None:
            node.count("MADs_malformed")
            return None
        try:
            req = M.parse_mad(raw)
        except M.MADError:
            node.count("MADs_malformed")
            return None
        if req.method & 0x80:                       # a response: not for an agent
            node.count("MADs_unexpected_response")
            return None
        if req.mgmt_class not in M.CLASS_VERSION:   # a class this agent has no answer for
            node.count("MADs_malformed")
            return None
        node.count("MADs_received")
        if req.mgmt_class == M.CLASS_PERF:
            attr, status = self._perf(req, now)
        else:
            if req.method == M.SET and req.cc_key != node.cc_key:
                node.count("CC_Key_violations")
                return None
            attr, status = self._cc(req, now)
        if status:
            node.count("MADs_rejected")
        return M.build_mad_packet(get_slid(frame), node.lid, M.response(req, attr or b"", status),
                                  sl=get_sl(frame))

    # ---------------------------------------------------------------- PerfMgt
    def _perf(self, req: M.MAD, now: int) -> tuple[Buf, int]:
        layout = M.FIELDS.get((M.CLASS_PERF, req.attr_id))
        if layout is None:
            return b"", M.STATUS_BAD_ATTRIBUTE
        if req.method not in (M.GET, M.SET):
            return b"", M.STATUS_BAD_METHOD
        ext = req.attr_id == M.PORT_COUNTERS_EXT
        f = M.unpack_fields(layout, req.attr)
        sel = f["PortSelect"]
        ports = self.node.ports
        if sel == ALL_PORTS and req.method == M.SET:
            targets = list(ports.values())
        elif sel in ports:
            targets = [ports[sel]]
        elif sel == 0 and len(ports) == 1:          # an HCA's only port
            targets = list(ports.values())
        else:
            return req.attr, M.STATUS_BAD_FIELD
        if req.attr_id == M.PORT_XMIT_CON_CTRL:      # read only here; 32 bits, saturating
            cong = min(targets[0].pc.totals(now)["PortXmitTimeCong"], 0xFFFFFFFF)
            return M.pack_fields(layout, {"PortSelect": sel, "PortXmitTimeCong": cong}), M.STATUS_OK
        if req.method == M.SET:
            names = _selected(f, ext)
            for p in targets:
                p.pc.reset(now, extended=ext, names=names)
        p = targets[0]
        values = p.pc.extended(now) if ext else p.pc.port_counters(now)
        values = {k: v for k, v in values.items() if k in {n for n, _, _ in layout}}
        values["PortSelect"] = sel
        values["CounterSelect"] = f["CounterSelect"]
        return M.pack_fields(layout, values), M.STATUS_OK

    # ---------------------------------------------------------------- Congestion Control
    def _cc(self, req: M.MAD, now: int) -> tuple[Buf, int]:
        settings = self.node.cc_settings
        if settings is None:
            return b"", M.STATUS_BAD_ATTRIBUTE
        if req.method == M.GET:
            attr = settings.get_attribute(req.attr_id, req.attr_mod, now)
        elif req.method == M.SET:
            attr = settings.set_attribute(req.attr_id, req.attr_mod, req.attr, now)
        else:
            return b"", M.STATUS_BAD_METHOD
        if attr is None:
            return b"", M.STATUS_BAD_ATTRIBUTE
        return attr, M.STATUS_OK


def _selected(fields: Mapping[str, int], extended: bool) -> set[str]:
    mask = fields["CounterSelect"]
    names = _SELECT_EXT if extended else _SELECT
    chosen = {name for bit, name in enumerate(names) if mask & (1 << bit)}
    if not extended and fields.get("CounterSelect2", 0) & 1:
        chosen.add("PortXmitWait")
    return chosen
