"""The phases of a run (ibemu/results/phases.py, issue 28 Deliver 5): timed always, shown
on a terminal only, named in the run summary."""
from __future__ import annotations

import io

import pytest

from ibemu.results import phases as phases_module
from ibemu.results.phases import Phases
from ibemu.run import print_summary, run_virtual
from ibemu.scenario.builders import fat_tree2


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_times_kept_in_start_order_and_nothing_drawn_off_a_terminal():
    out = io.StringIO()
    ph = Phases(True, out)
    with ph.phase("build"):
        with ph.phase("routing", 3, "LIDs") as tick:
            tick(3)
    with ph.phase("run"):
        pass
    assert list(ph.times) == ["build", "routing", "run"]
    assert ph.times["build"] >= ph.times["routing"] >= 0
    assert out.getvalue() == ""
    assert ph.format().startswith("build ") and ", routing " in ph.format()


def test_a_long_phase_is_drawn_on_a_terminal(monkeypatch):
    monkeypatch.setattr(phases_module, "DELAY", 0.0)        # draw at once, not after a second
    term = Terminal()
    ph = Phases(True, term)
    with ph.phase("routing", 10, "LIDs") as tick:
        for _ in range(10):
            tick(1)
    with ph.phase("outputs"):
        pass
    text = term.getvalue()
    assert "routing" in text and "LIDs" in text
    assert "outputs" in text


def test_disabled_phases_draw_nothing_even_on_a_terminal(monkeypatch):
    monkeypatch.setattr(phases_module, "DELAY", 0.0)
    term = Terminal()
    ph = Phases(False, term)
    with ph.phase("routing", 5) as tick:
        tick(5)
    assert term.getvalue() == ""
    assert "routing" in ph.times


def test_run_summary_names_each_phase(capsys):
    scn = fat_tree2(4, duration="20us", sections={"routing": {"engine": "ftree"},
                                                 "traffic": [{"pattern": "shift", "k": 2}]})
    result = run_virtual(scn, progress=False)
    print_summary(result)
    line = [ln for ln in capsys.readouterr().out.splitlines() if " events in " in ln][0]
    for name in ("build", "routing", "credit-loop check", "run", "outputs"):
        assert name + " " in line, line
    assert result.phases is not None and result.phases.times["run"] == pytest.approx(result.wall_seconds)
