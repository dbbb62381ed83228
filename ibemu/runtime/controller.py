"""``ibemu run SCENARIO --clock wall``: the multi-process launcher (issue 4 item 2).

The controller partitions the nodes (:mod:`.partition`), hands out one UDP address per
node port (:mod:`.addrmap`, from 18600 on 127.0.0.1), starts one worker process per
part (:mod:`.workers`, each running :mod:`.worker`), waits until every worker has bound
its sockets, agrees a start instant a little in the future, shows progress (the slowest
worker's emulated time), and collects and merges the workers' parts and capture parts
into the same output folder as the virtual-time engine writes (:mod:`.collect`).

Failures (the issue's rules):

- Ctrl-C (SIGINT or SIGTERM to the controller): every worker is told to stop, writes what it
  recorded so far, and the controller writes the output folder from that (results.json
  says ``"completed": false``), then exits 130.
- A worker that dies is noticed at once (:class:`~.workers.WorkerPool`): the others are
  stopped, the worker is named with its exit status and the last line of its error
  output, the partial outputs are written, exit 1.
- A worker that falls silent (no heartbeat for *watchdog* s: SIGSTOP, a deadlock) is
  handled like one that died, named with its process state (:mod:`.workers`).
- When no worker recorded anything (they all failed before the emulation began), no
  output is written: the output folder's earlier results stay as they were.
- No orphans (:mod:`.workers`).
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

from ..atomic import atomic_batch, prepare_outputs
from ..build import build_fabric
from ..fabric.network import Fabric
from ..errors import UserError
from ..results import Progress
from ..scenario import Scenario
from ..wire.shim import DEFAULT_PORT_BASE
from . import DEFAULT_DILATION
from .addrmap import assign, link_labels, new_key, port_keys, write_key, write_map
from .collect import Outcome, WallResult, collect
from .handover import SCENARIO_FILE, write_scenario
from .mgmt import SOCKET_NAME
from .syncproto import MAX_WORKERS
from .syncshm import create_sync_file
from .verdict import SYNC_MODES, time_scale, worker_map
from .partition import partition, placement
from .report import format_start
from .sockets import free_port_block
from .workers import STOP_GRACE, WATCHDOG, WallRunError, Worker, WorkerPool

__all__ = ["run_wall", "WallResult", "WallRunError", "MIN_WATCHDOG", "MAX_WATCHDOG"]

MIN_WATCHDOG = 1.0
"""The shortest watchdog bound: two heartbeat intervals (:data:`.worker.HEARTBEAT_INTERVAL`)."""
MAX_WATCHDOG = 86400.0


class StopSignals:
    """While entered, SIGINT and SIGTERM set :attr:`stopped` instead of interrupting
    (SIGTERM is handled like Ctrl-C); the previous handlers come back on exit.  Outside
    the main thread nothing is installed: the caller handles signals."""

    def __init__(self) -> None:
        self.stopped = False
        self._old: dict[signal.Signals, Any] = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = True

    def __call__(self) -> bool:
        return self.stopped

    def __enter__(self) -> StopSignals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._on_signal)
            except ValueError:             # not the main thread
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


SYNC_FILE = "sync"
"""The exact clock's shared records (:mod:`.syncshm`), in the parts folder."""


def _check(dilation: float, workers: int, port_base: int, out_dir: str | Path | None, pcap: str | Path | None,
           watchdog: float, sync: str = "exact") -> None:
    if sync not in SYNC_MODES:
        raise UserError("--sync must be one of %s, got %r" % (", ".join(SYNC_MODES), sync))
    if sync == "exact" and workers > MAX_WORKERS:
        raise UserError("--sync exact runs at most %d workers, got %d" % (MAX_WORKERS, workers))
    if not dilation or dilation <= 0:
        raise UserError("--dilation must be positive, got %r" % dilation)
    if not MIN_WATCHDOG <= watchdog <= MAX_WATCHDOG:
        raise UserError("--watchdog must be between %g and %g seconds, got %r" % (MIN_WATCHDOG, MAX_WATCHDOG, watchdog))
    if workers < 1:
        raise UserError("--workers must be at least 1, got %d" % workers)
    from ..units import parse_dilation      # finite, in the range ibemu.units justifies (issue 14)
    try:
        parse_dilation(dilation)
    except ValueError as e:
        raise UserError("--dilation %s" % e) from None
    if not 1024 <= port_base <= 65535:
        raise UserError("--port-base must be in 1024..65535, got %d" % port_base)
    prepare_outputs(out_dir, pcap)      # missing folders made, a wrong path one line (issue 14)


def _groups(fabric: Fabric, scn: Scenario, workers: int, external: set[str],
            place: list[list[str]] | None = None) -> list[list[str]]:
    """The node names of each worker: the partition (or the hand placement *place*,
    :func:`ibemu.runtime.partition.placement`) without the *external* nodes."""
    unknown = sorted(external - set(fabric.nodes))
    if unknown:
        raise UserError("no node %s in scenario %s" % (", ".join(unknown), scn.name))
    if place is not None:
        try:
            chosen = placement(fabric, place)
        except ValueError as e:
            raise UserError("--place: %s" % e) from None
    else:
        chosen = partition(fabric, workers)
    groups = [g for g in ([n for n in g if n not in external] for g in chosen) if g]
    if not groups:
        raise UserError("every node of %s is external: nothing to run" % scn.name)
    return groups


def _workdir(out: Path | None) -> Path:
    """``<out>/parts`` (emptied), or a temporary folder without *out*."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="ibemu-wall-"))
    out.mkdir(parents=True, exist_ok=True)
    workdir = out / "parts"
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir()
    return workdir


def _worker_args(scnfile: Path, mapfile: Path, dilation: float, drop_link_every: int,
                 realtime: bool, faults_until: int | None, integrity: bool,
                 sync: str = "exact", sync_file: Path | None = None, processes: int = 2) -> list[str]:
    """The ``ibemu node`` options every worker gets."""
    args = ["--scenario-json", str(scnfile), "--map", str(mapfile), "--dilation", repr(float(dilation)),
            "--parent", str(os.getpid())]
    args += ["--sync", sync, "--processes", str(int(processes))]
    if sync_file is not None:
        args += ["--sync-file", str(sync_file)]
    if drop_link_every:
        args += ["--drop-link-every", str(drop_link_every)]
    if not realtime:
        args += ["--no-realtime"]
    if faults_until is not None:
        args += ["--faults-until", str(int(faults_until))]
    if integrity:
        args += ["--check-integrity"]
    return args


def _supervise(pool: WorkerPool, scn: Scenario, stop: StopSignals, dilation: float,
               progress: bool | None, announce: bool) -> Worker | None:
    """Wait for the workers to be ready, start them, wait until they are done (showing
    progress), then stop and reap them; the worker that died, if one did."""
    bar = None
    try:
        failed = pool.wait_ready(stop)
        if not failed and not stop.stopped:
            pool.start(time.time() + 0.2 + 0.05 * len(pool.workers))
            if announce:
                print(format_start(scn, pool.pids(), dilation), file=sys.stderr, flush=True)
            if progress is None:
                progress = scn.duration * dilation > 3e12      # runs of more than 3 s
            bar = Progress(scn.duration, enabled=bool(progress), pace=True)
            failed = pool.wait_done(stop, bar.update if bar.enabled else None)
        if bar is not None:
            bar.close()
        # a failed worker or an interruption is said once, by the caller, in one line (issue 30):
        # run_wall raises WallRunError (or KeyboardInterrupt) once the workers are stopped
        pool.stop(STOP_GRACE)
    finally:
        if bar is not None:
            bar.close()
    return failed


def run_wall(scn: Scenario, out_dir: str | Path | None = None, pcap: str | Path | None = None,
             workers: int | None = None, dilation: float = DEFAULT_DILATION,
             progress: bool | None = None, window: tuple[int, int] | None = None,
             port_base: int = DEFAULT_PORT_BASE, host: str = "127.0.0.1",
             drop_link_every: int = 0, keep_parts: bool = False,
             announce: bool = False, realtime: bool = True, faults_until: int | None = None,
             integrity: bool = False, external: Iterable[str] = (),
             watchdog: float = WATCHDOG, sync: str = "exact",
             place: list[list[str]] | None = None, transport: str = "shm") -> WallResult:
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
    and whatever binds them is their peer (``ibemu node`` elsewhere, or a test's fuzzer),
    with the run's secret from ``parts/key`` (mode 0600).
    *watchdog*: wall seconds a worker may stay silent before it counts as hung.
    *place*: the node names of each worker, by hand (``--place``; every node once,
    :func:`ibemu.runtime.partition.placement`) instead of the partition rule; it sets
    the number of workers, and *workers*, when given, must agree.
    *sync*: ``exact`` (the workers synchronise conservatively, :mod:`.exact`: the virtual
    clock's results at any dilation and placement; their messages go through a shared
    file, or as datagrams when *external* nodes take part) or ``free`` (each worker keeps
    its own pace); the verdict (:func:`ibemu.runtime.verdict.verdict`; ``result.valid``,
    ``result.validity``) judges the run accordingly.  *transport*: ``shm`` (the exact
    clock's messages through a shared file, :mod:`.syncshm`) or ``net`` (as datagrams,
    :mod:`.syncnet`, as across hosts; the choice when *external* nodes take part).
    """
    if place is not None:
        if workers is not None and workers != len(place):
            raise UserError("--place names %d workers, --workers says %d" % (len(place), workers))
        workers = len(place)
    workers = workers or os.cpu_count() or 2
    _check(dilation, workers, port_base, out_dir, pcap, watchdog, sync)
    fabric = build_fabric(scn)
    groups = _groups(fabric, scn, workers, set(external or ()), place)
    base = free_port_block(host, max(1, len(port_keys(fabric))), port_base)
    amap = assign(fabric, lambda _n: host, base)
    out = Path(out_dir) if out_dir is not None else None
    workdir = _workdir(out)
    mapfile = workdir / "addresses.toml"
    write_map(mapfile, amap, link_labels(fabric))        # labels for the plugin (issue 18)
    scnfile = workdir / SCENARIO_FILE             # JSON, read back by the workers (handover.py)
    write_scenario(scnfile, scn)
    key = new_key()
    if external:                    # whatever runs the external nodes needs it: owner-only
        write_key(workdir / "key", key)
    sync_file = None
    if transport not in ("shm", "net"):
        raise UserError("transport must be shm or net, got %r" % transport)
    if sync == "exact" and not external and transport == "shm":
        sync_file = create_sync_file(workdir / SYNC_FILE, len(port_keys(fabric)), groups)
    args = _worker_args(scnfile, mapfile, dilation, drop_link_every, realtime, faults_until, integrity,
                        sync, sync_file, len(groups) + len(set(external)))

    t_wall = time.perf_counter()
    with StopSignals() as stop, WorkerPool(workdir, args, bool(pcap), watchdog) as pool:
        pool.spawn(groups)
        for w in pool.workers:                                  # the run's secret (issue 14)
            w.send(cmd="key", key=key.hex())
        pool.serve_mgmt(workdir / SOCKET_NAME, fabric)         # <out>/parts/mgmt.sock
        failed = _supervise(pool, scn, stop, dilation, progress, announce)
    outcome = Outcome(pool.workers, time.perf_counter() - t_wall, stop.stopped, failed,
                      sync=sync, time_scale_ps=time_scale(fabric.wiring, worker_map(
                          groups + [[n] for n in sorted(external)])))

    recorded = any(w.data is not None or w.part.exists() for w in pool.workers)
    write_to = out if recorded or failed is None else None     # nothing recorded: keep what is there
    with atomic_batch():        # the capture and the output folder: all written, or none (issue 14)
        result = collect(scn, fabric, outcome, dilation=dilation, port_base=base, pcap=pcap,
                         window=window, integrity=integrity, out=write_to)
    if result.completed and not keep_parts:
        shutil.rmtree(workdir, ignore_errors=True)
    if failed is not None:
        if out is None:
            where = ""
        elif write_to is None:
            where = "; no worker recorded anything, %s/ left as it was (worker logs in %s/)" % (out, workdir)
        else:
            where = "; partial results in %s/" % out
        raise WallRunError("%s%s" % (outcome.error, where))
    if outcome.interrupted:
        raise KeyboardInterrupt
    return result
