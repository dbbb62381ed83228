"""The engine's speed against a base commit, side by side in one run (issue 12:
"bench_engine.py is no slower than before").

    python benchmarks/compare_engine.py                  # base: the commit issue 12 starts from
    python benchmarks/compare_engine.py --base HEAD~3 --pairs 8 --ms 10

Checks the base commit out into a temporary worktree, then runs ``bench_engine.py`` of
the base and of this tree alternately (A B A B ..., each a fresh process whose
``PYTHONPATH`` is its tree), and prints each pair's frame-hops/s and events/s, and the
median of the ratios this tree / base.  Alternating pairs keep the ratio honest on a
shared, noisy machine: a slow spell hits both sides of a pair.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BASE = "fa48aa0"
RATE = re.compile(r"^\s+(frame-hops|events)\s+\d+\s+(\d+) /s", re.M)


def bench(tree: Path, ms: float, repeat: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "benchmarks/bench_engine.py", "--ms", str(ms), "--repeat", str(repeat)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in RATE.findall(out)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=BASE)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--ms", type=float, default=10.0, help="emulated ms per engine run")
    ap.add_argument("--repeat", type=int, default=3, help="runs per process (the best counts)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ibemu-bench-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), a.base], cwd=HERE,
                       check=True, capture_output=True)
        try:
            ratios: dict[str, list[float]] = {"frame-hops": [], "events": []}
            print("pair  base frame-hops/s  this tree  ratio   base events/s  this tree  ratio")
            for i in range(a.pairs):
                b = bench(base, a.ms, a.repeat)
                n = bench(HERE, a.ms, a.repeat)
                for k in ratios:
                    ratios[k].append(n[k] / b[k])
                print("%4d  %17.0f  %9.0f  %5.3f   %13.0f  %9.0f  %5.3f" % (
                    i + 1, b["frame-hops"], n["frame-hops"], n["frame-hops"] / b["frame-hops"],
                    b["events"], n["events"], n["events"] / b["events"]), flush=True)
            for k, rs in ratios.items():
                print("median ratio this tree / base, %s per second: %.3f (min %.3f, max %.3f)"
                      % (k, statistics.median(rs), min(rs), max(rs)))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=HERE, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
