"""``ibemu perfquery``: a port's counters in the text format of infiniband-diags'
perfquery (REFERENCE.md "perfquery text format"): a header
``# Port counters: Lid L port P (CapMask: 0x1600)``, then per field the name, a colon,
dots filling the name to 32 columns, and the value (CounterSelect as 0x%04x,
CounterSelect2 as 0x%02x).  ``-x`` prints PortCountersExtended with the header
``# Port extended counters: Lid L port P (CapMask: 0x1600 CapMask2: 0x0000000)``.

Line for line as infiniband-diags 44 (issue 18 item 8; rdma-core perfquery.c
``dump_perfcounters`` and libibmad ``mad_dump_perfcounters``): PortCounters list the
fields from PortSelect to ExcessiveBufferOverrunErrors, then QP1Dropped, then
VL15Dropped to PortXmitWait; PortCountersExtended the six fields to PortRcvPkts, then
(CapMask bit 9, extended width) the four unicast/multicast packet counters, and no
more (CapMask2 0: no additional extended counters).  A failure prints what the real
tool prints on standard output, ``perfquery: iberror: failed: WHAT`` (WHAT:
``classportinfo query`` for a LID nobody answers, ``perfquery`` / ``perfextquery`` for a
port the node lacks, ``can't resolve destination port X`` for a name it cannot
resolve), and exits 255 as it does (``exit(-1)``); ibemu's own one-line reason goes to
standard error (:class:`PerfqueryError`).

For a finished run the counters come from the output folder's results.json ("ports":
running totals at the end of the run, in IBA units), shown through the same views a
PerfMgt agent answers with: PortCounters saturate at their widths, extended counters
wrap at 2^64 (:mod:`ibemu.fabric.counters`).
"""
from __future__ import annotations

import json
from pathlib import Path

from .errors import UserError
from .fabric.counters import COUNTERS, EXTENDED

# PortXmitWait supported (bit 12), extended width (9) and no-IETF extended (10)
CAP_MASK = 0x1600
# ClassPortInfo CapabilityMask2: no optional attribute (IsAdditionalPortCountersExtendedSupported clear)
CAP_MASK2 = 0
EXIT_IBERROR = 255
"""The real tool's exit status on failure: ``exit(-1)``."""


class PerfqueryError(UserError):
    """A query the real perfquery would fail: *iberror* is what it prints after
    ``perfquery: iberror: failed: ``; the message is ibemu's reason."""

    def __init__(self, message: str, iberror: str) -> None:
        super().__init__(message)
        self.iberror = iberror

    def tool_line(self) -> str:
        return "perfquery: iberror: failed: %s" % self.iberror
_ORDER = ("PortSelect", "CounterSelect", "SymbolErrorCounter", "LinkErrorRecoveryCounter",
          "LinkDownedCounter", "PortRcvErrors", "PortRcvRemotePhysicalErrors",
          "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
          "PortRcvConstraintErrors", "CounterSelect2", "LocalLinkIntegrityErrors",
          "ExcessiveBufferOverrunErrors", "QP1Dropped", "VL15Dropped", "PortXmitData", "PortRcvData",
          "PortXmitPkts", "PortRcvPkts", "PortXmitWait")
_ORDER_EXT = ("PortSelect", "CounterSelect") + tuple(name for name, _ in EXTENDED)
_WIDTH = {name: width for name, _, width in COUNTERS}
_WIDTH.update({"SymbolErrorCounter": 16, "LinkErrorRecoveryCounter": 8, "LinkDownedCounter": 8,
               "QP1Dropped": 16})


def field_line(name: str, value) -> str:
    """One perfquery line: ``Name:`` then dots to column 33, then the value."""
    if name == "CounterSelect":
        text = "0x%04x" % value
    elif name == "CounterSelect2":
        text = "0x%02x" % value
    else:
        text = str(value)
    return "%s:%s%s" % (name, "." * max(0, 32 - len(name)), text)


def format_counters(lid: int, port: int, values: dict, extended: bool = False,
                    cap_mask: int = CAP_MASK, cap_mask2: int = CAP_MASK2) -> str:
    """The perfquery text for *values* (PortCounters or PortCountersExtended view):
    perfquery.c's ``"# Port counters: %s port %d (CapMask: 0x%02X)"`` and
    ``"# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)"``."""
    if extended:
        lines = ["# Port extended counters: Lid %d port %d (CapMask: 0x%02X CapMask2: 0x%07X)"
                 % (lid, port, cap_mask, cap_mask2)]
    else:
        lines = ["# Port counters: Lid %d port %d (CapMask: 0x%02X)" % (lid, port, cap_mask)]
    full = {"PortSelect": port, "CounterSelect": 0, "CounterSelect2": 0, **values}
    for name in (_ORDER_EXT if extended else _ORDER):
        lines.append(field_line(name, full.get(name, 0)))
    return "\n".join(lines)


def views_from_totals(totals: dict) -> tuple[dict, dict]:
    """(PortCounters, PortCountersExtended) views of running totals."""
    basic = {name: min(int(totals.get(name, 0)), (1 << w) - 1) for name, w in _WIDTH.items()}
    attr_name = {attr: name for name, attr, _ in COUNTERS if attr}
    ext = {}
    for name, attr in EXTENDED:
        ext[name] = int(totals.get(attr_name.get(attr, ""), 0)) % (1 << 64) if attr else 0
    return basic, ext


def from_run(out_dir, target: str, port: int | None, extended: bool = False) -> str:
    """perfquery text for node (name or LID) *target*, *port*, of a finished run."""
    path = Path(out_dir) / "results.json"
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError("%s: no results.json here (is this a run's output folder?)" % out_dir) from None
    except (OSError, ValueError) as e:
        raise UserError("%s: cannot read: %s" % (path, e)) from None
    ports = results.get("ports")
    lids = results.get("extra", {}).get("lids") or {}
    if not ports:
        raise UserError("%s: the run recorded no port counters" % path)
    node = target
    if target.isdigit():
        by_lid = {int(v): k for k, v in lids.items()}
        if int(target) not in by_lid:
            raise PerfqueryError("LID %s is not in this run (LIDs: %s)" % (target, ", ".join(
                "%s=%s" % (k, v) for k, v in sorted(lids.items(), key=lambda kv: kv[1]))), "classportinfo query")
        node = by_lid[int(target)]
    mine = sorted(int(k.rsplit(":", 1)[1]) for k in ports if k.rsplit(":", 1)[0] == node)
    if not mine:
        known = ", ".join(sorted({k.rsplit(":", 1)[0] for k in ports}))
        raise PerfqueryError("no node %r in this run (nodes: %s)" % (node, known),
                             "can't resolve destination port %s" % target)
    if port is None:
        port = mine[0]
    if port not in mine:
        raise PerfqueryError("%s has no port %d (ports: %s)" % (node, port, ", ".join(map(str, mine))),
                             "perfextquery" if extended else "perfquery")
    basic, ext = views_from_totals(ports["%s:%d" % (node, port)])
    return format_counters(int(lids.get(node, 0)), port, ext if extended else basic, extended)
