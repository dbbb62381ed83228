"""Virtual-time engine speed: the current tree against a reference commit, pure Python and
compiled, side by side in one run (issue 16 Deliver 3).

    python benchmarks/bench_engine.py                       # both workloads, all three variants
    python benchmarks/bench_engine.py --ms 5 --repeat 2 --compiled-tree /tmp/ibemu-compiled
    python benchmarks/bench_engine.py --variants current    # this tree only, pure Python (the old mode)
    python benchmarks/bench_engine.py --only seed003 --variants current --profile

Workloads (``--only``):

- ``seed003``: seed 003 Figure 1 with L=10, R=10 (21 greedy RC flows over two switches,
  the victim active in the middle 20 % of the run; seed 003's ideal flow control);
- ``fattree``: ``benchmarks/data/fat_tree32_perm.toml``, a loaded two-level fat tree of
  32 hosts and 12 switches with a random permutation of 32 greedy RC flows, written out
  explicitly (LFTs, ports, flows) so that the reference commit reads it too
  (``benchmarks/data/make_fat_tree.py`` generates it).

Variants (``--variants``, comma-separated):

- ``ref``: the reference commit (``--ref``, default fa48aa0, the commit issues 12-18 were
  filed against), checked out into a temporary git worktree, pure Python;
- ``pure``: this tree, pure Python (alias ``current``);
- ``compiled``: this tree compiled with mypyc (``mypyc ibemu/sim ibemu/fabric ibemu/wire
  ibemu/cc`` in a copy of the tree).  ``--compiled-tree DIR`` keeps that copy in DIR and
  reuses it on the next run while this tree's ibemu sources are unchanged (a stamp file
  holds their hash); without it the copy is built in a temporary directory and removed.

Each run is a fresh subprocess whose PYTHONPATH is its variant's tree, so each runs its
own code; it builds the fabric, runs the engine for ``--ms`` emulated ms and prints one
JSON line (frames, packets, events, wall and CPU seconds of ``engine.run``, which core it
imported).  The repeats are interleaved (ref pure compiled ref pure compiled ...), so a
slow spell on a shared machine hits every variant; the best of ``--repeat`` counts.

Printed per workload and variant: frame-hops/s (every frame that crosses a link: data
packets, ACKs and link flow-control packets), packet-hops/s (data and ACK packets only),
events/s, wall seconds per emulated ms, and the ratios of the rates to the reference.
The two trees' physics differ (in the current tree a flow-control packet takes link time
on a "wire" link, the fat tree's default), so their frame counts differ somewhat too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
FAT_TREE = HERE / "benchmarks" / "data" / "fat_tree32_perm.toml"
REF = "fa48aa0"
WORKLOADS = ("seed003", "fattree")
VARIANTS = ("ref", "pure", "compiled")
DEFAULT_MS = {"seed003": 20.0, "fattree": 3.0}
COMPILED_PACKAGES = ("ibemu/sim", "ibemu/fabric", "ibemu/wire", "ibemu/cc", "ibemu/routing")
LINK_LEN = 6      # bytes of a link flow-control packet (IBA 7.9.4; ibemu.wire.linkpkt.LINK_LEN)


# ---------------------------------------------------------------- the measured run (any tree)

def _setup(workload: str, ms: float, fat_tree: str) -> tuple[Any, Any, Any]:
    """(engine, scenario, packet counter) of *workload*, from whichever ibemu is on the path:
    the current layout (ibemu.sim, ibemu.scenario.builders) or fa48aa0's (ibemu.engine,
    ibemu.topologies)."""
    from ibemu.build import build_fabric
    from ibemu.fabric.recorder import Recorder
    try:
        from ibemu.sim import VirtualEngine
    except ImportError:                                  # fa48aa0
        from ibemu.engine import VirtualEngine  # type: ignore[no-redef]

    class PacketCount(Recorder):
        """Counts the data and ACK packets that cross a link (not link flow-control packets)."""

        def __init__(self) -> None:
            self.packets = 0

        def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
            if nbytes != LINK_LEN:
                self.packets += 1

    if workload == "seed003":
        try:
            from ibemu.scenario.builders import santos_fig1
        except ImportError:                              # fa48aa0
            from ibemu.topologies import santos_fig1  # type: ignore[no-redef]
        scn = santos_fig1(L=10, R=10, duration_ms=ms, victim=(ms * 0.4, ms * 0.6))
    else:
        from ibemu.scenario import load_scenario
        scn = load_scenario(fat_tree, ["scenario.duration=%rms" % ms])
    rec = PacketCount()
    fabric = build_fabric(scn, rec)
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring)
    return engine, scn, rec


def _core() -> str:
    """"compiled" if the engine module imported is an extension module, else "pure"."""
    for name in ("ibemu.sim.scheduler", "ibemu.sim.engine", "ibemu.engine"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            return "compiled" if str(mod.__file__).endswith(".so") else "pure"
    return "unknown"


def worker(workload: str, ms: float, fat_tree: str, profile: bool = False) -> dict[str, Any]:
    """One run: build, start, run *ms* emulated ms; the figures of ``engine.run``."""
    engine, scn, rec = _setup(workload, ms, fat_tree)
    engine.start(0)
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    c0, t0 = time.process_time(), time.perf_counter()
    engine.run(scn.duration)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        import pstats
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    import ibemu
    return {"workload": workload, "ms": ms, "wall": wall, "cpu": cpu, "frames": engine.frames,
            "packets": rec.packets, "events": engine.events, "core": _core(), "ibemu": str(Path(ibemu.__file__).parent)}


# ---------------------------------------------------------------- the trees

def _sources_hash(tree: Path) -> str:
    """Hash of the ibemu sources of *tree* (symbolic links followed), to tell a stale build."""
    h = hashlib.sha256()
    for p in sorted((tree / "ibemu").rglob("*.py")):
        h.update(str(p.relative_to(tree)).encode())
        h.update(p.read_bytes())
    h.update((tree / "pyproject.toml").read_bytes())
    return h.hexdigest()


def compiled_tree(dest: Path) -> Path:
    """A copy of this tree's ibemu package in *dest* compiled with mypyc; reused when its
    stamp says it was built from the same sources."""
    stamp = dest / "ibemu-sources.sha256"
    want = _sources_hash(HERE)
    if stamp.exists() and stamp.read_text().strip() == want:
        print("compiled tree: reusing %s (sources unchanged)" % dest, flush=True)
        return dest
    print("compiled tree: building in %s (mypyc %s; a few minutes) ..." % (dest, " ".join(COMPILED_PACKAGES)),
          flush=True)
    if (dest / "ibemu").exists():
        shutil.rmtree(dest / "ibemu")
    shutil.rmtree(dest / "build", ignore_errors=True)
    for so in dest.glob("*.so"):
        so.unlink()
    dest.mkdir(parents=True, exist_ok=True)
    # symlinks=False: ibemu/layers and ibemu/scenarios (links to ../layers, ../scenarios) become copies
    shutil.copytree(HERE / "ibemu", dest / "ibemu", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    shutil.copy2(HERE / "pyproject.toml", dest / "pyproject.toml")
    t0 = time.perf_counter()
    r = subprocess.run([shutil.which("mypyc") or "mypyc", *COMPILED_PACKAGES], cwd=dest, capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit("mypyc failed (%d):\n%s%s" % (r.returncode, r.stdout[-4000:], r.stderr[-4000:]))
    stamp.write_text(want + "\n")
    print("compiled tree: built in %.0f s" % (time.perf_counter() - t0), flush=True)
    return dest


def ref_worktree(commit: str, parent: Path) -> Path:
    """A detached git worktree of *commit* under *parent*."""
    path = parent / ("ref-" + commit)
    subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=HERE, check=True,
                   capture_output=True)
    return path


class RunFailed(Exception):
    """A variant's run ended with an error (its stderr is in the message)."""


def run_variant(tree: Path, workload: str, ms: float, fat_tree: Path, compiled: bool) -> dict[str, Any]:
    """One measured run in a fresh process with PYTHONPATH = *tree* (pure: IBEMU_PURE=1, so
    that compiled modules built in place in the tree, if any, are not used)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONSTARTUP", None)
    env.pop("IBEMU_PURE", None)
    if not compiled:
        env["IBEMU_PURE"] = "1"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", workload, "--ms", repr(ms),
           "--fat-tree", str(fat_tree)]
    r = subprocess.run(cmd, cwd=str(tree), env=env, capture_output=True, text=True)
    if r.returncode:
        raise RunFailed("%s: the %s run failed:\n%s" % (tree, workload, r.stderr[-3000:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- report

def _loadavg() -> str:
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


def report(workload: str, best: dict[str, dict[str, Any]], runs: dict[str, list[dict[str, Any]]],
           clock: str, repeat: int) -> None:
    title = {"seed003": "seed 003 Fig. 1, L=10 R=10", "fattree": "fat tree, 32 hosts, 12 switches, permutation"}
    ms = next(iter(best.values()))["ms"]
    print()
    print("%s: %g ms emulated, best of %d (%s time)" % (title[workload], ms, repeat, clock))
    print("  %-9s %9s %9s %10s %13s %13s %11s %9s %7s %7s %7s %8s %6s  %s" % (
        "variant", "frames", "packets", "events", "frame-hops/s", "packet-hops/s", "events/s", "s/ems",
        "xframe", "xpacket", "xevent", "cpu/wall", "xcpu", "frame-hops/s of every run"))
    ref = best.get("ref")
    fast = {v: max(r["frames"] / r["cpu"] for r in rs) for v, rs in runs.items()}   # frame-hops per CPU second
    for v, b in best.items():
        t = b[clock]
        ratios = ("%7.2f %7.2f %7.2f" % (b["frames"] / t / (ref["frames"] / ref[clock]),
                                         b["packets"] / t / (ref["packets"] / ref[clock]),
                                         b["events"] / t / (ref["events"] / ref[clock]))
                  if ref is not None else "%7s %7s %7s" % ("-", "-", "-"))
        every = " ".join("%.0f" % (r["frames"] / r[clock]) for r in runs[v])
        xcpu = "%6.2f" % (fast[v] / fast["ref"]) if ref is not None else "%6s" % "-"
        print("  %-9s %9d %9d %10d %13.0f %13.0f %11.0f %9.4f %s %8.2f %s  %s" % (
            v, b["frames"], b["packets"], b["events"], b["frames"] / t, b["packets"] / t, b["events"] / t,
            t / b["ms"], ratios, b["cpu"] / b["wall"], xcpu, every))
    print("  s/ems: %s seconds per emulated ms; xframe, xpacket, xevent: frame-hops/s, packet-hops/s and "
          "events/s over the reference's;\n  cpu/wall: CPU time over wall time of the best run (below 1: "
          "the process waited for a CPU);\n  xcpu: frame-hops per CPU second (best run by CPU time) over the "
          "reference's, less disturbed by other load" % clock)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ms", type=float, default=None,
                    help="emulated ms per run (default: seed003 %g, fattree %g)" % (DEFAULT_MS["seed003"],
                                                                                DEFAULT_MS["fattree"]))
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant and workload (the best counts)")
    ap.add_argument("--only", choices=WORKLOADS, action="append", help="this workload only (may be repeated)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, in order: ref, pure (or current), compiled (default: all)")
    ap.add_argument("--ref", default=REF, help="reference commit (default %(default)s)")
    ap.add_argument("--compiled-tree", type=Path, default=None,
                    help="keep the mypyc build here and reuse it while the sources are unchanged")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time engine.run by the wall clock (default) or the process's CPU time")
    ap.add_argument("--profile", action="store_true",
                    help="profile one run of this tree in this process (whichever ibemu is imported) instead")
    ap.add_argument("--worker", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--fat-tree", default=str(FAT_TREE), help=argparse.SUPPRESS)
    a = ap.parse_args()
    workloads = a.only or list(WORKLOADS)
    ms_of = {w: a.ms if a.ms is not None else DEFAULT_MS[w] for w in WORKLOADS}

    if a.worker:
        print(json.dumps(worker(a.worker, ms_of[a.worker], a.fat_tree)))
        return 0
    if a.profile:
        for w in workloads:
            r = worker(w, ms_of[w], a.fat_tree, profile=True)
            print(json.dumps(r))
        return 0

    variants = ["pure" if v.strip() == "current" else v.strip() for v in a.variants.split(",") if v.strip()]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or len(set(variants)) != len(variants):
        ap.error("--variants: expected distinct names among ref, pure (current), compiled; got %r" % a.variants)

    print("bench_engine: python %s, %d CPUs, load average %s" % (sys.version.split()[0], os.cpu_count() or 0,
                                                                   _loadavg()), flush=True)
    failed: set[str] = set()                          # variants whose run failed: left out from then on
    with tempfile.TemporaryDirectory(prefix="ibemu-bench-") as tmp:
        trees: dict[str, Path] = {}
        ref = None
        try:
            if "ref" in variants:
                ref = ref_worktree(a.ref, Path(tmp))
                trees["ref"] = ref
            if "pure" in variants:
                trees["pure"] = HERE
            if "compiled" in variants:
                trees["compiled"] = compiled_tree((a.compiled_tree or Path(tmp) / "compiled").resolve())
            trees = {v: trees[v] for v in variants}
            for w in workloads:
                runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
                for i in range(a.repeat):
                    for v, tree in trees.items():
                        if v in failed:
                            continue
                        try:
                            r = run_variant(tree, w, ms_of[w], FAT_TREE, v == "compiled")
                        except RunFailed as e:             # report it, go on with the other variants
                            print("variant %s left out: %s" % (v, e), flush=True)
                            failed.add(v)
                            continue
                        if r["core"] != ("compiled" if v == "compiled" else "pure"):
                            sys.exit("variant %s imported a %s core from %s" % (v, r["core"], r["ibemu"]))
                        runs[v].append(r)
                        print("  %s run %d/%d %-8s %6.2f s wall, %8.0f frame-hops/s" % (
                            w, i + 1, a.repeat, v, r["wall"], r["frames"] / r[a.clock]), flush=True)
                runs = {v: rs for v, rs in runs.items() if rs}
                if runs:
                    best = {v: min(rs, key=lambda r: r[a.clock]) for v, rs in runs.items()}
                    report(w, best, runs, a.clock, a.repeat)
        finally:
            if ref is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(ref)], cwd=HERE, capture_output=True)
                subprocess.run(["git", "worktree", "prune"], cwd=HERE, capture_output=True)
    print("\nload average at the end: %s" % _loadavg())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
