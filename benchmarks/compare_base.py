"""Behaviour unchanged: run every shipped scenario (short runs, with a capture) and every
``ibemu reproduce`` reproduction at CI size, once on a base commit and once on this
tree, and compare the output folders byte for byte (issue 12, "Behaviour unchanged").

    python benchmarks/compare_base.py                     # base: the commit issue 12 starts from
    python benchmarks/compare_base.py --base HEAD~1 --only quickstart,fig2a

Both trees are run through their command line (``python -m ibemu``) in a subprocess
whose ``PYTHONPATH`` is the tree, so each runs its own code.  Every file of every output
folder is compared (results.json, config.json, CSVs, captures; plots are skipped: PNG
metadata carries the matplotlib version).  The only field rewritten before comparing is
the absolute path of the tree itself (a scenario's ``source``), which differs between the
two checkouts by construction.  Exit status 0 when everything is identical.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BASE = "fa48aa0"            # the commit issue 12 was filed against
DURATION = "3ms"            # short runs of the shipped scenarios
SKIP_SUFFIXES = (".png",)


def scenarios(tree: Path) -> list[str]:
    return sorted(p.stem for p in (tree / "scenarios").glob("*.toml"))


def reproductions(tree: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "ibemu", "reproduce", "--list"], cwd=tree,
                         env=_env(tree), capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line and not line.startswith("run one")]


def _env(tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def run_all(tree: Path, out: Path, names: list[str], reps: list[str], cached: bool = False) -> dict[str, str]:
    """Run the scenarios and reproductions of *tree* into *out*; name -> error text.
    With *cached*, a job whose ``.ok`` marker is in *out* from an earlier run is skipped."""
    errors = {}
    jobs = [("run:" + n, "run-" + n, ["run", str(tree / "scenarios" / (n + ".toml")), "--duration", DURATION,
                                      "--out", str(out / ("run-" + n)),
                                      "--pcap", str(out / ("run-" + n) / "capture.pcap"), "--no-plots", "-q"])
            for n in names]
    jobs += [("reproduce:" + r, "rep-" + r, ["reproduce", r, "--out", str(out / ("rep-" + r))]) for r in reps]
    for label, folder, args in jobs:
        marker = out / (folder + ".ok")
        if cached and marker.exists():
            continue
        (out / folder).mkdir(parents=True, exist_ok=True)      # --pcap needs its folder
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "ibemu", *args], cwd=tree, env=_env(tree),
                           capture_output=True, text=True)
        print("  %-28s %5.1f s  exit %d" % (label, time.perf_counter() - t0, p.returncode), flush=True)
        (out / (folder + ".stdout")).write_text(p.stdout)
        if p.returncode not in (0, 1):          # 1: a reproduction outside its band is still output
            errors[label] = (p.stderr or p.stdout).strip().splitlines()[-1:]
        else:
            marker.write_text("")
    return errors


def _select(root: Path, folders: set[str]) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")
            if p.is_file() and p.suffix not in SKIP_SUFFIXES and p.suffix != ".ok"
            and (p.relative_to(root).parts[0].rsplit(".", 1)[0] in folders)}


def compare(a: Path, b: Path, tree_a: Path, tree_b: Path, folders: set[str]) -> list[str]:
    diffs = []
    files_a, files_b = _select(a, folders), _select(b, folders)
    for rel in sorted(files_a ^ files_b):
        diffs.append("only in %s: %s" % ("base" if rel in files_a else "new", rel))
    for rel in sorted(files_a & files_b):
        da, db = (a / rel).read_bytes(), (b / rel).read_bytes()
        if rel.suffix in (".json", ".stdout", ".csv", ".txt"):
            da = da.replace(str(tree_a).encode(), b"<tree>").replace(str(a).encode(), b"<out>")
            db = db.replace(str(tree_b).encode(), b"<tree>").replace(str(b).encode(), b"<out>")
        if rel.suffix == ".stdout":
            # the wall time printed in a summary line differs by nature
            da = b"\n".join(line for line in da.splitlines() if b" s wall" not in line)
            db = b"\n".join(line for line in db.splitlines() if b" s wall" not in line)
        if da != db:
            diffs.append("differs: %s (%d vs %d bytes)" % (rel, len(da), len(db)))
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=BASE, help="base commit (default %s)" % BASE)
    ap.add_argument("--only", help="comma-separated scenario stems and reproduction ids")
    ap.add_argument("--keep", help="keep the outputs in this folder; base outputs found there are reused")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="ibemu-compare-"))
    base_tree = work / "base-tree"
    if not (base_tree / "ibemu").exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), args.base], cwd=HERE,
                       check=True, capture_output=True)
    try:
        names, reps = scenarios(base_tree), reproductions(base_tree)
        if args.only:
            want = set(args.only.split(","))
            names = [n for n in names if n in want]
            reps = [r for r in reps if r in want]
        results = {}
        new_out = work / ("new-" + HERE.name)
        for label, tree, out in (("base", base_tree, work / "base"), ("new", HERE, new_out)):
            out.mkdir(parents=True, exist_ok=True)
            print("%s (%s): %d scenarios, %d reproductions" % (label, tree, len(names), len(reps)), flush=True)
            results[label] = run_all(tree, out, names, reps, cached=(label == "base"))
        status = 0
        for label, errs in results.items():
            for name, err in errs.items():
                print("ERROR %s %s: %s" % (label, name, err))
                status = 1
        folders = {"run-" + n for n in names} | {"rep-" + r for r in reps}
        diffs = compare(work / "base", new_out, base_tree, HERE, folders)
        for d in diffs:
            print(d)
        n = len(_select(work / "base", folders))
        print("%d files compared: %s" % (n, "identical" if not diffs else "%d differ" % len(diffs)))
        return 1 if diffs or status else 0
    finally:
        if not args.keep:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=HERE,
                           capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
