"""The controller's worker processes (issue 4 item 2): starting one ``python -m ibemu
node --control`` per part, reading their control lines, and stopping and reaping them.

Control channel: JSON lines on the worker's stdin (commands) and stdout (events), as
:mod:`.worker` describes.  :class:`WorkerPool` waits on every worker's stdout and on the
live-management socket (:class:`~.mgmt.Endpoint`) with one selector, so that a worker
that dies is noticed at once (its pipe closes; the pool also polls every 0.1 s).

Watchdog (issue 14 Deliver 3): every line a worker writes (it sends a heartbeat every
0.5 s, :mod:`.worker`) renews it; a worker that has said something and then stays
silent for longer than the pool's *watchdog* bound (default :data:`WATCHDOG`; ``ibemu
run --clock wall --watchdog S``) is reported like a worker that died -- by name, with
its process state (``T (stopped)`` for SIGSTOP) and the last state it reported -- and
killed at once; the others are stopped and the partial outputs written.

No orphans: workers run in their own session (a terminal's Ctrl-C reaches only the
controller, which stops them in order), stop when their control pipe closes, are killed
by the kernel if the controller dies (PR_SET_PDEATHSIG, :mod:`.worker`), and
:meth:`WorkerPool.close` kills and reaps any worker still alive, whatever happened.
"""
from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from . import WATCHDOG
from .mgmt import Endpoint

if TYPE_CHECKING:
    from ..fabric.network import Fabric

READY_TIMEOUT = 60.0
"""Wall seconds the workers have to build their fabric and bind their sockets."""
STOP_GRACE = 5.0
"""Wall seconds a worker has to write its part after ``stop`` before it is killed."""


Message = dict[str, Any]
"""One control line, decoded."""


class WallRunError(UserError):
    """A wall-clock run failed (a worker died); partial outputs were kept."""


@dataclass
class Worker:
    """One worker process and what its control lines said so far."""
    index: int
    nodes: list[str]
    proc: subprocess.Popen[bytes]
    part: Path                          # the part file it writes at the end
    pcap: Path | None                   # its capture part
    errfile: Path                       # its stderr
    buf: bytes = b""                    # an incomplete control line
    ready: bool = False                 # sockets bound, waiting for "start"
    done: bool = False                  # sent its part
    closed: bool = False                # its stdout closed
    t: int = 0                          # emulated ps reached (progress lines)
    data: dict[str, Any] | None = None  # the worker's part, from its "done" message
    messages: list[Message] = field(default_factory=list)   # "error" and "mad" lines
    last_seen: float = field(default_factory=time.monotonic)  # when it last wrote a line
    heard: bool = False                 # it wrote a line (the watchdog applies from then)
    state: str = "starting"             # what its heartbeats last said
    silent: float | None = None         # the watchdog fired: seconds it had been silent
    bound: float | None = None          # ... with this bound
    hang_state: str = ""                # ... and its process state then (process_state())

    def label(self) -> str:
        names = ", ".join(self.nodes[:6]) + (", ..." if len(self.nodes) > 6 else "")
        return "worker %d (pid %d; nodes %s)" % (self.index, self.proc.pid, names)

    def send(self, **msg: Any) -> None:
        """Write one control line (a worker that is gone is ignored)."""
        stdin = self.proc.stdin
        if stdin is None:
            return
        try:
            stdin.write((json.dumps(msg) + "\n").encode())
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def error_text(self) -> str:
        """Exit status and the last line of its error output."""
        rc = self.proc.poll()
        if self.silent is not None:
            return "sent no heartbeat for %.1f s (bound %.1f s, --watchdog): process state %s; " \
                   "last reported state %s%s" % (
                       self.silent, self.bound or 0.0, self.hang_state, self.state,
                       " at %.3f ms emulated" % (self.t / 1e9) if self.t else "")
        if rc is None:
            status = "stopped answering"
        elif rc < 0:
            try:
                status = "was killed by signal %d (%s)" % (-rc, signal.Signals(-rc).name)
            except ValueError:
                status = "was killed by signal %d" % -rc
        else:
            status = "exited with status %d" % rc
        for m in self.messages:
            if m.get("event") == "error":
                return "%s: %s" % (status, m.get("message"))
        line = last_error_line(self.errfile)
        return status + (": " + line if line else "")

    def process_state(self) -> str:
        """Its state as Linux shows it (``T (stopped)``), or ``unknown``."""
        return process_state(self.proc.pid)

    def read(self) -> None:
        """Read what its stdout has (non-blocking) and take in the whole lines."""
        assert self.proc.stdout is not None
        try:
            chunk = os.read(self.proc.stdout.fileno(), 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        if lines:
            self.last_seen = time.monotonic()
            self.heard = True
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            ev = msg.get("event")
            if ev == "heartbeat":
                self.state = str(msg.get("state", self.state))
            elif ev == "error":
                self.messages.append(msg)
            elif ev == "ready":
                self.ready = True
            elif ev == "progress":
                self.t = max(self.t, int(msg.get("t", 0)))
            elif ev == "done":
                self.done = True
                self.data = msg.get("data")
            elif ev == "mad":              # an answer to a live management request (mgmt.py)
                self.messages.append(msg)

    def take_mad_answers(self) -> list[Message]:
        """The ``mad`` lines read so far, removed from :attr:`messages`."""
        answers = [m for m in self.messages if m.get("event") == "mad"]
        for m in answers:
            self.messages.remove(m)
        return answers


_STATES = {"R": "running", "S": "sleeping", "D": "disk sleep", "T": "stopped", "t": "tracing stop",
           "Z": "zombie", "X": "dead", "I": "idle"}


def process_state(pid: int) -> str:
    """The state letter of /proc/PID/stat with its meaning, e.g. ``T (stopped)``."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            letter = f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "unknown"
    return "%s (%s)" % (letter, _STATES.get(letter, "?"))


_BOX = re.compile(r"^[\s|+\-]*")
_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def last_error_line(errfile: Path) -> str:
    """The last meaningful line of a worker's error output: a traceback's final
    ``Type: reason`` line, also inside the box an exception group is printed in (its
    ``|`` margins and ``+---`` borders are not errors)."""
    try:
        text = errfile.read_text(errors="replace")
    except OSError:
        return ""
    lines = [_BOX.sub("", ln).strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("^") and not set(ln) <= set("~^ ")]
    errors = [ln for ln in lines if _ERROR.match(ln) and not ln.startswith(("ExceptionGroup", "BaseExceptionGroup"))]
    if errors:
        return errors[-1]
    return lines[-1] if lines else ""


def package_root() -> str:
    """The folder holding the ``ibemu`` package this process runs."""
    import ibemu
    return str(Path(ibemu.__file__).resolve().parent.parent)


def worker_env() -> dict[str, str]:
    """This process's environment with :func:`package_root` first on PYTHONPATH, so the
    workers run the same ibemu as the controller."""
    env = dict(os.environ)
    root = package_root()
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def spawn(index: int, nodes: Sequence[str], args: Sequence[str], workdir: Path, pcap: bool,
          env: dict[str, str]) -> Worker:
    """Start worker *index* running *nodes* (``ibemu node --control ... *args*``), its
    part, capture part and stderr in *workdir*."""
    part = workdir / ("worker%d.json" % index)
    cap = workdir / ("worker%d.pcap" % index) if pcap else None
    errfile = workdir / ("worker%d.err" % index)
    cmd = [sys.executable, "-m", "ibemu", "node", "--control", "--nodes", ",".join(nodes),
           "--part", str(part), *args]
    if cap:
        cmd += ["--pcap", str(cap)]
    with open(errfile, "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True, env=env, close_fds=True)
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    return Worker(index, list(nodes), proc, part, cap, errfile)


def reap(workers: Iterable[Worker], grace: float) -> None:
    """Stop every worker: ask, wait up to *grace* s, then SIGKILL its group; reap all."""
    workers = list(workers)
    for w in workers:
        if w.proc.poll() is None and w.silent is not None:      # hung: it would not answer
            _kill(w)
        elif w.proc.poll() is None:
            w.send(cmd="stop")
    deadline = time.monotonic() + grace
    for w in workers:
        while w.proc.poll() is None and time.monotonic() < deadline:
            if not w.done and not w.closed:
                w.read()
            time.sleep(0.02)
    for w in workers:
        if w.proc.poll() is None:
            _kill(w)
        w.proc.wait()
        for s in (w.proc.stdin, w.proc.stdout):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass


def _kill(w: Worker) -> None:
    """SIGKILL the worker's process group (a stopped process dies of it too)."""
    try:
        os.killpg(w.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        w.proc.kill()


class WorkerPool:
    """The workers of one run and the selector over their control pipes (and the
    live-management socket).  Use as a context manager: leaving it closes the selector
    and the socket and kills and reaps any worker still alive."""

    def __init__(self, workdir: Path, args: Sequence[str], pcap: bool, watchdog: float = WATCHDOG) -> None:
        self.workdir = workdir
        self.watchdog = watchdog
        self.args = list(args)
        self.pcap = pcap
        self.env = worker_env()
        self.workers: list[Worker] = []
        self.mgmt: Endpoint | None = None
        self.sel = selectors.DefaultSelector()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def spawn(self, groups: Iterable[Sequence[str]]) -> None:
        """One worker per group of node names."""
        for nodes in groups:
            w = spawn(len(self.workers), nodes, self.args, self.workdir, self.pcap, self.env)
            self.workers.append(w)
            assert w.proc.stdout is not None
            self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    def serve_mgmt(self, path: Path, fabric: Fabric) -> None:
        """Open the live-management socket at *path* (best effort, :mod:`.mgmt`)."""
        try:
            self.mgmt = Endpoint(path, fabric, self.workers)
            self.sel.register(self.mgmt, selectors.EVENT_READ, self.mgmt)
        except OSError:
            self.mgmt = None

    def pump(self, timeout: float) -> Worker | None:
        """Read control messages; return a worker that died or that the watchdog found
        silent for longer than :attr:`watchdog` (None: all fine)."""
        mgmt = self.mgmt
        for key, _ in self.sel.select(timeout):
            w = key.data
            if mgmt is not None and w is mgmt:
                mgmt.on_readable()
                continue
            assert isinstance(w, Worker)
            w.read()
            if mgmt is not None and w.messages:
                for m in w.take_mad_answers():
                    mgmt.on_worker_message(m)
            if w.closed:
                assert w.proc.stdout is not None
                self.sel.unregister(w.proc.stdout)
        for w in self.workers:
            if not w.done and (w.closed or w.proc.poll() is not None):
                if not w.closed:
                    w.read()
                if not w.done:
                    try:                    # its pipe closed: let it be reaped for the status
                        w.proc.wait(timeout=0.5)
                    except subprocess.TimeoutExpired:
                        pass
                    return w
        now = time.monotonic()
        for w in self.workers:
            if w.heard and not w.done and not w.closed and now - w.last_seen > self.watchdog:
                w.silent, w.bound, w.hang_state = now - w.last_seen, self.watchdog, w.process_state()
                return w
        return None

    def wait_ready(self, stopped: Callable[[], bool]) -> Worker | None:
        """Wait until every worker has bound its sockets (or *stopped()*); a worker
        that died meanwhile; :class:`WallRunError` after :data:`READY_TIMEOUT`."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not all(w.ready for w in self.workers) and not stopped():
            failed = self.pump(0.1)
            if failed:
                return failed
            if time.monotonic() > deadline:
                raise WallRunError("workers did not start within %.0f s: %s" % (
                    READY_TIMEOUT, ", ".join(w.label() for w in self.workers if not w.ready)))
        return None

    def start(self, start_at: float) -> None:
        """Tell every worker to start at Unix time *start_at*."""
        for w in self.workers:
            w.send(cmd="start", start_at=start_at)
        if self.mgmt is not None:
            self.mgmt.started = True

    def wait_done(self, stopped: Callable[[], bool],
                  progress: Callable[[int], None] | None = None) -> Worker | None:
        """Wait until every worker has sent its part (or *stopped()*), calling
        *progress* with the slowest worker's emulated time; a worker that died."""
        while not all(w.done for w in self.workers) and not stopped():
            failed = self.pump(0.1)
            if failed:
                return failed
            if progress is not None:
                progress(min(w.t for w in self.workers))
        return None

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop and reap every worker (:func:`reap`)."""
        reap(self.workers, grace)

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers]

    def close(self) -> None:
        self.sel.close()
        if self.mgmt is not None:
            self.mgmt.close()
        if any(w.proc.poll() is None for w in self.workers):     # an exception: kill them
            reap(self.workers, 0.0)
