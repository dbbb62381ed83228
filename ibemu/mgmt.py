"""A management client in the manner of infiniband-diags, sans-I/O (issue 7 item 3):
build the MADs that ``perfquery`` and ``ibccconfig`` send, send them from an HCA of the
fabric (:class:`ManagementClient`, installed on the HCA's QP1), and turn the answers into
their text.  The wall-clock runtime carries requests to a running emulation
(:mod:`ibemu.runtime.mgmt`); tests use the same client on the virtual-time engine.

ibccconfig operations (infiniband-diags ibccconfig(8); the positional arguments after the
LID are the attribute's fields in that order):

- ``SwitchCongestionSetting`` (SS): controlmap victimmask creditmask threshold packetsize
  csthreshold csreturndelay markingrate
- ``SwitchPortCongestionSetting`` (SP): portnum valid control_type threshold packet_size
  cong_parm_marking_rate
- ``CACongestionSetting`` (CS): port_control control_map ccti_timer ccti_increase
  trigger_threshold ccti_min (the entry written to every SL set in control_map)
- ``CongestionControlTable`` (CT): cctilimit index cctentry ... (index: the 64-entry
  block; an entry is a 16-bit number, CCT_Shift in bits 15:14, CCT_Multiplier 13:0)
"""
from __future__ import annotations

from .errors import UserError
from .fabric.mad_agent import MADAgent
from .fabric.node import VL15
from .perfquery import field_line, format_counters
from .wire import mad as M
from .wire.mad import mad_is_response, mad_tid, mad_with_tid

OPS = {"SS": "SwitchCongestionSetting", "SP": "SwitchPortCongestionSetting",
       "CS": "CACongestionSetting", "CT": "CongestionControlTable"}
_ARGS = {"SwitchCongestionSetting": ("controlmap", "victimmask", "creditmask", "threshold", "packetsize",
                                     "csthreshold", "csreturndelay", "markingrate"),
         "SwitchPortCongestionSetting": ("portnum", "valid", "control_type", "threshold", "packet_size",
                                         "cong_parm_marking_rate"),
         "CACongestionSetting": ("port_control", "control_map", "ccti_timer", "ccti_increase",
                                 "trigger_threshold", "ccti_min"),
         "CongestionControlTable": ("cctilimit", "index", "cctentry")}


def perf_get(port: int, extended: bool = False) -> bytes:
    """The PerfMgt Get perfquery sends for *port* (PortCounters or, ``-x``, Extended)."""
    if extended:
        return M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS_EXT,
                           M.pack_fields(M.PORT_COUNTERS_EXT_FIELDS, {"PortSelect": port}))
    return M.build_mad(M.CLASS_PERF, M.GET, M.PORT_COUNTERS,
                       M.pack_fields(M.PORT_COUNTERS_FIELDS, {"PortSelect": port}))


def perf_text(resp: bytes, lid: int, port: int, extended: bool = False) -> str:
    """perfquery's output for a GetResp of :func:`perf_get`."""
    mad = M.parse_mad(resp)
    if mad.status:
        raise UserError("perfquery: LID %d port %d answered with MAD status 0x%04x" % (lid, port, mad.status))
    return format_counters(lid, port, mad.fields(), extended)


def _int(op, name, text) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UserError("%s: %s must be a number, got %r" % (op, name, text)) from None


def cc_set(op: str, args: list[str], cc_key: int = 0) -> bytes:
    """The CC Set MAD of ``ibccconfig OP <lid> ARGS...`` (module docstring)."""
    op = OPS.get(op, op)
    names = _ARGS.get(op)
    if names is None:
        raise UserError("ibccconfig: unknown operation %r (known: %s)" % (
            op, ", ".join("%s (%s)" % (v, k) for k, v in OPS.items())))
    if op == "CongestionControlTable":
        if len(args) < 3:
            raise UserError("%s needs: cctilimit index cctentry [cctentry ...]" % op)
        limit, index = _int(op, "cctilimit", args[0]), _int(op, "index", args[1])
        entries = [_int(op, "cctentry", a) for a in args[2:]]
        data = M.pack_cc_table(limit, [(e >> 14 & 3, e & 0x3FFF) for e in entries])
        return M.build_mad(M.CLASS_CC, M.SET, M.CC_TABLE, data, attr_mod=index, cc_key=cc_key)
    if len(args) != len(names):
        raise UserError("%s needs %d values: %s" % (op, len(names), " ".join(names)))
    v = dict(zip(names, (_int(op, n, a) for n, a in zip(names, args))))
    try:
        if op == "SwitchCongestionSetting":
            data = M.pack_fields(M.SWITCH_CONG_SETTING_FIELDS, {
                "Control_Map": v["controlmap"], "Victim_Mask": v["victimmask"], "Credit_Mask": v["creditmask"],
                "Threshold": v["threshold"], "Packet_Size": v["packetsize"], "CS_Threshold": v["csthreshold"],
                "CS_ReturnDelay": v["csreturndelay"], "Marking_Rate": v["markingrate"]})
            return M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_CONG_SETTING, data, cc_key=cc_key)
        if op == "SwitchPortCongestionSetting":
            p = v["portnum"]
            elements = [{} for _ in range(p % M.SWITCH_PORT_ELEMENTS)] + [{
                "Valid": v["valid"], "Control_Type": v["control_type"], "Threshold": v["threshold"],
                "Packet_Size": v["packet_size"], "Marking_Rate": v["cong_parm_marking_rate"]}]
            return M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_PORT_CONG_SETTING,
                               M.pack_switch_port_settings(elements),
                               attr_mod=p // M.SWITCH_PORT_ELEMENTS, cc_key=cc_key)
        entry = {"CCTI_Timer": v["ccti_timer"], "CCTI_Increase": v["ccti_increase"],
                 "Trigger_Threshold": v["trigger_threshold"], "CCTI_Min": v["ccti_min"]}
        data = M.pack_ca_setting(v["port_control"], v["control_map"], [entry] * 16)
        return M.build_mad(M.CLASS_CC, M.SET, M.CA_CONG_SETTING, data, cc_key=cc_key)
    except M.MADError as e:
        raise UserError("%s: %s" % (op, e)) from None


def cc_text(resp: bytes, port: int | None = None) -> str:
    """The attribute a CC GetResp carries, one ``Name:....value`` line per field
    (for SwitchPortCongestionSetting only *port*'s element, when given)."""
    mad = M.parse_mad(resp)
    if mad.status:
        return "# %s: MAD status 0x%04x (rejected)" % (mad.attribute_name, mad.status)
    lines = ["# %s" % mad.attribute_name]
    if mad.attr_id == M.SWITCH_PORT_CONG_SETTING:
        for i, el in enumerate(M.unpack_switch_port_settings(mad.attr)):
            p = mad.attr_mod * M.SWITCH_PORT_ELEMENTS + i
            if (port is None and el["Valid"]) or p == port:
                lines += ["# port %d" % p] + [field_line(k, v) for k, v in el.items()]
    elif mad.attr_id == M.CA_CONG_SETTING:
        head, entries = M.unpack_ca_setting(mad.attr)
        lines += [field_line(k, v) for k, v in head.items()]
        for sl, e in enumerate(entries):
            lines.append("SL%d: %s" % (sl, " ".join("%s=%d" % kv for kv in e.items())))
    elif mad.attr_id == M.CC_TABLE:
        limit, entries = M.unpack_cc_table(mad.attr)
        lines.append(field_line("CCTI_Limit", limit))
        lines += ["%d: shift %d multiplier %d" % (mad.attr_mod * 64 + i, s, m) for i, (s, m) in enumerate(entries)]
    else:
        lines += [field_line(k, v) for k, v in mad.fields().items()]
    return "\n".join(lines)


class ManagementClient:
    """QP1 of an HCA that sends MADs on request and hands their answers to
    ``on_response(tid, mad_bytes)``; other packets go to the QP1 handler it replaced
    (the HCA's own agent).  A request to the HCA's own LID is answered locally."""
    name = "qp1"

    def __init__(self, hca, on_response):
        self.hca = hca
        self.inner = hca.qps.get(M.GSI_QP)
        self.on_response = on_response
        self.pending: set[int] = set()
        hca.qps[M.GSI_QP] = self

    def send(self, now: int, dlid: int, mad: bytes, tid: int) -> None:
        hca = self.hca
        frame = M.build_mad_packet(dlid, hca.lid, mad_with_tid(mad, tid))
        if dlid == hca.lid:
            reply = MADAgent(hca).handle(frame, now)
            if reply is not None:
                self.on_response(tid, M.mad_of(reply))
            return
        self.pending.add(tid)
        hca.send_control(frame, VL15)
        hca.kick(now)

    def on_packet(self, now: int, frame):
        raw = M.mad_of(frame)
        if raw is not None and mad_is_response(raw):
            tid = mad_tid(raw)
            if tid in self.pending:
                self.pending.discard(tid)
                self.on_response(tid, raw)
                return None
        return self.inner.on_packet(now, frame) if self.inner is not None else None
