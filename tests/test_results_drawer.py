"""Figures drawn in forked children (:mod:`ibemu.results.drawer`, issue 28): the file the
caller would write, the caller going on meanwhile; a child that fails costs one line on
stderr and the figure is drawn again in the caller, which raises its error; no process
left behind.  Threads other tests leave idle here would make the drawer refuse to fork
(as the plot worker does): the tests that fork say there are none."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ibemu.results import drawer as dr


@pytest.fixture(autouse=True)
def no_other_threads(monkeypatch):
    monkeypatch.setattr(dr, "other_threads", lambda: [])


def _write(path: Path, text: str) -> None:
    path.write_text("%s by %d" % (text, os.getpid()))


def _slow_write(path: Path, text: str) -> None:
    time.sleep(0.3)
    _write(path, text)


def test_a_child_draws_while_the_caller_goes_on(tmp_path):
    d = dr.Drawer()
    t0 = time.perf_counter()
    d.draw(_slow_write, tmp_path / "a.txt", "a")
    d.draw(_slow_write, tmp_path / "b.txt", "b")
    assert time.perf_counter() - t0 < 0.3          # (each child sleeps 0.3 s before writing)
    assert len(d.pending) == 2
    d.join()
    assert d.pending == []
    for name in ("a", "b"):
        text, _, pid = (tmp_path / ("%s.txt" % name)).read_text().partition(" by ")
        assert text == name and int(pid) != os.getpid()


def test_a_failed_child_is_drawn_again_here(tmp_path, capsys):
    parent = os.getpid()

    def fails_in_a_child(path: Path) -> None:
        if os.getpid() != parent:
            raise RuntimeError("no")
        _write(path, "again")
    d = dr.Drawer()
    d.draw(fails_in_a_child, tmp_path / "c.txt")
    d.join()
    assert (tmp_path / "c.txt").read_text() == "again by %d" % parent
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "figure drawer: fails_in_a_child ended with exit code 1" in err
    assert "Traceback" not in err


def test_an_error_of_the_figure_is_raised_here(tmp_path):
    d = dr.Drawer()
    d.draw(_write, tmp_path / "missing" / "d.txt", "d")
    with pytest.raises(FileNotFoundError):
        d.join()


def test_switched_off_or_other_threads_draw_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv(dr.ENV, "0")
    d = dr.Drawer()
    d.draw(_write, tmp_path / "e.txt", "e")
    assert d.pending == [] and (tmp_path / "e.txt").read_text() == "e by %d" % os.getpid()
    monkeypatch.delenv(dr.ENV)
    monkeypatch.setattr(dr, "other_threads", lambda: ["trio thread"])
    d.draw(_write, tmp_path / "f.txt", "f")
    assert d.pending == [] and (tmp_path / "f.txt").read_text() == "f by %d" % os.getpid()


def test_close_ends_the_children(tmp_path):
    d = dr.Drawer()
    d.draw(time.sleep, 30)
    (process, _, _), = d.pending
    t0 = time.perf_counter()
    d.close()
    assert not process.is_alive() and time.perf_counter() - t0 < 10 and d.pending == []


def test_an_error_drawn_here_leaves_the_other_children_to_close(tmp_path):
    d = dr.Drawer()
    d.draw(_write, tmp_path / "missing" / "g.txt", "g")
    d.draw(time.sleep, 30)
    with pytest.raises(FileNotFoundError):
        d.join()
    (process, _, _), = d.pending                    # the second child, not yet joined
    d.close()
    assert not process.is_alive() and d.pending == []
