"""Sweeps on Dask against the same points run one after another (issue 17 Acceptance:
at least 8 points at least 1.7 times faster on this 2-core machine).

The points: seed 003 Figure 1 (``santos_fig1``) over ``template.buffer_packets`` x
``template.R`` (default 4 x 2 = 8 points), each run for --ms of emulated time on the
virtual clock (default 200 ms: about 5 s of engine per point on our machine, so that the
local cluster's start-up and shut-down, about 1.5 s, are amortised; with 20 ms points
they are not, and the ratio falls to about 1.2x).

Both sides run exactly :func:`ibemu.studies.sweep.run_sweep` into a fresh folder, no
per-point plots on either side:

- *sequential*: ``scheduler="sync"``, the points one after another in this process --
  the strongest sequential baseline: no process start, no import per point (one
  ``ibemu run`` per point would pay both every time);
- *dask*: the default local cluster (one single-threaded worker process per core, its
  imports warmed at start, no oversubscription), its start-up and shut-down included in
  the time.

The two are run side by side --repeat times, alternating which goes first; the best time
of each is kept and the ratio printed, with the load average before and after, the core
count and, per run, the points' CPU time over the wall time (how many cores the run
actually got: on a machine shared with other work, fewer than it has), and a check that
both sides' tables agree.

    python benchmarks/bench_sweep.py [--ms 200] [--buffers 2,4,8,16] [--remotes 1,5] [--repeat 2] [--workers N]
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
    ap.add_argument("--ms", type=float, default=200.0, help="emulated ms per point (default 200)")
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
    print("best: %d points, sequential %.2f s, dask %.2f s, speed-up %.2fx; tables identical: %s; "
          "%d cores; load average after: %s"
          % (len(points), best["sequential"], best["dask"], ratio, same, os.cpu_count() or 0,
             " ".join("%.2f" % x for x in os.getloadavg())))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
