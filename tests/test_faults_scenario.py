"""The scenario's [faults] table and the ``ibemu run`` fault flags (issue 8 item 2)."""
from __future__ import annotations

import json

import pytest

from ibemu.cli import main
from ibemu.run import run_virtual
from ibemu.scenario import ScenarioError, load_scenario
from ibemu.units import PS_PER_US

BASE = """\
[scenario]
duration = "2ms"
seed = 5
[defaults.link]
fc_period = "20us"
[defaults.hca]
ack_timeout = "100us"
retry_cnt = 7
[[switch]]
name = "S"
[[hca]]
name = "H1"
[[hca]]
name = "H2"
[[link]]
a = "H1"
b = "S"
[[link]]
a = "S"
b = "H2"
name = "down"
[[flow]]
src = "H1"
dst = "H2"
pattern = "messages"
count = 100
message_size = 4000
window = 8
"""

FAULTS = """
[faults]
loss = 0.05
duplicate = 0.01
reorder = 0.02
reorder_depth = 4
corrupt = 0.01
[faults.link."H1->S"]
loss = 0.2
[faults.link.down]
down = [["500us", "700us"]]
"""


def _write(tmp_path, text):
    f = tmp_path / "f.toml"
    f.write_text(text)
    return f


def test_faults_table_parsed(tmp_path):
    s = load_scenario(_write(tmp_path, BASE + FAULTS))
    fs = s.faults
    assert (fs.all.loss, fs.all.duplicate, fs.all.reorder, fs.all.reorder_depth, fs.all.corrupt) == \
        (0.05, 0.01, 0.02, 4, 0.01)
    assert fs.for_link("H1->S").loss == 0.2 and fs.for_link("H1->S").corrupt == 0.01   # inherits
    assert fs.for_link("S->H1").loss == 0.05
    for label in ("down", "down.rev"):                          # a named link: both directions
        assert fs.for_link(label).down == [(500 * PS_PER_US, 700 * PS_PER_US)]
        assert fs.for_link(label).loss == 0.05
    assert s.hcas[0].params.ack_timeout == 100 * PS_PER_US and s.hcas[0].params.retry_cnt == 7
    assert load_scenario(_write(tmp_path, BASE)).faults is None


def test_run_with_faults_delivers_and_reports(tmp_path):
    s = load_scenario(_write(tmp_path, BASE + FAULTS), ['scenario.duration="6ms"'])
    r = run_virtual(s)
    c = r.counters
    assert c["link:H1->S"]["lost"] > 0.1 * c["link:H1->S"]["sent"]
    assert c["link:down"]["down_dropped"] > 0
    assert sum(c[k].get("corrupted", 0) for k in c if k.startswith("link:")) > 0
    assert r.summary["flows"]["flow0"]["messages"] == 100
    assert r.metrics.flow_bins("flow0").sum() == 100 * 4000     # every byte once
    assert c["H1"]["go_back_n"] > 0


def test_same_seed_same_faults(tmp_path):
    f = _write(tmp_path, BASE + FAULTS)
    a, b = (run_virtual(load_scenario(f)).counters for _ in range(2))
    assert a == b
    c = run_virtual(load_scenario(f, ["scenario.seed=6"])).counters
    assert c != a


@pytest.mark.parametrize("extra, key, reason", [
    ("[faults]\nloss = 1.5\n", "faults.loss", "must be between 0 and 1, got 1.5"),
    ("[faults]\nloss = \"5%\"\n", "faults.loss", "expected a probability"),
    ("[faults]\nlos = 0.1\n", "faults.los", "unknown key (did you mean 'loss'?)"),
    ("[faults]\nreorder_depth = 0\n", "faults.reorder_depth", "must be between 1 and 1024, got 0"),
    ("[faults]\ndown = [[\"2ms\", \"1ms\"]]\n", "faults.down[0]", "end > start"),
    ("[faults]\ndown = [\"1ms\"]\n", "faults.down[0]", "expected a [start, end] pair"),
    ("[faults.link.\"H1->X\"]\nloss = 0.1\n", 'faults.link."H1->X"', "no link 'H1->X' (did you mean 'H1->S'?)"),
    ("[faults.link.\"H1->S\"]\nlost = 0.1\n", 'faults.link."H1->S".lost', "did you mean 'loss'?"),
])
def test_faults_mistakes(tmp_path, extra, key, reason):
    with pytest.raises(ScenarioError) as e:
        load_scenario(_write(tmp_path, BASE + extra))
    assert e.value.key == key and reason in e.value.reason, str(e.value)


def test_cli_fault_flags(tmp_path, capsys):
    f = _write(tmp_path, BASE)
    rc = main(["run", str(f), "--out", str(tmp_path / "o"), "--no-plots", "-q", "--duration", "6ms",
               "--loss", "0.05", "--duplicate", "0.01", "--reorder", "0.02", "--reorder-depth", "2",
               "--corrupt", "0.01"])
    assert rc == 0
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    counters = res["summary"]["counters"]
    assert counters["link:H1->S"]["lost"] > 0 and counters["link:down.rev"]["sent"] > 0
    assert json.loads((tmp_path / "o" / "config.json").read_text())["faults"]["loss"] == 0.05
    rc = main(["run", str(f), "--out", str(tmp_path / "o2"), "--loss", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "faults.loss: must be between 0 and 1, got 2" in err
