"""Bad scenario input (issue 8 item 7): every class of mistake gives exactly one line
``file: key.path: reason`` on stderr, exit code 2 and no traceback -- through the real
command (``ibemu run``), one test per class."""
from __future__ import annotations

import subprocess
import sys

import pytest

from ibemu.cli import main

BASE = """\
[scenario]
duration = "1ms"

[[switch]]
name = "S"
ports = 4

[[hca]]
name = "H1"
lid = 1
[[hca]]
name = "H2"
lid = 2

[[link]]
a = "H1"
b = "S"
[[link]]
a = "S"
b = "H2"

[[flow]]
src = "H1"
dst = "H2"
"""

ISLANDS = """\
[scenario]
duration = "1ms"
[[switch]]
name = "S1"
[[switch]]
name = "S2"
[[hca]]
name = "H1"
[[hca]]
name = "H2"
[[link]]
a = "H1"
b = "S1"
[[link]]
a = "H2"
b = "S2"
[[flow]]
src = "H1"
dst = "H2"
"""

CLASSES = [
    # (class, scenario text, expected key path, words of the reason)
    ("malformed TOML", BASE.replace('duration = "1ms"', 'duration = "1ms'), "line 2", "column"),
    ("malformed TOML: duplicate key", BASE.replace('duration = "1ms"', 'duration = "1ms"\nduration = "2ms"'),
     "line 3", "Cannot overwrite"),
    ("not text", "\x00\xff\xfe binary", None, "not UTF-8"),
    ("unknown key, did you mean", BASE + "windw = 4\n", "flow[0].windw", "did you mean 'window'?"),
    ("unknown section, did you mean", BASE + "[falts]\nloss = 0.1\n", "falts", "did you mean 'faults'?"),
    ("unknown nested key", BASE.replace('[scenario]', '[defaults.link]\nrat = "4x_sdr"\n[scenario]'),
     "defaults.link.rat", "did you mean 'rate'?"),
    ("wrong type", BASE.replace("lid = 2", 'lid = "two"'), "hca[1].lid", "expected an integer, got string"),
    ("wrong type: table expected", BASE + "[output]\nplots = \"yes\"\n", "output.plots", "expected true or false"),
    ("wrong time unit", BASE.replace('"1ms"', '"1 fortnight"'), "scenario.duration", "cannot read time"),
    ("time without unit", BASE.replace('"1ms"', "3"), "scenario.duration", "add a unit"),
    ("wrong size unit", BASE.replace('name = "S"', 'name = "S"\nbuffer = "8 parsecs"'), "switch[0].buffer", ""),
    ("wrong rate unit", BASE.replace('b = "S"\n', 'b = "S"\nrate = "fast"\n', 1), "link[0].rate", ""),
    ("disconnected host", BASE + '[[hca]]\nname = "H3"\n', "hca[2]", "has no link"),
    ("disconnected islands", ISLANDS, "flow[0].dst", "'H2' cannot be reached from 'H1'"),
    ("duplicate LID", BASE.replace("lid = 2", "lid = 1"), "hca[1].lid", "duplicate LID 1"),
    ("LID out of range", BASE.replace("lid = 2", "lid = 70000"), "hca[1].lid", "between 1 and 49151"),
    ("switch port out of range", BASE.replace('b = "S"\n', 'b = "S:9"\n', 1), "link[0].b", "has ports 1..4"),
    ("HCA port out of range", BASE.replace('a = "H1"', 'a = "H1:2"'), "link[0].a", "has one port, 1"),
    ("switch port 0", BASE.replace('b = "S"\n', 'b = "S:0"\n', 1), "link[0].b", "management port"),
    ("unknown flow destination", BASE.replace('dst = "H2"', 'dst = "H9"'), "flow[0].dst", "unknown node 'H9'"),
    ("flow destination a switch", BASE.replace('dst = "H2"', 'dst = "S"'), "flow[0].dst", "flows start and end at HCAs"),
    ("bad fault probability", BASE + "[faults]\nloss = 5\n", "faults.loss", "between 0 and 1"),
    ("invalid P_Key", BASE + "pkey = 0x8000\n", "flow[0].pkey", "invalid P_Key"),
    ("retry count out of range", BASE.replace('lid = 1', 'lid = 1\nretry_cnt = 8'), "hca[0].retry_cnt",
     "between 0 and 7"),
]


@pytest.mark.parametrize("text, key, words", [c[1:] for c in CLASSES], ids=[c[0] for c in CLASSES])
def test_one_line_exit_2(tmp_path, capsys, text, key, words):
    f = tmp_path / "bad.toml"
    f.write_bytes(text.encode("latin-1") if text.startswith("\x00") else text.encode())
    rc = main(["run", str(f), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and captured.out == ""
    prefix = "ibemu: %s: " % f
    assert err.startswith(prefix), err
    if key is not None:
        assert err.startswith(prefix + key + ": "), err
    assert words in err, err
    assert not (tmp_path / "out").exists()                      # nothing written


def test_missing_file_and_directory(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    assert capsys.readouterr().err.strip() == "ibemu: %s: no such file" % (tmp_path / "nope.toml")
    assert main(["run", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_bad_override_is_one_line(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(BASE)
    assert main(["run", str(f), "--set", "flow[0].window=zero"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "flow[0].window" in err and "(from --set flow[0].window=zero)" in err


def test_real_process_prints_no_traceback(tmp_path):
    """The installed entry point, in its own process: stderr is the one line."""
    f = tmp_path / "bad.toml"
    f.write_text(BASE.replace("lid = 2", "lid = 1"))
    r = subprocess.run([sys.executable, "-m", "ibemu", "run", str(f)], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "ibemu: %s: hca[1].lid: duplicate LID 1 (also hca[0])" % f
    assert r.stdout == ""
