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
    metric: str          # "link:<label>", "flow:<name>" or "group:<name>" (fraction of link rate),
                         # or any name a custom runner reports
    paper: str           # what the paper says
    lo: float            # accepted range for ours
    hi: float
    unit: str = "%"      # "%": shown as a percentage; else the unit printed after the value


@dataclass
class Reproduction:
    """One figure.  Either *build* (a scenario run once, measured over *window_ms*) or
    *runner*: ``runner(out_dir, full) -> dict`` of metric values for figures made of
    several runs (sweeps, comparisons) or of a formula; *full* asks for the paper's whole
    sweep instead of the CI-sized one."""
    id: str
    title: str
    source: str
    build: object        # () -> Scenario, or None with a runner
    window_ms: tuple[float, float]
    checks: list[Check] = field(default_factory=list)
    runner: object = None


def _registered() -> list:
    """Reproductions of the congestion-control schemes, each kept with its scheme."""
    import importlib
    extra = []
    for mod in ("ibemu.cc.hp.reproduce", "ibemu.cc.cca.reproduce", "ibemu.cc.dcms.reproduce"):
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name is None or not mod.startswith(e.name):
                raise                       # a missing import inside the module
            continue
        extra += m.REPRODUCTIONS
    return extra


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
] + _registered()
BY_ID = {r.id: r for r in REPRODUCTIONS}


def measure(summary: dict, metric: str) -> float:
    """A metric of a windowed summary, as a fraction of link rate."""
    kind, _, name = metric.partition(":")
    if kind == "link":
        return summary["links"][name]["window"]["data_utilization"]
    table = summary["flows" if kind == "flow" else "groups"]
    return table[name]["window"]["normalized"]


@dataclass
class RunnerResult:
    wall_seconds: float


def run_reproduction(rep: Reproduction, out_dir=None, progress=None, full: bool = False):
    """Run one figure; return (rows, passed, result) with rows
    (check, ours, ok); *result* has ``wall_seconds``."""
    if rep.runner is not None:
        import time
        t0 = time.perf_counter()
        values = rep.runner(out_dir, full)
        result = RunnerResult(time.perf_counter() - t0)
        get = values.__getitem__
    else:
        scn = rep.build()
        window = (int(rep.window_ms[0] * PS_PER_MS), int(rep.window_ms[1] * PS_PER_MS))
        result = run_virtual(scn, out_dir=out_dir, progress=progress, window=window)
        get = lambda metric: measure(result.summary, metric)   # noqa: E731
    rows = []
    for c in rep.checks:
        ours = get(c.metric)
        rows.append((c, ours, c.lo <= ours <= c.hi))
    return rows, all(r[-1] for r in rows), result


def format_rows(rep: Reproduction, rows) -> str:
    where = (", measured over %g–%g ms" % tuple(rep.window_ms)) if rep.window_ms else ""
    lines = ["%s — %s (%s)%s" % (rep.id, rep.title, rep.source, where),
             "  %-22s %-50s %9s  %-15s %s" % ("metric", "paper", "ours", "accepted", "")]
    for c, ours, ok in rows:
        if c.unit == "%":
            val, rng = "%8.1f%%" % (100 * ours), "[%4.0f, %4.0f]%%" % (100 * c.lo, 100 * c.hi)
        else:
            val, rng = "%9.4g" % ours, "[%.4g, %.4g] %s" % (c.lo, c.hi, c.unit)
        lines.append("  %-22s %-50s %s  %-15s %s" % (c.metric, c.paper, val, rng, "ok" if ok else "MISMATCH"))
    return "\n".join(lines)


def main(which: str | None, out_dir=None, list_only: bool = False, full: bool = False) -> int:
    if list_only or not which:
        for r in REPRODUCTIONS:
            print("%-12s %-55s %s" % (r.id, r.title, r.source))
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
        rows, ok, result = run_reproduction(rep, out_dir=out, full=full)
        print(format_rows(rep, rows))
        print("  plots and series in %s/ (%.1f s wall)\n" % (out, result.wall_seconds))
        failed += not ok
    return 1 if failed else 0
