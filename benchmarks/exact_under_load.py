"""The exact wall clock on a machine loaded on purpose, against the virtual clock
(issue 27 Deliver 3: "a machine too slow for D runs slower instead of running wrong").

Starts ``--burners`` busy-loop processes, then runs seed 003 Fig 2(a) (``santos_fig1``,
5 ms, dilation 5, 2 workers, ``--sync exact``, the default) ``--runs`` times and prints,
per run, the exit status, whether results.json (apart from ``extra``) is the virtual
clock's, the effective dilation and each worker's wait for its peers.  Not run in CI.

    python benchmarks/exact_under_load.py [--runs 3] [--burners 2] [--tree DIR]

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
    from ibemu.scenario import load_scenario

    with tempfile.TemporaryDirectory() as d:
        vout = Path(d) / "virtual"
        from ibemu.resources import scenario_source
        run_virtual(load_scenario(scenario_source("santos_fig1"), ['scenario.duration="5ms"']), out_dir=vout)
        ref = json.loads((vout / "results.json").read_text())
        ref.pop("extra")
    burners = [subprocess.Popen([sys.executable, "-c", BURN % (60 * a.runs)]) for _ in range(a.burners)]
    print("tree %s, %d burners, load average %s" % (tree, a.burners, os.getloadavg()))
    status = 0
    try:
        for i in range(a.runs):
            with tempfile.TemporaryDirectory() as d:
                out = Path(d) / "run"
                p = subprocess.run([sys.executable, "-m", "ibemu", "run", "santos_fig1", "--clock", "wall",
                                    "--dilation", "5", "--duration", "5ms", "--workers", "2", "--no-plots",
                                    "--out", str(out)], capture_output=True, text=True,
                                   cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)))
                if not (out / "results.json").exists():
                    print("run %d: exit %d, no results: %s" % (i + 1, p.returncode, p.stderr.strip()[-300:]))
                    status = 1
                    continue
                res = json.loads((out / "results.json").read_text())
            extra = res.pop("extra")
            rt = extra["runtime"]
            same = res == ref
            diff = [k for k in ref if ref[k] != res.get(k)]
            status = status or (0 if same and p.returncode == 0 else 1)
            print("run %d: exit %d, %s the virtual clock's, effective dilation %.1f (requested 5), waited for peers "
                  "%s s" % (i + 1, p.returncode, "identical to" if same else "DIFFERENT (%s) from" % diff,
                            rt.get("effective_dilation") or 0,
                            "/".join("%.2f" % w.get("wait_peers_s", 0) for w in rt["workers"])), flush=True)
    finally:
        for b in burners:
            b.kill()
    print("load average at the end: %s" % (os.getloadavg(),))
    return status


if __name__ == "__main__":
    sys.exit(main())
