"""``ibemu run SCENARIO --clock wall``: the multi-process launcher (issue 4 item 2).

The controller partitions the nodes (:mod:`.partition`), hands out one UDP address per
node port (:mod:`.addrmap`, from 18600 on 127.0.0.1), starts one worker process per
part (``python -m ibemu node ... --control``, :mod:`.worker`), waits until every worker
has bound its sockets, agrees a start instant a little in the future, shows progress
(the slowest worker's emulated time), collects each worker's part (series, counters,
datagram counts) on its control channel (JSON lines on the worker's stdin/stdout), and
merges the parts and the capture parts into the same output folder as the virtual-time
engine writes.

Failures (the issue's rules):

- Ctrl-C (SIGINT or SIGTERM to the controller): every worker is told to stop, writes what it
  recorded so far, and the controller writes the output folder from that (results.json
  says ``"completed": false``), then exits 130.
- A worker that dies is noticed at once (its control pipe closes; the controller also
  polls every 0.1 s): the others are stopped, the worker is named with its exit status
  and the last line of its error output, the partial outputs are written, exit 1.
- No orphans: workers run in their own session (a terminal's Ctrl-C reaches only the
  controller, which stops them in order), stop when their control pipe closes, are
  killed by the kernel if the controller dies (PR_SET_PDEATHSIG), and the controller
  kills and reaps any worker still alive when it returns, whatever happened.
"""
from __future__ import annotations

import json
import os
import pickle
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..build import build_fabric
from ..errors import UserError
from ..fabric.integrity import credit_problems, merge_records
from ..results import Progress, write_outputs
from ..wire.shim import DEFAULT_PORT_BASE
from . import DEFAULT_DILATION
from .addrmap import assign, port_keys, write_map
from .loop import OVERLOAD
from .merge import merge_captures, merge_metrics, read_part
from .mgmt import SOCKET_NAME, Endpoint
from .partition import partition
from .sockets import free_port_block
from .worker import new_metrics

READY_TIMEOUT = 60.0
STOP_GRACE = 5.0


class WallRunError(UserError):
    """A wall-clock run failed (a worker died); partial outputs were kept."""


@dataclass
class Worker:
    index: int
    nodes: list
    proc: subprocess.Popen
    part: Path
    pcap: Path | None
    errfile: Path
    buf: bytes = b""
    ready: bool = False
    done: bool = False
    closed: bool = False
    t: int = 0
    data: dict | None = None            # the worker's part, from its "done" message
    messages: list = field(default_factory=list)

    def label(self) -> str:
        names = ", ".join(self.nodes[:6]) + (", ..." if len(self.nodes) > 6 else "")
        return "worker %d (pid %d; nodes %s)" % (self.index, self.proc.pid, names)

    def send(self, **msg) -> None:
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def error_text(self) -> str:
        """Exit status and the last line of its error output."""
        rc = self.proc.poll()
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
        try:
            lines = [ln for ln in self.errfile.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            lines = []
        return status + (": " + lines[-1].strip() if lines else "")


@dataclass
class WallResult:
    scenario: object
    metrics: object
    summary: dict
    events: int
    wall_seconds: float
    counters: dict
    runtime: dict
    completed: bool
    out_dir: Path | None = None
    pcap: str | None = None
    error: str | None = None
    credit_problems: list | None = None     # credit_problems() of the workers' reports
    integrity: dict | None = None           # merged PayloadCheck records (integrity=True)


def _package_root() -> str:
    import ibemu
    return str(Path(ibemu.__file__).resolve().parent.parent)


def _spawn(index, nodes, args, workdir: Path, pcap: bool, env) -> Worker:
    part = workdir / ("worker%d.json" % index)
    cap = workdir / ("worker%d.pcap" % index) if pcap else None
    errfile = workdir / ("worker%d.err" % index)
    cmd = [sys.executable, "-m", "ibemu", "node", "--control", "--nodes", ",".join(nodes),
           "--part", str(part)] + args
    if cap:
        cmd += ["--pcap", str(cap)]
    with open(errfile, "wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True, env=env, close_fds=True)
    os.set_blocking(proc.stdout.fileno(), False)
    return Worker(index, list(nodes), proc, part, cap, errfile)


def _read(w: Worker) -> None:
    try:
        chunk = os.read(w.proc.stdout.fileno(), 65536)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if not chunk:
        w.closed = True
        return
    w.buf += chunk
    *lines, w.buf = w.buf.split(b"\n")
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        ev = msg.get("event")
        if ev == "error":
            w.messages.append(msg)
        elif ev == "ready":
            w.ready = True
        elif ev == "progress":
            w.t = max(w.t, int(msg.get("t", 0)))
        elif ev == "done":
            w.done = True
            w.data = msg.get("data")
        elif ev == "mad":                  # an answer to a live management request (mgmt.py)
            w.messages.append(msg)


def _reap(workers, grace: float) -> None:
    """Stop every worker: ask, wait up to *grace* s, then SIGKILL its group; reap all."""
    for w in workers:
        if w.proc.poll() is None:
            w.send(cmd="stop")
    deadline = time.monotonic() + grace
    for w in workers:
        while w.proc.poll() is None and time.monotonic() < deadline:
            if not w.done and not w.closed:
                _read(w)
            time.sleep(0.02)
    for w in workers:
        if w.proc.poll() is None:
            try:
                os.killpg(w.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                w.proc.kill()
        w.proc.wait()
        for s in (w.proc.stdin, w.proc.stdout):
            try:
                s.close()
            except OSError:
                pass


def run_wall(scn, out_dir=None, pcap=None, workers: int | None = None,
             dilation: float = DEFAULT_DILATION, progress: bool | None = None,
             window=None, port_base: int = DEFAULT_PORT_BASE, host: str = "127.0.0.1",
             drop_link_every: int = 0, keep_parts: bool = False,
             announce: bool = False, realtime: bool = True, faults_until: int | None = None,
             integrity: bool = False, external=()) -> WallResult:
    """Run *scn* in real time over *workers* processes (default: the number of cores).

    *announce*: print a line on stderr when the workers start.  Returns a
    :class:`WallResult`; raises :class:`WallRunError` after writing the partial
    outputs when a worker died, and KeyboardInterrupt after writing them on Ctrl-C.

    The scenario's ``[faults]`` apply at the sending sockets (before emulated
    *faults_until*, default: the whole run).  *integrity*: the workers attach a payload
    check; its merged record is ``result.integrity`` (for
    :func:`ibemu.fabric.integrity.verify`).  ``result.credit_problems`` lists the
    credits not back to idle at the end (from every worker's ports).  *external*: node
    names no worker runs -- their addresses are in the map (``parts/addresses.toml``),
    and whatever binds them is their peer (``ibemu node`` elsewhere, or a test's fuzzer).
    """
    if not dilation or dilation <= 0:
        raise UserError("--dilation must be positive, got %r" % dilation)
    workers = workers or os.cpu_count() or 2
    if workers < 1:
        raise UserError("--workers must be at least 1, got %d" % workers)
    if not 1024 <= port_base <= 65535:
        raise UserError("--port-base must be in 1024..65535, got %d" % port_base)
    if pcap:
        try:
            Path(pcap).resolve().parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError("--pcap %s: %s" % (pcap, e.strerror)) from None
    fabric = build_fabric(scn)
    external = set(external or ())
    unknown = sorted(external - set(fabric.nodes))
    if unknown:
        raise UserError("no node %s in scenario %s" % (", ".join(unknown), scn.name))
    groups = [g for g in ([n for n in g if n not in external] for g in partition(fabric, workers)) if g]
    if not groups:
        raise UserError("every node of %s is external: nothing to run" % scn.name)
    keys = port_keys(fabric)
    base = free_port_block(host, max(1, len(keys)), port_base)
    amap = assign(fabric, lambda _n: host, base)
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        workdir = out / "parts"
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir()
    else:
        import tempfile
        workdir = Path(tempfile.mkdtemp(prefix="ibemu-wall-"))
    mapfile = workdir / "addresses.toml"
    write_map(mapfile, amap)
    scnfile = workdir / "scenario.pickle"
    scnfile.write_bytes(pickle.dumps(scn))
    args = ["--scenario-pickle", str(scnfile), "--map", str(mapfile), "--dilation", repr(float(dilation)),
            "--parent", str(os.getpid())]
    if drop_link_every:
        args += ["--drop-link-every", str(drop_link_every)]
    if not realtime:
        args += ["--no-realtime"]
    if faults_until is not None:
        args += ["--faults-until", str(int(faults_until))]
    if integrity:
        args += ["--check-integrity"]
    env = dict(os.environ)
    root = _package_root()
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")

    interrupted = False

    def on_sigint(signum, frame):
        nonlocal interrupted
        interrupted = True

    old_handlers = {}
    for sig in (signal.SIGINT, signal.SIGTERM):         # SIGTERM: stopped like Ctrl-C
        try:
            old_handlers[sig] = signal.signal(sig, on_sigint)
        except ValueError:                 # not the main thread: the caller handles signals
            pass
    ws: list[Worker] = []
    mgmt = None
    failed: Worker | None = None
    bar = None
    t_wall = time.perf_counter()
    sel = selectors.DefaultSelector()
    try:
        for i, g in enumerate(groups):
            w = _spawn(i, g, args, workdir, bool(pcap), env)
            ws.append(w)
            sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        try:                                        # live management (mgmt.py)
            mgmt = Endpoint(workdir / SOCKET_NAME, fabric, ws)      # <out>/parts/mgmt.sock
            sel.register(mgmt, selectors.EVENT_READ, mgmt)
        except OSError:
            mgmt = None

        def pump(timeout: float) -> Worker | None:
            """Read control messages; return a worker that died (None: all fine)."""
            for key, _ in sel.select(timeout):
                w = key.data
                if w is mgmt:
                    mgmt.on_readable()
                    continue
                _read(w)
                if mgmt is not None and w.messages:
                    for m in [m for m in w.messages if m.get("event") == "mad"]:
                        w.messages.remove(m)
                        mgmt.on_worker_message(m)
                if w.closed:
                    sel.unregister(w.proc.stdout)
            for w in ws:
                if not w.done and (w.closed or w.proc.poll() is not None):
                    if not w.closed:
                        _read(w)
                    if not w.done:
                        try:                    # its pipe closed: let it be reaped for the status
                            w.proc.wait(timeout=0.5)
                        except subprocess.TimeoutExpired:
                            pass
                        return w
            return None

        deadline = time.monotonic() + READY_TIMEOUT
        while not all(w.ready for w in ws) and not interrupted:
            failed = pump(0.1)
            if failed:
                break
            if time.monotonic() > deadline:
                raise WallRunError("workers did not start within %.0f s: %s" % (
                    READY_TIMEOUT, ", ".join(w.label() for w in ws if not w.ready)))
        if not failed and not interrupted:
            start_at = time.time() + 0.2 + 0.05 * len(ws)
            for w in ws:
                w.send(cmd="start", start_at=start_at)
            if mgmt is not None:
                mgmt.started = True
            if announce:
                print("ibemu: %d workers (pids %s) running %g ms of emulated time at dilation %g: "
                      "about %.1f s" % (len(ws), " ".join(str(w.proc.pid) for w in ws),
                                        scn.duration / 1e9, dilation, scn.duration * dilation / 1e12),
                      file=sys.stderr, flush=True)
            if progress is None:
                progress = scn.duration * dilation > 3e12      # runs of more than 3 s
            bar = Progress(scn.duration, enabled=bool(progress))
            while not all(w.done for w in ws) and not interrupted:
                failed = pump(0.1)
                if failed:
                    break
                if bar.enabled:
                    bar.update(min(w.t for w in ws))
        if bar is not None:
            bar.close()
        if failed is not None:
            print("ibemu: %s %s; stopping the other workers" % (failed.label(), failed.error_text()),
                  file=sys.stderr, flush=True)
        elif interrupted:
            print("ibemu: interrupted; stopping the workers and keeping what they recorded",
                  file=sys.stderr, flush=True)
        _reap(ws, STOP_GRACE)
    finally:
        sel.close()
        if mgmt is not None:
            mgmt.close()
        if bar is not None:
            bar.close()
        if any(w.proc.poll() is None for w in ws):     # an exception above: kill them
            _reap(ws, 0.0)
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    wall = time.perf_counter() - t_wall

    parts = [w.data or read_part(w.part) for w in ws]     # the file: a worker that died late
    metrics = new_metrics(scn)
    metrics.add_links(fabric.link_capacity)
    metrics.add_flow_capacity(fabric.flow_capacity)
    merge_metrics(metrics, [p for p in parts if p])
    runtime = _runtime_summary(ws, parts, dilation, base)
    completed = not interrupted and failed is None and all(p and p["completed"] for p in parts)
    error = None
    if failed is not None:
        error = "%s %s" % (failed.label(), failed.error_text())
    elif interrupted:
        error = "interrupted"
    counters: dict = {}
    for p in parts:                     # a link's fault counts come from both of its ends
        for n, c in (p["node_counters"].items() if p else ()):
            mine = counters.setdefault(n, {})
            for k, v in c.items():
                mine[k] = mine.get(k, 0) + v
    pcap_frames = None
    if pcap:
        pcap_frames = merge_captures([w.pcap for w in ws], pcap)
    t_from, t_to = window if window else (None, None)
    summary = metrics.summary(t_from, t_to)
    result = WallResult(scn, metrics, summary, runtime["events"], wall, counters, runtime,
                        completed, pcap=pcap, error=error)
    if all(p and "credits" in p for p in parts):
        result.credit_problems = credit_problems([p["credits"] for p in parts])
    if integrity:
        result.integrity = merge_records([p.get("integrity", {}) for p in parts if p])
    if out is not None:
        from ..run import lids_of
        extra = {"clock": "wall", "dilation": dilation, "workers": len(ws), "completed": completed,
                 "lids": lids_of(fabric),
                 "error": error, "events": runtime["events"], "runtime": runtime,
                 "pcap": Path(pcap).name if pcap else None, "pcap_frames": pcap_frames}
        write_outputs(metrics, scn, out, extra=extra, window=window)
        result.out_dir = out
    if completed and not keep_parts:
        shutil.rmtree(workdir, ignore_errors=True)
    if failed is not None:
        where = (" ; partial results in %s/" % out) if out is not None else ""
        raise WallRunError(error + where)
    if interrupted:
        raise KeyboardInterrupt
    return result


def _runtime_summary(ws, parts, dilation, base) -> dict:
    per = []
    tot = {"events": 0, "datagrams_sent": 0, "datagrams_received": 0, "datagrams_lost": 0,
           "datagrams_late": 0, "datagrams_dropped_injected": 0, "datagrams_lost_injected": 0,
           "datagrams_duplicated": 0, "duplicates_dropped": 0, "strangers": 0, "send_errors": 0,
           "bad_datagrams": 0, "slips": 0, "slip_ps": 0}
    max_slip = 0
    for w, p in zip(ws, parts):
        st = p["runtime"] if p else {}
        per.append({"worker": w.index, "nodes": w.nodes, "part_written": p is not None,
                    "scheduling": p.get("scheduling") if p else None, **st})
        for k in tot:
            tot[k] += st.get(k, 0)
        max_slip = max(max_slip, st.get("max_slip_ps", 0))
    tot["max_slip_ps"] = max_slip
    tot["overloaded"] = [w["worker"] for w in per if w.get("overloaded")]
    tot["mean_slip_ps"] = tot["slip_ps"] / tot["slips"] if tot["slips"] else 0
    tot["dilation"] = dilation
    tot["udp_port_base"] = base
    tot["workers"] = per
    return tot


def format_runtime_line(runtime: dict) -> str:
    line = ("%d datagrams sent, %d received, %d lost; %d cross-process arrivals behind their "
            "receiver (mean %.0f ns, max %.0f ns emulated)" % (
                runtime["datagrams_sent"], runtime["datagrams_received"], runtime["datagrams_lost"],
                runtime["slips"], runtime["mean_slip_ps"] / 1000, runtime["max_slip_ps"] / 1000))
    if runtime.get("datagrams_lost_injected") or runtime.get("datagrams_duplicated"):
        line += ("\nlink faults: %d frames lost and %d duplicated on purpose (%d duplicates dropped "
                 "by the receivers; per link in results.json counters)" % (
                     runtime["datagrams_lost_injected"], runtime["datagrams_duplicated"],
                     runtime["duplicates_dropped"]))
    if runtime.get("strangers") or runtime.get("bad_datagrams"):
        line += ("\n%d datagrams from addresses that are not the port's peer and %d malformed "
                 "ones dropped" % (runtime.get("strangers", 0), runtime.get("bad_datagrams", 0)))
    if runtime.get("overloaded"):
        line += ("\nwarning: worker %s fell more than %.0f ms behind the wall clock: this machine "
                 "is too slow for the dilation (try a larger --dilation)" % (
                     ", ".join(map(str, runtime["overloaded"])), 1000 * OVERLOAD))
    return line
