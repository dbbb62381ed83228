"""Whole ``ibemu run`` processes as a user runs them: the reference commit against the
current tree, each installed non-editable in its own venv, side by side in one run
(issue 28 Deliver 2).

    python benchmarks/bench_whole.py                      # both workloads, best of 2
    python benchmarks/bench_whole.py --repeat 3 --only fattree --venvs /tmp/ibemu-venvs

Variants:

- ``ref``: the reference commit (``--ref``, default fa48aa0), ``git archive``-d into the
  venv's folder and installed with ``pip install <src>`` (pure Python: it has no compiled
  core);
- ``current``: this working tree -- the files ``git ls-files`` names plus the untracked,
  not ignored ones, so uncommitted changes count, of what the install reads (ibemu/,
  layers/, scenarios/, setup.py, pyproject.toml, README.md: :data:`INSTALL_INPUTS`) --
  copied and installed with ``pip install <src>``, which compiles the core with mypyc
  where a C compiler exists (about 5 minutes of one core).

The venvs live under ``--venvs`` (default ~/.cache/ibemu-bench), one folder per commit
(``ref-<commit>``) or per hash of the copied files (``current-<hash>``; a change to the
benchmarks or the tests does not rebuild it), each with the
interpreter's version in its name; a venv whose install finished is reused on the next
run, a half-built one is built again.  A failed install is one line naming the venv and
its log; so is an install of the current tree that fell back to the pure-Python core
(setup.py's reason quoted from the log; ``--allow-pure`` accepts it).

Workloads (``--only``):

- ``seed003``: seed 003 Figure 1, ``ibemu run <tree>/scenarios/santos_fig1.toml --set
  template.L=10 --set template.R=10 --duration 100ms`` (each tree its own scenario file);
- ``fattree``: ``benchmarks/data/fat_tree128_shift.toml`` (16 leaves x 8 hosts, 8 spines,
  explicit LFTs as OpenSM's ftree computes them, a shift by one leaf of greedy RC flows),
  ``--duration 3ms``.

Every run is a fresh ``<venv>/bin/ibemu run ... --out DIR`` with plots (a user's
default run), its working directory a scratch folder.  The repeats alternate ref and
current (the first of each pair swaps every repeat), and the best wall time of
``--repeat`` counts.  Printed per workload: each variant's wall seconds (the whole
process, timed from outside), CPU seconds and peak RSS of that run (``os.wait4``), its
events, the ratio ref / current, the core each used, and for the current tree the
phases of its summary line (read, build, routing, credit-loop check, run, outputs).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
FAT_TREE = HERE / "benchmarks" / "data" / "fat_tree128_shift.toml"
REF = "fa48aa0"
WORKLOADS = ("seed003", "fattree")
VARIANTS = ("ref", "current")
# what `pip install .` reads (setup.py, pyproject.toml's readme and package-dir): copied and hashed
INSTALL_INPUTS = ("ibemu/", "layers/", "scenarios/", "setup.py", "pyproject.toml", "README.md", "MANIFEST.in")
DEFAULT_VENVS = Path("~/.cache/ibemu-bench").expanduser()
COMPILED = "compiled (mypyc)"
TITLE = {"seed003": "seed 003 Fig. 1, L=10 R=10, 100 ms",
         "fattree": "128-host fat tree (16 leaves x 8 hosts, 8 spines), explicit LFTs, shift by one leaf, 3 ms"}
# the summary line of a run: "N events in X s wall (read a s, build b s, ...), compiled (mypyc) core";
# the reference's: "N events in X s wall"
SUMMARY = re.compile(r"^(\d+) events in ([\d.]+) s wall(?: \((.*)\))?(?:, (.+) core)?\s*$")
PHASE = re.compile(r"^(.+?) ([\d.]+) s$")
# which core a venv's ibemu imports: the scheduler module of the current layout or fa48aa0's engine
CORE_PROBE = """
import importlib, importlib.machinery as m
for name in ("ibemu.sim.scheduler", "ibemu.engine"):
    try:
        mod = importlib.import_module(name)
    except ImportError:
        continue
    print("compiled (mypyc)" if isinstance(mod.__spec__.loader, m.ExtensionFileLoader) else "pure Python")
    break
else:
    print("unknown")
"""


class BenchError(Exception):
    """One line for the user: a failed install or run."""


# ---------------------------------------------------------------- venvs

def _git(*args: str, cwd: Path = HERE) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise BenchError("git %s failed in %s: %s" % (" ".join(args), cwd, last))
    return r.stdout


def _pytag() -> str:
    return "py%d%d" % sys.version_info[:2]


def tree_files(tree: Path = HERE) -> list[str]:
    """The files of the working tree that the install reads (:data:`INSTALL_INPUTS`) as a
    user's checkout has them: tracked (and present) plus untracked, not ignored ones; sorted."""
    names = set(_git("ls-files", "-z", cwd=tree).split("\0"))
    names |= set(_git("ls-files", "-z", "--others", "--exclude-standard", cwd=tree).split("\0"))
    return sorted(n for n in names if n and n.startswith(INSTALL_INPUTS) and os.path.lexists(tree / n)
                  and ((tree / n).is_symlink() or not (tree / n).is_dir()))


def sources_hash(tree: Path, files: list[str]) -> str:
    """sha256 over the files' names and contents (a symbolic link: its target)."""
    h = hashlib.sha256()
    for name in files:
        p = tree / name
        h.update(name.encode() + b"\0")
        h.update(("-> " + os.readlink(p)).encode() if p.is_symlink() else p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _install(venv: Path, src: Path, what: str) -> None:
    """``python -m venv`` then ``pip install <src>`` (non-editable); one-line errors."""
    log = venv.parent / (venv.name + ".install.log")
    print("%s: installing into %s (log %s) ..." % (what, venv, log), flush=True)
    t0 = time.perf_counter()
    with open(log, "w") as out:
        for cmd in ([sys.executable, "-m", "venv", str(venv)],
                    [str(venv / "bin" / "python"), "-m", "pip", "install", "-v", "--no-input", str(src)]):
            out.write("$ %s\n" % " ".join(cmd))
            out.flush()
            r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
            if r.returncode:
                tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-1:]
                raise BenchError("%s: %s failed (exit %d) installing into %s: %s (whole log: %s)" % (
                    what, cmd[2] if cmd[1] == "-m" and cmd[2] == "venv" else "pip install", r.returncode, venv,
                    tail[0].strip() if tail else "no output", log))
    print("%s: installed in %.0f s" % (what, time.perf_counter() - t0), flush=True)


def _ready(folder: Path) -> bool:
    return (folder / "installed").exists() and (folder / "venv" / "bin" / "ibemu").exists()


def ref_venv(commit: str, venvs: Path) -> Path:
    """``venvs/ref-<commit>-pyXY``: the commit's sources (``src``) and its venv (``venv``)."""
    full = _git("rev-parse", "--verify", commit + "^{commit}").strip()
    folder = venvs / ("ref-%s-%s" % (full[:12], _pytag()))
    if _ready(folder):
        print("ref %s: reusing %s" % (commit, folder), flush=True)
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "src").mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", full], cwd=HERE, capture_output=True)
    if archive.returncode:
        raise BenchError("git archive %s failed: %s" % (commit, archive.stderr.decode(errors="replace").strip()))
    subprocess.run(["tar", "-x", "-C", str(folder / "src")], input=archive.stdout, check=True)
    _install(folder / "venv", folder / "src", "ref %s" % commit)
    (folder / "installed").write_text(full + "\n")
    return folder


def current_venv(venvs: Path, tree: Path = HERE, allow_pure: bool = False) -> Path:
    """``venvs/current-<hash>-pyXY``: a copy of the working tree (``src``) and its venv; a
    BenchError when the install fell back to the pure-Python core, unless *allow_pure*."""
    files = tree_files(tree)
    digest = sources_hash(tree, files)
    folder = venvs / ("current-%s-%s" % (digest[:16], _pytag()))
    if _ready(folder):
        print("current tree: reusing %s (sources unchanged)" % folder, flush=True)
        if not allow_pure and venv_core(folder) != COMPILED:
            raise BenchError("the current tree's venv %s has a pure-Python core (installed with --allow-pure; "
                             "remove the folder to build it again)" % folder)
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    src = folder / "src"
    for name in files:
        dest = src / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / name, dest, follow_symlinks=False)   # ibemu/layers, ibemu/scenarios stay links
    _install(folder / "venv", src, "current tree (%d files, sources %s)" % (len(files), digest[:16]))
    core = venv_core(folder)
    if core != COMPILED and not allow_pure:
        # setup.py says why it fell back to pure Python in a line "ibemu setup.py: ..." (pip -v shows it)
        log = folder / "venv.install.log"
        why = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if "ibemu setup.py:" in ln]
        raise BenchError("the current tree installed with a %s core, not a compiled one: %s (log %s; "
                         "--allow-pure to go on)" % (core, why[-1] if why else "setup.py gave no reason", log))
    (folder / "installed").write_text(digest + "\n")
    return folder


def venv_core(folder: Path) -> str:
    """The core the venv's ibemu imports: "compiled (mypyc)" or "pure Python"."""
    r = subprocess.run([str(folder / "venv" / "bin" / "python"), "-c", CORE_PROBE], cwd=folder,
                       capture_output=True, text=True, env=clean_env())
    return r.stdout.strip() or "unknown (%s)" % (r.stderr.strip().splitlines() or ["?"])[-1]


# ---------------------------------------------------------------- one run

def clean_env() -> dict[str, str]:
    """This environment without what would change which ibemu or which core a child runs."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "IBEMU_PURE", "VIRTUAL_ENV"):
        env.pop(key, None)
    return env


def timed_run(cmd: list[str], cwd: Path, log: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run *cmd* (stdout and stderr to *log*); its wall seconds from outside, CPU seconds
    and peak RSS (``os.wait4``), and its stdout's text.  A failure is a BenchError."""
    with open(log, "w") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                             env=clean_env() if env is None else env)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    if p.returncode:
        tail = [ln for ln in text.splitlines() if ln.strip()][-1:]
        raise BenchError("%s exited %d: %s (output: %s)" % (" ".join(cmd[:2]), p.returncode,
                                                            tail[0] if tail else "no output", log))
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss * 1024, "text": text}


def parse_summary(text: str) -> dict[str, Any]:
    """The summary line's events, wall seconds, phases (name -> s, in order) and core."""
    for line in reversed(text.splitlines()):
        m = SUMMARY.match(line.strip())
        if m:
            phases: dict[str, float] = {}
            for part in (m.group(3) or "").split(", "):
                pm = PHASE.match(part.strip())
                if pm:
                    phases[pm.group(1)] = float(pm.group(2))
            return {"events": int(m.group(1)), "ibemu_wall": float(m.group(2)), "phases": phases,
                    "core": m.group(4)}
    raise BenchError("no summary line ('N events in X s wall ...') in the run's output")


def du(path: Path) -> int:
    """Bytes of the files under *path*."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def workload_args(workload: str, src: Path) -> list[str]:
    """The ``ibemu run`` arguments of *workload* for the tree whose sources are *src*."""
    if workload == "seed003":
        return [str(src / "scenarios" / "santos_fig1.toml"), "--set", "template.L=10", "--set", "template.R=10",
                "--duration", "100ms"]
    return [str(FAT_TREE), "--duration", "3ms"]


def run_once(folder: Path, workload: str, scratch: Path, tag: str) -> dict[str, Any]:
    out = scratch / ("out-" + tag)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(folder / "venv" / "bin" / "ibemu"), "run", *workload_args(workload, folder / "src"), "--out", str(out)]
    r = timed_run(cmd, scratch, scratch / ("log-" + tag))
    r.update(parse_summary(r.pop("text")))
    r["out_bytes"] = du(out)
    shutil.rmtree(out, ignore_errors=True)
    return r


# ---------------------------------------------------------------- report

def _loadavg() -> str:
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


def report(workload: str, runs: dict[str, list[dict[str, Any]]], cores: dict[str, str], repeat: int) -> None:
    best = {v: min(rs, key=lambda r: r["wall"]) for v, rs in runs.items() if rs}
    print("\n%s: best of %d by wall time" % (TITLE[workload], repeat))
    print("  %-8s %8s %8s %9s %10s %9s %8s  %-18s %s" % ("variant", "wall s", "cpu s", "peak RSS", "events",
                                                          "output", "runs", "core", "wall s of every run"))
    for v, b in best.items():
        print("  %-8s %8.2f %8.2f %5.0f MiB %10d %5.1f MiB %8d  %-18s %s" % (
            v, b["wall"], b["cpu"], b["rss"] / 2**20, b["events"], b["out_bytes"] / 2**20, len(runs[v]),
            b.get("core") or cores[v], " ".join("%.2f" % r["wall"] for r in runs[v])))
    if "ref" in best and "current" in best:
        ref, cur = best["ref"], best["current"]
        print("  ratio ref / current: wall %.2fx, cpu %.2fx (best run of each)" % (
            ref["wall"] / cur["wall"], min(r["cpu"] for r in runs["ref"]) / min(r["cpu"] for r in runs["current"])))
    if "current" in best:
        cur = best["current"]
        phases = ", ".join("%s %.2f s" % kv for kv in cur["phases"].items())
        print("  current, its summary line: %.2f s wall (%s)" % (cur["ibemu_wall"], phases or "no phases"))
        # routing and the credit-loop check are inside build (ibemu/build.py runs them within it)
        accounted = sum(t for name, t in cur["phases"].items() if name not in ("routing", "credit-loop check"))
        print("  current, outside the phases (interpreter start, imports, the summary table): %.2f s" % (
            cur["wall"] - accounted))
    if "ref" in best:
        print("  ref, its summary line: %.2f s wall (no phases)" % best["ref"]["ibemu_wall"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2, help="runs per variant and workload, the best counts (2)")
    ap.add_argument("--only", choices=WORKLOADS, action="append", help="this workload only (may be repeated)")
    ap.add_argument("--ref", default=REF, help="reference commit (default %(default)s)")
    ap.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="where the venvs are kept (%(default)s)")
    ap.add_argument("--install-only", action="store_true", help="build or check the two venvs, run nothing")
    ap.add_argument("--allow-pure", action="store_true",
                    help="go on when the current tree's install fell back to the pure-Python core")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat: at least 1")
    workloads = a.only or list(WORKLOADS)
    try:
        a.venvs.expanduser().mkdir(parents=True, exist_ok=True)
        venvs = a.venvs.expanduser().resolve()
        if not FAT_TREE.exists() and "fattree" in workloads:
            raise BenchError("%s is missing (python benchmarks/data/make_fat_tree.py --radix 16 --traffic shift "
                             "--k 8 --duration 3ms writes it)" % FAT_TREE)
        folders = {"ref": ref_venv(a.ref, venvs), "current": current_venv(venvs, allow_pure=a.allow_pure)}
        cores = {v: venv_core(f) for v, f in folders.items()}
        for v, f in folders.items():
            print("%-8s %s: %s core" % (v, f, cores[v]), flush=True)
        if a.install_only:
            return 0
        print("bench_whole: python %s, %d CPUs, load average %s" % (sys.version.split()[0], os.cpu_count() or 0,
                                                                    _loadavg()), flush=True)
        with tempfile.TemporaryDirectory(prefix="ibemu-whole-") as tmp:
            scratch = Path(tmp)
            for w in workloads:
                runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
                for i in range(a.repeat):
                    for v in (VARIANTS if i % 2 == 0 else VARIANTS[::-1]):
                        r = run_once(folders[v], w, scratch, "%s-%s-%d" % (w, v, i))
                        runs[v].append(r)
                        print("  %s run %d/%d %-8s %7.2f s wall, %7.2f s cpu, load %s" % (
                            w, i + 1, a.repeat, v, r["wall"], r["cpu"], _loadavg()), flush=True)
                report(w, runs, cores, a.repeat)
    except BenchError as e:
        print("bench_whole.py: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("bench_whole.py: %s: %s" % (e.filename or "I/O", e.strerror or e), file=sys.stderr)
        return 1
    print("\nload average at the end: %s" % _loadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
