"""The runtime's commands: ``ibemu node`` and ``ibemu fidelity`` take a shipped
scenario by name as ``ibemu run`` does, and the capture hint names a plugin file that
exists, from inside the source tree and from outside it (issue 12 item 4)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ibemu.cli import main
from ibemu.runtime.addrmap import read_map
from ibemu.runtime.commands import capture_hint, resolve_scenario


def test_node_make_map_takes_a_shipped_scenario_by_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)                       # no scenarios/ folder here
    rc = main(["node", "quickstart", "--make-map", "map.toml"])
    assert rc == 0
    assert "wrote 6 port addresses" in capsys.readouterr().out
    assert {"H1", "H2", "H3", "S"} <= {node for node, _ in read_map(tmp_path / "map.toml")}


@pytest.mark.parametrize("command", [["node", "nosuch", "--make-map", "m.toml"], ["fidelity", "nosuch"]])
def test_unknown_scenario_name_is_one_line_exit_2(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "nosuch: no such file, nor a shipped scenario" in err and "quickstart" in err
    assert len(err.strip().splitlines()) == 1


def test_resolve_scenario_prefers_an_existing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quickstart").write_text("")
    assert resolve_scenario("quickstart") == "quickstart"
    assert resolve_scenario("missing.toml") == "missing.toml"      # loading reports it
    (tmp_path / "quickstart").unlink()
    assert Path(resolve_scenario("quickstart")).name == "quickstart.toml"


def test_capture_hint_names_an_existing_plugin(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parent.parent
    for where in (root, tmp_path):
        monkeypatch.chdir(where)
        hint = capture_hint("x.pcap")
        assert hint.startswith("open the capture with: wireshark -X lua_script:") and hint.endswith(" x.pcap")
        lua = hint.split("lua_script:", 1)[1].rsplit(" ", 1)[0]
        assert lua.endswith("ibemu.lua") and (where / lua).is_file(), hint


def test_a_worker_that_cannot_write_its_capture_is_one_line_printed_once(tmp_path, monkeypatch, capsys):
    """Issue 30: a wall-clock worker that fails writing output (here its capture part,
    ``parts/worker0.pcap``, is a folder, so opening it fails as a full disk would) gives
    one error line, printed once -- the launcher no longer prints its own line before
    the command's -- naming the path, and exit code 1."""
    from ibemu.runtime import controller
    from ibemu.runtime.sockets import free_port_block
    real = controller._workdir

    def blocked(out):
        workdir = real(out)                               # <out>/parts, emptied
        (workdir / "worker0.pcap").mkdir()                # worker 0 cannot open its capture part
        return workdir
    monkeypatch.setattr(controller, "_workdir", blocked)
    out = tmp_path / "run"
    base = free_port_block("127.0.0.1", 16, 25600)
    rc = main(["run", "quickstart", "--clock", "wall", "--duration", "200us", "--workers", "2", "--quiet",
               "--out", str(out), "--pcap", str(tmp_path / "c.pcapng"), "--port-base", str(base)])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 1
    assert len(lines) == 1, err
    assert lines[0].startswith("ibemu run: worker 0 ") and "worker0.pcap" in lines[0], lines[0]
