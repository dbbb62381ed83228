"""The HP comparison on seed 003 Figures 2-3's scenario (no control, a window of one
packet, each response function) and the non-compliant CA scenario (seed 000 §6.2):
runners of :mod:`.reproduce`, as :mod:`.figures` describes them."""
from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

from ...resources import SCENARIOS
from ...scenario import load_scenario
from ..reproduction import RunCache
from .charts import bar_chart, save_outputs
from .experiments import fig1, measure
from .figure_runs import Spec, Values, measure_spec

__all__ = ["run_compare", "run_noncompliant", "COMPARE"]


# ---------------------------------------------------------------- the comparison
COMPARE: dict[str, dict[str, Any]] = {"no control": {}, "window 1": {"window": 1},
           "HP FIMD": {"hp": {"response": "fimd"}}, "HP LIPD": {"hp": {"response": "lipd"}},
           "HP AIMD": {"hp": {"response": "aimd"}}}


def run_compare(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """Seed 003 Figure 2's scenario (L=5, R=1, buffer 4, victim 40–60 % of the run) and
    the same with R=5 (Figure 3's) under no control, a window of one packet, and the HP
    scheme (input-triggered marking) with each response function: victim throughput
    (victim on), root and inter-switch utilization, Jain's index among local and remote
    flows (after the start-up).  Full: 100 ms; CI: 20 ms."""
    d = 100.0 if full else 20.0
    vic = (0.4 * d, 0.6 * d)
    values, rows = {}, {}
    runs = [(R, name) for R in (1, 5) for name in COMPARE]
    specs: list[Spec] = [(fig1(5, R, 4, d, victim=vic, name="compare-R%d-%s" % (R, name.replace(" ", "_")),
                               **COMPARE[name]), 0.2 * d, d, {"v": (vic[0] + 0.05 * d, vic[1] - 0.05 * d)})
                         for R, name in runs]
    for (R, name), m in zip(runs, cache.map(measure_spec, specs)):
        row = rows["R=%d %s" % (R, name)] = {"victim": m["v:victim"], "root": m["root"],
                                             "inter": m["v:inter"], "fairness": m["jain"]}
        for k, v in row.items():
            values["R=%d %s:%s" % (R, name, k)] = v
    if out_dir is not None:
        bar_chart(out_dir, "compare", "Fig. 1 scenario, L=5, R=1 (Fig. 2) and R=5 (Fig. 3): victim, root, "
                  "inter-switch, Jain's index", rows, ["victim", "root", "inter", "fairness"])
        lines = ["| scenario | control | victim | root | inter-switch | Jain (local+remote) |",
                 "|---|---|---|---|---|---|"]
        lines += ["| %s | %s | %.1f %% | %.1f %% | %.1f %% | %.3f |" % (
            n.split(" ", 1)[0], n.split(" ", 1)[1], 100 * r["victim"], 100 * r["root"], 100 * r["inter"],
            r["fairness"]) for n, r in rows.items()]
        Path(out_dir, "compare.md").write_text("\n".join(lines) + "\n")
    save_outputs(out_dir, "compare", data=values)
    return values


# ---------------------------------------------------------------- non-compliant CAs
def run_noncompliant(out_dir: Path | None, full: bool, cache: RunCache) -> Values:
    """The shipped scenario hp_noncompliant.toml: source L1 ignores notification; with
    and without the subnet manager (seed 000 §6.2).  L1's share of the root over the
    last 3/4."""
    d = 40.0 if full else 20.0
    values = {}
    for tag, overrides in (("manager", []), ("no manager", ['cc.hp.manager=""'])):
        with as_file(files(SCENARIOS) / "hp_noncompliant.toml") as path:
            scn = load_scenario(path, ['template.duration="%gms"' % d, 'template.victim_stop="%gms"' % d]
                                + overrides)
        m = measure(scn, d / 4, d)
        values[tag + ":L1 share of root"] = m["flow:local1"] / m["root"]
        values[tag + ":root"] = m["root"]
        values[tag + ":victim"] = m["victim"]
    save_outputs(out_dir, "noncompliant", data=values)
    return values
