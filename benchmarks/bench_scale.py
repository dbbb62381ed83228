"""Scale in numbers (issue 15 Deliver 6): the virtual engine on two-level fat trees under load,
and the dilation at which such a fabric runs on the wall clock within 5 % of the virtual one.

Fabric: template ``fat_tree2`` of radix r (r^2/2 hosts: radix 8 -> 32, 16 -> 128, 36 -> 648),
every link 4x SDR, ``[routing] engine = "ftree"``.  Load: a ``[[traffic]]`` random permutation
(a derangement) of greedy RC flows, one per host, so every host link carries a flow each way
and the leaf-spine links the cross-leaf ones.

Virtual engine: each size runs in a fresh subprocess (so peak RSS, ``ru_maxrss``, is that
size's alone), --repeat times; the best run time is kept.  Printed per size: build time
(scenario with routing and flows, fabric), wall seconds per emulated millisecond,
frame-hops/s (``Scheduler.frames``: every frame routed across a link, data, ACK and link
flow-control packets), events/s and peak RSS; for 648 hosts PASS/FAIL against 2 GiB.  Then
the exponents of a log-log fit against the number of hosts and a plot (--plot).

Whole runs (issue 28 Deliver 4; --whole for fat_tree2 sizes, --xgft for an XGFT): each size
as a user runs it, one ``ibemu run <scenario> --out DIR`` process of the current tree
installed with its compiled core (the venv ``bench_whole.py`` keeps under --venvs; with
--tree, ``python -m ibemu`` with PYTHONPATH = this tree).  The scenario file is written
out: template ``fat_tree2`` of radix r at 4x SDR (--whole, for --whole-us emulated µs), or
template ``xgft`` with m and w (--xgft M:W, e.g. 18,18,36:1,18,18, the 11,664-host three-level
fat tree of 36-port switches) at 4x EDR (for --xgft-us µs); both ftree routing and a random
permutation of greedy RC flows.  Printed per size, from the summary line's phases and
the child's rusage: build, routing and credit-loop check seconds, run and outputs
seconds, the whole process's wall seconds, run seconds per emulated µs, events/s over the
run, packet-hops (Σ PortXmitPkts: data and ACK packets), peak RSS (``ru_maxrss`` of the
child, ``os.wait4``) and the output folder's size (plots included unless --no-plots).

Wall clock (--wall-hosts, 0 to skip): the fat tree run by ``ibemu.runtime.fidelity.compare``
over 2 workers at each dilation of --dilations (ascending, until one passes), as
``bench_runtime_dilation.py`` does for Figure 2(a), once per --wall-traffic: ``shift`` by one
leaf (every flow alone on its links) and the random ``permutation`` (flows share links).

    python benchmarks/bench_scale.py [--sizes 32,128,648] [--ms 1] [--repeat 1] [--plot benchmarks/scale.png]
        [--wall-hosts 32] [--wall-traffic shift,permutation] [--wall-ms 0.5] [--wall-repeat 1]
        [--dilations 1000,2000,5000,10000,20000] [--all]
    python benchmarks/bench_scale.py --sizes '' --wall-hosts 0 --whole 128,648 [--whole-us 500]
    python benchmarks/bench_scale.py --sizes '' --wall-hosts 0 --xgft 18,18,36:1,18,18 [--xgft-us 20]
        [--venvs DIR | --tree] [--no-plots] [--keep-out DIR]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_whole import DEFAULT_VENVS, BenchError, current_venv, du, parse_summary, timed_run, venv_core
from ibemu.build import build_fabric
from ibemu.results.metrics import Metrics
from ibemu.run import run_virtual
from ibemu.scenario import Scenario
from ibemu.scenario.builders import fat_tree2
from ibemu.sim import VirtualEngine

HERE = Path(__file__).resolve().parent
GIB = 2**30
RSS_LIMIT = 2 * GIB


def radix_for(hosts: int) -> int:
    """The radix r of the full fat_tree2 of *hosts* = r^2/2 hosts."""
    r = math.isqrt(2 * hosts)
    if r * r != 2 * hosts or r % 2:
        raise SystemExit("bench_scale.py: %d hosts is not r^2/2 for an even radix r (32, 128, 288, 648, ...)" % hosts)
    return r


def traffic(pattern: str, hosts: int) -> dict[str, object]:
    """The [[traffic]] table: "permutation" (random derangement) or "shift" (by one leaf: host i
    to host i + r/2, which ftree routes over distinct spines, so no two flows share a link)."""
    if pattern == "shift":
        return {"pattern": "shift", "k": radix_for(hosts) // 2}
    if pattern == "permutation":
        return {"pattern": "permutation"}
    raise SystemExit("bench_scale.py: traffic is permutation or shift, got %r" % pattern)


def scenario(hosts: int, ms: float, pattern: str = "permutation", seed: int = 1) -> Scenario:
    """The loaded fat tree: fat_tree2, 4x SDR, ftree routing, greedy RC flows of *pattern*."""
    return fat_tree2(radix_for(hosts), duration=ms, rates="4x_sdr", name="scale%d" % hosts, seed=seed,
                     sections={"routing": {"engine": "ftree"}, "traffic": [traffic(pattern, hosts)]})


def child(hosts: int, ms: float) -> dict[str, float]:
    """One measured run in this process (the engine as ``run_virtual`` drives it, without outputs)."""
    t0 = time.perf_counter()
    scn = scenario(hosts, ms)
    t1 = time.perf_counter()
    metrics = Metrics(scn.duration, scn.output.bin, {}, {f.name: f for f in scn.flows}, {},
                      window_ps=scn.output.window)
    fabric = build_fabric(scn, metrics)
    metrics.add_links(fabric.link_capacity)
    metrics.add_flow_capacity(fabric.flow_capacity)
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring)
    t2 = time.perf_counter()
    engine.start(0)
    engine.run(scn.duration)
    t3 = time.perf_counter()
    summary = metrics.summary()
    t4 = time.perf_counter()
    norm = [f["normalized"] or 0.0 for f in summary["flows"].values()]
    return {"hosts": hosts, "ms": ms, "flows": len(scn.flows), "nodes": len(fabric.nodes),
            "scenario_s": t1 - t0, "build_s": t2 - t0, "run_s": t3 - t2, "summary_s": t4 - t3,
            "frames": engine.frames, "events": engine.events, "mean_share": sum(norm) / len(norm),
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def measure(hosts: int, ms: float) -> dict[str, float]:
    """:func:`child` in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    p = subprocess.run([sys.executable, __file__, "--child", str(hosts), "--ms", repr(ms)], env=env,
                       capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("bench_scale.py: the %d-host run failed:\n%s" % (hosts, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(exponent b, factor a) of the least-squares line log y = log a + b log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx
    return b, math.exp(my - b * mx)


def virtual_part(sizes: Sequence[int], ms: float, repeat: int, plot: str | None) -> bool:
    print("virtual engine: fat_tree2, 4x SDR, ftree routing, random permutation of greedy RC flows, "
          "%g ms emulated, best of %d, each run in a fresh process" % (ms, repeat), flush=True)
    head = "%6s %6s %6s %9s %10s %12s %12s %12s %9s %8s" % (
        "hosts", "nodes", "flows", "build s", "wall s/ms", "frame-hops", "frame-hops/s", "events/s",
        "peak RSS", "share")
    print(head + "\n" + "-" * len(head), flush=True)
    rows, ok = [], True
    for hosts in sizes:
        runs = []
        for _ in range(repeat):
            runs.append(measure(hosts, ms))
        r = min(runs, key=lambda x: x["run_s"])
        r["rss"] = max(x["rss"] for x in runs)
        r["build_s"] = min(x["build_s"] for x in runs)
        rows.append(r)
        print("%6d %6d %6d %9.2f %10.2f %12d %12.0f %12.0f %6.0f MiB %7.1f%%   (load avg %.2f)" % (
            hosts, r["nodes"], r["flows"], r["build_s"], r["run_s"] / ms, r["frames"], r["frames"] / r["run_s"],
            r["events"] / r["run_s"], r["rss"] / 2**20, 100 * r["mean_share"], os.getloadavg()[0]), flush=True)
        if hosts == 648:
            verdict = r["rss"] <= RSS_LIMIT
            ok = ok and verdict
            print("       648 hosts, %g ms emulated: peak RSS %.2f GiB -> %s (limit 2 GiB)" % (
                ms, r["rss"] / GIB, "PASS" if verdict else "FAIL"), flush=True)
    print("(build s: scenario, routing, flows and fabric; wall s/ms: run seconds per emulated ms; "
          "share: mean flow throughput / its link)")
    if len(rows) >= 2:
        hs = [r["hosts"] for r in rows]
        for label, key in (("wall s per emulated ms", lambda r: r["run_s"] / ms), ("build s", lambda r: r["build_s"]),
                           ("frame-hops per emulated ms", lambda r: r["frames"] / ms),
                           ("wall s per frame-hop", lambda r: r["run_s"] / r["frames"]),
                           ("peak RSS", lambda r: r["rss"])):
            b, _ = fit(hs, [key(r) for r in rows])
            print("  %-28s ~ hosts^%.2f" % (label, b))
        if plot:
            draw(rows, ms, plot)
    return ok


def draw(rows: list[dict[str, float]], ms: float, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    hs = [r["hosts"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, ys, mark in (("wall s per emulated ms", [r["run_s"] / ms for r in rows], "o"),
                            ("build s", [r["build_s"] for r in rows], "s")):
        b, a = fit(hs, ys)
        ax.loglog(hs, ys, mark, label="%s (fit: hosts^%.2f)" % (label, b))
        ax.loglog(hs, [a * h ** b for h in hs], "--", color=ax.lines[-1].get_color(), linewidth=0.8)
    ax.set_xlabel("hosts (fat_tree2, 4x SDR, ftree, random permutation)")
    ax.set_ylabel("wall seconds")
    ax.set_xticks(hs, [str(h) for h in hs])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print("plot: %s" % path)


WHOLE_SCENARIO = """\
# benchmarks/bench_scale.py: a whole-run size
[template]
name = "{template}"
{params}
rates = "{rate}"

[scenario]
name = "{name}"
duration = "{us}us"
seed = 1

[routing]
engine = "ftree"

[[traffic]]
pattern = "permutation"
"""


def parse_xgft(text: str) -> tuple[list[int], list[int]]:
    """``18,18,36:1,18,18`` -> (m, w)."""
    try:
        m_text, w_text = text.split(":")
        m, w = [int(x) for x in m_text.split(",")], [int(x) for x in w_text.split(",")]
    except ValueError:
        raise SystemExit("bench_scale.py: --xgft is m:w, comma-separated integers, e.g. 18,18,36:1,18,18; "
                         "got %r" % text) from None
    if len(m) != len(w) or not m:
        raise SystemExit("bench_scale.py: --xgft: m and w need as many entries (one per level); got %r" % text)
    return m, w


def whole_sizes(fat_trees: Sequence[int], us: float, xgft: str | None, xgft_us: float) -> list[dict[str, object]]:
    """(label, hosts, emulated µs, scenario text) of every whole-run size."""
    sizes: list[dict[str, object]] = []
    for hosts in fat_trees:
        r = radix_for(hosts)
        sizes.append({"label": "fat_tree2 r=%d" % r, "hosts": hosts, "us": us, "text": WHOLE_SCENARIO.format(
            template="fat_tree2", params="radix = %d" % r, rate="4x_sdr", name="scale%d" % hosts, us="%g" % us)})
    if xgft:
        m, w = parse_xgft(xgft)
        hosts = math.prod(m)
        sizes.append({"label": "xgft %s" % xgft, "hosts": hosts, "us": xgft_us, "text": WHOLE_SCENARIO.format(
            template="xgft", params="m = %s\nw = %s" % (m, w), rate="4x_edr", name="xgft%d" % hosts,
            us="%g" % xgft_us)})
    return sizes


def whole_part(sizes: list[dict[str, object]], repeat: int, venvs: Path, tree: bool, plots: bool,
               keep: Path | None) -> bool:
    """Each size as one whole ``ibemu run`` process (best of *repeat* by wall time)."""
    if tree:
        cmd = [sys.executable, "-m", "ibemu"]
        env: dict[str, str] | None = dict(os.environ, PYTHONPATH=str(HERE.parent))
        env.pop("IBEMU_PURE", None)
        line = subprocess.run([*cmd, "--version"], env=env, capture_output=True, text=True).stdout
        core = line.partition("(")[2].rpartition(" core)")[0] or "unknown"
    else:
        venvs.mkdir(parents=True, exist_ok=True)
        folder = current_venv(venvs.resolve(), HERE.parent)
        cmd, env, core = [str(folder / "venv" / "bin" / "ibemu")], None, venv_core(folder)
    print("whole runs: %s (%s core), ftree routing, random permutation of greedy RC flows, best of %d by wall "
          "time, plots %s" % (cmd[0], core, repeat, "written" if plots else "off"), flush=True)
    head = "%-22s %6s %7s %8s %8s %8s %8s %8s %8s %9s %11s %11s %12s %9s %9s" % (
        "size", "hosts", "em. µs", "build s", "routing", "cdg chk", "run s", "output s", "whole s", "run s/µs",
        "events/s", "pkt-hops", "pkt-hops/s", "peak RSS", "out size")
    print(head + "\n" + "-" * len(head), flush=True)
    ok = True
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ibemu-scale-") as tmp:
        scratch = Path(tmp)
        for size in sizes:
            scenario = scratch / ("%s.toml" % str(size["label"]).replace(" ", "_").replace(",", "-").replace(":", "_"))
            scenario.write_text(str(size["text"]))
            runs = []
            for i in range(repeat):
                out = (keep or scratch) / ("out-%s-%d" % (scenario.stem, i))
                shutil.rmtree(out, ignore_errors=True)
                args = [*cmd, "run", str(scenario), "--out", str(out)] + ([] if plots else ["--no-plots"])
                try:
                    r = timed_run(args, scratch, scratch / ("log-%s-%d" % (scenario.stem, i)), env)
                    r.update(parse_summary(r.pop("text")))
                    r["out_bytes"] = du(out)
                    ports = json.loads((out / "results.json").read_text())["ports"]
                    r["hops"] = sum(int(p["PortXmitPkts"]) for p in ports.values())
                except (BenchError, OSError, ValueError, KeyError) as e:
                    print("%-22s failed: %s" % (size["label"], e), flush=True)
                    ok = False
                    break
                if keep is None:
                    shutil.rmtree(out, ignore_errors=True)
                runs.append(r)
            if not runs:
                continue
            b = min(runs, key=lambda x: x["wall"])
            ph = b["phases"]
            run_s = ph.get("run", b["ibemu_wall"])
            us = float(size["us"])  # type: ignore[arg-type]
            print("%-22s %6d %7g %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %9.3f %11.0f %11d %12.0f %5.0f MiB %5.1f MiB"
                  "   (load avg %.2f)" % (
                      size["label"], size["hosts"], us, ph.get("build", math.nan), ph.get("routing", math.nan),
                      ph.get("credit-loop check", math.nan), run_s, ph.get("outputs", math.nan), b["wall"],
                      run_s / us, b["events"] / run_s if run_s else math.nan, b["hops"],
                      b["hops"] / run_s if run_s else math.nan, max(x["rss"] for x in runs) / 2**20,
                      b["out_bytes"] / 2**20, os.getloadavg()[0]), flush=True)
    print("(build s includes routing and the credit-loop check; whole s: the process from outside, interpreter "
          "start and imports included; run s/µs: the run phase per emulated µs; events/s and pkt-hops/s over the "
          "run phase; pkt-hops: Σ PortXmitPkts, data and ACK packets; peak RSS: the child's ru_maxrss)")
    return ok


def wall_part(hosts: int, pattern: str, ms: float, dilations: Sequence[float], repeat: int, workers: int,
              go_on: bool) -> bool:
    from bench_runtime_dilation import sweep
    scn = scenario(hosts, ms, pattern)
    virtual = run_virtual(scn)
    shares = [f["normalized"] or 0.0 for f in virtual.summary["flows"].values()]
    print("wall clock: fat_tree2 of %d hosts, %s (%d flows at %.0f-%.0f %% of their link), %g ms emulated, "
          "%d workers; virtual clock: %.1f s" % (hosts, pattern, len(scn.flows), 100 * min(shares),
                                                 100 * max(shares), ms, workers, virtual.wall_seconds), flush=True)
    found = sweep(scn, virtual, dilations, repeat, workers, 0.05, go_on)
    if found is None:
        print("%s: no dilation tried keeps the %d-host fat tree within 5 %% of the virtual clock" % (pattern, hosts))
        return False
    print("%s: smallest dilation keeping the %d-host fat tree within 5 %% of the virtual clock: %g" % (
        pattern, hosts, found), flush=True)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="32,128,648", help="hosts per fat tree, r^2/2 each (empty: skip)")
    ap.add_argument("--ms", type=float, default=1.0, help="emulated milliseconds per virtual run")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size (best run time kept)")
    ap.add_argument("--plot", default=str(HERE / "scale.png"), help="the log-log plot ('' for none)")
    ap.add_argument("--wall-hosts", type=int, default=32, help="hosts of the wall-clock fat tree (0: skip)")
    ap.add_argument("--wall-traffic", default="shift,permutation",
                    help="traffic of the wall-clock runs, one sweep each: shift (by one leaf), permutation")
    ap.add_argument("--wall-ms", type=float, default=0.5, help="emulated milliseconds of a wall-clock run")
    ap.add_argument("--dilations", default="1000,2000,5000,10000,20000", help="tried in this order until one passes")
    ap.add_argument("--wall-repeat", type=int, default=1, help="wall-clock runs per dilation")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--all", action="store_true", help="try every dilation, not only up to the first passing one")
    ap.add_argument("--whole", default="", help="fat_tree2 sizes (hosts, r^2/2 each) run as whole processes")
    ap.add_argument("--whole-us", type=float, default=500.0, help="emulated µs of a --whole run (default 500)")
    ap.add_argument("--xgft", default=None, help="an XGFT run as a whole process, m:w, e.g. 18,18,36:1,18,18")
    ap.add_argument("--xgft-us", type=float, default=20.0, help="emulated µs of the --xgft run (default 20)")
    ap.add_argument("--venvs", type=Path, default=DEFAULT_VENVS,
                    help="bench_whole.py's venvs: the whole runs use the current tree installed there (compiled)")
    ap.add_argument("--tree", action="store_true", help="whole runs with python -m ibemu, PYTHONPATH = this tree")
    ap.add_argument("--no-plots", action="store_true", help="whole runs with --no-plots")
    ap.add_argument("--keep-out", type=Path, default=None, help="keep the whole runs' output folders here")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.ms)))
        return 0
    print("machine: %d cores, load average %.2f %.2f %.2f; Python %s" % (
        os.cpu_count() or 0, *os.getloadavg(), sys.version.split()[0]), flush=True)
    ok = True
    sizes = [int(x) for x in a.sizes.split(",") if x]
    for h in sizes + ([a.wall_hosts] if a.wall_hosts else []):
        radix_for(h)
    whole = [int(x) for x in a.whole.split(",") if x]
    for h in whole:
        radix_for(h)
    if sizes:
        ok = virtual_part(sizes, a.ms, a.repeat, a.plot or None) and ok
    if whole or a.xgft:
        try:
            ok = whole_part(whole_sizes(whole, a.whole_us, a.xgft, a.xgft_us), a.repeat,
                            a.venvs.expanduser(), a.tree, not a.no_plots, a.keep_out) and ok
        except BenchError as e:
            print("bench_scale.py: %s" % e, file=sys.stderr)
            return 1
        except OSError as e:
            print("bench_scale.py: %s: %s" % (e.filename or "I/O", e.strerror or e), file=sys.stderr)
            return 1
    if a.wall_hosts:
        for pattern in a.wall_traffic.split(","):
            ok = wall_part(a.wall_hosts, pattern, a.wall_ms, [float(x) for x in a.dilations.split(",")],
                           a.wall_repeat, a.workers, a.all) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
