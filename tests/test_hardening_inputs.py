"""Issue 14 Deliver 4, 5 and 8: bounded finite numbers, a memory estimate before any
allocation, ASCII digits only, a sane --dilation, safe names and regular scenario files
only.  Every bad input is one line ``ibemu: <file>: <key>: <reason>``, exit status 2 and
no traceback, through the real command (``ibemu run``)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import tracemalloc

import pytest

from ibemu.cli import main
from ibemu.cli.scenarios import default_out
from ibemu.errors import UserError
from ibemu.fabric.params import FlowSpec
from ibemu.results.metrics import Metrics
from ibemu.scenario import ScenarioError, load_scenario, scenario_from_dict
from ibemu.scenario.output import DEFAULT_MEMORY_LIMIT, bins_memory
from ibemu.units import MAX_DILATION, MIN_DILATION, parse_dilation

BASE = """\
[scenario]
duration = "1ms"

[[switch]]
name = "S"
ports = 4
lft = { 1 = 1, 2 = 2 }

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
name = "f1"
src = "H1"
dst = "H2"
"""


def run_bad(tmp_path, capsys, text, *args, name="bad.toml"):
    """Run ``ibemu run`` on *text*; return (file, the one stderr line) after checking the
    exit status, the single line, no traceback and no output folder."""
    f = tmp_path / name
    f.write_text(text)
    out = tmp_path / "out"
    rc = main(["run", str(f), "--out", str(out), "-q", *args])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and captured.out == ""
    assert err.startswith("ibemu: %s: " % f), err
    assert not out.exists()
    return f, err


def expect(tmp_path, capsys, text, key, words, *args):
    f, err = run_bad(tmp_path, capsys, text, *args)
    assert err.startswith("ibemu: %s: %s: " % (f, key)), err
    for w in words:
        assert w in err, err
    return err


# ---------------------------------------------------------------- Deliver 4: numbers

@pytest.mark.parametrize("text, args, key, words", [
    (BASE, ["--duration", "1e400s"], "scenario.duration", ["too large", "10^6 s", "--set"]),
    (BASE, ["--duration", "1e999999999s"], "scenario.duration", ["too large"]),
    (BASE.replace('"1ms"', '"1e400s"'), [], "scenario.duration", ["'1e400s' is too large"]),
    (BASE + "rate = inf\n", [], "flow[0].rate", ["finite"]),
    (BASE + "rate = nan\n", [], "flow[0].rate", ["finite"]),
    (BASE + 'rate = "1e400GB/s"\n', [], "flow[0].rate", ["too large", "10^15 bytes/s"]),
    (BASE + "rate = 1e300\n", [], "flow[0].rate", ["too large"]),
    (BASE + "rate = 100000000000000000000000000000\n", [], "flow[0].rate", ["64-bit"]),
    (BASE + "rate = 0.25\n", [], "flow[0].rate", ["less than 1 byte/s"]),
    (BASE + "rate_fraction = -inf\n", [], "flow[0].rate_fraction", ["finite"]),
    (BASE + 'message_size = "1e30KiB"\n', [], "flow[0].message_size", ["too large"]),
    (BASE.replace('ports = 4', 'ports = 4\nbuffer = "1e400 packets"'), [], "switch[0].buffer", ["too large"]),
    (BASE.replace('b = "S"\n', 'b = "S"\nrate = "1e400GB/s"\n', 1), [], "link[0].rate", ["too large"]),
    (BASE + '[cc]\nscheme = "hp"\n[cc.hp]\nm = inf\n', [], "cc.hp.m", ["finite"]),
    (BASE + '[cc]\nscheme = "hp"\n[cc.hp]\nm = 1e300\n', [], "cc.hp.m", ["at most 1024"]),
    (BASE, ["--set", "faults.loss=nan"], "faults.loss", ["finite"]),
], ids=["duration-1e400s-cli", "duration-huge-exponent", "duration-1e400s-file", "rate-inf", "rate-nan",
        "rate-1e400GB/s", "rate-1e300", "int-beyond-64-bit", "rate-below-1", "rate_fraction--inf",
        "size-1e30KiB", "packets-1e400", "link-rate-1e400GB/s", "cc.hp.m-inf", "cc.hp.m-1e300", "loss-nan"])
def test_numbers_are_finite_and_bounded(tmp_path, capsys, text, args, key, words):
    expect(tmp_path, capsys, text, key, words, *args)


@pytest.mark.parametrize("flag", ["--loss", "--duplicate", "--reorder", "--corrupt"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_command_line_probabilities_are_finite(tmp_path, capsys, flag, value):
    f = tmp_path / "s.toml"
    f.write_text(BASE)
    with pytest.raises(SystemExit) as e:
        main(["run", str(f), "--out", str(tmp_path / "out"), "%s=%s" % (flag, value)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument %s: must be a finite number" % flag in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_memory_estimate_refuses_a_fine_bin_before_allocating(tmp_path, capsys):
    # 1 ms in 1 ps bins = 10^9 bins; 2 links = 4 directions x 3 series + 1 flow x 6 = 18 series
    err = expect(tmp_path, capsys, BASE + '[output]\nbin = "1ps"\n', "output.bin",
                 ["%s GiB" % format(10**9 * 18 * 8 / 2**30, ".3g"), "1000000000 bins", "18 series",
                  "2 GiB limit", "--max-memory", "output.bin (at least"])
    assert "MemoryError" not in err


def test_memory_estimate_refuses_a_long_duration(tmp_path, capsys):
    # --duration 1e5s in the default 100 us bins: 10^9 bins again, and the key is the --set
    err = expect(tmp_path, capsys, BASE, "scenario.duration", ["1000000000 bins", "--duration", "--max-memory"],
                 "--duration", "1e5s")
    assert '(from --set scenario.duration="1e5s")' in err


def test_memory_limit_is_the_option_that_changes_it(tmp_path, capsys):
    # 1 ms in 1 us bins = 1000 bins x 18 series x 8 bytes = 144000 bytes
    text = BASE + '[output]\nbin = "1us"\n'
    expect(tmp_path, capsys, text, "output.bin", ["141 KiB", "over the 100 KiB limit"], "--max-memory", "100KiB")
    raw = {"scenario": {"duration": "1ms"}, "hca": [{"name": "A"}, {"name": "B"}],
           "link": [{"a": "A", "b": "B"}], "flow": [{"src": "A", "dst": "B"}], "output": {"bin": "1ps"}}
    with pytest.raises(ScenarioError, match="output.bin: the time bins would take"):
        scenario_from_dict(raw)
    scn = scenario_from_dict(raw, memory_limit=None)          # no limit: accepted, nothing allocated
    assert scn.output.bin == 1
    assert bins_memory(scn.duration, scn.output.bin, 2, 1) == 10**9 * (3 * 2 + 6) * 8 > DEFAULT_MEMORY_LIMIT


def test_memory_estimate_matches_what_metrics_allocates():
    """The estimate is what the bins really take: Metrics for 2 links (4 directions) and
    3 flows over 40 000 bins, measured with tracemalloc."""
    nbins, directions, nflows = 40_000, 4, 3
    flows = {"f%d" % i: FlowSpec("f%d" % i, "A", "B") for i in range(nflows)}
    links = {"L%d" % i: 10**9 for i in range(directions)}
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    m = Metrics(nbins * 1000, 1000, links, flows, {f: 10**9 for f in flows})
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert m.nbins == nbins
    expected = bins_memory(nbins * 1000, 1000, directions, nflows)
    assert expected == nbins * 8 * (3 * directions + 6 * nflows)
    assert expected <= used <= expected * 1.01, (used, expected)


@pytest.mark.parametrize("text, key", [
    (BASE.replace("lft = { 1 = 1, 2 = 2 }", 'lft = { "\u00b2" = 2 }'), "switch[0].lft.\u00b2"),
    (BASE.replace("lft = { 1 = 1, 2 = 2 }", 'port_buffers = { "\u00b2" = "8KiB" }'),
     "switch[0].port_buffers.\u00b2"),
    (BASE.replace("lft = { 1 = 1, 2 = 2 }", 'port_pkeys = { "\u0663" = [0xFFFF] }'),
     "switch[0].port_pkeys.\u0663"),
    (BASE.replace('b = "S"\n', 'b = "S:\u0662"\n', 1), "link[0].b"),
    (BASE.replace('"1ms"', '"\u0661ms"'), "scenario.duration"),
    (BASE.replace('lid = 2', 'lid = 2\nvlarb = { low = "0:\u00b2" }'), "hca[1].vlarb.low"),
], ids=["lft-superscript", "port_buffers-superscript", "port_pkeys-arabic-indic", "link-port-arabic-indic",
        "time-arabic-indic", "vlarb-string-superscript"])
def test_digits_are_ascii_only(tmp_path, capsys, text, key):
    err = expect(tmp_path, capsys, text, key, [])
    assert "ValueError" not in err


def test_override_index_digits_are_ascii_only(tmp_path, capsys):
    f, err = run_bad(tmp_path, capsys, BASE, "--set", "flow[\u00b2].window=1")
    assert "--set flow[\u00b2].window=1: cannot read key path" in err


# ---------------------------------------------------------------- Deliver 4: --dilation

@pytest.mark.parametrize("value, words", [
    ("inf", "must be a finite number"), ("nan", "must be a finite number"), ("-inf", "must be a finite number"),
    ("0", "must be positive"), ("1e-9", "must be between 1 and 1e+06"), ("0.5", "must be between 1"),
    ("1e7", "must be between 1 and 1e+06"), ("fast", "expected a number"),
])
def test_dilation_is_finite_and_in_range(tmp_path, capsys, value, words):
    f = tmp_path / "s.toml"
    f.write_text(BASE)
    with pytest.raises(SystemExit) as e:
        main(["run", str(f), "--clock", "wall", "--out", str(tmp_path / "out"), "--dilation=" + value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --dilation: %s" % words in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_dilation_range_bounds_and_the_python_api(tmp_path):
    assert parse_dilation(str(MIN_DILATION)) == MIN_DILATION == 1.0
    assert parse_dilation("1e6") == MAX_DILATION
    assert parse_dilation("200") == 200.0
    from ibemu.runtime.controller import run_wall
    scn = load_scenario(_write(tmp_path, BASE))
    for bad in (float("inf"), float("nan"), 1e-9):
        with pytest.raises(UserError, match="--dilation must be"):
            run_wall(scn, out_dir=tmp_path / "out", dilation=bad, workers=1, progress=False)
    assert not (tmp_path / "out").exists()


def _write(tmp_path, text, name="s.toml"):
    f = tmp_path / name
    f.write_text(text)
    return f


# ---------------------------------------------------------------- Deliver 5: names

@pytest.mark.parametrize("text, key, words", [
    (BASE.replace('name = "H1"', 'name = "H1\\n"'), "hca[0].name", "bad name"),
    (BASE.replace('name = "S"', 'name = "S\\n"'), "switch[0].name", "bad name"),
    (BASE.replace('name = "H1"', 'name = "H..1"'), "hca[0].name", "no ':', spaces or '..'"),
    (BASE.replace('name = "H1"', 'name = "H\u0661"'), "hca[0].name", "bad name"),
    (BASE.replace('b = "S"\n', 'b = "S"\nname = "up\\n"\n', 1), "link[0].name", "bad name"),
    (BASE.replace('name = "f1"', 'name = "f\\u001b[31mred"'), "flow[0].name", "control character '\\x1b'"),
    (BASE.replace('name = "f1"', 'name = "f\\u0000"'), "flow[0].name", "control character '\\x00'"),
    (BASE.replace('name = "f1"', 'name = "f1\\n"'), "flow[0].name", "control character '\\n'"),
    (BASE.replace('name = "f1"', 'name = "f\\u202e1"'), "flow[0].name", "control character"),
    (BASE.replace('name = "f1"', 'name = "a/b"'), "flow[0].name", "no path separators"),
    (BASE.replace('name = "f1"', 'name = ".."'), "flow[0].name", "'..'"),
    (BASE.replace('name = "f1"', 'name = " f1"'), "flow[0].name", "leading or trailing"),
    (BASE + 'group = "g\\u001b]0;x\\u0007"\n', "flow[0].group", "control character '\\x1b'"),
    (BASE + 'group = "g\\r"\n', "flow[0].group", "control character '\\r'"),
    (BASE + 'group = "../g"\n', "flow[0].group", "no path separators"),
    (BASE.replace('[scenario]', '[scenario]\nname = "../../x"'), "scenario.name", "no path separators"),
    (BASE.replace('[scenario]', '[scenario]\nname = ".."'), "scenario.name", "'..'"),
    (BASE.replace('[scenario]', '[scenario]\nname = "."'), "scenario.name", "start with '.'"),
    (BASE.replace('[scenario]', '[scenario]\nname = "/etc"'), "scenario.name", "no path separators"),
    (BASE.replace('[scenario]', '[scenario]\nname = "C:\\\\x"'), "scenario.name", "no path separators"),
    (BASE.replace('[scenario]', '[scenario]\nname = "x\\ny"'), "scenario.name", "control character"),
])
def test_names_are_printable_and_never_paths(tmp_path, capsys, text, key, words):
    expect(tmp_path, capsys, text, key, [words])


def test_scenario_name_from_set_cannot_leave_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f, err = run_bad(tmp_path, capsys, BASE, "--set", 'scenario.name="../../x"')
    assert ": scenario.name: bad name '../../x'" in err
    assert not (tmp_path.parent.parent / "x").exists() and not (tmp_path / "runs").exists()


def test_scenario_name_from_a_file_name_is_checked(tmp_path):
    f = _write(tmp_path, BASE, name=".hidden.toml")
    with pytest.raises(ScenarioError, match=r"scenario.name: .*taken from the file name: set scenario.name"):
        load_scenario(f)
    assert load_scenario(_write(tmp_path, BASE, name="my run.toml")).name == "my run"


def test_default_out_stays_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_out("quickstart") == "runs/quickstart"
    for bad in ("../x", "../../x", "..", "a/../../b", "/etc"):
        with pytest.raises(UserError, match="outside runs/"):
            default_out(bad)


def test_good_names_still_accepted(tmp_path):
    text = (BASE.replace('name = "f1"', 'name = "victim A_V (2)"')
            + 'group = "remote-1.b"\n').replace('name = "H1"', 'name = "H1.a-b_c"').replace('"H1"', '"H1.a-b_c"')
    scn = load_scenario(_write(tmp_path, text))
    assert [f.name for f in scn.flows] == ["victim A_V (2)"] and scn.flows[0].group == "remote-1.b"
    assert scn.hcas[0].name == "H1.a-b_c"


# ---------------------------------------------------------------- Deliver 8: regular files only

def _load_in_thread(path):
    """load_scenario(path) in a thread: (finished within 10 s, the exception)."""
    box = {}

    def go():
        try:
            load_scenario(path)
        except Exception as e:          # noqa: BLE001 - the test inspects it
            box["e"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(10)
    return not t.is_alive(), box.get("e")


def _env():
    """The environment with this checkout's ibemu first on the path (the child's cwd is elsewhere)."""
    import ibemu
    root = os.path.dirname(os.path.dirname(os.path.abspath(ibemu.__file__)))
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "scn.toml"
    os.mkfifo(fifo)
    done, e = _load_in_thread(fifo)
    assert done, "load_scenario blocked on a FIFO"
    assert isinstance(e, ScenarioError) and str(e) == "%s: is a FIFO (named pipe), not a regular file" % fifo
    # the real command, in its own process: one line, exit 2, no hang
    r = subprocess.run([sys.executable, "-m", "ibemu", "run", str(fifo), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path, env=_env())
    assert r.returncode == 2
    assert r.stderr.strip() == "ibemu: %s: is a FIFO (named pipe), not a regular file" % fifo
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_device_is_refused(capsys):
    done, e = _load_in_thread("/dev/zero")
    assert done and isinstance(e, ScenarioError)
    assert str(e) == "/dev/zero: is a character device, not a regular file"
    assert main(["run", "/dev/zero"]) == 2
    assert capsys.readouterr().err.strip() == "ibemu: /dev/zero: is a character device, not a regular file"


def test_oversized_file_is_refused(tmp_path):
    from ibemu.scenario.read import MAX_FILE
    f = tmp_path / "big.toml"
    with open(f, "wb") as fh:
        fh.truncate(MAX_FILE + 1)           # sparse: no disk used
    with pytest.raises(ScenarioError, match="too large for a scenario file"):
        load_scenario(f)
