"""Soak test of the wall-clock runtime (issue 8 item 8): a long real-time run must hold
its memory flat.  Not run in CI.

Runs a scenario (default: the quick-start scenario, two greedy RC flows into one
destination behind one switch) with ``run_wall`` -- the code of ``ibemu run --clock
wall`` -- over --workers processes for --minutes of wall time (the emulated duration is
minutes * 60 / dilation), and samples the resident set size (VmRSS) of the controller
and of every worker: the first sample --warmup seconds after the workers start, then
every --every seconds, the last one a few seconds before the end.  Prints each sample and
then RSS at start and end with the difference.  Optional link faults (--loss etc.)
exercise the fault path (injectors, duplicate filters) as well.

    python benchmarks/soak_wall.py                       # 10 minutes, quick-start, 2 workers
    python benchmarks/soak_wall.py --minutes 3 --loss 0.01 --duplicate 0.01 --reorder 0.01 \
        --set flow[0].window=8 --set flow[1].window=8

(Under loss, give RC flows a window: without one a requester keeps every unacknowledged
packet for go-back-N, and under loss that backlog -- and the memory -- grows.)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ibemu.fabric.faults import FaultSpec, LinkFaults
from ibemu.resources import scenario_source
from ibemu.runtime.controller import run_wall
from ibemu.runtime.report import format_runtime_line
from ibemu.scenario import load_scenario
from ibemu.units import PS_PER_S


def rss_kib(pid: int) -> int | None:
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    out: list[int] = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(d))
    return sorted(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario", nargs="?", default="quickstart",
                    help="scenario file, or a shipped scenario's name (default quickstart)")
    ap.add_argument("--minutes", type=float, default=10.0, help="wall minutes (default 10)")
    ap.add_argument("--dilation", type=float, default=200.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before the first sample")
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--duplicate", type=float, default=0.0)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--corrupt", type=float, default=0.0)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a scenario value, as with ibemu run")
    args = ap.parse_args(argv)
    wall = args.minutes * 60
    duration = int(wall / args.dilation * PS_PER_S)
    scn = load_scenario(scenario_source(args.scenario), args.set)
    scn.duration = duration
    scn.output.plots = False
    faults = LinkFaults(loss=args.loss, duplicate=args.duplicate, reorder=args.reorder, corrupt=args.corrupt)
    if faults.active():
        scn.faults = FaultSpec(all=faults)
    print("soak: %s, %.1f min of wall time = %.3f s emulated at dilation %g, %d workers%s"
          % (scn.name, args.minutes, duration / PS_PER_S, args.dilation, args.workers,
             ", faults %s" % {k: v for k, v in vars(faults).items() if v and k != "reorder_depth"}
             if faults.active() else ""), flush=True)
    me = os.getpid()
    samples: list[tuple[float, int, dict[int, int]]] = []   # (s since start, controller KiB, {pid: KiB})
    stop = threading.Event()
    t_start = time.monotonic()

    def sampler() -> None:
        first = True
        while not stop.is_set():
            wait = args.warmup if first else args.every
            t_next = time.monotonic() + wait
            # the last sample a few seconds before the run ends
            end = t_start + wall + 3
            if not first and t_next > end - 5 > time.monotonic():
                t_next = end - 5
            if stop.wait(max(0.0, t_next - time.monotonic())):
                return
            first = False
            rss = {pid: rss_kib(pid) for pid in children(me)}
            workers = {p: v for p, v in rss.items() if v}
            if not workers:
                continue
            s = (time.monotonic() - t_start, rss_kib(me) or 0, workers)
            samples.append(s)
            print("  t=%6.0f s  controller %7.1f MiB  workers %s" % (
                s[0], s[1] / 1024, "  ".join("%d: %.1f MiB" % (p, v / 1024) for p, v in sorted(workers.items()))),
                flush=True)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    with tempfile.TemporaryDirectory(prefix="ibemu-soak-") as tmp:
        r = run_wall(scn, out_dir=tmp, workers=args.workers, dilation=args.dilation, progress=False)
    stop.set()
    th.join()
    print(format_runtime_line(r.runtime))
    flows = r.summary["flows"]
    print("flows: %s" % ", ".join("%s %.3f GB/s" % (n, f["throughput"] / 1e9) if "throughput" in f else n
                                  for n, f in flows.items()))
    if len(samples) < 2:
        print("too short for two samples")
        return 1
    (t0, c0, w0), (t1, c1, w1) = samples[0], samples[-1]
    print("RSS at start (t=%.0f s) and end (t=%.0f s):" % (t0, t1))
    print("  controller  %7.1f -> %7.1f MiB  (%+.1f MiB)" % (c0 / 1024, c1 / 1024, (c1 - c0) / 1024))
    for pid in sorted(w0):
        if pid in w1:
            print("  worker %-5d %7.1f -> %7.1f MiB  (%+.1f MiB)" % (
                pid, w0[pid] / 1024, w1[pid] / 1024, (w1[pid] - w0[pid]) / 1024))
    print("completed: %s; %d events in %.0f s wall" % (r.completed, r.events, r.wall_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
