"""The plots drawn in a worker process (:mod:`ibemu.results.plot_worker`, issue 28):
the same files as in-process, and every failure of the worker one line on stderr with the
plots drawn in-process, or the in-process path's error for a file; no process left behind.

The worker is forked, so a function patched here before it starts is patched in it too:
that is how the worker is made to fail.  Threads that other tests leave idle in this
process (trio's thread cache, ...) would make it refuse to fork
(:func:`~ibemu.results.plot_worker.other_threads`): the tests that need a worker say
there are none, and the refusal has its own test."""
from __future__ import annotations

import errno
import os
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from ibemu.errors import OutputError
from ibemu.results import write_outputs
from ibemu.results import plot_worker as pw
from ibemu.results.plot_data import PlotData, PlotJob
from ibemu.run import run_virtual
from ibemu.scenario import load_scenario

NOTE = "ibemu: plot worker: "
TAIL = "; drawing the plots in this process"


@pytest.fixture(scope="module")
def run():
    scn = load_scenario("scenarios/santos_fig1.toml", ["scenario.duration=1ms"])
    return scn, run_virtual(scn, progress=False)


@pytest.fixture(autouse=True)
def no_other_threads(monkeypatch):
    monkeypatch.setattr(pw, "other_threads", list)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _write(run, out: Path, worker: bool) -> dict[str, bytes]:
    scn, result = run
    with pw.started(scn, enabled=worker) as plotter:
        assert (plotter is not None) == worker
        write_outputs(result.metrics, scn, out, summary=result.summary, plotter=plotter)
    return _files(out)


@pytest.fixture(scope="module")
def in_process(run, tmp_path_factory):
    """The folder as the run's process writes it alone."""
    return _write(run, tmp_path_factory.mktemp("inproc"), False)


def test_the_worker_writes_the_same_files(run, in_process, tmp_path, capsys):
    files = _write(run, tmp_path, True)
    assert sorted(files) == sorted(in_process)
    assert {"throughput.png", "links.png", "latency.png"} <= set(files)
    for name, data in in_process.items():
        assert files[name] == data, name             # the PNGs too, byte for byte
    assert capsys.readouterr().err == ""
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]    # no temporary left


def _logged(log: Path, then):
    """A drawing function that appends "<pid> <part>" to *log*, then calls *then*."""
    def drawing(job: object, scenario: object, folder: Path, part: object = None) -> None:
        with open(log, "a") as fh:
            fh.write("%d %s\n" % (os.getpid(), part))
        then(job, scenario, folder, part)
    return drawing


def test_two_processes_draw_the_two_parts(run, in_process, tmp_path, monkeypatch, capsys):
    """The worker draws part 0 and a helper it forks part 1 at the same time: two
    processes, neither the run's, and the folder is the in-process one, byte for byte."""
    log = tmp_path / "parts.log"
    monkeypatch.setattr(pw, "draw", _logged(log, pw.draw))
    files = _write(run, tmp_path / "out", True)
    drawn = dict(reversed(line.split()) for line in log.read_text().splitlines())
    assert sorted(drawn) == ["0", "1"]
    assert drawn["0"] != drawn["1"] and str(os.getpid()) not in drawn.values()
    assert files == in_process
    assert capsys.readouterr().err == ""


def test_a_helper_that_dies_is_one_line_and_the_plots_drawn_here(run, in_process, tmp_path, monkeypatch, capsys):
    draw = pw.draw

    def second_dies(job: object, scenario: object, folder: Path, part: object = None) -> None:
        if part == 1:
            os._exit(3)
        draw(job, scenario, folder, part)
    line = _fails(run, tmp_path, monkeypatch, capsys, second_dies)
    assert "it failed (its second drawer ended before answering)" in line
    assert _files(tmp_path) == in_process


def test_ending_the_worker_ends_its_helper(run, tmp_path, monkeypatch):
    """The run's process ends the worker while both parts are being drawn (an interrupt,
    an error): the helper goes with it, no process is left."""
    log = tmp_path / "parts.log"
    monkeypatch.setattr(pw, "draw", _logged(log, lambda *a: time.sleep(60)))
    scn, result = run
    m = result.metrics
    with pw.started(scn) as plotter:
        assert plotter is not None and plotter.submit(tmp_path, PlotJob(PlotData.of(m), m.times_ms(), [], [], [], []))
        deadline = time.monotonic() + 30
        while (not log.exists() or len(log.read_text().splitlines()) < 2) and time.monotonic() < deadline:
            time.sleep(0.01)
    pids = [int(line.split()[0]) for line in log.read_text().splitlines()]
    assert len(set(pids)) == 2 and plotter.process.exitcode is not None
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)             # ended and reaped


def test_plot_data_answers_as_the_metrics(run):
    m = run[1].metrics
    d = PlotData.of(m)
    assert d.link_names() == m.link_names() and d.flow_names() == m.flow_names() and d.groups() == m.groups()
    assert d.window == m.window and d.traces == m.traces and d.events == m.events
    for lbl in m.link_names():
        assert d.has_link(lbl) and d.link_totals(lbl) == m.link_totals(lbl)
    assert not d.has_link("no such link")
    for n in m.flow_names():
        assert d.completion(n) == m.completion(n)
        for a, b in zip(d.latencies(n), m.latencies(n), strict=True):
            assert np.array_equal(a, b)


def _fails(run, out: Path, monkeypatch, capsys, broken) -> str:
    """Write with a worker whose drawing is *broken*; the one stderr line."""
    monkeypatch.setattr(pw, "draw", broken)          # in the worker only: outputs draws with its own
    _write(run, out, True)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(NOTE) and err[0].endswith(TAIL), err
    return err[0]


def test_a_worker_that_raises_is_one_line_and_the_plots_drawn_here(run, in_process, tmp_path, monkeypatch, capsys):
    def broken(*args: object) -> None:
        raise RuntimeError("a bug in the plots")
    line = _fails(run, tmp_path, monkeypatch, capsys, broken)
    assert "it failed (RuntimeError: a bug in the plots)" in line
    assert _files(tmp_path) == in_process


def test_a_worker_that_dies_is_one_line_and_the_plots_drawn_here(run, in_process, tmp_path, monkeypatch, capsys):
    def dies(job: object, scenario: object, folder: Path, part: object = None) -> None:
        (folder / "throughput.png").write_bytes(b"half")      # what it leaves is not kept
        os._exit(3)
    line = _fails(run, tmp_path, monkeypatch, capsys, dies)
    assert "it ended before answering (exit code 3)" in line
    assert _files(tmp_path) == in_process


def test_a_worker_that_cannot_start_is_one_line(run, in_process, tmp_path, monkeypatch, capsys):
    def no_fork(self: object) -> None:
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))
    monkeypatch.setattr("multiprocessing.process.BaseProcess.start", no_fork)
    scn, result = run
    with pw.started(scn) as plotter:
        assert plotter is None
        write_outputs(result.metrics, scn, tmp_path, summary=result.summary, plotter=plotter)
    assert capsys.readouterr().err == NOTE + "cannot start it ([Errno 11] %s)%s\n" % (os.strerror(errno.EAGAIN), TAIL)
    assert _files(tmp_path) == in_process


def test_a_file_error_in_the_worker_is_the_in_process_error(run, in_process, tmp_path, monkeypatch):
    """A full disk while a PNG is written: one OutputError naming the PNG, as in-process,
    and the earlier folder as it was (issue 14 item 6)."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text("earlier\n")

    def full(job: object, scenario: object, folder: Path, part: object = None) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "links.png"))
    monkeypatch.setattr(pw, "draw", full)
    with pytest.raises(OutputError) as e:
        _write(run, out, True)
    assert str(e.value) == "cannot write %s: %s" % (out / "links.png", os.strerror(errno.ENOSPC))
    assert _files(out) == {"results.json": b"earlier\n"}


def test_the_worker_warnings_are_shown_here(run, tmp_path):
    scn, result = run
    scn.output.plot_links = ["no-such-link"]        # past the scenario's check: the plots warn
    try:
        with pytest.warns(UserWarning, match="plot_links not in the fabric: no-such-link"):
            _write(run, tmp_path, True)
    finally:
        scn.output.plot_links = []


def test_an_interrupt_leaves_no_worker(run):
    scn = run[0]
    with pytest.raises(KeyboardInterrupt):
        with pw.started(scn) as plotter:
            assert plotter is not None and plotter.process.is_alive()
            raise KeyboardInterrupt
    assert plotter.process.exitcode is not None      # ended and reaped


def test_the_switch_draws_in_process(run, monkeypatch):
    monkeypatch.setenv(pw.ENV, "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pw.started(run[0]) as plotter:
            assert plotter is None


def test_no_fork_beside_another_thread(run, monkeypatch, capsys):
    monkeypatch.undo()                              # the real check
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="busy-elsewhere")
    other.start()
    try:
        with pw.started(run[0]) as plotter:
            assert plotter is None
    finally:
        stop.set()
        other.join()
    err = capsys.readouterr().err
    assert err.startswith(NOTE + "forking is unsafe with other threads running (") and "busy-elsewhere" in err
    assert err.endswith(TAIL + "\n") and err.count("\n") == 1
