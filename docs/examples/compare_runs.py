"""Compare two runs with ibemu.load_run and pandas (issue 18 item 4).

seed 003's Figure 1 scenario (the shipped hp_santos_fig1: 10 local and 10 remote flows into
one host, a victim flow from 16 to 24 ms, 40 ms) twice on the virtual clock: under the HP
congestion control, and the same with ``cc.scheme="none"``; then per-group throughput,
the victim's rate over time (congestion spreading, seed 003 Figure 2) and the busiest
links side by side.

    pip install '.[analysis]'          # pandas
    python docs/examples/compare_runs.py [OUT_DIR]      # default runs/compare

In a notebook, the same lines after ``import ibemu`` (and ``run.flows().plot()`` to draw).
A sweep's folder (``ibemu sweep --out DIR``) loads the same way: ``sw = ibemu.load_sweep(DIR)``,
``sw.points()`` / ``sw.aggregate()`` (DataFrames) and ``sw.run(point)`` (a point's run, as here).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

import ibemu
from ibemu.resources import shipped_scenario


def run(tag: str, out: Path, *overrides: str) -> ibemu.Run:
    """The shipped hp_santos_fig1 with *overrides* on the virtual clock, loaded back."""
    scn = ibemu.load_scenario(str(shipped_scenario("hp_santos_fig1")), list(overrides))
    scn.name = tag
    scn.output.plots = False
    ibemu.run_virtual(scn, out_dir=out / tag, progress=False)
    return ibemu.load_run(out / tag)


def main(out: Path) -> None:
    a, b = run("no_cc", out, 'cc.scheme="none"'), run("hp", out)
    print("runs: %s and %s (seed %d, %g ms each)\n" % (a.name, b.name, a.seed, a.duration_ms))

    # per group: mean normalized rate of its flows, and the group's Jain index
    def groups(r: ibemu.Run) -> pd.DataFrame:
        ft = r.flow_table()
        return ft.groupby("group")["normalized"].agg(["count", "mean", "min", "max"])

    table = pd.concat({a.name: groups(a), b.name: groups(b)}, axis=1)
    print("normalized throughput per flow group (fraction of the source link)")
    print(table.round(3).to_string(), "\n")
    print("Jain's index over all flows: %s %.3f, %s %.3f\n" % (
        a.name, a.summary["fairness"]["jain"], b.name, b.summary["fairness"]["jain"]))

    # the victim group's rate over time, the two runs in two columns (every 2 ms)
    victim = pd.DataFrame({a.name: a.flows()["group:victim"], b.name: b.flows()["group:victim"]})
    print("victim group's rate over time (fraction of its link)")
    print(victim.iloc[::max(1, len(victim) // 20)].round(3).to_string(), "\n")

    # the five busiest links of the first run, and the same links in the second
    util = pd.DataFrame({a.name: a.link_table()["utilization"], b.name: b.link_table()["utilization"]})
    print("busiest links (utilization, all frames)")
    print(util.sort_values(a.name, ascending=False).head(5).round(3).to_string())


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/compare"))
