"""Shipped files read through importlib.resources (ibemu/resources.py): scenarios by
name, the Wireshark plugin's place, and ``ibemu.layers`` as the Scapy layers' only name
(docs/packaging.md).  tests/test_wheel.py checks the same from an installed wheel."""
from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path

import pytest

from ibemu import resources
from ibemu.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_every_scenario_file_of_the_repository_is_shipped():
    assert resources.scenario_names() == sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))
    f = resources.shipped_scenario("quickstart")
    assert f.read_bytes() == (ROOT / "scenarios" / "quickstart.toml").read_bytes()
    assert resources.shipped_scenario("cca_opensm.toml").name == "cca_opensm.toml"
    assert (files(resources.SCENARIOS) / "cca_opensm.conf").is_file()


@pytest.mark.parametrize("name", ["nope", "", "../pyproject", "scenarios/quickstart"])
def test_unknown_names_are_not_shipped(name):
    with pytest.raises(FileNotFoundError, match="shipped: .*quickstart"):
        resources.shipped_scenario(name)


def test_a_path_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Path(resources.scenario_source("quickstart")).name == "quickstart.toml"
    (tmp_path / "quickstart").write_text("")
    assert resources.scenario_source("quickstart") == "quickstart"
    assert resources.scenario_source("missing.toml") == "missing.toml"


def test_run_a_shipped_scenario_by_name_from_anywhere(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "quickstart", "--duration", "200us", "--out", "q", "--no-plots", "-q"]) == 0
    results = json.loads((tmp_path / "q" / "results.json").read_text())
    assert results["scenario"] == "quickstart"
    # an opensm_file beside the shipped scenario is found there too
    assert main(["run", "cca_opensm", "--duration", "200us", "--out", "c", "--no-plots", "-q"]) == 0


def test_an_unknown_name_lists_the_shipped_scenarios(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "quickstrat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ibemu: quickstrat: no such file, nor a shipped scenario (shipped: ")
    assert "quickstart" in err


def test_the_lua_plugin_is_found_in_the_tree_and_in_the_package(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert resources.lua_plugin() == "layers/wireshark/ibemu.lua"
    monkeypatch.chdir(tmp_path)
    lua = Path(resources.lua_plugin())
    assert lua.is_absolute() and lua.is_file() and lua.parts[-3:] == ("layers", "wireshark", "ibemu.lua")


def test_layers_are_imported_under_the_project_namespace_only():
    import ibemu.layers
    assert hasattr(ibemu.layers, "BTH") and hasattr(ibemu.layers, "IBEmu")
    pattern = re.compile(r"^\s*(from layers\b|import layers\b)", re.M)
    offenders = [str(p.relative_to(ROOT)) for d in ("ibemu", "tests") for p in (ROOT / d).rglob("*.py")
                 if "layers" not in p.relative_to(ROOT).parts[:2] and pattern.search(p.read_text())]
    assert offenders == []
