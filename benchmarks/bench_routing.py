"""Routing at scale (issue 28 Deliver 1): ftree and the credit-loop check on a fat tree,
this tree against a base commit, side by side in one run.

    python benchmarks/bench_routing.py [--base 97b8cca] [--m 12,12,24] [--w 1,12,12] [--repeat 2]

Fabric: template ``xgft`` with m and w (default XGFT(3; 12,12,24; 1,12,12): 3,456 hosts,
720 switches; m = 18,18,36 and w = 1,18,18 is the 11,664-host tree of the issue).  The
base commit (default 97b8cca, before issue 28) is checked out into a temporary folder.
Each measurement is a fresh subprocess whose PYTHONPATH is its tree; runs alternate base,
this tree, base, ...; the best of --repeat counts.  Printed: CPU seconds of ftree
(``ibemu.routing.route``) and of the credit-loop check (``check_credit_loops``), the
ratios, and whether the two trees' LFTs (entries and their order) are identical.
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

CHILD = r"""
import hashlib, json, sys, time
from ibemu.build import subnet_of
from ibemu.routing import check_credit_loops, route
from ibemu.scenario.builders import xgft
m, w = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sn = subnet_of(xgft(m, w))
t = time.process_time(); lfts = route(sn, "ftree"); t_route = time.process_time() - t
t = time.process_time(); check_credit_loops(sn, lfts, "ftree"); t_cdg = time.process_time() - t
digest = hashlib.sha256(json.dumps([[s, list(v.items())] for s, v in lfts.items()]).encode()).hexdigest()
print(json.dumps({"route": t_route, "cdg": t_cdg, "digest": digest, "hosts": len(sn.cas())}))
"""


def measure(tree: Path, m: list[int], w: list[int]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(m), json.dumps(w)], cwd=tree, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit("bench_routing.py: the run in %s failed: %s" % (tree, last))
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="97b8cca")
    ap.add_argument("--m", default="12,12,24")
    ap.add_argument("--w", default="1,12,12")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    m = [int(x) for x in a.m.split(",")]
    w = [int(x) for x in a.w.split(",")]
    with tempfile.TemporaryDirectory(prefix="ibemu-bench-routing-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", a.base], cwd=HERE, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        best: dict[str, dict[str, float]] = {"base": {}, "this": {}}
        digests = {}
        for _ in range(a.repeat):
            for name, tree in (("base", base), ("this", HERE)):
                r = measure(tree, m, w)
                digests[name] = r["digest"]
                for k in ("route", "cdg"):
                    best[name][k] = min(best[name].get(k, float("inf")), r[k])
                hosts = r["hosts"]
    print("XGFT(%d; %s; %s): %d hosts; best of %d, CPU seconds" % (len(m), a.m, a.w, hosts, a.repeat))
    print("%-22s %10s %10s %8s" % ("", a.base, "this tree", "ratio"))
    for k, label in (("route", "ftree routing"), ("cdg", "credit-loop check")):
        b, t = best["base"][k], best["this"][k]
        print("%-22s %10.2f %10.2f %7.1fx" % (label, b, t, b / t if t else float("inf")))
    same = digests["base"] == digests["this"]
    print("LFTs identical: %s" % ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
