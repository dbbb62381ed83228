"""Instructions the event loop executes, counted by valgrind's callgrind: a measure of the
compiled core's cost that does not depend on the machine's load (issue 28).

Timings on the shared 2-core development machine moved by 30-50 % between identical
runs; an instruction count moves by well under 1 %.  So each optimisation of the event
loop was measured this way, side by side with its base, and the ratio printed here.
Instructions are not time (cache misses are not counted): whole runs are timed by
bench_whole.py.

    python benchmarks/bench_instructions.py --build BASE_COMMIT --build HEAD
    python benchmarks/bench_instructions.py --tree /tmp/ct_a --tree /tmp/ct_b   # compiled trees
    # options: --scenario FILE (default: the 128-host fat tree, shift by one leaf)
    #          --duration 0.1ms  --workdir DIR (where --build puts its trees)

Each tree runs ``python -m ibemu run SCENARIO --duration D --set output.plots=false`` with
``PYTHONPATH`` the tree, under ``valgrind --tool=callgrind``, collecting only inside
``Scheduler.run`` (its C name in the compiled core); the figure is the instructions
collected, and per event.  A tree given by ``--build COMMIT`` is the commit's files
(``git archive``) compiled in place (``setup.py build_ext --inplace``, 5-10 minutes).
The results of the runs are compared byte for byte (results.json and the CSVs).
Without valgrind the script prints one line saying so and exits 0.
"""
from __future__ import annotations

import argparse
import filecmp
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SCENARIO = HERE / "benchmarks" / "data" / "fat_tree128_shift.toml"
TOGGLE = "CPyDef_scheduler___Scheduler___run"


def build(commit: str, workdir: Path) -> Path:
    """The files of *commit*, compiled in place, in a folder of *workdir*."""
    sha = subprocess.run(["git", "rev-parse", "--short", commit], cwd=HERE, check=True,
                         capture_output=True, text=True).stdout.strip()
    tree = workdir / ("tree-" + sha)
    if any(tree.glob("*__mypyc*.so")):
        print("%s: reusing %s" % (commit, tree), flush=True)
        return tree
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", sha], cwd=HERE, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    print("%s: compiling %s (5-10 minutes) ..." % (commit, tree), flush=True)
    log = tree / "build.log"
    with open(log, "w") as out:
        done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree,
                              stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not any(tree.glob("*__mypyc*.so")):
        sys.exit("bench_instructions.py: compiling %s failed, see %s" % (commit, log))
    return tree


def count(tree: Path, scenario: Path, duration: str, out: Path) -> tuple[int, int]:
    """(instructions in Scheduler.run, events) of one run of *tree*."""
    cg = out.with_suffix(".callgrind")
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=" + TOGGLE,
           "--callgrind-out-file=" + str(cg), sys.executable, "-m", "ibemu", "run", str(scenario),
           "--duration", duration, "--set", "output.plots=false", "--out", str(out)]
    done = subprocess.run(cmd, cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)
    text = done.stdout + done.stderr
    m = re.search(r"Collected : (\d+)", text)
    e = re.search(r"(\d+) events in", text)
    if done.returncode != 0 or m is None or e is None:
        sys.exit("bench_instructions.py: the run of %s failed:\n%s" % (tree, text[-2000:]))
    if "compiled (mypyc) core" not in text:
        sys.exit("bench_instructions.py: %s ran the pure-Python core: not a compiled tree" % tree)
    return int(m.group(1)), int(e.group(1))


def same_results(a: Path, b: Path) -> bool:
    names = ["results.json"] + sorted(p.name for p in a.glob("*.csv"))
    return all((b / n).exists() and filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", default=[], metavar="COMMIT")
    ap.add_argument("--tree", action="append", default=[], metavar="DIR")
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--duration", default="0.1ms")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "ibemu-bench-instr")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_instructions.py: skipped: valgrind is not installed (apt-get install valgrind)")
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    trees = [build(c, args.workdir) for c in args.build] + [Path(t).resolve() for t in args.tree]
    if not trees:
        ap.error("give at least one --build COMMIT or --tree DIR")
    rows = []
    for i, tree in enumerate(trees):
        out = args.workdir / ("out-%d" % i)
        shutil.rmtree(out, ignore_errors=True)
        instr, events = count(tree, args.scenario.resolve(), args.duration, out)
        rows.append((tree, instr, events, out))
        print("%-50s %15s instructions  %9d events  %7.0f per event" % (tree, f"{instr:,}", events,
                                                                        instr / events), flush=True)
    base = rows[0]
    for tree, instr, _events, out in rows[1:]:
        print("%s against %s: %.3fx fewer instructions; results %s" % (
            tree.name, base[0].name, base[1] / instr,
            "identical" if same_results(base[3], out) else "DIFFER"))


if __name__ == "__main__":
    main()
