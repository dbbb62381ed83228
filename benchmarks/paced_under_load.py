"""A paced wall-clock run (``--pace together``) on a machine loaded on purpose, against the
virtual clock (issue 16 Deliver 5: "the runtime keeps the results valid at the cost of
speed").

Starts ``--burners`` busy-loop processes, then runs seed 003 Fig 2(a) (``santos_fig1``,
5 ms, dilation 5, 2 workers, paced together) ``--runs`` times and prints, per run, the exit
status, the worst ratio of any flow or link above 1 % of its link to the virtual clock's
(:func:`ibemu.runtime.fidelity.compare_summaries`), the remote flow's ratio, and the
largest slip, the largest lag and the total pause.  Not run in CI.

    python benchmarks/paced_under_load.py [--runs 3] [--burners 2] [--tree DIR]

``--tree`` runs another checkout's ibemu (e.g. a git worktree of an earlier commit), for a
before/after comparison under the same load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BURN = "import time\nend = time.time() + %d\nwhile time.time() < end: pass\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burners", type=int, default=2, help="busy-loop processes loading the machine")
    ap.add_argument("--tree", type=Path, default=HERE, help="the checkout whose ibemu runs (default: this one)")
    a = ap.parse_args()
    tree = a.tree.resolve()
    sys.path.insert(0, str(tree))
    from ibemu.run import run_virtual
    from ibemu.runtime.fidelity import MIN_SHARE, compare_summaries
    from ibemu.scenario import load_scenario

    scn = load_scenario(str(HERE / "scenarios" / "santos_fig1.toml"), ['scenario.duration="5ms"'])
    ref = run_virtual(scn).summary
    burners = [subprocess.Popen([sys.executable, "-c", BURN % (60 * a.runs)]) for _ in range(a.burners)]
    print("tree %s, %d burners, load average %s" % (tree, a.burners, os.getloadavg()))
    try:
        for i in range(a.runs):
            with tempfile.TemporaryDirectory() as d:
                out = Path(d) / "run"
                p = subprocess.run([sys.executable, "-m", "ibemu", "run", "santos_fig1", "--clock", "wall",
                                    "--dilation", "5", "--duration", "5ms", "--workers", "2", "--no-plots",
                                    "--out", str(out), "--pace", "together"], capture_output=True, text=True,
                                   cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)))
                if not (out / "results.json").exists():
                    print("run %d: exit %d, no results: %s" % (i + 1, p.returncode, p.stderr.strip()[-300:]))
                    continue
                res = json.loads((out / "results.json").read_text())
            rep = compare_summaries(ref, res["summary"])
            rows = [r for r in rep["rows"] if r["ratio"] is not None and r["share"] >= MIN_SHARE]
            remote = [round(r["ratio"], 3) for r in rows if r["name"] == "remote1"]
            v = res["extra"]["validity"]
            print("run %d: exit %d, worst %.3f, remote1 %s, largest slip %.1f us, largest lag %.1f us, pause %.2f s"
                  % (i + 1, p.returncode, rep["worst"], remote, v["max_slip_ps"] / 1e6, v["max_lag_ps"] / 1e6,
                     res["extra"]["runtime"]["pause_s"]), flush=True)
    finally:
        for b in burners:
            b.kill()
    print("load average at the end: %s" % (os.getloadavg(),))
    return 0


if __name__ == "__main__":
    sys.exit(main())
