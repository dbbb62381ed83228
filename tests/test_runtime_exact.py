"""One answer on both clocks (issue 27): the wall clock synchronised exactly gives the
virtual clock's results.json (apart from ``extra``, which says how the run went) and the
very same capture, byte for byte, for every shipped scenario, at any dilation, with 2
and 3 workers, whatever the placement; ``--sync free`` is judged against the fabric's
own time-scale and ends invalid when it strays.

The runs are short (tens to a hundred microseconds of emulated time: every scenario's
flows have started and cross the cut links by then) and run at whatever pace the
machine keeps: a slow run is slower, never different.
"""
from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest

from ibemu.cli import main
from ibemu.resources import scenario_names, scenario_source
from ibemu.run import run_virtual
from ibemu.runtime.controller import run_wall
from ibemu.runtime.verdict import EXIT_INVALID
from ibemu.scenario import load_scenario

DURATION = {"fat_tree_128": "20us", "congestion_tree": "40us", "dcms_experiment2": "60us",
            "cca_dcms_testbed": "60us"}
"""Emulated time per scenario (default 100us): the largest fabrics run shorter."""
DILATIONS = (5, 50, 200)


def results(out: Path) -> dict[str, object]:
    d = json.loads((out / "results.json").read_text())
    d.pop("extra")
    return d


def virtual(name: str, tmp: Path, duration: str) -> tuple[Path, Path]:
    scn = load_scenario(scenario_source(name), ['scenario.duration="%s"' % duration])
    out, pcap = tmp / "virtual", tmp / "virtual.pcapng"
    run_virtual(scn, out_dir=out, pcap=pcap)
    return out, pcap


def wall(name: str, tmp: Path, duration: str, tag: str, **kw: object) -> tuple[Path, Path, object]:
    scn = load_scenario(scenario_source(name), ['scenario.duration="%s"' % duration])
    out, pcap = tmp / tag, tmp / (tag + ".pcapng")
    r = run_wall(scn, out_dir=out, pcap=pcap, **kw)       # type: ignore[arg-type]
    return out, pcap, r


def same(v: tuple[Path, Path], w: tuple[Path, Path, object], what: str) -> None:
    (vout, vcap), (wout, wcap, r) = v, w
    assert r.validity["valid"], "%s: %s" % (what, r.validity["reason"])        # type: ignore[attr-defined]
    assert r.runtime["slips"] == 0 and r.runtime["sync"] == "exact", what      # type: ignore[attr-defined]
    a, b = results(vout), results(wout)
    if a != b:
        diff = [k for k in a if a[k] != b.get(k)]
        pytest.fail("%s: results.json differs from the virtual clock's in %s" % (what, diff))
    assert filecmp.cmp(vcap, wcap, shallow=False), "%s: the capture differs from the virtual clock's" % what


@pytest.mark.parametrize("name", scenario_names())
def test_every_shipped_scenario_is_the_virtual_clock_at_any_dilation_with_2_and_3_workers(name, tmp_path):
    duration = DURATION.get(name, "100us")
    v = virtual(name, tmp_path, duration)
    for workers in (2, 3):
        for d in DILATIONS:
            tag = "w%d-d%d" % (workers, d)
            same(v, wall(name, tmp_path, duration, tag, workers=workers, dilation=d),
                 "%s, %d workers, dilation %d" % (name, workers, d))


PLACES = ["A,AV,R1/B,BC,BV,L1,L2,L3,L4,L5",            # the cut at the inter-switch link
          "A,B,AV,BV,L1,L2,L3,L4,L5,R1/BC",            # the congested destination alone
          "A,R1,L1,L2/AV,BV/B,BC,L3,L4,L5"]            # three workers, cut through B's inputs


def test_placement_does_not_change_figure_2a(tmp_path):
    """Issue 27 acceptance, placement invariance: three different cuts of seed 003's
    Figure 2(a) fabric, each the virtual clock's results and capture."""
    v = virtual("santos_fig1", tmp_path, "300us")
    for i, place in enumerate(PLACES):
        groups = [g.split(",") for g in place.split("/")]
        same(v, wall("santos_fig1", tmp_path, "300us", "place%d" % i, place=groups, dilation=50),
             "santos_fig1 placed %s" % place)


def test_the_datagram_transport_gives_the_same_answer(tmp_path):
    """The messages as datagrams on the cut links (as across hosts, :mod:`ibemu.runtime.syncnet`)
    instead of the shared file: the same results and capture, with 2 and 3 workers."""
    v = virtual("santos_fig1", tmp_path, "200us")
    for workers in (2, 3):
        same(v, wall("santos_fig1", tmp_path, "200us", "net%d" % workers, workers=workers, dilation=50,
                     transport="net"), "santos_fig1 over datagrams, %d workers" % workers)


@pytest.mark.parametrize("dilation", ["5", "50"])
def test_free_running_quickstart_too_fast_for_the_machine_ends_invalid(dilation, tmp_path, capsys):
    """Issue 27 Deliver 4: free-running, quickstart's 2 ms at dilation 5 and at dilation 50
    strayed further than the fabric's time-scale (26 ns: a 26-byte packet on a 1 GB/s
    link) -- the issue measured its bottleneck at 0.066 and 0.805 of the virtual clock's
    0.997 -- and the run says so: exit status 4."""
    status = main(["run", "quickstart", "--clock", "wall", "--sync", "free", "--dilation", dilation,
                   "--out", str(tmp_path / "free"), "--no-plots"])
    err = capsys.readouterr().err
    assert status == EXIT_INVALID
    assert "INVALID (free-running)" in err
    res = json.loads((tmp_path / "free" / "results.json").read_text())
    assert res["extra"]["valid"] is False and res["extra"]["validity"]["sync"] == "free"


def test_exact_main_command_reports_the_effective_dilation(tmp_path, capsys):
    """The summary of an exact run (the default) says the effective dilation and each
    worker's wait for its peers, and results.json holds them."""
    status = main(["run", "quickstart", "--clock", "wall", "--duration", "100us", "--dilation", "50",
                   "--out", str(tmp_path / "exact"), "--no-plots"])
    out = capsys.readouterr().out
    assert status == 0
    assert "effective dilation" in out and "waiting for peers" in out
    rt = json.loads((tmp_path / "exact" / "results.json").read_text())["extra"]["runtime"]
    assert rt["sync"] == "exact" and rt["effective_dilation"] >= 50 * 0.99
    assert all("wait_peers_s" in w for w in rt["workers"])
