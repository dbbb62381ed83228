"""``ibemu reproduce``: the seed papers' figures, run on the emulator and compared with
the published numbers.

The table :data:`REPRODUCTIONS` holds, per figure, the scenario (a builder from
:mod:`ibemu.topologies`), the measurement window and the paper's figures with the range
we accept.  The emulator's numbers come only from running the scenario; the table is
read only to print and judge them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .config import PS_PER_MS
from .run import run_virtual
from .topologies import santos_fig1


@dataclass
class Check:
    metric: str          # "link:<label>", "flow:<name>" or "group:<name>" (fraction of link rate)
    paper: str           # what the paper says
    lo: float            # accepted range for ours
    hi: float


@dataclass
class Reproduction:
    id: str
    title: str
    source: str
    build: object        # () -> Scenario
    window_ms: tuple[float, float]
    checks: list[Check] = field(default_factory=list)


REPRODUCTIONS = [
    Reproduction(
        "fig2a", "Congestion spreading, L=5 R=1, buffer 4 packets, no window",
        "seed 003 §3, Figure 2(a)",
        lambda: santos_fig1(L=5, R=1, buffer_packets=4, name="fig2a"), (45, 55),
        [Check("link:root", "≈100 %", 0.95, 1.01),
         Check("link:inter", "about 30 % (1/3: two flows at 1/6 each)", 0.24, 0.36),
         Check("flow:victim", "about 15 % (1/6)", 0.11, 0.20),
         Check("flow:remote1", "≈ victim's rate (1/6)", 0.11, 0.20)]),
    Reproduction(
        "fig2b", "Window of one packet removes spreading, L=5 R=1",
        "seed 003 §4.2, Figure 2(b)",
        lambda: santos_fig1(L=5, R=1, buffer_packets=4, window=1, name="fig2b"), (45, 55),
        [Check("link:inter", "fully used (slightly under: starvation prevention)", 0.88, 1.01),
         Check("flow:victim", "takes the idle bandwidth (5/6)", 0.75, 0.90),
         Check("link:root", "≈100 % (slightly under)", 0.88, 1.01)]),
    Reproduction(
        "fig3a", "Spreading returns with L=5 R=5, window 1",
        "seed 003 §4.2, Figure 3(a)",
        lambda: santos_fig1(L=5, R=5, buffer_packets=4, window=1, name="fig3a"), (45, 55),
        [Check("flow:victim", "held down by spreading (far below its 1/2 share)", 0.0, 0.25),
         Check("link:inter", "under-utilized", 0.0, 0.75),
         Check("link:root", "≈100 %", 0.95, 1.01)]),
    Reproduction(
        "fig3b", "Optimal static rates, L=5 R=5",
        "seed 003 §4.2, Figure 3(b)",
        lambda: santos_fig1(L=5, R=5, buffer_packets=4, window=1,
                            rate={"local": 0.1, "remote": 0.1}, name="fig3b"), (45, 55),
        [Check("group:local", "ideal: 5 × 1/10", 0.47, 0.52),
         Check("group:remote", "ideal: 5 × 1/10", 0.47, 0.52),
         Check("flow:victim", "ideal: 1/2", 0.47, 0.52),
         Check("link:inter", "fully used", 0.95, 1.01),
         Check("link:root", "fully used", 0.95, 1.01)]),
]
BY_ID = {r.id: r for r in REPRODUCTIONS}


def measure(summary: dict, metric: str) -> float:
    """A metric of a windowed summary, as a fraction of link rate."""
    kind, _, name = metric.partition(":")
    if kind == "link":
        return summary["links"][name]["window"]["data_utilization"]
    table = summary["flows" if kind == "flow" else "groups"]
    return table[name]["window"]["normalized"]


def run_reproduction(rep: Reproduction, out_dir=None, progress=None):
    """Run one figure; return (rows, passed) with rows (metric, paper, ours, lo, hi, ok)."""
    scn = rep.build()
    window = (int(rep.window_ms[0] * PS_PER_MS), int(rep.window_ms[1] * PS_PER_MS))
    result = run_virtual(scn, out_dir=out_dir, progress=progress, window=window)
    rows = []
    for c in rep.checks:
        ours = measure(result.summary, c.metric)
        rows.append((c.metric, c.paper, ours, c.lo, c.hi, c.lo <= ours <= c.hi))
    return rows, all(r[-1] for r in rows), result


def format_rows(rep: Reproduction, rows) -> str:
    lines = ["%s — %s (%s), measured over %g–%g ms" % (rep.id, rep.title, rep.source, *rep.window_ms),
             "  %-14s %-52s %8s  %-13s %s" % ("metric", "paper", "ours", "accepted", "")]
    for metric, paper, ours, lo, hi, ok in rows:
        lines.append("  %-14s %-52s %7.1f%%  [%4.0f, %4.0f]%%  %s"
                     % (metric, paper, 100 * ours, 100 * lo, 100 * hi, "ok" if ok else "MISMATCH"))
    return "\n".join(lines)


def main(which: str | None, out_dir=None, list_only: bool = False) -> int:
    if list_only or not which:
        for r in REPRODUCTIONS:
            print("%-6s %-55s %s" % (r.id, r.title, r.source))
        print("run one with `ibemu reproduce ID`, all with `ibemu reproduce all`")
        return 0
    ids = [r.id for r in REPRODUCTIONS] if which == "all" else [which]
    for i in ids:
        if i not in BY_ID:
            from .errors import UserError
            raise UserError("unknown reproduction %r (known: %s, all)" % (i, ", ".join(BY_ID)))
    failed = 0
    for i in ids:
        rep = BY_ID[i]
        out = Path(out_dir or "reproductions") / rep.id
        rows, ok, result = run_reproduction(rep, out_dir=out)
        print(format_rows(rep, rows))
        print("  plots and series in %s/ (%.1f s wall)\n" % (out, result.wall_seconds))
        failed += not ok
    return 1 if failed else 0
