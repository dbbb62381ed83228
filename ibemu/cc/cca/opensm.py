"""OpenSM's congestion-control options (opensm.conf syntax; option names from
opensm/osm_subnet.c and man opensm(8), REFERENCE.md "OpenSM option names"), so a user
can paste their fabric's settings into a scenario (``opensm = '''...'''``) or point at
the file (``opensm_file = "opensm.conf"``).

One option per line, ``name value``; ``#`` starts a comment; numbers are decimal or
``0x`` hex as OpenSM's strtoul reads them.  Per-SL options take the SL first:
``cc_ca_cong_setting_ccti_timer 0 75``.  ``cc_cct`` is ``shift:mult,shift:mult,...``
(at most 128 entries; OpenSM then sets CCTI_Limit to entries − 1).  An option this
module does not know, or a malformed value, raises :class:`OpenSMError` naming the line
and option, with the closest valid name (difflib) for a misspelt one.

A complete opensm.conf is accepted (issue 18 item 9; the option set of OpenSM 3.3.23's
``opensm -c``, :mod:`ibemu.cc.cca.opensm_options`): ``congestion_control`` and the
``cc_*`` options are applied; ``routing_engine``, ``root_guid_file``, ``lmc`` and
``lfts_file`` are checked here (an engine list of OpenSM's engine names, the closest name
for a misspelt one; LMC 0..7) and returned in ``routing`` (their values, ``(null)`` left
out), which :mod:`ibemu.scenario.opensm_routing` applies to the subnet manager's routing
(keys of the scenario's ``[routing]`` table win); every other valid OpenSM option is
listed once, in file order, in ``not_modelled``.

Options accepted and kept only for the record (no effect on the emulation): cc_key,
cc_max_outstanding_mads, cc_sw_cong_setting_control_map, cc_sw_cong_setting_credit_mask,
cc_sw_cong_setting_credit_starvation_threshold and _return_delay (credit starvation is
not modelled), cc_ca_cong_setting_control_map.
"""
from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TypedDict

from .opensm_options import ENGINES, NO_FALLBACK, OPENSM_VERSION, OPTION_NAMES, ROUTING_OPTIONS
from .settings import CCT_MAX_ENTRIES


class OpenSMError(ValueError):
    """``str()`` is ``line N: option: reason``."""


def _num(s: str, what: str, bits: int) -> int:
    try:
        v = int(s, 0)
    except ValueError:
        raise ValueError("expected %s, got %r" % (what, s)) from None
    if not 0 <= v < (1 << bits):
        raise ValueError("must be between 0 and %d, got %d" % ((1 << bits) - 1, v))
    return v


def _bool(s: str) -> bool:
    u = s.upper()
    if u in ("TRUE", "1"):
        return True
    if u in ("FALSE", "0"):
        return False
    raise ValueError("expected TRUE or FALSE, got %r" % s)


def _shift_mult(s: str) -> tuple[int, int]:
    a, sep, b = s.strip().partition(":")
    if not sep:
        raise ValueError("expected shift:mult, got %r" % s)
    return _num(a, "a CCT_Shift", 2), _num(b, "a CCT_Multiplier", 14)


def _engines(s: str) -> str:
    """``routing_engine``: a comma list of OpenSM's engine names (case as OpenSM's
    strcasecmp ignores it) and ``no_fallback``; returned with OpenSM's spelling."""
    known = {e.lower(): e for e in (*ENGINES, NO_FALLBACK)}
    out = []
    for part in s.split(","):
        name = part.strip()
        if name.lower() not in known:
            close = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.6)
            hint = (" (did you mean %r?)" % known[close[0]]) if close else \
                " (OpenSM %s's engines: %s)" % (OPENSM_VERSION, ", ".join(ENGINES))
            raise ValueError("unknown routing engine %r%s" % (name, hint))
        out.append(known[name.lower()])
    return ",".join(out)


def parse_cct(s: str) -> list[tuple[int, int]]:
    """``"shift:mult,shift:mult,..."`` -> [(CCT_Shift, CCT_Multiplier), ...]."""
    s = s.strip().strip('"')
    if not s:
        raise ValueError("empty table")
    entries = [_shift_mult(x) for x in s.split(",")]
    if len(entries) > CCT_MAX_ENTRIES:
        raise ValueError("at most %d entries (OpenSM), got %d" % (CCT_MAX_ENTRIES, len(entries)))
    return entries


# option -> the SwitchCongestionSetting field it sets, and its value parser
_SW: dict[str, tuple[str, Callable[[str], int]]] = {
    "cc_sw_cong_setting_threshold": ("Threshold", lambda s: _num(s, "a Threshold 0..15", 4)),
    "cc_sw_cong_setting_marking_rate": ("Marking_Rate", lambda s: _num(s, "a Marking_Rate", 16)),
    "cc_sw_cong_setting_packet_size": ("Packet_Size", lambda s: _num(s, "a Packet_Size in credits", 8)),
    "cc_sw_cong_setting_victim_mask": ("Victim_Mask", lambda s: _num(s, "a 256-bit hex mask", 256)),
    "cc_sw_cong_setting_control_map": ("Control_Map", lambda s: _num(s, "a 32-bit hex map", 32)),
}
# per-SL CACongestionEntry options, "<SL> <value>": the field and its width in bits
_SL = {
    "cc_ca_cong_setting_ccti_timer": ("CCTI_Timer", 16),
    "cc_ca_cong_setting_ccti_increase": ("CCTI_Increase", 8),
    "cc_ca_cong_setting_trigger_threshold": ("Trigger_Threshold", 8),
    "cc_ca_cong_setting_ccti_min": ("CCTI_Min", 8),
}
# checked, then kept only for the record (module text)
_RECORD: dict[str, Callable[[str], object]] = {
    "cc_sw_cong_setting_credit_mask": lambda s: _num(s, "a 256-bit hex mask", 256),
    "cc_sw_cong_setting_credit_starvation_threshold": lambda s: _num(s, "a threshold 0..15", 4),
    "cc_sw_cong_setting_credit_starvation_return_delay": _shift_mult,
    "cc_ca_cong_setting_control_map": lambda s: _num(s, "a 16-bit hex map", 16),
    "cc_key": lambda s: _num(s, "a 64-bit key", 64),
    "cc_max_outstanding_mads": lambda s: _num(s, "a count", 32),
}
_ENABLED, _PORT_CONTROL, _CCT = "congestion_control", "cc_ca_cong_setting_port_control", "cc_cct"
OPTIONS = sorted([*_SW, _PORT_CONTROL, _CCT, *_SL, *_RECORD, _ENABLED])
ALL_OPTIONS = sorted(OPTION_NAMES | set(OPTIONS))
"""Every valid option name: the misspelt-name hint searches them all."""


class CAOptions(TypedDict, total=False):
    """The CA options of an opensm.conf, by spec name."""
    Port_Control: str                   # "qp" or "sl"
    CCT: list[tuple[int, int]]          # (CCT_Shift, CCT_Multiplier)


class OpenSMOptions(TypedDict):
    """What :func:`parse_opensm` read, by spec name."""
    enabled: bool                       # congestion_control
    switch: dict[str, int]              # SwitchCongestionSetting field -> value
    ca: CAOptions
    sl: dict[int, dict[str, int]]       # SL -> CACongestionEntry field -> value
    routing: dict[str, str]             # routing_engine / root_guid_file / lmc / lfts_file, checked
    not_modelled: list[str]             # the other valid OpenSM options, once each, in file order


def parse_opensm(text: str) -> OpenSMOptions:
    """Read opensm.conf text into ``{"enabled": bool?, "switch": {key: v}, "ca": {key: v},
    "sl": {SL: {key: v}}}`` with spec-named keys.  ``congestion_control`` absent:
    OpenSM's default, FALSE (no congestion control configured)."""
    out: OpenSMOptions = {"enabled": False, "switch": {}, "ca": {}, "sl": {}, "routing": {}, "not_modelled": []}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, rest = line.partition(" ")
        name, rest = name.strip(), rest.strip()
        if "\t" in name:
            name, _, more = name.partition("\t")
            rest = (more + " " + rest).strip()

        def bad(reason: str, name: str = name, n: int = n) -> OpenSMError:
            return OpenSMError("line %d: %s: %s" % (n, name, reason))
        if name not in OPTIONS:
            if name in ROUTING_OPTIONS:
                if not rest:
                    raise bad("missing value")
                if rest != "(null)":
                    try:
                        if name == "lmc":
                            _num(rest, "an LMC 0..7", 3)
                        elif name == "routing_engine":
                            rest = _engines(rest)
                    except ValueError as e:
                        raise bad(str(e)) from None
                    out["routing"][name] = rest
                continue
            if name in OPTION_NAMES:
                if name not in out["not_modelled"]:
                    out["not_modelled"].append(name)
                continue
            close = difflib.get_close_matches(name, ALL_OPTIONS, n=1, cutoff=0.7)
            hint = (" (did you mean %r?)" % close[0]) if close else \
                " (not an option of OpenSM %s's opensm.conf)" % OPENSM_VERSION
            raise bad("unknown option" + hint)
        if not rest:
            raise bad("missing value")
        if name == _CCT and rest.strip('"') == "(null)":
            continue                        # OpenSM's dump of an unset table
        try:
            if name in _SL:
                key, bits = _SL[name]
                parts = rest.split()
                if len(parts) != 2:
                    raise ValueError("expected '<SL> <value>', got %r" % rest)
                sl = _num(parts[0], "an SL 0..15", 4)
                out["sl"].setdefault(sl, {})[key] = _num(parts[1], "a number", bits)
            elif name in _SW:
                key, fn = _SW[name]
                out["switch"][key] = fn(rest)
            elif name == _PORT_CONTROL:
                out["ca"]["Port_Control"] = "sl" if _num(rest, "0 (per QP) or 1 (per SL)", 1) else "qp"
            elif name == _CCT:
                out["ca"]["CCT"] = parse_cct(rest)
            elif name == _ENABLED:
                out["enabled"] = _bool(rest)
            else:
                _RECORD[name](rest)
        except ValueError as e:
            raise bad(str(e)) from None
    return out
