"""Results that scale (issue 15 item 7): with many flows and links the terminal summary
shows per-group and per-level aggregates and the top/bottom flows and links, the full
rows go to flow_table.csv / link_table.csv, results.json carries the link levels, and
links_heatmap.png shows utilization over time per fabric level."""
from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from ibemu.fabric.params import FlowSpec
from ibemu.plots import heatmap_rows, link_heatmap
from ibemu.results import Metrics, format_summary_table, load_results
from ibemu.results.summary import FLOW_ROWS_MAX, LINK_ROWS_MAX, TOP_N, level_order, link_levels
from ibemu.run import run_virtual
from ibemu.scenario.model import HCASpec, LinkSpec, OutputSpec, Scenario, SwitchSpec
from ibemu.units import PS_PER_MS, PS_PER_US

HOSTS = 40                    # 20 per leaf
HOT = 8                       # h0..h7 -> h39: an incast over the spine


def _fabric_scenario(duration: int = PS_PER_MS // 2) -> Scenario:
    """Two leaves (L0: h0..h19, L1: h20..h39) under one spine S, levels set; one more
    HCA "mon" on the spine without levels (its links go in the "other" row).
    Flows: group "hot" h0..h7 -> h39; group "bg" h8..h39 -> h(i+20 mod 40)."""
    hosts = ["h%d" % i for i in range(HOSTS)]
    links = [LinkSpec(h, "L0" if i < HOSTS // 2 else "L1", levels=("up1", "down1")) for i, h in enumerate(hosts)]
    links += [LinkSpec(leaf, "S", levels=("up2", "down2")) for leaf in ("L0", "L1")]
    links.append(LinkSpec("mon", "S"))
    flows = [FlowSpec("hot%d" % i, hosts[i], hosts[-1], group="hot") for i in range(HOT)]
    flows += [FlowSpec("bg%d" % i, hosts[i], hosts[(i + HOSTS // 2) % HOSTS], group="bg") for i in range(HOT, HOSTS)]
    return Scenario(name="two-leaf incast", duration=duration,
                    switches=[SwitchSpec("L0"), SwitchSpec("L1"), SwitchSpec("S")],
                    hcas=[HCASpec(h, i + 1) for i, h in enumerate(hosts + ["mon"])],
                    links=links, flows=flows, seed=3,
                    output=OutputSpec(bin=25 * PS_PER_US, window=100 * PS_PER_US, plots=True))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    scn = _fabric_scenario()
    out = tmp_path_factory.mktemp("scale") / "run"
    result = run_virtual(scn, out_dir=out, progress=False)
    return scn, result, out


def _csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _section(text: str, title_start: str) -> list[list[str]]:
    """The rows (split on 2+ spaces) of the table after the line starting *title_start*."""
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith(title_start))
    rows = []
    for ln in lines[k + 3:]:                       # title, head, dashes
        if not ln.strip():
            break
        rows.append(re.split(r"\s{2,}", ln.strip()))
    return rows


def _expected_levels(scn: Scenario) -> dict[str, str]:
    out = {}
    for i in range(HOSTS):
        leaf = "L0" if i < HOSTS // 2 else "L1"
        out["h%d->%s" % (i, leaf)] = "up1"
        out["%s->h%d" % (leaf, i)] = "down1"
    for leaf in ("L0", "L1"):
        out["%s->S" % leaf] = "up2"
        out["S->%s" % leaf] = "down2"
    return out


def test_level_map_reaches_results_json(run):
    scn, _, out = run
    expected = _expected_levels(scn)
    assert link_levels(scn) == expected
    r = json.loads((out / "results.json").read_text())
    assert r["link_levels"] == expected
    assert "mon->S" in r["summary"]["links"] and "mon->S" not in r["link_levels"]
    rows = {row["label"]: row for row in _csv(out / "link_table.csv")}
    assert set(rows) == set(r["summary"]["links"])
    assert rows["h3->L0"]["level"] == "up1" and rows["S->L1"]["level"] == "down2"
    assert rows["mon->S"]["level"] == rows["S->mon"]["level"] == "other"
    flows = {row["name"]: row for row in _csv(out / "flow_table.csv")}
    assert len(flows) == HOSTS and flows["hot3"]["group"] == "hot" and flows["bg9"]["dst"] == "h29"


def test_aggregated_table_has_levels_groups_and_top_n_not_every_row(run):
    scn, result, out = run
    assert len(result.summary["flows"]) > FLOW_ROWS_MAX and len(result.summary["links"]) > LINK_ROWS_MAX
    text = format_summary_table(result.summary, link_levels(scn), out)
    lines = text.splitlines()
    # no per-flow pages: 10 top + 10 bottom flow rows, 10 link rows, a handful of aggregates
    assert len(lines) < 2 * TOP_N + TOP_N + 30
    assert "top %d of %d flows by rate" % (TOP_N, HOSTS) in text
    assert "bottom %d of %d flows by rate" % (TOP_N, HOSTS) in text
    assert "top %d of %d links by utilization" % (TOP_N, len(result.summary["links"])) in text
    shown = {ln.split()[0] for ln in lines if ln.split() and ln.split()[0] in result.summary["flows"]}
    assert len(shown) <= 2 * TOP_N < HOSTS
    assert str(out / "flow_table.csv") in text and str(out / "link_table.csv") in text
    # level rows in path order, "other" last
    levels = [r[0] for r in _section(text, "%d directed links" % len(result.summary["links"]))]
    assert levels == ["up1", "up2", "down2", "down1", "other"]
    assert levels == sorted(levels, key=level_order)
    # the same table from results.json (it brings its own level map)
    data = json.loads((out / "results.json").read_text())
    assert _section(format_summary_table(data), "%d directed links" % len(result.summary["links"])) == \
        _section(text, "%d directed links" % len(result.summary["links"]))


def test_level_aggregates_equal_the_per_link_rows(run):
    scn, result, out = run
    text = format_summary_table(result.summary, link_levels(scn), out)
    rows = _csv(out / "link_table.csv")
    table = {r[0]: r for r in _section(text, "%d directed links" % len(rows))}
    for level in ("up1", "down1", "up2", "down2", "other"):
        utils = [float(r["utilization"]) for r in rows if r["level"] == level]
        assert int(table[level][1]) == len(utils) == {"up1": HOSTS, "down1": HOSTS, "up2": 2, "down2": 2,
                                                      "other": 2}[level]
        assert float(table[level][2]) == pytest.approx(sum(utils) / len(utils), abs=6e-4)
        assert float(table[level][3]) == pytest.approx(max(utils), abs=6e-4)
        assert int(table[level][4]) == sum(1 for u in utils if u >= 0.9)
        assert int(table[level][5]) == sum(1 for r in rows if r["level"] == level and int(r["data_bytes"]) == 0)
    # the spine's way down to L1 carries the incast and half the background: saturated
    assert int(table["down2"][4]) >= 1 and float(table["down2"][3]) > 0.9
    # top links: the highest utilizations of the CSV, highest first
    top = _section(text, "top %d of %d links" % (TOP_N, len(rows)))
    want = sorted((float(r["utilization"]) for r in rows), reverse=True)[:TOP_N]
    assert [float(r[2]) for r in top] == pytest.approx(want, abs=6e-4)
    by_label = {r["label"]: r for r in rows}
    assert all(r[1] == by_label[r[0]]["level"] for r in top)


def test_group_aggregates_and_bottom_flows_equal_the_per_flow_rows(run):
    scn, result, out = run
    text = format_summary_table(result.summary, link_levels(scn), out)
    rows = _csv(out / "flow_table.csv")
    groups = {r[0]: r for r in _section(text, "%d flows" % HOSTS)}
    assert set(groups) == {"hot", "bg"}
    lat = {r["name"]: r for r in _csv(out / "latency.csv")}
    for g in ("hot", "bg"):
        norm = [float(r["normalized"]) for r in rows if r["group"] == g]
        gbps = [float(r["throughput_gbps"]) for r in rows if r["group"] == g]
        row = groups[g]
        assert int(row[1]) == len(norm) == (HOT if g == "hot" else HOSTS - HOT)
        assert float(row[2]) == pytest.approx(sum(norm), abs=2e-3)
        assert float(row[3]) == pytest.approx(sum(norm) / len(norm), abs=6e-4)
        assert float(row[4]) == pytest.approx(min(norm), abs=6e-4)
        assert float(row[5]) == pytest.approx(max(norm), abs=6e-4)
        assert float(row[6]) == pytest.approx(sum(gbps), abs=2e-3)
        jain = sum(gbps) ** 2 / (len(gbps) * sum(x * x for x in gbps))
        assert float(row[7]) == pytest.approx(jain, abs=2e-4)
        assert float(row[8]) == pytest.approx(float(lat[g]["p50_us"]), abs=6e-3)
        assert float(row[9]) == pytest.approx(float(lat[g]["p99_us"]), abs=6e-3)
    # the eight incast flows share one link: each gets less than a background flow's best
    assert float(groups["hot"][5]) < float(groups["bg"][5])
    ranked = sorted(float(r["normalized"]) for r in rows)
    bottom = _section(text, "bottom %d of %d flows" % (TOP_N, HOSTS))
    assert [float(r[3]) for r in bottom] == pytest.approx(ranked[:TOP_N], abs=6e-4)
    top = _section(text, "top %d of %d flows" % (TOP_N, HOSTS))
    assert [float(r[3]) for r in top] == pytest.approx(ranked[::-1][:TOP_N], abs=6e-4)


def test_heatmap_written_with_one_row_per_link_grouped_by_level(run, tmp_path):
    import matplotlib.image

    scn, result, out = run
    img = matplotlib.image.imread(out / "links_heatmap.png")
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400
    assert float(np.std(img[..., :3])) > 0.05                   # not a blank canvas
    assert (out / "links.png").stat().st_size > 0 and (out / "throughput.png").stat().st_size > 0
    # from the folder read back: rows = every directed link, columns = time bins
    res = load_results(out)
    grid = link_heatmap(res, tmp_path / "h.png")
    nlinks = len(result.summary["links"])
    assert grid.shape == (nlinks, result.metrics.nbins)
    blocks = heatmap_rows(list(result.summary["links"]), res.data["link_levels"])
    assert [lev for lev, _ in blocks] == ["up1", "up2", "down2", "down1", "other"]
    order = [lbl for _, labels in blocks for lbl in labels]
    cols = res.links()
    assert np.allclose(grid[order.index("S->L1")], np.nan_to_num(cols["S->L1"]))
    assert 0 < grid[order.index("S->mon")].max() < 1e-3        # "other" link: flow control only
    assert matplotlib.image.imread(tmp_path / "h.png").shape[2] in (3, 4)
    # from the Metrics, as a study would: the same matrix
    grid2 = link_heatmap(result.metrics, tmp_path / "m.png", link_levels(scn), title="case")
    assert np.allclose(grid2, grid, atol=1e-5)


def _small_metrics():
    flows = {"a": FlowSpec("a", "h1", "h2", group="g"), "b": FlowSpec("b", "h3", "h2", group="g"),
             "c": FlowSpec("c", "h4", "h5")}
    links = {"h1->S": 10**9, "S->h2": 10**9, "h3->S": 10**9}
    m = Metrics(PS_PER_MS, 100 * PS_PER_US, links, flows, {f: 10**9 for f in flows})
    for k in range(200):
        t = k * 5 * PS_PER_US
        m.flow_rx("a" if k % 3 else "b", t, 2048, 2068, True)
        m.link_tx("S->h2", t, 2068, True)
    return m


def test_small_runs_print_every_row_as_before():
    s = _small_metrics().summary()
    text = format_summary_table(s)
    assert format_summary_table(s, {"h1->S": "up1", "S->h2": "down1"}, "/tmp/x") == text
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["flow", "group"]
    for name in ("a", "b", "c", "[g]", "h1->S", "S->h2", "h3->S"):
        assert any(ln.split()[0] == name for ln in lines if ln.split())
    assert "top" not in text and "flow_table.csv" not in text
    # the same summary over the thresholds: aggregated, with the ungrouped flow as "-"
    agg = format_summary_table(s, {"h1->S": "up1", "S->h2": "down1"}, max_flows=2, max_links=2, top=2)
    groups = {r[0]: r for r in _section(agg, "3 flows")}
    assert set(groups) == {"g", "-"} and groups["-"][1] == "1" and groups["g"][1] == "2"
    levels = {r[0]: r for r in _section(agg, "3 directed links")}
    assert set(levels) == {"up1", "down1", "other"} and [levels[x][1] for x in ("up1", "down1", "other")] == \
        ["1", "1", "1"]                                         # h3->S has no level
    assert "top 2 of 3 flows" in agg and "bottom 2 of 3 flows" in agg and "top 2 of 3 links" in agg
    assert "flow_table.csv, link_table.csv in the run folder" in agg


def test_heatmap_averages_neighbouring_bins_past_the_column_limit(tmp_path):
    from ibemu.plots import HEATMAP_MAX_COLUMNS, plot_link_heatmap

    n = 2 * HEATMAP_MAX_COLUMNS + 2                                 # 3 bins a column, the last one alone
    times = (np.arange(n) + 0.5) * 0.01
    ramp = np.arange(n, dtype=np.float64) / n
    grid = plot_link_heatmap(times, {"a->b": ramp, "b->a": np.full(n, np.nan)}, {"a->b": "up1"},
                             tmp_path / "x.png", title="t")
    assert grid.shape == (2, -(-n // 3))
    assert grid[0, 0] == pytest.approx(ramp[:3].mean()) and grid[0, -1] == pytest.approx(ramp[-1])
    assert not grid[1].any()                                        # no capacity (NaN): drawn as 0
    assert (tmp_path / "x.png").stat().st_size > 0


def test_windowed_tables_and_aggregates(run, tmp_path):
    scn, result, _ = run
    win = (PS_PER_MS // 10, 4 * PS_PER_MS // 10)
    scn.output.plots = False
    try:
        from ibemu.results import write_outputs
        write_outputs(result.metrics, scn, tmp_path / "w", window=win)
    finally:
        scn.output.plots = True
    rows = _csv(tmp_path / "w" / "link_table.csv")
    assert "window_utilization" in rows[0] and "window_normalized" in _csv(tmp_path / "w" / "flow_table.csv")[0]
    data = json.loads((tmp_path / "w" / "results.json").read_text())
    text = format_summary_table(data)
    assert text.splitlines()[0].startswith("window 0.1 .. 0.4 ms")
    table = {r[0]: r for r in _section(text, "%d directed links" % len(rows))}
    for level in ("up1", "down2"):
        utils = [float(r["window_utilization"]) for r in rows if r["level"] == level]
        whole = [float(r["utilization"]) for r in rows if r["level"] == level]
        assert float(table[level][2]) == pytest.approx(sum(utils) / len(utils), abs=6e-4)
        assert float(table[level][3]) == pytest.approx(max(utils), abs=6e-4)
        if level == "up1":      # the window leaves out the start-up burst on the host links
            assert sum(utils) < sum(whole) - 1e-3
