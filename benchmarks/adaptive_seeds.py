"""The adaptive study's random permutation over seeds and durations (docs/adaptive.md,
"Full size"): how far the study's one run (seed 1, 200 us) stands from other
permutations and from longer runs, with and without adaptive routing notifications.

    python benchmarks/adaptive_seeds.py                          # full size: seeds 1-3, 200 us and 1 ms
    python benchmarks/adaptive_seeds.py --ci-size --durations 100us
    python benchmarks/adaptive_seeds.py --holds 2us,5us,10us,20us --seeds 1 --durations 1ms

Each run is ``ibemu.studies.adaptive.run_permutation`` (throughput over the last 80 % of
the run, as the study measures it); ``--holds`` and ``--thresholds`` vary the
notifications' ``arn_hold`` and ``arn_threshold``.  Full size takes a few seconds a run
with the compiled core, about ten times that in pure Python.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ibemu.studies.adaptive import run_permutation


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci-size", action="store_true", help="32 hosts (default: 128)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--durations", default="200us,1ms")
    ap.add_argument("--routings", default="adaptive-arn,adaptive", help="adaptive-arn, adaptive, static")
    ap.add_argument("--holds", default="", help="arn_hold values to try (default: the default, 10us)")
    ap.add_argument("--thresholds", default="", help="arn_threshold values to try (default: 1)")
    args = ap.parse_args()
    holds = [h for h in args.holds.split(",") if h] or [None]
    thresholds = [int(t) for t in args.thresholds.split(",") if t] or [None]
    print("| routing | duration | seed | arn_hold | arn_threshold | throughput | wall s |")
    print("|---|---|---:|---|---:|---:|---:|")
    for routing in args.routings.split(","):
        for duration in args.durations.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                for hold in holds if routing == "adaptive-arn" else [None]:
                    for thr in thresholds if routing == "adaptive-arn" else [None]:
                        t0 = time.perf_counter()
                        keys = {k: v for k, v in (("arn_hold", hold), ("arn_threshold", thr)) if v is not None}
                        v = run_permutation("permutation", routing.split("-")[0], not args.ci_size,
                                            arn=routing == "adaptive-arn", seed=seed, duration=duration,
                                            routing_keys=keys)
                        arn = routing == "adaptive-arn"
                        print("| %s | %s | %d | %s | %s | %.4f | %.1f |" % (
                            routing, duration, seed, (hold or "10us") if arn else "-", (thr or 1) if arn else "-",
                            v["throughput"], time.perf_counter() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
