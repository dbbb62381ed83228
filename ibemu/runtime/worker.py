"""One worker: a process that runs some of a scenario's nodes in real time (issue 4
items 2 and 6; ``ibemu node``).

Every worker builds the whole fabric from the scenario (the build is deterministic, so
all agree on ports, LIDs, queue pairs and forwarding tables) and runs only its own
nodes, on the addresses of the address map.  What its nodes record is its *part* (JSON:
the metrics' bins, node counters, the loop's datagram and slip counters), sent to the
controller on the control channel at the end and also written to a file (``--part``, or
``--out`` for ``ibemu node``); the frames they send go to a capture part.  The
controller merges the parts.

Control channel (``control=True``, used by the controller): JSON lines.  The worker
writes ``{"event": "ready"}`` once its sockets are bound, then ``progress`` lines
(emulated ps reached) about five times a second, and ``done`` (with the part) or
``error`` at the end;
it reads ``{"cmd": "start", "start_at": EPOCH}`` and ``{"cmd": "stop"}``, and
``{"cmd": "mad", ...}`` (a live management request, :mod:`.mgmt`; answered with
``{"event": "mad", ...}``).  Every line is one JSON object (a dict), so a message can
carry more keys without breaking a reader that does not know them.

Heartbeat (issue 14 Deliver 3): from its first moment a worker writes
``{"event": "heartbeat", "state": S}`` every :data:`HEARTBEAT_INTERVAL` s (S: building,
ready, running, finishing), from a thread of its own (:class:`Heartbeat`).  While the
emulation runs, the thread only beats when the trio loop has turned since the last beat,
so a loop that is stuck (a deadlock, a task that never yields) falls silent like a
stopped process; the controller's watchdog (:mod:`.workers`) notices either.  An
unexpected exception is sent as ``{"event": "error", "message": "<Type>: <reason>"}``
(the innermost one of an exception group) before the traceback goes to stderr.  End of input
(the controller is gone) stops it too, and on Linux it also asks the kernel to kill it
when its parent dies, so no worker outlives its controller.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from ..atomic import atomic_write_text
from ..build import build_fabric
from ..capture.pcapng import open_link_capture
from ..errors import UserError
from ..fabric.qp.responder import reorder_counters
from ..fabric.faults import engine_faults, fault_counters
from ..fabric.integrity import attach, credit_state
from ..fabric.node import Node
from ..run import PORT_SAMPLES, port_sampler, port_table
from ..scenario import Scenario
from .loop import NodeLoop
from .merge import new_metrics
from .mgmt import WorkerSide
from .sockets import rcvbuf_bytes


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when its parent exits (no orphans even when the
    controller itself is killed)."""
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent and os.getppid() != parent:
        os._exit(3)


WORKER_NICE = -10
RT_PRIORITY = 10


def raise_priority(realtime: bool) -> str:
    """Best effort: a real-time emulation suffers from every millisecond it waits for a
    CPU (a worker preempted for 4 ms at dilation 200 leaves 20 µs of emulated time
    unanswered), so a worker asks for real-time round-robin scheduling (SCHED_RR,
    priority 10) when allowed (root or CAP_SYS_NICE) and *realtime*, else nice -10 when
    allowed, else runs as it is.  It never spins while idle (it waits in select), and
    it drops back to normal scheduling if it falls behind the wall clock (the loop's
    overload callback, :func:`lower_priority`), so it cannot take a machine over;
    Linux also keeps 5 % of every second for other tasks (sched_rt_runtime_us)."""
    how = "normal"
    try:
        os.setpriority(os.PRIO_PROCESS, 0, WORKER_NICE)
        how = "nice %d" % WORKER_NICE
    except (OSError, AttributeError):
        pass
    if realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(RT_PRIORITY))
            how = "SCHED_RR %d" % RT_PRIORITY
        except (OSError, AttributeError):
            pass
    return how


def lower_priority() -> None:
    """Back to normal (SCHED_OTHER) scheduling, when a worker falls behind."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        pass


def _nice() -> int | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (OSError, AttributeError):
        return None


HEARTBEAT_INTERVAL = 0.5
"""Wall seconds between a worker's heartbeats (the controller's bound is several times this)."""


class Control:
    """The control channel's worker end: JSON lines on stdout / from stdin (one writer
    at a time: the heartbeat thread writes too, hence one lock for every instance)."""

    lock = threading.Lock()

    def __init__(self) -> None:
        self.out = sys.stdout

    def send(self, **msg: Any) -> None:
        line = json.dumps(msg) + "\n"
        with self.lock:
            try:
                self.out.write(line)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass

    @staticmethod
    def read_line() -> dict[str, Any] | None:
        """The next command (None: end of input, the controller is gone)."""
        line = sys.stdin.readline()
        if not line:
            return None
        try:
            msg: dict[str, Any] = json.loads(line)
            return msg
        except ValueError:
            return {"cmd": "?", "text": line.strip()}


class Heartbeat:
    """Sends ``{"event": "heartbeat", "state": ...}`` every *interval* s from a daemon
    thread.  In state ``running`` it beats only when :attr:`tick` moved since the last
    beat (the trio loop bumps it, :func:`_main`), so a stuck loop goes silent."""

    def __init__(self, ctl: Control, interval: float = HEARTBEAT_INTERVAL) -> None:
        self.ctl = ctl
        self.interval = interval
        self.state = "building"
        self.tick = 0
        self._seen = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self.ctl.send(event="heartbeat", state=self.state)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def beat(self) -> bool:
        """One beat, when due (see the class text); whether it was sent."""
        if self.state == "running":
            tick = self.tick
            if tick == self._seen:
                return False
            self._seen = tick
        self.ctl.send(event="heartbeat", state=self.state)
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.beat()


LOCAL_DATAGRAMS_ENV = "IBEMU_LOCAL_DATAGRAMS"


def local_datagrams_default(sync: str = "free") -> bool:
    """Whether frames between nodes of one worker travel as real datagrams.  Default:
    not with ``--sync exact`` (the scheduler hands them over in memory, as the virtual
    clock does, and only frames between workers are datagrams: the same results, a
    worker several times faster), yes with ``--sync free`` (so that every frame is seen
    on the loopback interface).  The environment variable ``IBEMU_LOCAL_DATAGRAMS``
    (inherited by the workers of ``ibemu run --clock wall``) says it for both: 1 to see
    every frame on the loopback interface, 0 for speed."""
    value = os.environ.get(LOCAL_DATAGRAMS_ENV)
    if value is None:
        return sync != "exact"
    return value.strip().lower() not in ("0", "no", "false", "off")


def describe_error(e: BaseException) -> str:
    """``Type: reason`` of *e*, or of the first innermost exception of an exception
    group (trio wraps a task's error in one or two)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e)
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__


def run_worker(scn: Scenario, node_names: Sequence[str], amap: Mapping[tuple[str, int], tuple[str, int]],
               dilation: float, *, part: str | Path | None = None, pcap: str | Path | None = None,
               control: bool = False, start_at: float | None = None, parent: int = 0,
               drop_link_every: int = 0, realtime: bool = True, faults_until: int | None = None,
               integrity: bool = False, key: bytes | None = None, sync: str = "exact",
               sync_file: str | None = None, processes: int = 2,
               local_datagrams: bool | None = None) -> dict[str, Any]:
    """Run *node_names* of *scn* on the addresses of *amap*; return (and write to
    *part*) what they recorded.  Raises UserError for bad input.

    The scenario's ``[faults]`` are applied at the sending sockets (until emulated
    *faults_until*, default: the whole run); the part has the per-link fault counters
    (``"link:<label>"``, the sending end's and the receiving end's) and the credit state
    of this worker's ports (``credits``, :func:`ibemu.fabric.integrity.credit_state`).
    *integrity*: attach a :class:`~ibemu.fabric.integrity.PayloadCheck` and put its
    record (digests in hex) in the part as ``integrity``.  *key*: the run's secret
    (:mod:`.delivery`); with *control* it is the first control line instead,
    ``{"cmd": "key", "key": HEX}`` (issue 14 item 1).  *sync*: ``exact`` (issue 27,
    :mod:`.exact`; its messages through the shared *sync_file* of a one-host run, else as
    datagrams; *processes*: how many processes take part, this one included) or ``free``.
    *local_datagrams*: whether the
    frames between nodes of this worker travel as datagrams (:class:`~.loop.NodeLoop`;
    None: as :func:`local_datagrams_default` says)."""
    ctl = Control() if control else None
    beat = Heartbeat(ctl).start() if ctl is not None else None
    try:
        if control:
            _die_with_parent(parent)
        return _run_worker(scn, node_names, amap, dilation, ctl, beat, part=part, pcap=pcap,
                           start_at=start_at, drop_link_every=drop_link_every, realtime=realtime,
                           faults_until=faults_until, integrity=integrity, key=key, sync=sync,
                           sync_file=sync_file, processes=processes,
                           local_datagrams=(local_datagrams_default(sync) if local_datagrams is None
                                            else local_datagrams))
    finally:
        if beat is not None:
            beat.stop()


def _run_worker(scn: Scenario, node_names: Sequence[str], amap: Mapping[tuple[str, int], tuple[str, int]],
                dilation: float, ctl: Control | None, beat: Heartbeat | None, *, part: str | Path | None,
                pcap: str | Path | None, start_at: float | None, drop_link_every: int, realtime: bool,
                faults_until: int | None, integrity: bool, key: bytes | None,
                local_datagrams: bool, sync: str = "exact", sync_file: str | None = None,
                processes: int = 2) -> dict[str, Any]:
    """:func:`run_worker` once the control channel and its heartbeat run."""
    scheduling = raise_priority(realtime)
    metrics = new_metrics(scn)
    fabric = build_fabric(scn, metrics)
    metrics.add_links(fabric.link_capacity)
    metrics.add_flow_capacity(fabric.flow_capacity)
    unknown = [n for n in node_names if n not in fabric.nodes]
    if unknown:
        raise UserError("no node %s in scenario %s (nodes: %s)" % (
            ", ".join(unknown), scn.name, ", ".join(fabric.nodes)))
    nodes = [fabric.nodes[n] for n in node_names]
    check = attach(fabric) if integrity else None
    if ctl is not None:
        msg = ctl.read_line()
        if msg is None or msg.get("cmd") != "key":
            raise UserError("no key on the control channel")
        key = bytes.fromhex(str(msg.get("key")))
    capture = open_link_capture(pcap, fabric.link_ends, fabric.nodes, scn.output.snaplen) if pcap else None
    loop = NodeLoop(nodes, fabric.wiring, amap, dilation, scn.duration, capture=capture,
                    rcvbuf=_rcvbuf,
                    drop_link_every=drop_link_every, faults=engine_faults(fabric.injectors),
                    faults_until=faults_until, key=key, local_datagrams=local_datagrams,
                    sync=sync, sync_file=sync_file, workers=processes)
    loop.on_overload = lower_priority
    # port counters sampled as run_virtual samples them (only this worker's ports)
    here = set(node_names)
    ports = [(label, p) for label, p in port_table(fabric) if label.rpartition(":")[0] in here]
    if ports:
        loop.sample_step = max(scn.output.bin, scn.duration // PORT_SAMPLES)
        loop.on_sample = port_sampler(ports, metrics)
    stopped = False
    try:
        if ctl is not None:
            if beat is not None:
                beat.state = "ready"
            ctl.send(event="ready", pid=os.getpid())
            msg = ctl.read_line()
            if msg is None or msg.get("cmd") != "start":
                stopped = True
            else:
                start_at = float(msg["start_at"])
        if not stopped:
            if start_at is None:
                start_at = time.time() + 1.0
            # the run allocates frames and tuples but makes no reference cycles worth
            # collecting mid-run; a full collection would stall the loop for milliseconds
            gc.collect()
            gc.freeze()
            gc.disable()
            try:
                if beat is not None:
                    beat.state = "running"
                stopped = trio.run(_main, loop, nodes, start_at, ctl, beat)
            finally:
                gc.enable()
                if beat is not None:
                    beat.state = "finishing"
    finally:
        loop.close()
        if capture is not None:
            capture.close()
    counters = {name: dict(sorted(n.counters.items())) for name, n in zip(node_names, nodes) if n.counters}
    counters.update((k, v) for k, v in fault_counters(fabric.injectors).items() if v)
    counters.update(reorder_counters(q for n in nodes for q in getattr(n, "qps", {}).values()))
    for node, values in counters.items():
        for key, value in values.items():
            metrics.counter(node, key, value)
    data: dict[str, Any] = {"nodes": list(node_names), "completed": not stopped and loop.done,
            "runtime": loop.stats(), "metrics": metrics.export_bins(), "node_counters": counters,
            "pcap": str(pcap) if pcap else None, "dilation": dilation,
            "scheduling": scheduling, "nice": _nice(),
            "credits": credit_state(fabric, node_names)}
    if check is not None:
        data["integrity"] = {part_: {flow: [d.hex() if isinstance(d, bytes) else d for d in items]
                                     for flow, items in rec.items()}
                             for part_, rec in check.export().items()}
    if part is not None:
        atomic_write_text(part, json.dumps(data))
    if ctl is not None:                 # the results travel back on the control channel
        ctl.send(event="done", completed=data["completed"], data=data)
    return data


def _rcvbuf(node: Node, port: int) -> int:
    return rcvbuf_bytes(node.ports[port])


async def _main(loop: NodeLoop, nodes: list[Node], start_at: float, ctl: Control | None,
                beat: Heartbeat | None = None) -> bool:
    """Run the loop from the agreed instant; True when stopped before the end."""
    t0 = trio.current_time() + (start_at - time.time())
    stop = trio.Event()
    stopped = False
    mgmt = WorkerSide(loop, nodes, ctl.send) if ctl is not None else None

    async def watch_stdin(ctl: Control) -> None:
        nonlocal stopped
        while True:
            msg = await trio.to_thread.run_sync(ctl.read_line, abandon_on_cancel=True)
            if msg is not None and msg.get("cmd") == "mad":    # live management (mgmt.py)
                assert mgmt is not None
                mgmt.request(msg)
                continue
            if msg is None or msg.get("cmd") == "stop":
                stopped = True
                stop.set()
                return

    async def report(ctl: Control) -> None:
        while True:
            await trio.sleep(0.2)
            if loop.t0 is not None and trio.current_time() >= loop.t0:
                ctl.send(event="progress", t=loop.now_ps)

    async def turn(beat: Heartbeat) -> None:        # the loop is alive: the heartbeat may beat
        while True:
            beat.tick += 1
            await trio.sleep(beat.interval / 4)

    async with trio.open_nursery() as nursery:
        if ctl is not None:
            nursery.start_soon(watch_stdin, ctl)
            nursery.start_soon(report, ctl)
        if beat is not None:
            nursery.start_soon(turn, beat)
        with trio.CancelScope() as scope:
            async def stopper() -> None:
                await stop.wait()
                scope.cancel()
            nursery.start_soon(stopper)
            await loop.run(t0)
        nursery.cancel_scope.cancel()
    return stopped
