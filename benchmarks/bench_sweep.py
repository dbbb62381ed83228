"""Sweeps on Dask against the same points run one after another (issue 17 Acceptance).

The points: seed 003 Figure 1 (``santos_fig1``) over ``template.buffer_packets`` x
``template.R`` (default 4 x 2 = 8 points), each run for --ms of emulated time on the
virtual clock.  Both sides run exactly :func:`ibemu.studies.sweep.run_sweep` into a fresh
folder: ``scheduler="sync"`` (the points one after another in this process) and the
default local Dask cluster (one single-threaded worker process per core, its start-up and
shut-down included in the time).  The two are run side by side --repeat times,
alternating which goes first; the best time of each is kept and the ratio printed, with
the load average and, per run, the points' CPU time over the wall time (how many cores
the run actually got: on a machine shared with other work, fewer than it has), and a
check that both sides' tables agree.

    python benchmarks/bench_sweep.py [--ms 20] [--buffers 2,4,8,16] [--remotes 1,5] [--repeat 2] [--workers N]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    from ibemu.core import core_kind
    from ibemu.resources import scenario_source
    from ibemu.studies import sweep as S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=float, default=20.0, help="emulated ms per point (default 20)")
    ap.add_argument("--buffers", default="2,4,8,16", help="template.buffer_packets values")
    ap.add_argument("--remotes", default="1,5", help="template.R values")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workers", type=int, default=None, help="Dask workers (default: one per core)")
    args = ap.parse_args()

    source = str(scenario_source("santos_fig1"))
    v0, v1 = args.ms * 0.4, args.ms * 0.6
    common = ['template.duration="%gms"' % args.ms, 'template.victim_start="%gms"' % v0,
              'template.victim_stop="%gms"' % v1]
    points = S.plan(["template.buffer_packets=%s" % args.buffers, "template.R=%s" % args.remotes], base_seed=1)
    print("%d points of santos_fig1, %g ms each; %d cores, %s core; load average before: %s"
          % (len(points), args.ms, os.cpu_count() or 0, core_kind(), " ".join("%.2f" % x for x in os.getloadavg())))
    best = {"sequential": float("inf"), "dask": float("inf")}
    tables: dict[str, str] = {}
    for rep in range(args.repeat):
        order = ("sequential", "dask") if rep % 2 == 0 else ("dask", "sequential")
        for side in order:
            out = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
            try:
                t0 = time.perf_counter()
                res = S.run_sweep(source, points, out, common=common, progress=False, workers=args.workers,
                                  scheduler=S.SYNC if side == "sequential" else S.LOCAL)
                dt = time.perf_counter() - t0
                assert res.ran == len(points) and not res.failed, res.failed
                tables[side] = json.dumps([{k: v for k, v in r.items() if k not in ("wall_s", "cpu_s")}
                                           for r in res.rows])
            finally:
                shutil.rmtree(out, ignore_errors=True)
            best[side] = min(best[side], dt)
            point_s = sum(r["wall_s"] for r in res.rows) / len(res.rows)
            cpu = sum(r["cpu_s"] for r in res.rows)
            print("  run %d %-10s %7.2f s  (%.2f s of engine per point; the points' CPU time / wall time: "
                  "%.2f cores)" % (rep + 1, side, dt, point_s, cpu / dt))
    same = tables["sequential"] == tables["dask"]
    ratio = best["sequential"] / best["dask"]
    print("best: sequential %.2f s, dask %.2f s, speed-up %.2fx; tables identical: %s; load average after: %s"
          % (best["sequential"], best["dask"], ratio, same, " ".join("%.2f" % x for x in os.getloadavg())))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
