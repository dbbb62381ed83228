"""The ``[cc]`` keys, described (issue 30 Deliver 3): the scheme selector and the settings
tables of the shipped schemes -- HP (seeds 000 and 003), the IBA CCA (IBA annex A10;
seeds 002 and 004) and the DCMS manager (seed 002 §3).  See :mod:`.keyref`; a scheme's
own schema (``ibemu/cc/<scheme>/config.py``) decides what is accepted."""
from __future__ import annotations

__all__ = ["CC", "Row"]

Row = tuple[str, str, str, str, str, str]
"""(path, type, unit, default, range, meaning): the fields of :class:`ibemu.scenario.keyref.Key`."""


def K(path: str, type: str, unit: str, default: str, range: str, meaning: str) -> Row:
    return (path, type, unit, default, range, meaning)

HP = [
    K("marking", "string", "", "input", "input, naive, input-output, none", "how switches mark (seed 000 §4)"),
    K("output_threshold", "integer", "packets", "required (input-output)", ">= 1", "output-triggered threshold"),
    K("full", "string", "", "credits", "credits, waiting", "when an input buffer counts as full"),
    K("propagating", "boolean", "", "false", "", "also mark every packet of a full buffer (seed 000 §4a)"),
    K("root_needs_credits", "boolean", "", "false", "", "an output VL is a root only while it has credits"),
    K("mark_blocked_for_noncompliant", "boolean", "", "false", "", "mark for non-compliant switches (§6.1)"),
    K("noncompliant_switches", "array of strings", "", "[]", "switch names", "switches that never mark"),
    K("response", "string", "", "lipd", "lipd, fimd, aimd", "the source's rate response"),
    K("m", "number", "", "2.0", "(1, 1024]; fimd, aimd", "the response's multiplier"),
    K("rates", "string", "", "discrete", "discrete, continuous", "IPD levels or a continuous rate"),
    K("levels", "integer", "", "256", "2 .. 65536", "rate levels: Rmin = Rmax / levels"),
    K("cwnd_init", "integer", "packets", "1", "1 .. 2^20", "initial window"),
    K("cwnd_max", "integer", "packets", "max(1, cwnd_init)", ">= cwnd_init", "largest window"),
    K("unreliable_initial_ipd", "integer", "", "0", "0 .. levels-1", "UD and READ-response start IPD"),
    K("persistent", "boolean", "", "false", "", "keep CC state across a pair's consecutive flows"),
    K("rpi_mtu", "integer", "bytes", "2048", "256 .. 4096", "packet size the RPI is counted in"),
    K("rpi_rate", "rate", "bytes/s", "1GB/s", "> 0", "rate the RPI is counted at"),
    K("noncompliant_cas", "array of strings", "", "[]", "HCA names", "HCAs that ignore notifications (§6.2)"),
    K("manager", "string", "", "-", "an HCA", "the subnet manager that paces non-compliant CAs"),
    K("manager_period", "time", "", "1ms", "> 0", "the manager lowers an idle IPD once a period"),
    K("trace", "boolean", "", "true", "", "record per-flow CIPD and CWND traces"),
    K("rwl", "boolean", "", "true", "", "only the limiting factor increases (seed 000 §5.1)"),
    K("rpi_reset", "boolean", "", "false", "", "a decrease reloads the RPI (seed 000 §5.1.3.2)"),
]
SW = [
    K("Threshold", "integer", "", "15", "0 (off) .. 15", "how readily a port counts as congested"),
    K("Marking_Rate", "integer", "packets", "0", "0 .. 65535", "mean eligible packets between FECN marks"),
    K("Packet_Size", "integer", "64-byte credits", "0", "0 .. 255", "smaller packets are not marked"),
    K("Victim_Mask", "array or integer", "", "none", "ports 0 .. 255, or a 256-bit mask", "ports that mark as victims"),
]
CONTROL_MAP = K("Control_Map", "integer", "", "0x1F", "32 bits", "which fields apply (kept for the record)")
SL = [
    K("CCTI_Timer", "integer", "1.024 us", "150", "0 .. 65535 (0: never lowers)", "period of CCTI decrease"),
    K("CCTI_Increase", "integer", "", "1", "0 .. 255", "CCTI added per BECN"),
    K("Trigger_Threshold", "integer", "", "0", "0 .. 255 (0: no event)", "CCTI that raises an event"),
    K("CCTI_Min", "integer", "", "0", "0 .. 255", "lowest CCTI"),
]
CA = [
    K("Port_Control", "string", "", "qp", "qp, sl", "a CCTI per QP or per SL"),
    K("CCTI_Limit", "integer", "", "0 (the CCT's last entry)", "0 .. 65535", "highest CCTI"),
    K("CCT", "string or array", "", "entry i = (2, i)", "<= 128 [shift, mult] entries", "congestion control table"),
    *SL,
]


def _under(prefix: str, keys: list[Row]) -> list[Row]:
    return [(prefix + "." + k[0], *k[1:]) for k in keys]  # type: ignore[misc]


PORT = [K("port", "table", "", "{}", "", "per-port settings"),
        K("port.<port>", "table", "", "", "1 .. 254", "one port's SwitchPortCongestionSetting"),
        *_under("port.<port>", SW[:3])]


CCA = [
    K("cc.cca", "table", "", "", "", "the IBA CCA's settings (its attribute names)"),
    K("cc.cca.opensm", "string", "", "-", "opensm.conf text", "OpenSM options, inline"),
    K("cc.cca.opensm_file", "string", "", "-", "a path", "an opensm.conf, relative to the scenario"),
    K("cc.cca.enabled", "boolean", "", "true (opensm.conf: its option)", "", "OpenSM's congestion_control"),
    K("cc.cca.trace_marks", "boolean", "", "true", "", "record per-port mark traces"),
    *_under("cc.cca", SW), *_under("cc.cca", [CONTROL_MAP]), *_under("cc.cca", CA),
    K("cc.cca.sl", "table", "", "{}", "", "per-SL settings"),
    K("cc.cca.sl.<SL>", "table", "", "", "0 .. 15", "one SL's CCTI settings"),
    *_under("cc.cca.sl.<SL>", SL),
    K("cc.cca.switch", "table", "", "{}", "", "per-switch settings"),
    K("cc.cca.switch.<switch>", "table", "", "", "a switch", "that switch's settings"),
    *_under("cc.cca.switch.<switch>", SW + [CONTROL_MAP] + PORT),
    K("cc.cca.hca", "table", "", "{}", "", "per-HCA settings"),
    K("cc.cca.hca.<hca>", "table", "", "", "an HCA", "that HCA's settings"),
    *_under("cc.cca.hca.<hca>", CA),
    K("cc.cca.hca.<hca>.sl", "table", "", "{}", "", "that HCA's per-SL settings"),
    K("cc.cca.hca.<hca>.sl.<SL>", "table", "", "", "0 .. 15", "one SL's CCTI settings"),
    *_under("cc.cca.hca.<hca>.sl.<SL>", SL),
]
DCMS = [
    K("manager", "string", "", "required", "an HCA", "the HCA that runs the manager"),
    K("tau", "time", "", "required", "> 0", "sweep interval"),
    K("T_C", "number", "fraction of tau", "0.18", "0 .. 1", "congested-time threshold"),
    K("T_W", "number", "fraction of tau", "0.60", "0 .. 1", "credit-wait threshold"),
    K("T_D", "number", "fraction of capacity", "0.03", "0 .. 1", "utilisation-drop threshold"),
    K("T_I", "integer", "sweeps", "12", "1 .. 10^6", "Low-MR duration threshold"),
    K("low", "integer", "", "0", "0 .. 65535", "the low Marking_Rate"),
    K("default", "integer", "", "128", "0 .. 65535", "the default Marking_Rate"),
]
CC = [
    K("cc", "table", "", "", "", "congestion control: the scheme and its settings"),
    K("cc.scheme", "string", "", "none", "none, hp, cca", "the scheme"),
    K("cc.hp", "table", "", "", "", "the HP scheme's settings (seeds 000, 003)"), *_under("cc.hp", HP),
    *CCA,
    K("cc.dcms", "table", "", "-", "needs scheme cca", "the DCMS manager (seed 002 §3)"), *_under("cc.dcms", DCMS),
]
