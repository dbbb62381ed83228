"""Never silently wrong (issue 16 Deliver 5, redone by issue 27 Deliver 3 and 4;
ibemu/runtime/verdict.py): the verdict on a wall-clock run, its exit status and
``--allow-late``, and ``ibemu fidelity``'s use of the same verdict.

Issue 27 removed issue 16's lag and slip budgets (``--lag-budget``, ``--slip-budget``: an
absolute 1 ms of emulated time) and its paced mode (``--pace together``, ``--pace-bound``,
the shared pause of ibemu/runtime/pace.py) on purpose: ``--sync exact`` (the default)
gives the virtual clock's results at any dilation, so a slow machine makes a run slower,
never wrong, and ``--sync free`` is judged against the fabric's own time-scale (the
smallest packet's time on a link between processes) instead of a budget.  Their tests
(Budget, Pacer, SharedPause) went with them; the verdict's rules are checked here as
unit tests, with every figure derived in a comment.

The wall-clock runs are short (5 ms of emulated time) and the tolerances generous: the
machine has 2 cores shared with other work.  Dilation 5 is far too small for any
machine: the engine moves emulated time 25-40 times slower than real time (issue 16), so
a free-running worker falls behind its clock by most of the run's duration, far beyond
the 26 ns time-scale of a 4X SDR fabric; an exact run simply takes longer.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ibemu.build import build_fabric
from ibemu.fabric.params import FlowSpec, LinkParams
from ibemu.resources import scenario_source
from ibemu.run import run_virtual
from ibemu.runtime.verdict import (EXIT_INVALID, format_time, format_verdict, time_scale, verdict,
                                   worker_map)
from ibemu.scenario import HCASpec, LinkSpec, Scenario, SwitchSpec, load_scenario
from ibemu.units import PS_PER_MS, ib_rate
from ibemu.wire.layout import BTH_LEN, ICRC_LEN, LRH_LEN, PACKET_OVERHEAD, VCRC_LEN

ROOT = Path(__file__).resolve().parent.parent
FAST = ["santos_fig1", "--clock", "wall", "--dilation", "5", "--duration", "5ms", "--workers", "2", "--no-plots"]
"""A run far too fast for the machine (see the module text)."""
FREE = ["--sync", "free"]

# The smallest packet: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 bytes (no payload, no
# extension header).  On a 4X SDR link (4 lanes x 2.5 Gb/s, 8b/10b: 8 Gb/s = 1 GB/s of
# data) it takes 26 B / 1e9 B/s = 26 ns = 26,000 ps.
SDR4_PS = 26_000


def ibemu(*args: str, port_base: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ibemu", *args, "--port-base", str(port_base)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def _runtime(lags, max_slip=0, slips=0, lost=0, eff=None, dilation=5.0):
    return {"max_slip_ps": max_slip, "slips": slips, "datagrams_lost": lost, "effective_dilation": eff,
            "dilation": dilation, "workers": [{"worker": i, "max_lag_ps": lag} for i, lag in enumerate(lags)]}


# ---------------------------------------------------------------- the time-scale


def test_the_smallest_packet_is_26_bytes():
    assert (LRH_LEN, BTH_LEN, ICRC_LEN, VCRC_LEN) == (8, 12, 4, 2)
    assert PACKET_OVERHEAD == 26


def test_the_time_scale_of_quickstart_is_26_ns_once_a_link_is_cut():
    fab = build_fabric(load_scenario("scenarios/quickstart.toml"))       # every link 4X SDR
    assert ib_rate("4x_sdr") == 10**9                                   # bytes/s (the comment above)
    assert time_scale(fab.wiring, worker_map([["H1", "H2", "H3"], ["S"]])) == SDR4_PS
    assert time_scale(fab.wiring, worker_map([["H1", "S"], ["H2", "H3"]])) == SDR4_PS
    # no link between workers (one worker): no yardstick
    assert time_scale(fab.wiring, worker_map([["H1", "H2", "H3", "S"]])) == 0


def _mixed_fabric():
    """One switch S and three HCAs on links of three speeds:
    A: 1X SDR, 250 MB/s: 26 B take 104 ns = 104,000 ps;
    B: 4X QDR (4 x 10 Gb/s, 8b/10b: 4 GB/s): 6.5 ns = 6,500 ps;
    C: 12X SDR (3 GB/s): 8.667 ns -- 8,666.67 ps, rounded up to 8,667 (a bound on the
    packet's time must not be shorter than it)."""
    links = [LinkSpec(h, "S", params=LinkParams(rate=ib_rate(r)))
             for h, r in (("A", "1x_sdr"), ("B", "4x_qdr"), ("C", "12x_sdr"))]
    scn = Scenario("mixed", duration=PS_PER_MS, switches=[SwitchSpec("S")],
                   hcas=[HCASpec("A", 1), HCASpec("B", 2), HCASpec("C", 3)], links=links,
                   flows=[FlowSpec("ab", "A", "B")])
    return build_fabric(scn).wiring


@pytest.mark.parametrize("groups, expect", [
    ([["A", "S"], ["B"], ["C"]], 6_500),         # cut: B-S and C-S; the fastest is B's
    ([["A"], ["B", "S"], ["C"]], 8_667),         # cut: A-S and C-S; C's, rounded up
    ([["A"], ["B", "C", "S"]], 104_000),         # cut: A-S only
    ([["A", "B", "C", "S"]], 0),                 # nothing cut
])
def test_the_time_scale_is_the_fastest_cut_links_smallest_packet(groups, expect):
    assert time_scale(_mixed_fabric(), worker_map(groups)) == expect


def test_a_node_no_worker_runs_counts_as_a_worker_of_its_own():
    """The controller maps external nodes as one-node groups: their links are cut; a
    node missing from the map is not judged."""
    wiring = _mixed_fabric()
    assert time_scale(wiring, worker_map([["A", "C", "S"], ["B"]])) == 6_500
    assert time_scale(wiring, {"A": 0, "C": 0, "S": 0}) == 0              # B unmapped: its link ignored
    assert worker_map([["A", "S"], ["B"]]) == {"A": 0, "S": 0, "B": 1}


# ---------------------------------------------------------------- the verdict, exact


def test_an_exact_run_is_valid_however_late_its_workers_were():
    """Exact: lag is only slowness (the machine kept dilation 4,000 of the 5 asked for)."""
    v = verdict(_runtime([10**12, 3], eff=4000.0), "exact", SDR4_PS)
    assert v["valid"] is True and v["reason"] is None and v["sync"] == "exact"
    assert v["late_workers"] == [] and v["max_lag_ps"] == 10**12
    assert (v["effective_dilation"], v["dilation"], v["time_scale_ps"]) == (4000.0, 5.0, SDR4_PS)


def test_an_exact_run_with_a_slip_or_a_lost_datagram_is_invalid():
    slipped = verdict(_runtime([0, 0], max_slip=1_900_000, slips=3), "exact", SDR4_PS)
    assert slipped["valid"] is False
    assert "3 frames arrived behind their receiver (largest 1.9us)" in slipped["reason"]
    assert "broken promise" in slipped["reason"]
    lost = verdict(_runtime([0], lost=2), "exact", SDR4_PS)
    assert lost["valid"] is False and lost["reason"] == "2 datagrams lost"
    both = verdict(_runtime([0], max_slip=1, slips=1, lost=1), "exact", SDR4_PS)
    assert both["reason"].count(";") == 1


# ---------------------------------------------------------------- the verdict, free


def test_a_free_run_is_valid_up_to_the_time_scale_and_names_what_exceeds_it():
    ok = verdict(_runtime([SDR4_PS, 3], max_slip=SDR4_PS), "free", SDR4_PS)   # at the scale: within it
    assert ok["valid"] is True and ok["reason"] is None and ok["late_workers"] == []
    late = verdict(_runtime([10, SDR4_PS + 1, 2_000_000]), "free", SDR4_PS)
    assert late["valid"] is False and late["late_workers"] == [1, 2] and late["max_lag_ps"] == 2_000_000
    assert "worker 1, 2 fell 2.0us behind its clock" in late["reason"]
    assert late["reason"].endswith("(more than 26.0ns, the smallest packet's time on a cut link)")
    slipped = verdict(_runtime([0, 0], max_slip=SDR4_PS + 1), "free", SDR4_PS)
    assert slipped["valid"] is False and slipped["late_workers"] == []
    assert "a frame between processes arrived 26.0ns behind its receiver" in slipped["reason"]
    both = verdict(_runtime([SDR4_PS + 1], max_slip=SDR4_PS + 1, lost=1), "free", SDR4_PS)
    assert both["reason"].count(";") == 2 and both["reason"].endswith("1 datagrams lost")
    assert "fell" in verdict(_runtime([0, 10**6]), "free", SDR4_PS, who="rank")["reason"]
    assert verdict(_runtime([0, 10**6]), "free", SDR4_PS, who="rank")["reason"].startswith("rank 1 fell")


def test_the_yardstick_is_the_fabrics_not_an_absolute_budget():
    """The same 50 ns lag: too much on a 4X SDR cut link (26 ns), within a 1X SDR one's
    (104 ns)."""
    assert verdict(_runtime([50_000]), "free", SDR4_PS)["valid"] is False
    assert verdict(_runtime([50_000]), "free", 104_000)["valid"] is True


# ---------------------------------------------------------------- the verdict's line


def test_emulated_times_read_in_the_unit_that_fits():
    assert format_time(SDR4_PS) == "26.0ns"
    assert format_time(70_800_000) == "70.8us"
    assert format_time(10**9) == "1.00ms"


def test_the_summary_line_says_exact_valid_or_invalid_the_exit_status_or_that_it_was_allowed():
    exact = verdict(_runtime([10**9], eff=4000.0), "exact", SDR4_PS)
    assert format_verdict(exact) == ("exact: the virtual clock's results by construction; "
                                     "effective dilation 4000 (requested 5)")
    broken = format_verdict(verdict(_runtime([0], max_slip=1000, slips=1), "exact", SDR4_PS))
    assert broken.startswith("INVALID (exact: the virtual clock's results") and "broken promise" in broken
    ok = format_verdict(verdict(_runtime([20_000]), "free", SDR4_PS))
    assert ok.startswith("free-running, valid: largest lag 20.0ns, largest slip 0.0ns (within 26.0ns")
    bad = verdict(_runtime([5 * 10**9]), "free", SDR4_PS)
    line = format_verdict(bad)
    assert line.startswith("INVALID (free-running):") and "5.00ms" in line
    assert "exit status %d" % EXIT_INVALID in line and "--sync exact" in line
    allowed = format_verdict(bad, allowed=True)
    assert "late results allowed (--allow-late)" in allowed and "exit status" not in allowed


def test_the_overload_warning_gives_the_lag_in_emulated_time_and_exact_has_none():
    """Free: a worker 50 ms of wall behind at dilation 200 is 250 us of emulated time
    behind; the warning says both and points to exact, without calling the run "too slow"
    (a quick start run printed "too slow for the dilation" above "valid: largest lag
    462.5us", which read as a contradiction).  Exact: falling behind is no warning, the
    run is slower; the line gives the effective dilation and the waits instead."""
    from ibemu.runtime.report import format_runtime_line
    rt = {"datagrams_sent": 1, "datagrams_received": 1, "datagrams_lost": 0, "slips": 0, "mean_slip_ps": 0,
          "max_slip_ps": 0, "dilation": 200.0, "overloaded": [0, 1], "sync": "free"}
    warning = format_runtime_line(rt).splitlines()[-1]
    assert "worker 0, 1 fell more than 50 ms of wall time (250 us emulated)" in warning   # 0.05 s / 200
    assert "--sync exact would run slower instead" in warning and "too slow" not in warning
    exact = format_runtime_line({**rt, "sync": "exact", "effective_dilation": 400.0,
                                 "workers": [{"worker": 0, "rounds": 7, "wait_peers_s": 0.25}]})
    assert "fell more than" not in exact
    assert exact.splitlines()[-1] == ("exact: 7 rounds; effective dilation 400 (requested 200); "
                                      "wall time waiting for peers: worker 0 0.25 s")


def test_the_invalid_exit_status_is_used_by_nothing_else_in_the_cli():
    text = "".join(f.read_text() for f in [*sorted((ROOT / "ibemu" / "cli").glob("*.py")),
                                           ROOT / "ibemu" / "runtime" / "commands.py",
                                           ROOT / "ibemu" / "runtime" / "node_command.py"])
    assert "return %d\n" % EXIT_INVALID not in text and EXIT_INVALID not in (0, 1, 2, 3, 130)


# ---------------------------------------------------------------- whole runs


def test_a_free_run_too_fast_for_the_machine_is_invalid_and_exits_with_its_own_status(tmp_path):
    out = tmp_path / "run"
    p = ibemu("run", *FAST, *FREE, "--out", str(out), port_base=33100)
    assert p.returncode == EXIT_INVALID, p.stderr
    assert "INVALID (free-running):" in p.stderr and "behind its clock" in p.stderr
    extra = json.loads((out / "results.json").read_text())["extra"]
    assert extra["valid"] is False and extra["completed"] is True      # written all the same
    v = extra["validity"]
    assert v["sync"] == "free" and v["time_scale_ps"] == SDR4_PS      # santos_fig1: 4X SDR links
    assert v["max_lag_ps"] > v["time_scale_ps"] and v["late_workers"]
    assert "behind its clock" in v["reason"]


def test_allow_late_exits_0_and_still_records_the_free_run_as_invalid(tmp_path):
    out = tmp_path / "run"
    p = ibemu("run", *FAST, *FREE, "--out", str(out), "--allow-late", port_base=33200)
    assert p.returncode == 0, p.stderr
    assert "INVALID (free-running):" in p.stderr and "late results allowed" in p.stderr
    extra = json.loads((out / "results.json").read_text())["extra"]
    assert extra["valid"] is False and extra["validity"]["max_lag_ps"] > SDR4_PS


def test_the_same_too_fast_run_exact_is_valid_slower_and_the_virtual_clocks(tmp_path):
    """Where free is invalid, exact (the default) is valid: the machine could not keep
    dilation 5, so the run took longer (its effective dilation says how much), and its
    results are the virtual clock's."""
    out = tmp_path / "run"
    p = ibemu("run", *FAST, "--out", str(out), port_base=33300)
    assert p.returncode == 0, p.stderr
    assert "exact: the virtual clock's results by construction" in p.stdout
    res = json.loads((out / "results.json").read_text())
    extra = res.pop("extra")
    assert extra["valid"] is True and extra["validity"]["reason"] is None
    assert extra["validity"]["sync"] == "exact" and extra["runtime"]["sync"] == "exact"
    assert extra["validity"]["effective_dilation"] > 5
    scn = load_scenario(scenario_source("santos_fig1"), ['scenario.duration="5ms"'])   # as `ibemu run` finds it
    run_virtual(scn, out_dir=tmp_path / "virtual")
    virtual = json.loads((tmp_path / "virtual" / "results.json").read_text())
    virtual.pop("extra", None)
    assert res == virtual


def test_fidelity_reports_the_same_verdict_and_exit_status(tmp_path):
    p = ibemu("fidelity", "santos_fig1", "--dilation", "5", "--duration", "5ms", "--workers", "2", *FREE,
              port_base=33400)
    assert p.returncode == EXIT_INVALID, p.stderr
    assert "INVALID (free-running):" in p.stdout and "behind its clock" in p.stdout


def test_the_virtual_clock_has_no_validity_fields(tmp_path):
    run_virtual(load_scenario("scenarios/quickstart.toml", ['scenario.duration="100us"']), out_dir=tmp_path)
    res = json.loads((tmp_path / "results.json").read_text())
    assert "valid" not in res and "valid" not in res.get("extra", {})
