"""The congestion-tree study (issue 15 Deliver 5): roles from the routes, and the
study's outputs.  The study's checks against the seeds' words run in
tests/test_reproduce.py (its id is ``congestion_tree``)."""
from __future__ import annotations

import csv
import json

import pytest

from ibemu.build import build_fabric
from ibemu.errors import UserError
from ibemu.scenario import scenario_from_dict
from ibemu.studies import congestion_tree as ct


def _one_spine(flows):
    """Three leaves of two hosts under one spine: every path is unique.
    h0, h1 on L0; h2, h3 on L1; h4, h5 on L2."""
    return scenario_from_dict({
        "scenario": {"name": "t", "duration": "20us"},
        "template": {"name": "leaf_spine", "leaves": 3, "hosts_per_leaf": 2, "spines": 1, "uplinks": 1},
        "flow": flows})


HOT = [{"name": "hot2", "src": "h2", "dst": "h0", "group": "hotspot"},
       {"name": "hot4", "src": "h4", "dst": "h0", "group": "hotspot"}]


def test_paths_follow_the_lfts_hop_by_hop():
    scn = _one_spine(HOT + [{"name": "b", "src": "h3", "dst": "h5"}, {"name": "local", "src": "h0", "dst": "h1"}])
    fab = build_fabric(scn)
    paths = ct.flow_paths(scn, fab)
    # one spine: a flow between leaves goes host -> leaf -> spine -> leaf -> host
    assert [fab.link_ends[lbl][0] for lbl in paths["b"]] == ["h3", "L1", "S0", "L2"]
    assert fab.link_ends[paths["b"][-1]][2] == "h5"
    assert [fab.link_ends[lbl][0] for lbl in paths["local"]] == ["h0", "L0"]
    for p in paths.values():        # a chain: each link starts where the previous one ends
        assert all(fab.link_ends[a][2] == fab.link_ends[b][0] for a, b in zip(p, p[1:]))


def test_roles_victim_bystander_root():
    """Seed 002 §2: a victim shares a link with a contributor but not the congested port."""
    scn = _one_spine(HOT + [
        {"name": "v1", "src": "h3", "dst": "h5"},      # shares L1 -> S0 with hot2
        {"name": "v2", "src": "h5", "dst": "h1"},      # shares L2 -> S0 (hot4) and S0 -> L0 (both)
        {"name": "by", "src": "h1", "dst": "h5"},      # h1 -> L0 -> S0 -> L2 -> h5: no hot link
        {"name": "into", "src": "h1", "dst": "h0"}])   # the hot spot's last hop itself
    r = ct.roles(scn, build_fabric(scn))
    assert r == {"hot2": "hotspot", "hot4": "hotspot", "v1": "victim", "v2": "victim", "by": "bystander",
                 "into": "root"}


def test_roles_need_a_hot_spot():
    scn = _one_spine([{"name": "b", "src": "h3", "dst": "h5"}])
    with pytest.raises(UserError, match="hotspot or incast"):
        ct.roles(scn, build_fabric(scn))


def test_cases_set_cc_and_keep_a_host_for_the_manager():
    raw, label = ct.load_raw(None, full=False)
    hosts = 32                                       # CI size: radix 8, 8 leaves of 4
    for case, scheme in (("none", "none"), ("hp", "hp"), ("cca", "cca"), ("dcms", "cca")):
        scn = ct.case_scenario(raw, label, case)
        assert len(scn.hcas) == hosts and scn.duration == 2 * 10**9
        assert (scn.cc.scheme if scn.cc else "none") == scheme
        used = {f.src for f in scn.flows} | {f.dst for f in scn.flows}
        assert "h%d" % (hosts - 1) not in used        # the DCMS manager's host
        assert {f.group for f in scn.flows} <= {"hotspot", "victim", "bystander", "root"}
    base = ct.case_scenario(raw, label, "baseline")
    hot = [f for f in base.flows if f.group == "hotspot"]
    assert hot and all(f.pattern == "messages" and f.count == 1 for f in hot)


def test_a_cc_table_in_the_file_is_refused(tmp_path):
    f = tmp_path / "t.toml"
    f.write_text('[scenario]\nname = "x"\nduration = "1ms"\n[cc]\nscheme = "hp"\n')
    with pytest.raises(UserError) as e:
        ct.load_raw(f, full=True)
    assert str(e.value).startswith(str(f)) and "cc" in str(e.value) and "\n" not in str(e.value)


def test_study_writes_table_plots_and_heatmaps(tmp_path):
    values = ct.run_study(tmp_path, full=False, cases=("baseline", "none"))
    for name in ("tree.md", "tree.csv", "tree.json", "tree.png", "heatmap_none.png", "blocked_none.png",
                 "heatmap_baseline.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    rows = list(csv.DictReader(open(tmp_path / "tree.csv")))
    assert [r["case"] for r in rows] == ["baseline", "none"]
    assert json.loads((tmp_path / "tree.json").read_text()) == values
    md = (tmp_path / "tree.md").read_text()
    assert "| none |" in md and "victims" in md
    # the hot spot idles in the baseline and saturates its link without congestion control
    assert values["baseline"]["hotspot_link"] < 0.05 and values["none"]["hotspot_link"] > 0.9
    assert values["none"]["victim_flows"] > 0


def test_cli_study_refuses_an_unknown_case(capsys):
    from ibemu.cli import main
    assert main(["study", "congestion_tree", "--cases", "none,foo"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cases" in err[0] and "foo" in err[0]


def test_paper_checks_quote_the_seeds_verbatim():
    """Every text quote of the study's paper checks occurs in the seed its section names
    (whitespace and line-break hyphenation normalised); regression bounds say so."""
    import re
    from pathlib import Path

    from ibemu.studies.reproduction import PAPER
    seeds = Path("/work/shared/seeds")
    if not list(seeds.glob("00*_*.txt")):
        pytest.skip("seed texts not present")

    def norm(text):
        return re.sub(r"\s+", " ", text.replace("-\n", "")).strip().lower()

    (rep,) = ct.REPRODUCTIONS
    for c in rep.checks:
        if c.kind != PAPER:
            assert "no published number" in c.paper
            continue
        seed = re.search(r"seed (\d{3})", c.section)[1]
        text = norm(next(seeds.glob(seed + "_*.txt")).read_text())
        assert norm(c.quote) in text, (c.metric, c.quote)
