"""The outputs phase of a run and the imports before it, apart (issue 28: what a whole
``ibemu run`` spends outside the event loop).

    PYTHONPATH=. python benchmarks/bench_outputs.py                  # seed 003 Fig. 1, L=R=10, 100 ms
    PYTHONPATH=. python benchmarks/bench_outputs.py --scenario benchmarks/data/fat_tree128_shift.toml \\
        --duration 3ms --set ''
    PYTHONPATH=. python benchmarks/bench_outputs.py --fat-tree 648 --duration 0.5ms --handover-only

The scenario runs once in this process without an output folder; then its output folder
is written ``--repeat`` times (default 3) into a scratch folder.  Printed, in CPU seconds
(this process's user + system time, which a busy machine disturbs less than the wall
clock) and wall seconds:

- the first ``write_outputs`` of the process, which imports matplotlib;
- the best of the repeats after it: the whole folder, the files without the plots
  (``output.plots`` off), and each plot function;
- the plot worker's hand-over (``ibemu run`` draws its plots in a worker process,
  :mod:`ibemu.results.plot_worker`): building the job it is sent (the series and
  :class:`~ibemu.results.plot_data.PlotData`) and pickling it, CPU seconds and size; the
  scenario's pickle for comparison (the forked worker has the scenario already);
- in fresh interpreters, best of ``--repeat``: ``import ibemu.cli, ibemu.run`` (what
  ``ibemu run`` imports before it reads the scenario) and ``import matplotlib.figure``
  after numpy (what the first plot adds).

It prints figures and asserts nothing.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
PLOTS = ("plot_run", "plot_link_heatmap", "plot_latency", "plot_traces")


def timed(fn: Any, *args: Any, **kw: Any) -> tuple[float, float]:
    """(CPU s, wall s) of one call."""
    c, w = time.process_time(), time.perf_counter()
    fn(*args, **kw)
    return time.process_time() - c, time.perf_counter() - w


def import_seconds(statement: str, repeat: int) -> float:
    """Best wall seconds of ``python -c statement`` minus an empty interpreter's."""
    def best(code: str) -> float:
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=HERE)
            times.append(time.perf_counter() - t)
        return min(times)
    return best(statement) - best("pass")


def handover(metrics: Any, scn: Any, repeat: int) -> None:
    """What write_outputs sends a plot worker (the series it computes for the CSVs anyway,
    and PlotData): the job built and pickled, best of *repeat*."""
    import pickle

    from ibemu.results.plot_data import PlotData, PlotJob

    win = scn.output.window or metrics.window
    names = metrics.link_names()
    series = ([(n, metrics.link_utilization_series(n, True, win)) for n in names],
              [(n, metrics.link_utilization_series(n, False, win)) for n in names],
              [(n, metrics.flow_rate_series(n, win)) for n in metrics.flow_names()],
              [(g, metrics.group_rate_series(g, win)) for g in metrics.groups()])
    sizes: list[int] = []

    def job() -> None:
        sizes.append(len(pickle.dumps(PlotJob(PlotData.of(metrics), metrics.times_ms(), *series))))

    cpu = min(timed(job)[0] for _ in range(repeat))
    data = min(timed(PlotData.of, metrics)[0] for _ in range(repeat))
    scn_cpu = min(timed(pickle.dumps, scn)[0] for _ in range(repeat))
    print("plot worker hand-over: %d links, %d flows, %d bins; job %.1f MB, PlotData.of + pickle %.3f s CPU "
          "(PlotData.of %.3f s); the scenario's pickle (not sent) %.1f MB, %.3f s CPU"
          % (len(names), len(metrics.flow_names()), metrics.nbins, sizes[-1] / 1e6, cpu, data,
             len(pickle.dumps(scn)) / 1e6, scn_cpu))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default=str(HERE / "scenarios" / "santos_fig1.toml"))
    ap.add_argument("--duration", default="100ms")
    ap.add_argument("--set", action="append", default=None,
                    help="overrides (default template.L=10 template.R=10; --set '' for none)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fat-tree", type=int, default=0, help="hosts of a fat_tree2 (bench_scale.py's) instead")
    ap.add_argument("--handover-only", action="store_true", help="only the plot worker's hand-over")
    args = ap.parse_args()
    sets = [s for s in (args.set if args.set is not None else ["template.L=10", "template.R=10"]) if s]

    import ibemu.plots as plots
    from ibemu.results import write_outputs
    from ibemu.run import run_virtual
    from ibemu.scenario import load_scenario
    from ibemu.scenario.overrides import run_overrides

    if args.fat_tree:
        sys.path.insert(0, str(HERE / "benchmarks"))
        from bench_scale import scenario as fat_tree
        scn = fat_tree(args.fat_tree, float(args.duration.removesuffix("ms")))
    else:
        scn = load_scenario(args.scenario, run_overrides(sets, None, args.duration))
    t = time.perf_counter()
    result = run_virtual(scn, progress=False)
    print("%s, %s: %d events, run %.2f s wall" % (scn.name, args.duration, result.events, time.perf_counter() - t))
    handover(result.metrics, scn, args.repeat)
    if args.handover_only:
        return
    spent: dict[str, list[float]] = defaultdict(list)
    for name in PLOTS:                      # each plot function timed as write_outputs calls it
        original = getattr(plots, name)

        def wrapper(*a: Any, _f: Any = original, _n: str = name, **kw: Any) -> None:
            c = time.process_time()
            try:
                _f(*a, **kw)
            finally:
                spent[_n].append(time.process_time() - c)
        setattr(plots, name, wrapper)
    with tempfile.TemporaryDirectory() as tmp:
        first = timed(write_outputs, result.metrics, scn, Path(tmp) / "first")
        print("first write_outputs (imports matplotlib): %.2f s CPU, %.2f s wall" % first)
        spent.clear()
        whole = [timed(write_outputs, result.metrics, scn, Path(tmp) / ("w%d" % i)) for i in range(args.repeat)]
        scn.output.plots = False
        files = [timed(write_outputs, result.metrics, scn, Path(tmp) / ("f%d" % i)) for i in range(args.repeat)]
        scn.output.plots = True
    cpu, wall = min(c for c, _ in whole), min(w for _, w in whole)
    print("write_outputs, best of %d: %.2f s CPU, %.2f s wall" % (args.repeat, cpu, wall))
    print("  files without the plots: %.2f s CPU, %.2f s wall" % (min(c for c, _ in files), min(w for _, w in files)))
    print("  plots: %.2f s CPU" % (cpu - min(c for c, _ in files)))
    for name in PLOTS:
        if spent[name]:
            print("    %s: %.2f s CPU (plot_run includes plot_link_heatmap)" % (name, min(spent[name]))
                  if name == "plot_run" else "    %s: %.2f s CPU" % (name, min(spent[name])))
    print("imports, best of %d fresh interpreters (wall, minus an empty interpreter):" % args.repeat)
    print("  ibemu.cli + ibemu.run: %.2f s" % import_seconds("import ibemu.cli, ibemu.run", args.repeat))
    print("  matplotlib.figure after numpy: %.2f s" % (
        import_seconds("import numpy, matplotlib.figure", args.repeat) - import_seconds("import numpy", args.repeat)))


if __name__ == "__main__":
    main()
