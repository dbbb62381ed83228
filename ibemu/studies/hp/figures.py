"""The runners of the HP reproductions (:mod:`.reproduce`): seed 003 Figures 4–8 (the
comparison on Figures 2–3's scenario and the non-compliant CA scenario are in
:mod:`.comparison`).

Each ``run_*(out_dir, full, cache)`` (a :data:`~ibemu.studies.reproduction.Runner`) runs
a CI-sized version by default (shorter runs, fewer points, a few seconds to ~30 s) or
the paper's sweep with *full*, and returns its measurements as {metric: value}; plots
and the values (JSON) go to *out_dir*.  Only the paper's words appear here (plot
titles); the accepted ranges live in :mod:`.reproduce`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ...cc.hp.functions import RateTable, make_function
from ..figure_axes import draw_rates
from ..reproduction import RunCache
from .charts import new_figure, save_outputs
from .experiments import fig1
from .figure_runs import Spec, Values, measure_spec, measure_spec_rates

__all__ = ["run_fig4", "run_fig5", "run_fig6", "run_fig7", "run_fig8a", "run_fig8b"]

PACKET_US = 2048 / 1e3          # seed 003 Fig. 6 example: 2048-byte packets on 1 GB/s links


# ---------------------------------------------------------------- Figure 4
FIG4_POLICIES: dict[str, dict[str, Any]] = {"naive": {"marking": "naive"}, "input": {"marking": "input"},
                 "in-out-4": {"marking": "input-output", "output_threshold": 4},
                 "in-out-8": {"marking": "input-output", "output_threshold": 8}}
FIG4_PANELS = {"naive": "(a) naive marking", "input": "(b) input-triggered marking",
               "in-out-4": "(c) input-output-triggered, output threshold 4",
               "in-out-8": "(d) input-output-triggered, output threshold 8"}
"""Figure 4's panels, one per marking policy, as seed 003 §5 names them ("Figure 4(a) presents
simulation results for a naive packet marking mechanism", "Figure 4(b) ... the input-triggered
marking policy", "Figures 4(c) and 4(d) show the performance of the combined approach using
thresholds of four and eight packets")."""


def run_fig4(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """L=10, R=10, buffer 4, LIPD; each marking policy.  CI: 60 ms (victim 24–36 ms,
    rates over 12–60 ms: by 20 ms the remote/local ratio has settled, shorter runs show
    the start-up instead); full: 100 ms (victim 40–60 ms, rates over 20–100 ms).  The plot
    is the paper's: four panels (a)-(d), each policy's rates over time as in Figure 2
    (:func:`~ibemu.studies.figure_axes.draw_rates`)."""
    d = 100.0 if full else 60.0
    vic = (0.4 * d, 0.6 * d)
    values, rates = {}, {}
    specs: list[Spec] = [(fig1(10, 10, 4, d, victim=vic, hp={"response": "lipd", **hp}, name="fig4-" + name),
                          0.2 * d, d, {"v": (vic[0] + 0.05 * d, vic[1] - 0.05 * d)})
                         for name, hp in FIG4_POLICIES.items()]
    for name, m in zip(FIG4_POLICIES, cache.map(measure_spec_rates, specs)):
        rates[name] = m["rates"]
        values[name + ":root"] = m["root"]
        values[name + ":local share"] = m["local"] / m["root"] if m["root"] else 0.0
        values[name + ":remote/local"] = m["remote/local"]
        values[name + ":victim"] = m["v:victim"]
        # the bandwidth the victim could have: the inter-switch link less the remote flows'
        values[name + ":victim / idle inter"] = m["v:victim"] / max(1e-9, 1.0 - m["v:remote"])
        values[name + ":inter (victim on)"] = m["v:inter"]
    values["input - naive: remote/local"] = values["input:remote/local"] - values["naive:remote/local"]
    values["in-out-8 - input: remote/local"] = values["in-out-8:remote/local"] - values["input:remote/local"]
    if out_dir is not None:
        fig = new_figure(11, 7.5)
        for i, name in enumerate(FIG4_POLICIES):
            ax = fig.add_subplot(2, 2, i + 1)
            draw_rates(ax, rates[name], legend_size=6)
            ax.set_title(FIG4_PANELS[name], fontsize=9)
        fig.suptitle("seed 003 Figure 4: Comparison of Packet Marking Policies: L = 10, R = 10, buffer capacity = 4 "
                     "packets. (LIPD source response)\npaper: naive local ≈ 90 %% of root; input fairer; in-out-4 "
                     "root under-used; in-out-8 local ≈ remote; victim on %g–%g ms" % vic, fontsize=8)
        save_outputs(out_dir, "fig4", fig)
    save_outputs(out_dir, "fig4", data=values)
    return values


# ---------------------------------------------------------------- Figure 6
FIG6_SERIES = {"fimd": "FIMD (m = 2)", "aimd": "AIMD (m = 2)", "lipd": "LIPD"}
LINK_AXES = {"root": "root link utilization", "inter": "inter-switch link utilization"}
def run_fig6(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """Recovery from Rmin to Rmax (Rmin = Rmax/256) by our increase functions, unmarked
    ACK after unmarked ACK (continuous: f_inc per ACK; discrete: the RPI tables), with
    2048-byte packets on 1 GB/s links."""
    values, curves = {}, {}
    for name in ("fimd", "lipd", "aimd"):
        fn = make_function(name, 256, 2.0)
        r, t, ts, rs = fn.rmin, 0.0, [0.0], [fn.rmin]
        while r < 1.0:
            t += 1.0 / r
            r = fn.inc(r)
            ts.append(t * PACKET_US / 1e3)
            rs.append(r)
        curves[name] = (ts, rs)
        values[name + ":continuous ms"] = t * PACKET_US / 1e3
        values[name + ":discrete ms"] = RateTable(fn).recovery_time() * PACKET_US / 1e3
        values[name + ":analytic ms"] = fn.recovery_time() * PACKET_US / 1e3
    if out_dir is not None:
        fig = new_figure()
        ax = fig.add_subplot()
        for name in ("fimd", "aimd", "lipd"):           # the caption's order
            ts, rs = curves[name]
            ax.plot(ts, rs, label=FIG6_SERIES[name])
        ax.set_xscale("log")
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("F_inc(t) / Rmax")
        ax.set_title("seed 003 Figure 6: F_inc(t) with Rmin = Rmax/256, recovery from Rmin to Rmax\n"
                     "paper: FIMD 4.2 ms, LIPD and AIMD 133.7 ms; ours: FIMD %.1f, LIPD %.1f, AIMD %.1f ms"
                     % tuple(values[n + ":continuous ms"] for n in ("fimd", "lipd", "aimd")), fontsize=9)
        ax.legend(fontsize=8)
        save_outputs(out_dir, "fig6", fig)
    save_outputs(out_dir, "fig6", data=values)
    return values


# ---------------------------------------------------------------- Figure 7
def run_fig7(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """Static flows (L=R=10, victim all the time), input-triggered marking, each response
    function, discrete and continuous, against buffer size.  Full: buffers 2..16, 500 ms,
    rates over the last 400 ms.  CI: LIPD and FIMD at buffer 4 for 20 ms (rates over the
    last two thirds), and LIPD and AIMD at buffer 2 for 60 ms (AIMD's slow recovery needs
    the longer run to show)."""
    if full:
        runs = [(fn, rates, b, 500.0) for fn in ("lipd", "fimd", "aimd") for rates in ("discrete", "continuous")
                for b in (2, 4, 6, 8, 10, 12, 14, 16)]
    else:
        runs = [(fn, rates, 4, 20.0) for fn in ("lipd", "fimd") for rates in ("discrete", "continuous")]
        runs += [("lipd", "discrete", 2, 60.0), ("aimd", "discrete", 2, 60.0)]
    values, table = {}, {}
    specs: list[Spec] = [(fig1(10, 10, b, d, victim="all", hp={"response": fn, "rates": rates},
                               name="fig7-%s-%s-%d" % (fn, rates, b)), d / 5 if full else d / 3, d, None)
                         for fn, rates, b, d in runs]
    for (fn, rates, b, _d), m in zip(runs, cache.map(measure_spec, specs)):
        table[(fn, rates, b)] = m
        for k in ("root", "inter", "victim"):
            values["%s %s b%d:%s" % (fn, rates, b, k)] = m[k]
    for fn in ("lipd", "fimd", "aimd"):
        diffs = [abs(table[(fn, "discrete", b)][k] - table[(fn, "continuous", b)][k])
                 for (f, r, b) in table if f == fn and r == "continuous" and (fn, "discrete", b) in table
                 for k in ("root", "inter")]
        if diffs:
            values[fn + ":max |discrete-continuous|"] = max(diffs)
    if ("lipd", "discrete", 2) in table and ("aimd", "discrete", 2) in table:
        values["b2: lipd inter - aimd inter"] = (table[("lipd", "discrete", 2)]["inter"]
                                                 - table[("aimd", "discrete", 2)]["inter"])
    if out_dir is not None:
        fig = new_figure(9, 4)
        for i, k in enumerate(("root", "inter")):
            ax = fig.add_subplot(1, 2, i + 1)
            for fn in ("lipd", "fimd", "aimd"):
                for rates, ls in (("discrete", "-"), ("continuous", "--")):
                    bs = sorted(b for (f, r, b) in table if f == fn and r == rates)
                    if bs:
                        ax.plot(bs, [table[(fn, rates, b)][k] for b in bs], ls, marker="o",
                                label="%s %s" % (fn.upper(), rates))
            ax.set_ylim(0, 1.05)
            ax.set_xlabel("buffer size (packets)")
            ax.set_ylabel(LINK_AXES[k])
            ax.set_title(LINK_AXES[k].replace(" utilization", ""), fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle("seed 003 Figure 7: Performance of source response functions with static traffic pattern "
                     "(L = 10, R = 10), input-triggered marking\npaper: LIPD ≈ 100 % root; AIMD inter-switch low "
                     "at small buffers; discrete (solid) ≈ continuous (dashed)", fontsize=8)
        save_outputs(out_dir, "fig7", fig)
    save_outputs(out_dir, "fig7", data=values)
    return values


# ---------------------------------------------------------------- Figure 5
def run_fig5(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """Input-output-triggered marking (LIPD, L=R=10, victim all the time): root
    utilization and remote/local ratio against buffer size for each output threshold
    ("none" = input-triggered only).  Full: buffers 2..16 × {none, 4, 6, 8, 16}, 500 ms
    (rates over the last 400 ms); CI: buffers {2, 8, 12} × {none, 4, 8} and threshold 6 at
    buffer 8, 20 ms."""
    buffers: tuple[int, ...]
    thresholds: tuple[int | None, ...]
    if full:
        buffers, thresholds, d, t0 = (2, 4, 6, 8, 10, 12, 14, 16), (None, 4, 6, 8, 16), 500.0, 100.0
    else:
        buffers, thresholds, d, t0 = (2, 8, 12), (None, 4, 8), 20.0, 5.0
    values, table = {}, {}
    runs = [(thr, b) for thr in thresholds for b in buffers]
    if not full:
        runs.append((6, 8))                 # the text's threshold 6 at one buffer size
    specs: list[Spec] = []
    for thr, b in runs:
        hp: dict[str, Any] = {"response": "lipd"}
        if thr:
            hp.update(marking="input-output", output_threshold=thr)
        specs.append((fig1(10, 10, b, d, victim="all", hp=hp, name="fig5-%s-%d" % (thr, b)), t0, d, None))
    for (thr, b), m in zip(runs, cache.map(measure_spec, specs)):
        table[(thr, b)] = m
        tag = "thr %s b%d" % (thr or "none", b)
        values[tag + ":root"] = m["root"]
        values[tag + ":remote/local"] = m["remote/local"]
    if (None, 2) in table and (None, 8) in table:
        values["none: remote/local b8 - b2"] = table[(None, 8)]["remote/local"] - table[(None, 2)]["remote/local"]
    if (4, 8) in table and (4, 12) in table:
        values["thr 4: |remote/local b12 - b8|"] = abs(table[(4, 12)]["remote/local"]
                                                      - table[(4, 8)]["remote/local"])
    if (4, 12) in table and (8, 12) in table:
        values["b12: remote/local thr8 - thr4"] = table[(8, 12)]["remote/local"] - table[(4, 12)]["remote/local"]
    if out_dir is not None:
        fig = new_figure(9, 4)
        for i, k in enumerate(("root", "remote/local")):
            ax = fig.add_subplot(1, 2, i + 1)
            for thr in thresholds:
                ax.plot(buffers, [table[(thr, b)][k] for b in buffers], marker="o",
                        label="output threshold %d" % thr if thr else "none (no output marking)")
            ax.set_xlabel("buffer size (packets)")
            ax.set_ylabel("root link utilization" if k == "root" else "remote / local aggregate rate")
            ax.set_title("(a) root link utilization" if k == "root" else "(b) fairness: remote / local", fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle("seed 003 Figure 5: Root link utilization and fairness between remote and local flows as a "
                     "function of buffer size, for various output thresholds (L = 10, R = 10, LIPD)\npaper: root "
                     "under-used at threshold 4 or buffers 2–4; >90 % at 6; remote/local rises with buffer "
                     "(input-triggered), flat once output-triggered", fontsize=7)
        save_outputs(out_dir, "fig5", fig)
    save_outputs(out_dir, "fig5", data=values)
    return values


# ---------------------------------------------------------------- Figure 8
def run_fig8a(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """Half the local and remote flows ON/OFF (mean ON = mean OFF), LIPD, discrete:
    aggregate rate of static and dynamic flows against mean ON time, with and without
    persistent CC state.  Full: ON 0.01..30 ms, runs of max(500 ms, 20 ON/OFF cycles) as
    the paper; CI: ON 10 µs, 60 ms (at 20 ms the static flows, started at Rmax, are still
    falling: reset static 0.11 at 20 ms, 0.06 at 60 ms)."""
    ons = (10, 30, 100, 300, 1000, 3000, 10000, 30000) if full else (10,)
    values, table = {}, {}
    runs = [(on, pers, max(500.0, 40 * on / 1000) if full else 60.0) for on in ons for pers in (False, True)]
    specs: list[Spec] = [(fig1(10, 10, 4, d, victim="all", hp={"response": "lipd", "persistent": pers},
                               dynamic="half", mean_on_us=on, name="fig8a-%g-%s" % (on, pers)), d / 5, d, None)
                         for on, pers, d in runs]
    for (on, pers, _d), m in zip(runs, cache.map(measure_spec, specs)):
        table[(on, pers)] = m
        tag = "on %gus %s" % (on, "persistent" if pers else "reset")
        values[tag + ":dynamic"] = m["dynamic"]
        values[tag + ":static"] = m["static"]
        values[tag + ":dynamic/static"] = m["dynamic"] / m["static"] if m["static"] else float("inf")
    if out_dir is not None:
        fig = new_figure()
        ax = fig.add_subplot()
        xs = [on / 1000 for on in ons]
        for pers, ls in ((False, "-"), (True, "--")):
            for g in ("dynamic", "static"):
                ax.plot(xs, [table[(on, pers)][g] for on in ons], ls, marker="o",
                        label="%s flows%s" % (g, " (persistent state)" if pers else ""))
        ax.set_xscale("log")
        ax.set_xlabel("mean ON duration (ms)")
        ax.set_ylabel("normalized aggregate rate")
        ax.set_title("seed 003 Figure 8(a): Mixture of static flows (5 local + 5 remote) and dynamic flows (5 local + "
                     "5 remote), LIPD\npaper: without persistence dynamic flows starve static ones at short ON "
                     "times; with it they share", fontsize=8)
        ax.legend(fontsize=7)
        save_outputs(out_dir, "fig8a", fig)
    save_outputs(out_dir, "fig8a", data=values)
    return values


def run_fig8b(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """All flows but the victim ON/OFF, persistent state, discrete rates: root and
    inter-switch utilization against mean ON time for FIMD, LIPD and AIMD.  Full: ON
    0.01..30 ms, runs of max(500 ms, 20 ON/OFF cycles); CI: ON 10 µs (20 ms) and 0.5 ms
    (30 ms)."""
    ons = (10, 30, 100, 300, 500, 1000, 3000, 10000, 30000) if full else (10, 500)
    values, table = {}, {}
    runs = [(on, fn, max(500.0, 40 * on / 1000) if full else (20.0 if on < 100 else 30.0))
            for on in ons for fn in ("fimd", "lipd", "aimd")]
    specs: list[Spec] = [(fig1(10, 10, 4, d, victim="all", hp={"response": fn, "persistent": True},
                               dynamic="all", mean_on_us=on, name="fig8b-%g-%s" % (on, fn)), d / 5, d, None)
                         for on, fn, d in runs]
    for (on, fn, _d), m in zip(runs, cache.map(measure_spec, specs)):
        table[(on, fn)] = m
        values["on %gus %s:root" % (on, fn)] = m["root"]
        values["on %gus %s:inter" % (on, fn)] = m["inter"]
    for on in ons:
        best = max(table[(on, f)]["root"] for f in ("fimd", "lipd"))
        values["on %gus:aimd below best" % on] = best - table[(on, "aimd")]["root"]
        values["on %gus:fimd - lipd" % on] = table[(on, "fimd")]["root"] - table[(on, "lipd")]["root"]
        values["on %gus:lipd - fimd" % on] = -values["on %gus:fimd - lipd" % on]
    if out_dir is not None:
        fig = new_figure(9, 4)
        xs = [on / 1000 for on in ons]
        for i, k in enumerate(("root", "inter")):
            ax = fig.add_subplot(1, 2, i + 1)
            for fn in ("fimd", "lipd", "aimd"):
                ax.plot(xs, [table[(on, fn)][k] for on in ons], marker="o", label=fn.upper())
            ax.set_xscale("log")
            ax.set_ylim(0, 1.05)
            ax.set_xlabel("mean ON duration (ms)")
            ax.set_ylabel(LINK_AXES[k])
            ax.set_title(LINK_AXES[k].replace(" utilization", ""), fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle("seed 003 Figure 8(b): Utilization of root link and inter-switch link when all flows except "
                     "the victim are dynamic (persistent state)\npaper: FIMD best for ON ≈ 0.2–2 ms, LIPD at the "
                     "extremes, AIMD ≈ 10 % lower", fontsize=8)
        save_outputs(out_dir, "fig8b", fig)
    save_outputs(out_dir, "fig8b", data=values)
    return values
