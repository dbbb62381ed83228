"""``[cc.hp]``: the settings of the HP scheme (seeds 000 and 003).

```toml
[cc]
scheme = "hp"
[cc.hp]
marking = "input"            # "naive" | "input" | "input-output" | "none"  (seed 003 §5)
output_threshold = 8         # packets waiting for an output; only with "input-output"
full = "credits"             # input buffer room counted in credits, or "waiting" packets only
propagating = false          # also mark every packet of a full input buffer (seed 000 §4a)
root_needs_credits = false   # a root is an output VL with credits; revoked when it runs
                             # out (seed 000 §4b ii-iii)
mark_blocked_for_noncompliant = false   # seed 000 §6.1 optimisation
noncompliant_switches = []   # switches that never mark (seed 000 §6.1)
response = "lipd"            # "fimd" | "lipd" | "aimd"  (seed 003 §6.2)
m = 2.0                      # decrease factor of FIMD and AIMD
rates = "discrete"           # "discrete" (IPD 0..levels-1) | "continuous"
levels = 256                 # Rmin = Rmax / levels (seed 003 §6.2: 256, the IBA IPD range)
cwnd_init = 1                # CWND starts here (seed 000 §5.1.3) ...
cwnd_max = 1                 # ... and may grow to here (seed 003: fixed window of 1)
unreliable_initial_ipd = 0   # slow start of UD flows and READ responses (seed 000 §5.2)
persistent = false           # keep CC state across consecutive flows of a (src, dst) pair
rwl = true                   # increase only the limiting factor (seed 000 §5.1); false: the
                             # rate on every unmarked ACK (seed 003 §6, fixed window)
rpi_reset = false            # a decrease keeps RPI (seed 000 §5.1.3.2); true: RPI is reloaded
                             # for the new setting, the increase independent of history (seed 003 §6.2)
rpi_mtu = 2048               # RPI normalisation (seed 000 §5.1.3.1): the reference packet
rpi_rate = "4x_sdr"          # ... and link whose packet time is the table's unit
noncompliant_cas = []        # HCAs that ignore congestion notification (seed 000 §6.2) ...
manager = "SM"               # ... and the HCA acting as subnet manager that paces them
                             # (none given: nothing paces them)
manager_period = "1ms"       # the manager lowers an idle source's IPD once a period
```
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...units import parse_rate, parse_time
from ...validate import Checker, boolean, describe, integer, string, table

MARKINGS = ("naive", "input", "input-output", "none")
RESPONSES = ("fimd", "lipd", "aimd")
RATES = ("discrete", "continuous")
FULLS = ("credits", "waiting")
KEYS = ("marking", "output_threshold", "full", "propagating", "root_needs_credits",
        "mark_blocked_for_noncompliant", "noncompliant_switches", "response", "m", "rates",
        "levels", "cwnd_init", "cwnd_max", "unreliable_initial_ipd", "persistent", "rpi_mtu",
        "rpi_rate", "noncompliant_cas", "manager", "manager_period", "trace", "rwl",
        "rpi_reset")


@dataclass
class HPSpec:
    marking: str = "input"
    output_threshold: int | None = None
    full: str = "credits"
    propagating: bool = False
    root_needs_credits: bool = False
    mark_blocked_for_noncompliant: bool = False
    noncompliant_switches: list[str] = field(default_factory=list)
    response: str = "lipd"
    m: float = 2.0
    rates: str = "discrete"
    levels: int = 256
    cwnd_init: int = 1
    cwnd_max: int = 1
    unreliable_initial_ipd: int = 0
    persistent: bool = False
    rpi_mtu: int = 2048
    rpi_rate: int = 1_000_000_000
    noncompliant_cas: list[str] = field(default_factory=list)
    manager: str | None = None
    manager_period: int = 1_000_000_000          # ps
    trace: bool = True
    rwl: bool = True
    rpi_reset: bool = False


def _names(ctx: Checker, path: str, v: Any, nodes: dict[str, str], kind: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ctx.err(path, "expected a list of %s names, got %s" % (kind, describe(v)))
    for i, x in enumerate(v):
        if nodes.get(x) != kind:
            known = sorted(n for n, k in nodes.items() if k == kind)
            raise ctx.err("%s[%d]" % (path, i), "no %s named %r (known: %s)" % (kind, x, ", ".join(known[:8])))
    return list(v)


def parse_hp(ctx: Checker, raw: Any, path: str, nodes: dict[str, str]) -> HPSpec:
    """Validate ``[cc.hp]`` into an :class:`HPSpec`; *nodes* maps node names to
    "switch" or "hca" (for the non-compliant devices and the manager)."""
    raw = table(ctx, path, raw if raw is not None else {}, KEYS)
    s = HPSpec()

    def p(k: str) -> str:
        return path + "." + k

    s.marking = string(ctx, p("marking"), raw.get("marking", s.marking), MARKINGS)
    if "output_threshold" in raw:
        if s.marking != "input-output":
            raise ctx.err(p("output_threshold"), "only used with marking = \"input-output\"")
        s.output_threshold = integer(ctx, p("output_threshold"), raw["output_threshold"], 1)
    elif s.marking == "input-output":
        raise ctx.err(p("output_threshold"), "missing (marking \"input-output\" needs a threshold in packets)")
    s.full = string(ctx, p("full"), raw.get("full", s.full), FULLS)
    for k in ("propagating", "root_needs_credits", "mark_blocked_for_noncompliant", "persistent", "trace",
              "rwl", "rpi_reset"):
        if k in raw:
            setattr(s, k, boolean(ctx, p(k), raw[k]))
    s.noncompliant_switches = _names(ctx, p("noncompliant_switches"), raw.get("noncompliant_switches", []),
                                     nodes, "switch")
    s.response = string(ctx, p("response"), raw.get("response", s.response), RESPONSES)
    if "m" in raw:
        v = raw["m"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ctx.err(p("m"), "expected a number greater than 1, got %s" % describe(v))
        if not 1 < v <= 1024:           # finite and bounded: F(t) = Rmin * m^(t/T) must not overflow
            raise ctx.err(p("m"), "must be greater than 1 and at most 1024, got %r" % v)
        if s.response == "lipd":
            raise ctx.err(p("m"), "only used with response \"fimd\" or \"aimd\"")
        s.m = float(v)
    s.rates = string(ctx, p("rates"), raw.get("rates", s.rates), RATES)
    s.levels = integer(ctx, p("levels"), raw.get("levels", s.levels), 2, 1 << 16)
    s.cwnd_init = integer(ctx, p("cwnd_init"), raw.get("cwnd_init", s.cwnd_init), 1, 1 << 20)
    s.cwnd_max = integer(ctx, p("cwnd_max"), raw.get("cwnd_max", max(s.cwnd_max, s.cwnd_init)), 1, 1 << 20)
    if s.cwnd_max < s.cwnd_init:
        raise ctx.err(p("cwnd_max"), "must be at least cwnd_init (%d), got %d" % (s.cwnd_init, s.cwnd_max))
    s.unreliable_initial_ipd = integer(ctx, p("unreliable_initial_ipd"),
                                    raw.get("unreliable_initial_ipd", 0), 0, s.levels - 1)
    s.rpi_mtu = integer(ctx, p("rpi_mtu"), raw.get("rpi_mtu", s.rpi_mtu), 256, 4096)
    if "rpi_rate" in raw:
        s.rpi_rate = ctx.conv(p("rpi_rate"), parse_rate, raw["rpi_rate"])
    s.noncompliant_cas = _names(ctx, p("noncompliant_cas"), raw.get("noncompliant_cas", []), nodes, "hca")
    if "manager" in raw:
        s.manager = string(ctx, p("manager"), raw["manager"]) or None
        if s.manager and nodes and nodes.get(s.manager) != "hca":
            raise ctx.err(p("manager"), "no HCA named %r (the subnet manager runs on an HCA)" % s.manager)
        if s.manager and s.manager in s.noncompliant_cas:
            raise ctx.err(p("manager"), "the subnet manager cannot be a non-compliant CA")
    if "manager_period" in raw:
        s.manager_period = ctx.conv(p("manager_period"), parse_time, raw["manager_period"])
        if s.manager_period <= 0:
            raise ctx.err(p("manager_period"), "must be positive")
    return s
