"""``ibemu reproduce``, ``ibemu sweep`` and ``ibemu study``: the papers' figures, a
scenario over a grid of values and seeds, and the studies on a scenario file."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import UserError
from .scenarios import scenario_argument


def cmd_reproduce(args) -> int:
    from ..studies.registry import main as reproduce_main
    return reproduce_main(args.figure, out_dir=args.out, list_only=args.list, full=args.full,
                          scheduler=args.scheduler, workers=args.workers, connect_timeout=args.connect_timeout)


def cmd_sweep(args) -> int:
    """``ibemu sweep SCENARIO --grid KEY=V1,V2 ...``: the points through Dask, the tables,
    the aggregate over seeds and a plot (ibemu/studies/sweep.py)."""
    from ..scenario import load_scenario
    from ..studies import sweep as S
    from ..scenario.overrides import run_overrides
    source = str(scenario_argument(args.scenario))
    common = run_overrides(args.set, None, args.duration)     # (the seeds are the sweep's)
    if not args.grid and not args.zip and args.seeds < 2:
        raise UserError("nothing to sweep: give --grid KEY=V1,V2,..., --zip KEY=V1,V2,... or --seeds N")
    base = load_scenario(source, common)
    points = S.plan(args.grid or [], args.zip or [], seeds=args.seeds, base_seed=base.seed)
    keys = list(dict.fromkeys(k for p in points for k, _ in p.keys))
    for k in (args.x, *(args.lines or [])):
        if k is not None and k not in keys:
            raise UserError("--x/--lines %s: not a swept key (swept: %s)" % (k, ", ".join(keys) or "none"))
    out = Path(args.out or "sweeps/%s" % base.name)
    print("sweep of %s: %d points (%d seeds each) into %s/" % (base.name, len(points), args.seeds, out))
    result = S.run_sweep(source, points, out, common=common, scheduler=args.scheduler, workers=args.workers,
                         window_ms=args.window, plots=args.point_plots, progress=False if args.quiet else None,
                         connect_timeout=args.connect_timeout)
    agg = S.write_tables(result, keys, out)
    if keys and agg:
        x = args.x or keys[0]
        lines = args.lines or [k for k in keys if k != x]
        metric = args.metric
        if metric is None:
            names = [m for m in agg[0] if m not in keys and m != "n" and not m.endswith(":ci95")]
            useful = [m for m in names if not all(math.isnan(r.get(m, math.nan)) for r in agg)]
            metric = next((m for m in ("victim", *[n for n in useful if n.startswith(("group:", "flow:"))], "jain")
                           if m in useful), useful[0] if useful else None)
        if metric is not None:
            if metric not in agg[0]:
                raise UserError("--metric %s: not a metric of this sweep (%s)" % (metric, ", ".join(
                    m for m in agg[0] if m not in keys and not m.endswith(":ci95") and m != "n")))
            S.plot_sweep(agg, metric, x, lines, out / "sweep.png")
            print("plot of %s over %s: %s" % (metric, x, out / "sweep.png"))
    print("%d points: %d ran, %d reused, %d failed in %.1f s; tables %s, %s (aggregate: %s)"
          % (len(points), result.ran, result.reused, len(result.failed), result.wall_seconds,
             out / "sweep.csv", out / "sweep.parquet", out / "aggregate.csv"))
    if result.interrupted:
        print("ibemu: sweep interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    if result.failed:
        for p, err in result.failed:
            print("ibemu: failed point %s: %s" % (p.label(), err), file=sys.stderr)
        return 1
    return 0


def cmd_study(args) -> int:
    """``ibemu study congestion_tree [SCENARIO]``: the study's cases on a scenario file
    (default the shipped congestion_tree.toml as it is), the table and the plots."""
    if args.study == "adaptive":
        from ..studies.adaptive import main as adaptive
        return adaptive(args.out, not args.ci_size, args.scenario)
    if args.study == "interference":
        from ..studies.interference import main as interference
        return interference(args.out, not args.ci_size, args.cases, args.scenario)
    from ..studies.congestion_tree import CASES, format_table, run_study
    cases = tuple(args.cases.split(",")) if args.cases else CASES
    for c in cases:
        if c not in CASES:
            raise UserError("--cases: unknown case %r (known: %s)" % (c, ", ".join(CASES)))
    out = Path(args.out or "studies/congestion_tree")
    values = run_study(out, full=not args.ci_size, scenario=args.scenario, cases=cases)
    print(format_table(values))
    print("table (tree.md, tree.csv), tree.png and per case heatmap_<case>.png, blocked_<case>.png in %s/" % out)
    return 0
