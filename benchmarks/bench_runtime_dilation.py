"""The exact wall clock on seed 003's Figure 2(a), default placement (issue 27): is each
run the virtual clock's, what is the smallest dilation it keeps, and what does exactness
cost against the free-running runtime, measured side by side.

Figure 2(a): L=5 local and R=1 remote greedy flows into one destination, a victim flow
in 40-60 ms, 100 ms of emulated time (``scenarios/santos_fig1.toml``; --duration to
shorten), on 2 workers placed by ``ibemu run``'s rule (--place to override).

1. **Identity**: every exact run's results.json (apart from ``extra``) is compared with
   the virtual clock's, and with --pcap its capture (snap length 96) byte for byte;
   "identical" or the keys that differ.
2. **Smallest dilation kept**: downward through --dilations (default
   200,100,70,50,40,30), --repeat runs each; a dilation is *kept* when every run's
   effective dilation (wall time over emulated time, the slowest worker's) is within
   --tolerance (5 %) of it.  Stops at the first not kept (--all: tries every one) and
   prints the smallest kept.  ``unpaced`` (dilation 1) first shows the floor: the exact
   run as fast as this machine runs it.
3. **Cost**: at --cost-dilation (default 200) the exact and the free-running runtime
   (``--sync free``) run in pairs, alternately, --repeat pairs: wall seconds, the
   workers' CPU seconds per emulated millisecond, and their ratio.

Usage: python benchmarks/bench_runtime_dilation.py [--dilations 200,100,70,50,40,30] [--repeat 3]
       [--duration 100ms] [--pcap] [--all] [--cost-dilation 200] [--place NODES/NODES]
       [--local-frames direct|datagrams]
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ibemu.run import run_virtual
from ibemu.runtime.controller import run_wall
from ibemu.runtime.partition import parse_placement
from ibemu.runtime.worker import LOCAL_DATAGRAMS_ENV
from ibemu.scenario import Scenario
from ibemu.scenario.builders import santos_fig1
from ibemu.units import parse_time


def results(out: Path) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((out / "results.json").read_text())
    d.pop("extra")
    return d


def wall_run(scn: Scenario, d: float, tmp: Path, tag: str, sync: str, pcap: bool,
             place: list[list[str]] | None) -> tuple[Any, Path, Path | None]:
    out = tmp / tag
    cap = tmp / (tag + ".pcapng") if pcap else None
    r = run_wall(scn, out_dir=out, pcap=cap, workers=None if place else 2, dilation=d, sync=sync,
                 place=place, port_base=random.randrange(20000, 60000, 200))
    return r, out, cap


def describe(r: Any, scn: Scenario) -> str:
    ms = scn.duration / 1e9
    rt = r.runtime
    cpu = " ".join("%.0f" % (1e3 * w.get("cpu_s", 0.0) / ms) for w in rt["workers"])
    wait = " ".join("%.1f" % w.get("wait_peers_s", 0.0) for w in rt["workers"])
    return ("effective dilation %.1f, wall %.1f s, rounds %s, worker CPU ms per emulated ms %s, "
            "waiting for peers s %s, load avg %.2f" % (
                rt.get("effective_dilation") or 0, r.wall_seconds,
                max((w.get("rounds", 0) for w in rt["workers"]), default=0), cpu, wait, os.getloadavg()[0]))


def identical(vout: Path, vcap: Path | None, out: Path, cap: Path | None) -> str:
    a, b = results(vout), results(out)
    diff = [k for k in a if a[k] != b.get(k)]
    if diff:
        return "DIFFERENT (%s)" % ", ".join(diff)
    if vcap is not None and cap is not None and not filecmp.cmp(vcap, cap, shallow=False):
        return "DIFFERENT (capture)"
    return "identical" + (" (results.json and capture)" if cap is not None else " (results.json)")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dilations", default="200,100,70,50,40,30")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--duration", default="100ms")
    ap.add_argument("--pcap", action="store_true", help="compare the captures too (snap length 96)")
    ap.add_argument("--all", action="store_true", help="go on after the first dilation not kept")
    ap.add_argument("--cost-dilation", type=float, default=200.0)
    ap.add_argument("--no-cost", action="store_true")
    ap.add_argument("--place", default=None, metavar="NODES/NODES")
    ap.add_argument("--local-frames", choices=("direct", "datagrams"), default=None,
                    help="frames between one worker's nodes (default: each mode's own)")
    args = ap.parse_args(argv)
    if args.local_frames:
        os.environ[LOCAL_DATAGRAMS_ENV] = "0" if args.local_frames == "direct" else "1"
    place = parse_placement(args.place) if args.place else None
    scn = santos_fig1(L=5, R=1, name="fig2a", duration_ms=parse_time(args.duration) / 1e9)
    if args.pcap:
        scn.output.snaplen = 96
    tmp = Path(tempfile.mkdtemp(prefix="ibemu-bench-dil-"))
    status = 0
    try:
        v = run_virtual(scn, out_dir=tmp / "virtual", pcap=tmp / "virtual.pcapng" if args.pcap else None)
        vcap = tmp / "virtual.pcapng" if args.pcap else None
        import ibemu.sim.scheduler
        core = "compiled" if ibemu.sim.scheduler.__file__.endswith(".so") else "pure Python"
        print("Figure 2(a), %s emulated; virtual clock %.1f s; core: %s; placement: %s; cpus %d" % (
            args.duration, v.wall_seconds, core, args.place or "the partition rule (default)",
            os.cpu_count() or 0), flush=True)
        r, out, cap = wall_run(scn, 1.0, tmp, "unpaced", "exact", args.pcap, place)
        print("unpaced (dilation 1): %s; %s" % (describe(r, scn), identical(tmp / "virtual", vcap, out, cap)),
              flush=True)
        found = None
        for d in sorted((float(x) for x in args.dilations.split(",")), reverse=True):
            kept = True
            for i in range(args.repeat):
                r, out, cap = wall_run(scn, d, tmp, "d%g-%d" % (d, i), "exact", args.pcap, place)
                same = identical(tmp / "virtual", vcap, out, cap)
                eff = r.runtime.get("effective_dilation") or float("inf")
                ok = eff <= d * (1 + args.tolerance) and same.startswith("identical") and r.valid
                kept = kept and ok
                print("dilation %4g run %d: %s; %s; %s" % (d, i + 1, describe(r, scn), same,
                                                        "kept" if ok else "NOT kept"), flush=True)
                shutil.rmtree(out, ignore_errors=True)
                if cap is not None:
                    cap.unlink(missing_ok=True)
                if not same.startswith("identical"):
                    status = 1
            print("dilation %g: %s" % (d, "kept" if kept else "NOT kept"), flush=True)
            if kept:
                found = d
            elif not args.all:
                break
        print("smallest dilation the exact run keeps within %.0f %% (%d runs each, default placement%s): %s "
              "(target <= 100, aim 50)" % (100 * args.tolerance, args.repeat, "" if not args.place else " overridden",
                                           "%g" % found if found is not None else "none of those tried"), flush=True)
        if found is None:
            status = 1
        if not args.no_cost:
            d = args.cost_dilation
            ratios = []
            for i in range(args.repeat):
                pair = {}
                for sync in ("exact", "free") if i % 2 == 0 else ("free", "exact"):
                    r, out, cap = wall_run(scn, d, tmp, "cost-%s-%d" % (sync, i), sync, False, place)
                    cpu = sum(w.get("cpu_s", 0.0) for w in r.runtime["workers"])
                    pair[sync] = cpu
                    print("cost pair %d %-5s at dilation %g: wall %.1f s, workers' CPU %.2f s (%.0f ms per "
                          "emulated ms), valid %s" % (i + 1, sync, d, r.wall_seconds, cpu,
                                                      1e3 * cpu / (scn.duration / 1e9), r.valid), flush=True)
                    shutil.rmtree(out, ignore_errors=True)
                ratios.append(pair["exact"] / pair["free"] if pair["free"] else float("inf"))
            print("cost of exact over free at dilation %g: workers' CPU x%s (pairs), median x%.2f" % (
                d, ", x".join("%.2f" % x for x in ratios), sorted(ratios)[len(ratios) // 2]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
