"""``ibemu examples`` (issue 18 item 6): the shipped scenarios listed, printed, copied out;
``ibemu run NAME`` runs one by name (tests/test_wheel.py does the same from an installed wheel)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ibemu.cli import main
from ibemu.resources import copy_scenario, scenario_companions, scenario_description, scenario_names

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines[:-2] if line.strip()]
    assert [r.split()[0] for r in rows] == SHIPPED == scenario_names()
    assert all(len(r) <= 100 for r in rows)
    quick = next(r for r in rows if r.startswith("quickstart "))
    # the first sentence of the file's opening comment
    first = (ROOT / "scenarios" / "quickstart.toml").read_text().splitlines()[0].lstrip("# ")
    assert quick.split(None, 1)[1] == first == scenario_description("quickstart")
    assert "ibemu examples NAME --copy DIR" in lines[-1]


def test_print_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "santos_fig1"]) == 0
    assert capsys.readouterr().out == (ROOT / "scenarios" / "santos_fig1.toml").read_text(encoding="utf-8")


def test_copy_with_its_companion_and_run_the_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scenario_companions("cca_opensm") == ["cca_opensm.conf"]
    assert scenario_companions("quickstart") == []
    assert main(["examples", "cca_opensm", "--copy", str(tmp_path / "mine")]) == 0
    for name in ("cca_opensm.toml", "cca_opensm.conf"):
        assert (tmp_path / "mine" / name).read_bytes() == (ROOT / "scenarios" / name).read_bytes()
    assert "run it: ibemu run %s" % (tmp_path / "mine" / "cca_opensm.toml") in capsys.readouterr().out
    # a second copy does not overwrite the edited one
    (tmp_path / "mine" / "cca_opensm.toml").write_text("# edited\n")
    assert main(["examples", "cca_opensm", "--copy", str(tmp_path / "mine")]) == 2
    assert "exists already" in capsys.readouterr().err
    assert (tmp_path / "mine" / "cca_opensm.toml").read_text() == "# edited\n"
    with pytest.raises(FileExistsError):
        copy_scenario("cca_opensm", tmp_path / "mine")


def test_unknown_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "no_such"]) == 2
    err = capsys.readouterr().err
    assert "no shipped scenario named 'no_such'" in err and "quickstart" in err
    assert main(["examples", "--copy", str(tmp_path)]) == 2
    assert main(["run", "no_such", "--out", str(tmp_path / "x")]) == 2
    assert "nor a shipped scenario" in capsys.readouterr().err


def test_run_by_name(tmp_path: Path) -> None:
    assert main(["run", "quickstart", "--duration", "100us", "--out", str(tmp_path), "--no-plots", "-q"]) == 0
    assert json.loads((tmp_path / "results.json").read_text())["scenario"] == "quickstart"
