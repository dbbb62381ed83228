"""Message latency and flow completion time (issue 13, deliverable 2; ibemu.results.latency,
the QPs' message_start / message_done, the summary, latency.csv, latency.png and the wall
clock's merge).

Expected times are derived from the link arithmetic: at 4X SDR (1 GB/s) a frame of n
bytes takes n ns; a SEND of 2048 bytes is a 2074-byte frame (LRH 8, BTH 12, ICRC 4,
VCRC 2), a UD SEND 2082 (DETH 8), an RDMA WRITE ONLY 2090 (RETH 16), a READ request 42
(RETH, no payload), a READ response ONLY / FIRST / LAST 2078 (AETH 4), MIDDLE 2074.
Links have no propagation delay; the switch forwards a header 40 ns after it arrived.
"""
from __future__ import annotations

import csv
import os

import numpy as np
import pytest

from ibemu.fabric.params import FlowSpec, SwitchParams
from ibemu.fabric.recorder import Recorder
from ibemu.build import build_fabric
from ibemu.results import Metrics, format_summary_table, write_outputs
from ibemu.results.latency import latency_stats
from ibemu.run import run_virtual
from ibemu.runtime.merge import new_metrics
from ibemu.scenario import load_scenario
from ibemu.scenario.model import HCASpec, LinkSpec, OutputSpec, Scenario, SwitchSpec
from ibemu.units import PS_PER_MS, PS_PER_NS, PS_PER_US

NS = PS_PER_NS
SEND, UD, WRITE, READ_REQ, READ_AETH, READ_MID = 2074, 2082, 2090, 42, 2078, 2074
FCP = 6     # a link flow-control packet takes its 6 bytes of link time, between packets (issue 13)


def rc_fcps(n):
    """Flow-control packets ahead of RC data on a busy link: the ACK of message k comes
    back while message k+1 is on the wire, and the FCP returning its buffer credit goes
    before message k+2 -- one before each of messages 3..n."""
    return max(0, n - 2)
FWD = 40                                        # ns, switch forwarding delay (seed 003 Table 1)


def _one_link(*flows: FlowSpec, duration: int = PS_PER_MS) -> Scenario:
    return Scenario("lat", duration=duration, seed=1, hcas=[HCASpec("a", 1), HCASpec("b", 2)],
                    links=[LinkSpec("a", "b")], flows=list(flows), output=OutputSpec(plots=False))


def _via_switch(flows: list[FlowSpec], cut_through: bool = True) -> Scenario:
    return Scenario("lat", duration=PS_PER_MS, seed=1,
                    switches=[SwitchSpec("S", SwitchParams(cut_through=cut_through))],
                    hcas=[HCASpec("h1", 1), HCASpec("h2", 2), HCASpec("h3", 3)],
                    links=[LinkSpec("h1", "S"), LinkSpec("h2", "S"), LinkSpec("S", "h3")],
                    flows=flows, output=OutputSpec(plots=False))


# ---------------------------------------------------------------- statistics

def test_percentiles_are_nearest_rank():
    # 1..100 shuffled: the p-th nearest-rank percentile of 1..100 is p itself
    x = np.random.default_rng(3).permutation(np.arange(1, 101))
    assert latency_stats(x) == {"count": 100, "p50_ps": 50, "p99_ps": 99, "max_ps": 100, "mean_ps": 50.5}
    # few samples: p99 of [10, 20, 30] is the smallest value with >= 99 % at or below: 30
    assert latency_stats(np.array([30, 10, 20]))["p99_ps"] == 30
    assert latency_stats(np.array([30, 10, 20]))["p50_ps"] == 20
    assert latency_stats(np.zeros(0)) is None


def test_nearest_rank_is_the_smallest_sample_with_p_percent_at_or_below_it():
    """The definition (module doc), checked by counting, for every size up to 400 and
    both percentiles; and numpy's own inverted_cdf, which the index formula follows."""
    from ibemu.results.latency import PERCENTILES, nearest_rank
    rng = np.random.default_rng(11)
    for n in range(1, 401):
        x = rng.integers(0, 50 if n % 2 else 10**12, n)
        s = np.sort(x)
        got = latency_stats(x)
        for p, key in zip(PERCENTILES, ("p50_ps", "p99_ps")):
            # smallest rank r (1-based) with r >= p/100 * n, in exact integer arithmetic
            r = max(1, -(-p * n // 100))
            assert nearest_rank(n, p) == r - 1
            assert got[key] == int(s[r - 1])
            assert got[key] == int(np.percentile(x, p, method="inverted_cdf"))
        assert got["max_ps"] == int(s[-1]) and got["count"] == n
    for n in rng.integers(401, 10**6, 100).tolist():    # numpy's index: the value of arange(n) it picks
        for p in PERCENTILES:
            assert nearest_rank(n, p) == int(np.percentile(np.arange(n), p, method="inverted_cdf"))


def test_metrics_join_starts_and_completions_by_message_number():
    flows = {"f": FlowSpec("f", "a", "b", pattern="messages", count=3)}
    m = Metrics(PS_PER_MS, 100 * PS_PER_US, {}, flows, {})
    for seq, t in enumerate((100, 200, 300)):
        m.message_start("f", seq, t)
    m.message_done("f", 0, 1100)
    m.message_done("f", 2, 1500)                # message 1 lost (a UD datagram)
    lat, done = m.latencies("f")
    assert lat.tolist() == [1000, 1200] and done.tolist() == [1100, 1500]
    assert m.messages_started("f") == 3
    assert m.completion("f") is None            # 1 of 3 never arrived
    m.message_done("f", 1, 1700)                # ... a late one after all
    assert m.completion("f") == 1700 - 100


def test_merge_joins_starts_from_one_worker_with_completions_from_another():
    """Issue 13: the same on the wall clock -- the source's worker records the starts, the
    destination's the completions; the controller's merge joins them."""
    scn = load_scenario("scenarios/quickstart.toml")
    whole, src, dst = new_metrics(scn), new_metrics(scn), new_metrics(scn)
    for seq in range(5):
        for m in (whole, src):
            m.message_start("f1", seq, seq * 3000 * NS)
        for m in (whole, dst):
            m.flow_rx("f1", seq * 3000 * NS + (2074 + seq) * NS, 2048, SEND, True)
            m.message_done("f1", seq, seq * 3000 * NS + (2074 + seq) * NS)
    merged = new_metrics(scn)
    merged.merge_bins(src.export_bins())
    merged.merge_bins(dst.export_bins())
    assert merged.summary() == whole.summary()
    assert merged.latencies("f1")[0].tolist() == [(2074 + k) * NS for k in range(5)]
    with pytest.raises(ValueError):             # a flow starts at one source only
        merged.merge_bins(src.export_bins())


# ---------------------------------------------------------------- the QPs report them

@pytest.mark.parametrize("kw, frame", [(dict(), SEND), (dict(transport="ud"), UD), (dict(op="write"), WRITE)])
def test_back_to_back_messages_on_one_link_take_one_frame_time(kw, frame):
    """Nothing queues after a message's first byte: each takes its frame time; n of them
    back to back complete in n frame times."""
    n = 5
    r = run_virtual(_one_link(FlowSpec("f", "a", "b", pattern="messages", count=n, **kw)))
    f = r.summary["flows"]["f"]
    assert f["latency"] == {"count": n, "p50_ps": frame * NS, "p99_ps": frame * NS, "max_ps": frame * NS,
                            "mean_ps": float(frame * NS)}
    assert f["finite"] and f["messages_started"] == n
    fcps = 0 if kw.get("transport") == "ud" else rc_fcps(n)       # UD: no ACKs come back
    assert f["completion_ps"] == (n * frame + fcps * FCP) * NS


def test_rdma_read_runs_from_the_request_to_the_last_response():
    """Three 8 KiB READs posted at once: the requests leave back to back (42 ns apart);
    the responder starts answering at the first request's tail (42 ns) and sends the
    three messages' responses (2078 + 2074 + 2074 + 2078 = 8304 ns each) back to back,
    once the flow-control packet returning the first request's credit (6 ns) is out; the
    second and third requests free their buffers while the first response packet is on
    the wire, so one FCP (carrying both credits) follows it.  Everything starts after
    the flow-control init packet each end sends at time 0 (6 ns).  Message k is done at
    6 + 42 + 2 * 6 + 8304 (k + 1) and started at 6 + 42 k."""
    r = run_virtual(_one_link(FlowSpec("f", "a", "b", op="read", message_size=8192,
                                       pattern="messages", count=3)))
    per = READ_AETH + 2 * READ_MID + READ_AETH
    lat, done = r.metrics.latencies("f")
    assert done.tolist() == [(FCP + READ_REQ + 2 * FCP + per * (k + 1)) * NS for k in range(3)]
    assert lat.tolist() == [(READ_REQ + 2 * FCP + per * (k + 1) - READ_REQ * k) * NS for k in range(3)]
    assert r.summary["flows"]["f"]["completion_ps"] == (READ_REQ + 2 * FCP + 3 * per) * NS


@pytest.mark.parametrize("cut_through, one", [(True, SEND + FWD), (False, SEND + FWD + SEND)])
def test_group_latency_and_completion_through_a_shared_switch_port(cut_through, one):
    """Two finite flows of 50 messages share S->h3 from time 0; a probe message crosses
    the idle switch at 500 us.  Probe: cut-through, the head leaves 40 ns after it came
    in and the tail follows one frame time later; store-and-forward, the whole frame is
    received first.  The group: S->h3 is busy from the first packet's departure (40 ns
    cut-through, 2074 + 40 store-and-forward) until all 100 packets are through, with a
    flow-control packet between packets from the second on: each ACK from h3 frees its
    buffer at S when it has left, while the next data packet is on S->h3, and the FCP
    returning that credit goes on S->h3 after it (2n - 2 of them before the last)."""
    n = 50
    flows = [FlowSpec("f1", "h1", "h3", pattern="messages", count=n, group="g"),
             FlowSpec("f2", "h2", "h3", pattern="messages", count=n, group="g"),
             FlowSpec("p", "h1", "h3", pattern="messages", count=1, start=500 * PS_PER_US)]
    s = run_virtual(_via_switch(flows, cut_through)).summary
    assert s["flows"]["p"]["latency"]["max_ps"] == one * NS
    g = s["groups"]["g"]
    assert g["finite"] == 2 and g["completion"]["count"] == 2
    assert g["completion_ps"] == (one - SEND + 2 * n * SEND + (2 * n - 2) * FCP) * NS
    assert g["completion"]["max_ps"] == g["completion_ps"]            # both start at 0
    assert g["latency"]["count"] == 2 * n
    # queueing: the sources keep 4 packets in the switch's input buffer and share the
    # output, so a message waits at most for both buffers and the frame ahead on each link
    assert one * NS <= g["latency"]["p50_ps"] <= g["latency"]["max_ps"] <= (2 * 4 + 2) * SEND * NS
    table = format_summary_table(s)
    assert "p99 us" in table.splitlines()[0] and "done in us" in table.splitlines()[0]
    assert ("%.2f" % (one / 1000)) in [line for line in table.splitlines() if line.startswith("p ")][0]


def test_unfinished_finite_flow_has_no_completion_time():
    # 1000 packets of 2074 ns need 2.074 ms; the run lasts 1 ms.  Message k is done at
    # k * 2074 + (k - 2) * 6 ns (rc_fcps), so k <= (1 ms + 12 ns) / 2080 ns
    r = run_virtual(_one_link(FlowSpec("f", "a", "b", pattern="messages", count=1000)))
    f = r.summary["flows"]["f"]
    assert f["completion_ps"] is None and f["finite"]
    assert f["latency"]["count"] == f["messages"] == (PS_PER_MS + 2 * FCP * NS) // ((SEND + FCP) * NS)


def test_ud_receiver_numbers_datagrams_by_psn_across_loss_and_reordering():
    class Rec(Recorder):
        def __init__(self) -> None:
            self.done: list[int] = []

        def message_done(self, flow: str, seq: int, t: int) -> None:
            self.done.append(seq)

    scn = _one_link(FlowSpec("f", "a", "b", transport="ud"))
    rec = Rec()
    fab = build_fabric(scn, rec)
    snd, rcv = fab.qps["f"]
    frames = [snd.next_packet(k * 3000 * NS) for k in range(4)]
    for k in (0, 2, 1, 3):                      # 1 arrives late
        rcv.on_packet(10**9 + k, frames[k])
    more = [snd.next_packet((4 + k) * 3000 * NS) for k in range(2)]
    rcv.on_packet(2 * 10**9, more[1])           # datagram 4 lost
    assert rec.done == [0, 2, 1, 3, 5]


# ---------------------------------------------------------------- outputs

def test_latency_csv_and_plot(tmp_path):
    flows = [FlowSpec("f1", "h1", "h3", pattern="messages", count=20, group="g"),
             FlowSpec("f2", "h2", "h3", group="g"),
             FlowSpec("f3", "h2", "h3", pattern="messages", count=10**6)]
    scn = _via_switch(flows)
    scn.output = OutputSpec(plots=True)
    r = run_virtual(scn, out_dir=tmp_path)
    rows = {row["name"]: row for row in csv.DictReader((tmp_path / "latency.csv").open())}
    assert set(rows) == {"f1", "f2", "f3", "g"}
    s = r.summary
    for name, d in list(s["flows"].items()) + [("g", s["groups"]["g"])]:
        row = rows[name]
        assert int(row["messages"]) == d["latency"]["count"]
        assert float(row["p99_us"]) * PS_PER_US == pytest.approx(d["latency"]["p99_ps"], abs=1)
        assert float(row["max_us"]) * PS_PER_US == pytest.approx(d["latency"]["max_ps"], abs=1)
    assert (rows["f1"]["finite"], rows["f1"]["completed"]) == ("1", "1")
    assert float(rows["f1"]["completion_us"]) * PS_PER_US == pytest.approx(s["flows"]["f1"]["completion_ps"], abs=1)
    assert (rows["f2"]["finite"], rows["f2"]["completion_us"]) == ("0", "")
    assert (rows["f3"]["finite"], rows["f3"]["completed"], rows["f3"]["completion_us"]) == ("1", "0", "")
    assert (rows["g"]["finite"], rows["g"]["completed"]) == ("1", "1")
    assert (tmp_path / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_messages_no_latency_rows_without_samples_and_no_plot(tmp_path):
    sc = _one_link(FlowSpec("f", "a", "b", start=2 * PS_PER_MS), duration=PS_PER_MS)
    sc.output = OutputSpec(plots=True)
    r = run_virtual(sc, out_dir=tmp_path)
    assert r.summary["flows"]["f"]["latency"] is None
    assert "p50 us" not in format_summary_table(r.summary)
    assert not (tmp_path / "latency.png").exists()
    assert (tmp_path / "latency.csv").read_text().splitlines()[1].startswith("f,flow,,0,0,")
    write_outputs(r.metrics, sc, tmp_path / "again")        # idempotent, no samples needed


# ---------------------------------------------------------------- the wall clock

def test_wall_clock_latency_in_emulated_time_survives_the_merge():
    """quickstart over 2 workers ([S, H1] and [H2, H3]): f1 (200 messages H1 -> H3)
    starts in one worker and completes in the other; f2 is a READ H2 -> H3, all in the
    second.  Every delivered message has its latency, as on the virtual clock; the
    figures are emulated time (a late datagram may add a little: 10 % allowed).  Dilation
    2000 (2 s of wall clock): at 500, a CI machine busy with the rest of the suite let
    late datagrams reorder f1's packets behind f2's READ responses and moved f1's p50
    by a third (6.45 against 4.86 us), while the run alone passed."""
    from ibemu.runtime.controller import run_wall
    scn = load_scenario("scenarios/quickstart.toml", ['scenario.duration="1ms"', 'flow[0].pattern="messages"',
                                                      "flow[0].count=200", 'flow[1].op="read"'])
    wall = run_wall(scn, workers=2, dilation=2000, port_base=43000 + (os.getpid() % 4000) * 4)
    virt = run_virtual(scn)
    assert wall.completed
    for r in (wall, virt):
        f1, f2 = r.summary["flows"]["f1"], r.summary["flows"]["f2"]
        assert f1["latency"]["count"] == f1["messages"] == 200
        assert f2["latency"]["count"] == f2["messages"] > 100
        assert f1["latency"]["p50_ps"] >= (SEND + FWD) * NS      # the physical minimum
        assert f1["completion_ps"] >= 200 * SEND * NS
    w, v = wall.summary["flows"]["f1"], virt.summary["flows"]["f1"]
    assert w["completion_ps"] == pytest.approx(v["completion_ps"], rel=0.1)
    assert w["latency"]["p50_ps"] == pytest.approx(v["latency"]["p50_ps"], rel=0.1)


def test_load_results_reads_latency_back(tmp_path):
    from ibemu.results import load_results
    r = run_virtual(_one_link(FlowSpec("f", "a", "b", pattern="messages", count=3)), out_dir=tmp_path)
    row = load_results(tmp_path).latency()["f"]
    assert row["kind"] == "flow" and int(row["messages"]) == 3
    assert float(row["completion_us"]) * PS_PER_US == r.summary["flows"]["f"]["completion_ps"] \
        == (3 * SEND + rc_fcps(3) * FCP) * NS
