"""Issue 14 Deliver 3 (worker heartbeats and the controller's watchdog) and Deliver 7 (no
code from data: the scenario reaches the workers and ``perfquery --live`` as JSON, and
nothing in ibemu unpickles, unmarshals or evaluates), plus the worker-crash reporting of
Deliver 5's ``--dilation inf`` symptom (the real error line, earlier results kept).

Wall-clock tests have bounded run times (``--duration 2ms`` at dilation 5000: 10 s at
most, stopped much earlier) and take their UDP ports from the controller's free-block
search (:func:`ibemu.runtime.sockets.free_port_block`)."""
import json
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ibemu.errors import UserError
from ibemu.runtime import controller, handover
from ibemu.runtime.controller import SYNC_FILE
from ibemu.runtime.syncshm import LINK_RECORD, worker_record
from ibemu.runtime.worker import Heartbeat, describe_error
from ibemu.runtime.workers import WallRunError, last_error_line, process_state
from ibemu.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ibemu"
SHIPPED = sorted((PACKAGE / "scenarios").glob("*.toml"))


def ibemu(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "ibemu", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------- Deliver 3: the watchdog

def test_a_stopped_worker_is_reported_by_name_and_state_and_the_run_ends_with_partial_results(tmp_path):
    """SIGSTOP one of two workers: the controller notices within the --watchdog bound
    (plus the time its loop and a loaded machine take), names the worker and its state
    (``T (stopped)``), stops the other, writes the partial outputs and exits 1 -- the error
    one line, printed once (issue 30) -- and no worker is left behind.  Without the watchdog this run would hang forever."""
    bound = 1.5
    out = tmp_path / "run"
    p = ibemu("run", "scenarios/quickstart.toml", "--clock", "wall", "--workers", "2", "--dilation", "5000",
              "--duration", "2ms", "--out", str(out), "--no-plots", "--no-realtime", "--watchdog", str(bound))
    try:
        line = p.stderr.readline()
        m = re.search(r"workers \(pids ([\d ]+)\)", line)
        assert m, line + p.stderr.read()
        pids = [int(x) for x in m.group(1).split()]
        time.sleep(0.7)                              # let both record something
        os.kill(pids[1], signal.SIGSTOP)
        t_stop = time.monotonic()
        first = p.stderr.readline()
        noticed = time.monotonic() - t_stop
        _, rest = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert bound * 0.9 <= noticed < bound + 4.0, first        # not before the bound, not much after
    assert "worker 1 (pid %d; nodes" % pids[1] in first and "T (stopped)" in first, first
    assert "last reported state running" in first and "no heartbeat" in first
    assert p.returncode == 1
    # one line, printed once (issue 30): the partial results are named on the same line
    assert "partial results in" in first and "Traceback" not in rest
    assert "worker 1" not in rest, rest
    for pid in pids:
        assert not alive(pid), "worker %d left behind" % pid
    res = json.loads((out / "results.json").read_text())
    assert res["extra"]["completed"] is False
    assert "T (stopped)" in res["extra"]["error"] and "pid %d" % pids[1] in res["extra"]["error"]
    assert res["summary"]["flows"]["f1"]["tx_packets"] > 0       # the other worker's part is kept
    # the run folder holds data only (the workers' error output is text) ...
    kinds = {f.suffix for f in out.rglob("*") if f.is_file() and f != out / "parts" / SYNC_FILE}
    assert kinds <= {".json", ".toml", ".csv", ".pcap", ".png", ".err"}, kinds
    # ... and the exact clock's shared file (the default --sync exact, one host): nothing
    # but its fixed-size records of integers, as many as its placement beside it says
    meta = json.loads((out / "parts" / (SYNC_FILE + ".json")).read_text())
    assert (out / "parts" / SYNC_FILE).stat().st_size == \
        LINK_RECORD * max(1, meta["links"]) + worker_record(len(meta["groups"])) * len(meta["groups"])
    assert sorted(n for g in meta["groups"] for n in g) == ["H1", "H2", "H3", "S"]


class _Sink:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, **msg) -> None:
        self.sent.append(msg)


def test_the_heartbeat_falls_silent_when_the_emulation_loop_stops_turning():
    """A deadlocked loop must look like a stopped process: while running, a beat goes
    out only if the loop moved its tick since the last one; outside the loop (building,
    waiting for start, writing the part) every beat goes out."""
    sink = _Sink()
    hb = Heartbeat(sink, interval=0.5)      # type: ignore[arg-type]
    assert hb.beat() and hb.beat()                       # building: always
    hb.state = "running"
    assert hb.beat()                                     # first beat of the run (tick 0 is new)
    assert not hb.beat() and not hb.beat()               # the loop did not turn: silent
    hb.tick += 1
    assert hb.beat() and not hb.beat()
    hb.state = "finishing"
    assert hb.beat()
    assert [m["state"] for m in sink.sent] == ["building", "building", "running", "running", "finishing"]
    assert all(m["event"] == "heartbeat" for m in sink.sent)


def test_watchdog_option_is_checked():
    from ibemu.cli import main
    for bad in ("0.1", "inf", "nan", "x"):
        with pytest.raises(SystemExit) as e:
            main(["run", "quickstart", "--clock", "wall", "--watchdog", bad])
        assert e.value.code == 2
    with pytest.raises(UserError, match="--watchdog"):
        controller.run_wall(load_scenario("scenarios/quickstart.toml"), workers=1, watchdog=0.2)


def test_process_state_names_a_stopped_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while not process_state(child.pid).startswith("T") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process_state(child.pid) == "T (stopped)"
    finally:
        child.kill()
        child.wait()
    assert process_state(child.pid) == "unknown"


# ---------------------------------------------------------------- a worker's crash (Deliver 5's symptom)

BOXED = """\
  + Exception Group Traceback (most recent call last):
  |   File "ibemu/runtime/worker.py", line 191, in run_worker
  | ExceptionGroup: Exceptions from Trio nursery (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "ibemu/runtime/loop.py", line 114, in wall_of
    |     return self.t0 + t_ps / self.ps_per_wall
    |                      ~~~~~^~~~~~~~~~~~~~~~~~
    | ZeroDivisionError: float division by zero
    +------------------------------------
"""


def test_the_error_line_is_taken_from_inside_an_exception_groups_box(tmp_path):
    f = tmp_path / "worker0.err"
    f.write_text(BOXED)
    assert last_error_line(f) == "ZeroDivisionError: float division by zero"
    f.write_text("warming up\nibemu: scenario.toml: no such file\n")
    assert last_error_line(f) == "ibemu: scenario.toml: no such file"
    try:
        try:
            1 / 0
        except ZeroDivisionError as inner:
            raise ExceptionGroup("outer", [ExceptionGroup("inner", [inner])]) from None
    except ExceptionGroup as e:
        assert describe_error(e) == "ZeroDivisionError: division by zero"


def test_workers_that_fail_before_recording_leave_earlier_results_alone(tmp_path, monkeypatch):
    """Every worker fails at once (here: the hand-over file is not a scenario): the
    error is the worker's own line, and the output folder's earlier results are not
    replaced by empty partial ones."""
    out = tmp_path / "run"
    out.mkdir()
    earlier = {"earlier": True}
    (out / "results.json").write_text(json.dumps(earlier))

    def bad_handover(path, scn):
        Path(path).write_text(json.dumps({"format": "something else"}))
    monkeypatch.setattr(controller, "write_scenario", bad_handover)
    scn = load_scenario("scenarios/quickstart.toml", ['scenario.duration="1ms"'])
    with pytest.raises(WallRunError) as e:
        controller.run_wall(scn, out_dir=out, workers=2, realtime=False)
    msg = str(e.value)
    assert "not a scenario hand-over file" in msg and "exited with status" in msg
    assert "left as it was" in msg and "+---" not in msg
    assert json.loads((out / "results.json").read_text()) == earlier
    assert not (out / "flows.csv").exists()


# ---------------------------------------------------------------- Deliver 7: no code from data

@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_the_scenario_hand_over_is_json_and_reads_back_equal(tmp_path, path):
    scn = load_scenario(path)
    f = tmp_path / "scenario.json"
    handover.write_scenario(f, scn)
    json.loads(f.read_text())                       # plain JSON
    assert handover.read_scenario(f) == scn


def test_a_changed_scenario_object_reaches_the_workers_as_changed(tmp_path):
    scn = load_scenario("scenarios/quickstart.toml")
    scn.flows[0].name = "renamed"
    scn.duration = 123_456_789
    handover.write_scenario(tmp_path / "s.json", scn)
    back = handover.read_scenario(tmp_path / "s.json")
    assert back.flows[0].name == "renamed" and back.duration == 123_456_789


@pytest.mark.parametrize("payload", [
    {"$type": "os:system", "fields": {}},
    {"$type": "subprocess:Popen", "fields": {"args": ["touch", "MARKER"]}},
    {"$type": "builtins:eval", "fields": {}},
    {"$type": "ibemu.scenario.model:Scenario", "fields": {"name": "x", "duration": 1, "__class__": 1}},
    {"$reduce": ["os:system", "touch MARKER"]},
])
def test_a_crafted_hand_over_file_is_refused_without_running_anything(tmp_path, payload):
    f = tmp_path / "scenario.json"
    f.write_text(json.dumps({"format": handover.FORMAT, "scenario": payload}).replace("MARKER", str(tmp_path / "m")))
    with pytest.raises(handover.HandoverError):
        handover.read_scenario(f)
    assert not (tmp_path / "m").exists()


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


def test_a_crafted_run_folder_cannot_execute_code_through_perfquery_live(tmp_path):
    """A shared run folder with a pickle payload where ibemu once read one, and a
    hand-over file naming a function: ``perfquery --live`` reads only the JSON, refuses
    it with one line, and nothing runs."""
    from ibemu.runtime.mgmt import live_perfquery
    marker = tmp_path / "pwned"
    parts = tmp_path / "run" / "parts"
    parts.mkdir(parents=True)
    (parts / "scenario.pickle").write_bytes(pickle.dumps(_Evil(marker)))
    (parts / "scenario.json").write_text(json.dumps(
        {"format": handover.FORMAT, "scenario": {"$type": "os:system", "fields": {"command": "touch %s" % marker}}}))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)      # looks like a running emulation
    sock.bind(str(parts / "mgmt.sock"))
    try:
        with pytest.raises(handover.HandoverError, match="not a scenario type"):
            live_perfquery(tmp_path / "run", "H1", None)
        (parts / "scenario.json").unlink()                        # only the pickle: not read at all
        with pytest.raises(Exception, match="no running emulation"):
            live_perfquery(tmp_path / "run", "H1", None)
    finally:
        sock.close()
    assert not marker.exists()


def test_the_hidden_scenario_pickle_flag_is_gone():
    from ibemu.cli import main
    with pytest.raises(SystemExit) as e:
        main(["node", "--scenario-pickle", "x.pickle", "--control"])
    assert e.value.code == 2


# what turns bytes into code or objects: none of it may appear in ibemu
FORBIDDEN = re.compile(r"\bimport\s+(pickle|cPickle|marshal|shelve|dill|jsonpickle|cloudpickle)\b"
                       r"|\bfrom\s+(pickle|marshal|shelve|dill|jsonpickle|cloudpickle)\b"
                       r"|\b(pickle|marshal|shelve|dill)\.\w+"
                       r"|(?<![\w.])(eval|exec|compile|__import__)\s*\("
                       r"|\byaml\.(unsafe_)?load\b"
                       r"|\bimportlib\.import_module\s*\(")


def test_nothing_in_ibemu_loads_code_from_data():
    hits = []
    for f in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append("%s:%d: %s" % (f.relative_to(ROOT), n, line.strip()))
    # the package's lazy attributes import from a fixed table of ibemu's own modules
    allowed = [h for h in hits if h.startswith("ibemu/__init__.py:") and "importlib.import_module(module)" in h]
    assert sorted(set(hits) - set(allowed)) == []
    assert FORBIDDEN.search("x = pickle.loads(b)") and FORBIDDEN.search("eval(text)")
    assert not FORBIDDEN.search("re.compile(r'x')") and not FORBIDDEN.search("self.eval_rate(x)")
