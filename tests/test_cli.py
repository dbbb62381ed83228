"""The ibemu command: run, reproduce --list, and one clear line for bad input."""
import json

import pytest

from ibemu.cli import main


def test_run_quickstart_writes_output_folder(tmp_path, capsys):
    out = tmp_path / "qs"
    rc = main(["run", "scenarios/quickstart.toml", "--out", str(out), "--pcap", str(tmp_path / "q.pcap")])
    assert rc == 0
    for name in ("results.json", "config.json", "flows.csv", "links.csv", "throughput.png"):
        assert (out / name).stat().st_size > 0, name
    res = json.loads((out / "results.json").read_text())
    assert res["summary"]["links"]["bottleneck"]["data_utilization"] > 0.95
    text = capsys.readouterr().out
    assert "f1" in text and "bottleneck" in text
    rc = main(["decode", str(tmp_path / "q.pcap"), "--opcode", "RC_ACKNOWLEDGE"])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0 and lines and all("RC_ACKNOWLEDGE" in line for line in lines)


def test_run_with_overrides(tmp_path, capsys):
    rc = main(["run", "scenarios/santos_fig1.toml", "--out", str(tmp_path / "f"), "--no-plots",
               "--set", "template.L=2", "--set", "template.R=2", "--duration", "2ms", "-q"])
    assert rc == 0
    res = json.loads((tmp_path / "f" / "results.json").read_text())
    assert res["duration_ms"] == 2
    assert sorted(res["summary"]["flows"]) == ["local1", "local2", "remote1", "remote2", "victim"]


@pytest.mark.parametrize("content, key", [
    ("[scenario]\nduration = 5\n", "scenario.duration"),
    ("[scenario]\nduration = \"1ms\"\n[[flow]]\nsrc = \"X\"\ndst = \"Y\"\n", "flow[0].src"),
    ("[scenario\n", "line 1"),
])
def test_bad_scenario_is_one_line_exit_2(tmp_path, capsys, content, key):
    f = tmp_path / "bad.toml"
    f.write_text(content)
    rc = main(["run", str(f), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert str(f) in err and key in err
    assert "Traceback" not in err


def test_reproduce_list(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for rid in ("fig2a", "fig2b", "fig3a", "fig3b"):
        assert rid in out


def test_reproduce_unknown_id(capsys):
    assert main(["reproduce", "fig99"]) == 2
    assert "fig99" in capsys.readouterr().err


def test_routes_takes_a_shipped_scenario_by_name(capsys, tmp_path):
    """``ibemu routes quickstart`` finds the shipped scenario as ``ibemu run`` does, and
    writes the LFTs in OpenSM's dump format."""
    from ibemu.cli import main
    dump = tmp_path / "lfts.dump"
    assert main(["routes", "quickstart", "--dump", str(dump)]) == 0
    text = dump.read_text()
    assert text.startswith("Unicast lids [0-") and text.rstrip().endswith("lids dumped")
    assert main(["routes", "no_such_scenario"]) != 0
    assert "nor a shipped scenario" in capsys.readouterr().err
