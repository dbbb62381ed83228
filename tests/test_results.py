import io
import json

import numpy as np
import pytest

from ibemu.fabric.params import FlowSpec
from ibemu.results import Metrics, Progress, format_summary_table, jain_index, sliding_rate, write_outputs
from ibemu.scenario.model import HCASpec, LinkSpec, OutputSpec, Scenario, SwitchSpec
from ibemu.units import PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US

GBS = 1_000_000_000          # 1 GB/s (seed 003 Table 1)
PKT = 2068                   # 20-byte header + 2048 payload
PKT_TIME = 2068 * PS_PER_NS  # 2.068 us at 1 GB/s


# ---------------------------------------------------------------- sliding window

def test_sliding_window_odd_matches_hand_computation_with_edges():
    # 1 s bins, 3 s window: interior = mean of 3 bins, edges = the part inside the run
    r = sliding_rate([1, 2, 3, 4, 5], PS_PER_S, 3 * PS_PER_S)
    assert r == pytest.approx([(1 + 2) / 2, (1 + 2 + 3) / 3, (2 + 3 + 4) / 3, (3 + 4 + 5) / 3, (4 + 5) / 2])


def test_sliding_window_even_takes_half_bins_at_the_window_ends():
    # 2-bin window centred on a bin centre: half of each neighbour + the bin itself
    c = [4, 0, 8, 2]
    r = sliding_rate(c, PS_PER_S, 2 * PS_PER_S)
    assert r == pytest.approx([
        (4 + 0.5 * 0) / 1.5,
        (0.5 * 4 + 0 + 0.5 * 8) / 2,
        (0.5 * 0 + 8 + 0.5 * 2) / 2,
        (0.5 * 8 + 2) / 1.5,
    ])


def test_sliding_window_units_and_partial_last_bin():
    # 100 us bins, 1000 bytes each -> 1e7 bytes/s everywhere, whatever the window
    r = sliding_rate([1000] * 50, 100 * PS_PER_US, 2 * PS_PER_MS)
    assert r == pytest.approx([1e7] * 50)
    # last bin covers only half a bin of run time and holds half the bytes: same rate
    r = sliding_rate([1000] * 9 + [500], 100 * PS_PER_US, 300 * PS_PER_US, duration_ps=950 * PS_PER_US)
    assert r == pytest.approx([1e7] * 10)


def test_sliding_window_smaller_than_bin_is_the_bin_rate():
    assert sliding_rate([3, 6], PS_PER_S, PS_PER_S // 10) == pytest.approx([3, 6])


def test_sliding_window_rejects_bad_arguments_and_accepts_empty():
    with pytest.raises(ValueError):
        sliding_rate([1], 0, 1)
    with pytest.raises(ValueError):
        sliding_rate([1], 1, 0)
    assert len(sliding_rate([], 1, 1)) == 0


# ---------------------------------------------------------------- Jain

def test_jain_index():
    assert jain_index([3, 3, 3, 3]) == pytest.approx(1.0)
    assert jain_index([0, 0, 7, 0]) == pytest.approx(1 / 4)
    assert jain_index([1, 0]) == pytest.approx(0.5)
    assert jain_index([1, 2, 3]) == pytest.approx(36 / (3 * 14))
    assert jain_index([]) == 1.0
    assert jain_index([0, 0]) == 1.0
    assert jain_index(x for x in (2.0, 2.0)) == pytest.approx(1.0)


# ---------------------------------------------------------------- Metrics

def _metrics(duration=10 * PS_PER_MS, flows=None):
    flows = flows or {"f1": FlowSpec("f1", "h1", "h2", group="local"),
                      "f2": FlowSpec("f2", "h3", "h2", group="local", start=5 * PS_PER_MS),
                      "v": FlowSpec("v", "h4", "h5", group="victim")}
    links = {"h1->sw": GBS, "sw->h2": GBS, "sw->h1": GBS}
    return Metrics(duration, 100 * PS_PER_US, links, flows, {n: GBS for n in flows})


def _saturate(m, flow, link, t0, t1, data=True):
    t = t0
    while t + PKT_TIME <= t1:
        if flow:
            m.flow_tx(flow, t, PKT)
            m.flow_rx(flow, t + PKT_TIME, PKT, PKT, message_done=True)
        if link:
            m.link_tx(link, t, PKT, data)
        t += PKT_TIME


def test_saturating_flow_has_normalized_throughput_one():
    m = _metrics()
    _saturate(m, "f1", "h1->sw", 0, 10 * PS_PER_MS)
    s = m.summary()
    f = s["flows"]["f1"]
    assert f["normalized"] == pytest.approx(1.0, abs=0.01)
    assert f["throughput"] == pytest.approx(GBS, rel=0.01)
    assert f["rx_packets"] == f["messages"] == f["tx_packets"] == 10 * PS_PER_MS // PKT_TIME
    assert f["rx_bytes"] == f["rx_packets"] * PKT
    assert s["links"]["h1->sw"]["utilization"] == pytest.approx(1.0, abs=0.01)
    # the sliding series is ~1 everywhere, edges included
    assert m.flow_rate_series("f1") == pytest.approx(np.ones(m.nbins), abs=0.02)
    assert m.link_utilization_series("h1->sw") == pytest.approx(np.ones(m.nbins), abs=0.02)


def test_link_used_half_the_time_is_half_utilized_and_windows_see_it():
    m = _metrics()
    _saturate(m, None, "sw->h2", 0, 5 * PS_PER_MS)
    s = m.summary()
    assert s["links"]["sw->h2"]["utilization"] == pytest.approx(0.5, abs=0.01)
    assert s["links"]["sw->h2"]["data_utilization"] == pytest.approx(0.5, abs=0.01)
    w = m.summary(0, 5 * PS_PER_MS)["links"]["sw->h2"]["window"]
    assert w["utilization"] == pytest.approx(1.0, abs=0.01)
    assert m.summary(5 * PS_PER_MS, 10 * PS_PER_MS)["links"]["sw->h2"]["window"]["utilization"] == 0
    # alternating busy/idle packet slots -> 0.5 in every sliding window
    m2 = _metrics()
    for k in range(0, 10 * PS_PER_MS // PKT_TIME, 2):
        m2.link_tx("sw->h2", k * PKT_TIME, PKT, True)
    assert m2.link_utilization_series("sw->h2")[5:-5] == pytest.approx(0.5, abs=0.02)


def test_a_frame_across_a_bin_edge_is_split_by_the_time_it_occupies_the_link():
    """Bytes are counted over the frame's time on the link: a window of one bin never
    reads above 1.0 (a saturated link with frames straddling the 100 us bin edges read
    up to 1.04 when each frame's bytes went to the bin of its start)."""
    m = _metrics()
    bin_ps = 100 * PS_PER_US
    m.link_tx("sw->h2", bin_ps - PKT_TIME // 4, PKT, True)      # a quarter before the edge
    b, d, p = (m.link_bins("sw->h2", k) for k in ("bytes", "data_bytes", "data_packets"))
    assert (b[0], b[1]) == (PKT // 4, PKT - PKT // 4) and b.sum() == PKT and d.sum() == PKT
    assert (p[0], p[1]) == (1, 0)                               # the packet counts at its start
    # back to back at line rate from an offset: every bin-wide window is 1.0, never above
    m2 = _metrics()
    t = 37 * PS_PER_US
    while t < 10 * PS_PER_MS:
        m2.link_tx("sw->h2", t, PKT, True)
        t += PKT_TIME
    series = m2.link_utilization_series("sw->h2", window_ps=bin_ps)
    # (the last bin too: the frame still on the link at the run's end counts what went
    # out before it)
    assert series.max() <= 1.0 + 1e-9 and series[1:] == pytest.approx(1.0, abs=0.001)
    # a frame half on the link at the run's end: half its bytes in the run's last bin,
    # the rest after the run, not counted; the series keep the run's length
    m3 = _metrics()
    m3.link_tx("sw->h2", 10 * PS_PER_MS - PKT_TIME // 2, PKT, True)
    assert m3.nbins == 100 and m3.link_bins("sw->h2")[-1] == PKT // 2
    assert m3.link_bins("sw->h2", "data_packets")[-1] == 1       # the packet counts at its start


def test_non_data_frames_count_in_utilization_only():
    m = _metrics()
    m.link_tx("sw->h1", 0, 20, False)
    m.link_tx("sw->h1", 1, 2068, True)
    ln = m.summary()["links"]["sw->h1"]
    assert (ln["bytes"], ln["data_bytes"], ln["data_packets"]) == (2088, 2068, 1)


def test_flow_throughput_uses_its_active_interval_and_groups_aggregate():
    m = _metrics()
    _saturate(m, "f1", None, 0, 5 * PS_PER_MS)            # f1 alone for 5 ms ...
    t = 5 * PS_PER_MS                                      # ... then f1 and f2 share
    while t + 2 * PKT_TIME <= 10 * PS_PER_MS:
        m.flow_rx("f1", t + PKT_TIME, PKT, PKT, True)
        m.flow_rx("f2", t + 2 * PKT_TIME, PKT, PKT, True)
        t += 2 * PKT_TIME
    s = m.summary()
    assert s["flows"]["f1"]["normalized"] == pytest.approx(0.75, abs=0.01)
    assert s["flows"]["f2"]["normalized"] == pytest.approx(0.5, abs=0.01)      # active 5 ms
    assert s["groups"]["local"]["normalized"] == pytest.approx(1.0, abs=0.01)
    assert s["groups"]["local"]["flows"] == ["f1", "f2"]
    assert s["flows"]["v"]["rx_bytes"] == 0 and s["flows"]["v"]["normalized"] == 0
    w = m.summary(5 * PS_PER_MS, 10 * PS_PER_MS)
    assert w["flows"]["f1"]["window"]["normalized"] == pytest.approx(0.5, abs=0.01)
    assert w["flows"]["f2"]["window"]["normalized"] == pytest.approx(0.5, abs=0.01)
    assert w["groups"]["local"]["window"]["jain"] == pytest.approx(1.0, abs=1e-3)
    assert s["groups"]["local"]["jain"] == pytest.approx(jain_index([0.75, 0.5]), abs=0.01)
    assert s["fairness"]["jain"] == pytest.approx(jain_index([0.75, 0.5, 0.0]), abs=0.01)
    assert "jain_window" in w["fairness"]
    series = m.group_rate_series("local")
    assert series[3:-3] == pytest.approx(1.0, abs=0.02)


def test_normalized_rate_counts_wire_bytes_throughput_payload():
    # 2048 bytes of payload in 2068-byte frames back to back at 1 GB/s: the link is
    # busy all the time (normalized 1.0); the payload rate is 2048/2068 of it
    flows = {"f": FlowSpec("f", "a", "b")}
    m = Metrics(PS_PER_MS, 100 * PS_PER_US, {}, flows, {"f": GBS})
    t = 0
    while t + PKT_TIME <= PS_PER_MS:
        m.flow_rx("f", t + PKT_TIME, 2048, PKT, False)
        t += PKT_TIME
    f = m.summary()["flows"]["f"]
    assert f["normalized"] == pytest.approx(1.0, abs=0.01)
    assert f["throughput"] == pytest.approx(GBS * 2048 / 2068, rel=0.01)


def test_counters_unknown_names_and_late_events():
    m = _metrics()
    m.counter("swA", "dropped_malformed")
    m.counter("swA", "dropped_malformed", 2)
    m.counter("h1", "cnp_sent", 5)
    m.link_tx("extra->link", 10, 100, True)                 # not in link_capacity
    m.flow_rx("ghost", 10, 100, 126, False)                      # not in flows
    m.link_tx("h1->sw", 10 * PS_PER_MS + 5 * PS_PER_US, 100, True)   # after the end
    s = m.summary()
    assert s["counters"] == {"swA": {"dropped_malformed": 3}, "h1": {"cnp_sent": 5}}
    assert s["links"]["extra->link"]["utilization"] is None
    assert s["flows"]["ghost"]["normalized"] is None and s["flows"]["ghost"]["group"] is None
    assert s["links"]["h1->sw"]["bytes"] == 100
    assert m.nbins == 101
    assert len(m.flow_bins("f1")) == len(m.link_bins("extra->link")) == 101
    with pytest.raises(ValueError):
        m.link_tx("h1->sw", -PS_PER_S, 1, True)
    with pytest.raises(ValueError):
        m.summary(5, 5)


# ---------------------------------------------------------------- outputs

def _scenario(plots=True, plot_links=None):
    flows = [FlowSpec("local1", "h1", "hc", group="local"),
             FlowSpec("local2", "h2", "hc", group="local", start=100 * PS_PER_US),
             FlowSpec("remote1", "h3", "hc", group="remote", start=200 * PS_PER_US),
             FlowSpec("victim", "h4", "hv", group="victim", start=4 * PS_PER_MS, stop=6 * PS_PER_MS)]
    return Scenario(
        name="tiny congestion spreading", duration=10 * PS_PER_MS,
        switches=[SwitchSpec("A"), SwitchSpec("B")],
        hcas=[HCASpec(n, i + 1) for i, n in enumerate(["h1", "h2", "h3", "h4", "hc", "hv"])],
        links=[LinkSpec("A", "B", name="inter"), LinkSpec("B", "hc", name="root")],
        flows=flows, seed=7,
        output=OutputSpec(window=1 * PS_PER_MS, plots=plots,
                          plot_links=plot_links if plot_links is not None else ["root", "inter"],
                          plot_groups=["local", "remote", "victim"]))


def _fed_metrics(sc):
    links = {"root": GBS, "inter": GBS, "h1->B": GBS, "h2->B": GBS, "h3->A": GBS,
             "h4->A": GBS, "A->h4": GBS, "B->hv": GBS}
    m = Metrics(sc.duration, sc.output.bin, links, {f.name: f for f in sc.flows},
                {f.name: GBS for f in sc.flows})
    names = ["local1", "local2", "remote1"]
    t, k = 0, 0
    while t + PKT_TIME <= sc.duration:
        f = names[k % 3]
        if 4 * PS_PER_MS <= t < 6 * PS_PER_MS and k % 4 == 0:
            m.flow_rx("victim", t + PKT_TIME, PKT, PKT, True)
            m.link_tx("inter", t, PKT, True)
            m.link_tx("B->hv", t, PKT, True)
        else:
            m.flow_rx(f, t + PKT_TIME, PKT, PKT, True)
            m.link_tx("root", t, PKT, True)
            if f == "remote1":
                m.link_tx("inter", t, PKT, True)
        m.link_tx("A->h4", t, 20, False)
        t += PKT_TIME
        k += 1
    m.counter("B", "marked", 12)
    return m


def test_write_outputs_creates_every_file(tmp_path):
    sc = _scenario()
    m = _fed_metrics(sc)
    res = write_outputs(m, sc, tmp_path / "run", extra={"dilation": 50})
    out = tmp_path / "run"
    for name in ["results.json", "config.json", "flows.csv", "links.csv", "throughput.png", "links.png"]:
        assert (out / name).stat().st_size > 0, name
    assert (out / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = json.loads((out / "results.json").read_text())
    assert r["scenario"] == sc.name and r["seed"] == 7 and r["duration_ps"] == sc.duration
    assert r["extra"] == {"dilation": 50}
    assert r["summary"]["counters"]["B"]["marked"] == 12
    assert set(r["summary"]["flows"]) == {"local1", "local2", "remote1", "victim"}
    assert res["scenario"] == sc.name
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["name"] == sc.name and cfg["links"][0]["name"] == "inter"

    flows_csv = (out / "flows.csv").read_text().splitlines()
    head = flows_csv[0].split(",")
    assert head == ["time_ms", "local1", "local2", "remote1", "victim",
                    "group:local", "group:remote", "group:victim"]
    assert len(flows_csv) == 1 + m.nbins
    row = dict(zip(head, map(float, flows_csv[1 + m.nbins // 2].split(","))))
    assert row["time_ms"] == pytest.approx(5.05)
    assert row["victim"] == pytest.approx(0.25, abs=0.03)
    links_csv = (out / "links.csv").read_text().splitlines()
    assert links_csv[0].split(",")[:3] == ["time_ms", "root", "root:data"]
    lrow = dict(zip(links_csv[0].split(","), map(float, links_csv[1 + 20].split(","))))
    assert lrow["root"] == pytest.approx(1.0, abs=0.02)
    assert lrow["A->h4"] == pytest.approx(20 / PKT, rel=0.05) and lrow["A->h4:data"] == 0


def test_results_json_is_deterministic(tmp_path):
    sc = _scenario(plots=False)
    write_outputs(_fed_metrics(sc), sc, tmp_path / "a")
    write_outputs(_fed_metrics(sc), sc, tmp_path / "b")
    for name in ["results.json", "config.json", "flows.csv", "links.csv"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert not (tmp_path / "a" / "throughput.png").exists()
    text = (tmp_path / "a" / "results.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    r = json.loads(text)
    x = r["summary"]["flows"]["local1"]["normalized"]
    assert len(repr(x).replace("0.", "").lstrip("0")) <= 12       # rounded to 9 digits


def test_write_outputs_with_window_and_resolved_and_busiest_links(tmp_path):
    sc = _scenario(plot_links=[])
    sc.resolved = {"name": sc.name, "from": "toml", "lft": {2: 1, 10: 3}}
    m = _fed_metrics(sc)
    write_outputs(m, sc, tmp_path, window=(4 * PS_PER_MS, 6 * PS_PER_MS))
    assert json.loads((tmp_path / "config.json").read_text())["lft"] == {"2": 1, "10": 3}
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["summary"]["window"] == {"from_ps": 4 * PS_PER_MS, "to_ps": 6 * PS_PER_MS}
    assert r["summary"]["flows"]["victim"]["window"]["normalized"] == pytest.approx(0.25, abs=0.02)
    assert (tmp_path / "throughput.png").stat().st_size > 0
    assert (tmp_path / "links.png").stat().st_size > 0     # 8 links > the 4 busy ones plotted


def test_format_summary_table_lists_every_flow_and_link():
    sc = _scenario()
    m = _fed_metrics(sc)
    for s in (m.summary(), m.summary(4 * PS_PER_MS, 6 * PS_PER_MS)):
        text = format_summary_table(s)
        for name in ["local1", "local2", "remote1", "victim", "root", "inter", "A->h4"]:
            assert name in text
        lines = text.splitlines()
        assert lines[0].startswith("flow") or lines[0].startswith("window")
        assert "Jain" in text
    # the results.json form works too
    assert "victim" in format_summary_table({"summary": m.summary()})
    # aligned: every flow row has the Gb/s column ending at the same place
    rows = [ln for ln in format_summary_table(m.summary()).splitlines() if ln.startswith("local")]
    head = format_summary_table(m.summary()).splitlines()[0]
    end = head.index("Gb/s") + 4
    assert all(r[end - 1] != " " and r[end] == " " for r in rows)


# ---------------------------------------------------------------- progress

class _TTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_silent_when_disabled_or_not_a_tty():
    for stream, enabled in ((io.StringIO(), True), (_TTY(), False)):
        p = Progress(10 * PS_PER_MS, enabled, file=stream)
        assert not p.enabled
        p.update(5 * PS_PER_MS)
        p.close()
        assert stream.getvalue() == ""


def test_progress_shows_emulated_ms_on_a_tty():
    stream = _TTY()
    with Progress(10 * PS_PER_MS, True, file=stream) as p:
        assert p.enabled
        for t in range(0, 11 * PS_PER_MS, PS_PER_MS):
            p.update(t)
        p.update(10 * PS_PER_MS + 1)
    out = stream.getvalue()
    assert "ms" in out and "10.00" in out


def test_progress_of_a_wall_run_shows_the_effective_dilation():
    """Issue 27 Deliver 3: the progress bar of a wall-clock run says the pace kept so far."""
    import time
    stream = _TTY()
    with Progress(10 * PS_PER_MS, True, file=stream, pace=True) as p:
        for t in range(0, 11 * PS_PER_MS, PS_PER_MS):
            time.sleep(0.03)                    # tqdm redraws at most every 0.1 s
            p.update(t)
    assert "effective dilation" in stream.getvalue()


def test_traces_and_events_go_to_results_csv_and_plot(tmp_path):
    from ibemu.results import Metrics, write_outputs
    from ibemu.scenario.model import OutputSpec, Scenario
    from ibemu.units import PS_PER_MS
    m = Metrics(10 * PS_PER_MS, PS_PER_MS // 10, {}, {}, {})
    m.trace("CCTI", "f1", 0, 0)
    m.trace("CCTI", "f1", 2 * PS_PER_MS, 4)
    m.trace("CCTI", "f1", 2 * PS_PER_MS, 5)             # same instant: last value wins
    m.trace("CCTI", "f1", 3 * PS_PER_MS, 5)             # unchanged: not stored
    m.trace("CCTI", "f1", 6 * PS_PER_MS, 1)
    m.event(4 * PS_PER_MS, "dcms", "s1:3 Marking_Rate 0")
    scn = Scenario("t", duration=10 * PS_PER_MS, output=OutputSpec(plots=True))
    res = write_outputs(m, scn, tmp_path)
    tr = res["traces"]["CCTI"]["f1"]
    assert (tr["changes"], tr["min"], tr["max"], tr["last"]) == (3, 0, 5, 1)
    assert tr["mean"] == (0 * 2 + 5 * 4 + 1 * 4) / 10
    assert res["events"] == [{"time_ms": 4.0, "source": "dcms", "text": "s1:3 Marking_Rate 0"}]
    lines = (tmp_path / "traces.csv").read_text().splitlines()
    assert lines == ["kind,key,time_ms,value", "CCTI,f1,0,0", "CCTI,f1,2,5", "CCTI,f1,6,1"]
    assert (tmp_path / "cc.png").stat().st_size > 1000
