"""Link faults on the wall clock (issue 8 items 2-4): the fault matrix of
tests/test_faults.py -- 5 % loss, 1 % duplication, reordering and corruption on every
link -- run by the trio runtime over two worker processes, faults applied at the sending
sockets, and the inter-switch link down for 0.5 ms.  Every RC message must arrive
exactly once, intact and in order (payload digests recorded in each worker, merged and
compared on the controller), UD datagrams never twice, every credit back once traffic
stops, and the injected losses must be counted as faults, not as socket losses.

Bounded: 10 ms of emulated time at dilation 1000 (10 s of wall time) plus the workers'
start; the flows finish in about 5 ms on the virtual clock.  The last test: the merged
capture is written atomically.  Faults stop at 7 ms so
that the last flow-control packets, sent every 20 us, put the credits back (what
``settle`` does on the virtual clock).
"""
from __future__ import annotations

import json

from test_faults import MATRIX, fault_matrix_scenario

from ibemu.fabric.integrity import verify
from ibemu.runtime.controller import run_wall
from ibemu.runtime.report import format_runtime_line
from ibemu.units import PS_PER_MS


def _sum(counters, key):
    return sum(v.get(key, 0) for k, v in counters.items() if k.startswith("link:"))


def scn_retry_cnt(scn, node: str) -> int:
    """The Retry Count of HCA *node* (IBA's 3 bits; HCAParams.retry_cnt)."""
    return next(h.params.retry_cnt for h in scn.hcas if h.name == node)


def test_fault_matrix_on_the_wall_clock_every_rc_message_once_intact_in_order(tmp_path):
    scn = fault_matrix_scenario(MATRIX, count=25, seed=11,
                                down=[(3 * PS_PER_MS // 2, 2 * PS_PER_MS)])    # inter: down 0.5 ms
    scn.duration = 10 * PS_PER_MS
    # dilation 1000 (10 s of wall clock).  "read_CA: 11 of 25 messages delivered" (seen
    # twice under load) is no slow run: 3 fault-free ms remain.  On the virtual clock the
    # same failure (seed 55 of this scenario, word for word) is the READ requester using
    # up its retry count (IBA 9.7, "Transport Retry Counter Exceeded"; node C counts
    # qp_retry_exceeded, shown by the assertion below): a READ's go-back
    # succeeds only when the request and the response at its oldest PSN both survive 3
    # faulty links (about 0.94 ** 6 = 69 %), and the 0.5 ms link down takes 2-3 of its 7
    # retries (200 us timeout).  The injectors draw per frame, so on the wall clock every
    # run draws its own faults; on the virtual clock this scenario exhausts the READ's
    # retries for about 1 seed in 40 (seed 11 itself needs its last retry): allowed below,
    # as IBA allows it, and checked to be that.
    r = run_wall(scn, workers=2, dilation=1000, out_dir=tmp_path / "run", progress=False,
                 faults_until=7 * PS_PER_MS, integrity=True)
    assert r.completed, r.error
    rt = r.runtime
    assert len(rt["workers"]) == 2 and rt["workers"][0]["nodes"] != rt["workers"][1]["nodes"]

    # every RC message exactly once, intact, in order; UD never duplicated.  The one legal
    # exception is IBA's: a requester whose QP used up its Retry Count (7 go-backs without
    # progress, "Transport Retry Counter Exceeded") goes to the error state and sends no
    # more; its flow then delivered a prefix, still once, intact and in order.  A flow
    # that stops short without that (a stall: a timer not re-armed, a lost PSN) fails.
    nodes = {k: v for k, v in r.counters.items() if not k.startswith("link:")}
    src = {f.name: f.src for f in scn.flows}
    rc = ("send_AC", "write_BD", "read_CA", "send_DA")
    exhausted = {f for f in rc if nodes.get(src[f], {}).get("qp_retry_exceeded", 0)}
    for f in exhausted:             # (each requester node here runs one RC flow's QP)
        assert nodes[src[f]].get("go_back_n", 0) >= scn_retry_cnt(scn, src[f]), (f, nodes[src[f]])
    problems = [p for p in verify(r.integrity, ud_flows={"ud_AD"})
                if not (p.endswith("messages delivered") and p.split(":")[0] in exhausted)]
    assert not problems, (problems, {k: {n: v[n] for n in ("qp_retry_exceeded", "local_ack_timeouts", "go_back_n")
                                         if n in v} for k, v in nodes.items()})
    sent = r.integrity["sent"]
    for flow in rc:
        got = r.integrity["received"][flow]
        assert len(sent[flow]) == 25 and got == sent[flow][:len(got)], flow
        assert len(got) == 25 or flow in exhausted, flow
    assert 0 < len(r.integrity["received"]["ud_AD"]) < 100          # some UD datagrams lost

    # no credit leak: the merged credit state of both workers' ports is idle
    assert r.credit_problems == [], r.credit_problems

    # the faults happened, on every link, and are counted per link (both ends summed)
    c = r.counters
    links = [k for k in c if k.startswith("link:")]
    assert len(links) == 10                                         # 5 links, both directions
    for key in ("lost", "corrupted", "reordered", "duplicated"):
        assert _sum(c, key) > 0, key
    assert _sum(c, "duplicates_dropped") == _sum(c, "duplicated")   # every copy was dropped
    for k in links:
        assert c[k]["sent"] > 20 and c[k].get("lost", 0) > 0, (k, c[k])
    assert sum(v.get("PortRcvErrors", 0) for k, v in c.items() if not k.startswith("link:")) \
        >= _sum(c, "corrupted") // 2                                # corrupted copies caught

    # injected losses are faults, not socket losses: the sequence check stays exact
    assert c["link:inter"]["down_dropped"] > 0 and c["link:inter.rev"]["down_dropped"] > 0
    assert rt["datagrams_lost_injected"] == _sum(c, "lost") + _sum(c, "down_dropped") > 50
    assert rt["datagrams_lost"] == 0 and rt["send_errors"] == 0
    assert rt["datagrams_duplicated"] == rt["duplicates_dropped"] == _sum(c, "duplicated")
    assert 0 <= rt["datagrams_sent"] - rt["datagrams_received"] <= 20     # (in flight at the end)
    line = format_runtime_line(rt)
    assert " 0 lost" in line and "%d frames lost" % rt["datagrams_lost_injected"] in line

    # results.json has the per-link fault counts, as on the virtual clock
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    counters = res["summary"]["counters"]
    assert counters["link:inter"]["lost"] == c["link:inter"]["lost"]
    assert counters["link:inter"]["duplicates_dropped"] == c["link:inter"].get("duplicates_dropped", 0)


def test_cli_wall_run_applies_fault_flags_without_warning(tmp_path):
    """``ibemu run --clock wall --loss ...``: applied, counted, no warning any more."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "ibemu", "run", "scenarios/quickstart.toml",
                        "--clock", "wall", "--workers", "2", "--dilation", "300", "--duration", "1ms",
                        "--loss", "0.02", "--out", str(out), "--no-plots", "--quiet"],
                       cwd=root, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    assert "warning" not in p.stderr
    res = json.loads((out / "results.json").read_text())
    lost = sum(v.get("lost", 0) for k, v in res["summary"]["counters"].items() if k.startswith("link:"))
    assert lost > 10
    rt = res["extra"]["runtime"]
    assert rt["datagrams_lost_injected"] == lost and rt["datagrams_lost"] == 0


def test_merged_capture_is_written_atomically(tmp_path, monkeypatch):
    """Issue 8 item 8 for the wall clock's capture: a merge that fails half-way (here:
    the disk fills up) leaves the previous capture, and no temporary file."""
    from contextlib import contextmanager

    import pytest

    from ibemu.capture.erf import ErfPcapWriter, read_erf_pcap
    from ibemu.runtime import merge
    part = tmp_path / "parts" / "worker0.pcap"
    part.parent.mkdir()
    w = ErfPcapWriter(part)
    for i in range(100):
        w.write(1000 * i, bytes([i]) * 100, False)
    w.close()
    out = tmp_path / "capture.pcap"
    out.write_bytes(b"the previous capture")
    real = merge.atomic_open

    @contextmanager
    def disk_full(path, mode="w", **kw):
        with real(path, mode, **kw) as fh:
            class Full:
                def write(self, data):
                    fh.write(data[:10])
                    raise OSError(28, "No space left on device")
            yield Full()
    monkeypatch.setattr(merge, "atomic_open", disk_full)
    from ibemu.errors import OutputError
    with pytest.raises(OutputError, match="No space left on device"):     # one line (issue 14)
        merge.merge_captures([part], out)
    assert out.read_bytes() == b"the previous capture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capture.pcap", "parts"]
    monkeypatch.undo()
    assert merge.merge_captures([part], out) == 100
    assert [f[0] for _, _, f in read_erf_pcap(out)] == list(range(100))
