"""``mpiexec -n N ibemu node SCENARIO``: one wall-clock emulation across the hosts of an
MPI job (issue 17 Deliver 3).  MPI is only the launcher and the rendezvous; the frames
still travel as the runtime's UDP datagrams (:mod:`.delivery`).

Every rank (mpi4py's ``COMM_WORLD``) does what the local controller
(:mod:`.controller`) does for its one part:

1. loads the scenario (the same file and overrides on every host), builds the fabric and
   takes part *rank* of :func:`.partition.partition` into *size* parts;
2. finds its host's address (:func:`local_address`: ``--iface``, else loopback when every
   rank sees the same addresses, else its address nearest the other ranks'); the ranks
   ``allgather`` them with their port counts, the first rank on each address picks a
   free block of UDP ports there, and every rank builds the same address map
   (``"node:port" -> "host:udp"``); rank 0's run secret is broadcast, and every rank
   opens its lifeline to rank 0 (:mod:`.lifeline`: a TCP connection, the ranks' only
   channel while the emulation runs, when no MPI call is made);
3. starts its worker process (``ibemu node --control``, :mod:`.workers`, as the local
   controller does) and waits until it has bound its sockets; the ranks then meet on an
   ``allgather`` of their readiness (the start barrier) and each starts its worker
   :data:`START_DELAY` after it on its own clock, so no agreed Unix time (and no clock
   synchronisation between hosts) is needed;
4. watches its worker (death, the heartbeat watchdog) and its lifelines: a rank whose
   worker fails tells rank 0, which tells every other rank, and each stops its worker,
   which writes what it recorded;
5. sends rank 0 its part, its capture part and its last emulated time (``gather``);
   rank 0 merges them (:func:`.collect.collect`) into one output folder and one capture,
   as a local run does, with the ranks' last emulated times in ``runtime.ranks``;
6. judges the run as ``ibemu run --clock wall`` does (:func:`.verdict.verdict`, issue 27):
   the ranks ``allgather`` their slips, lag and losses, so every rank reaches the same
   verdict and exits with the same status, :data:`~.verdict.EXIT_INVALID` for an invalid
   run unless late results are allowed; rank 0 writes it into results.json
   (``valid``, ``validity``, the late ones named as ranks).

A rank whose worker dies ends the job with a message naming the rank, its host, its
nodes and the worker's exit status, and partial outputs (``"completed": false``,
``"valid": false`` with that rank as the reason, exit status 1 from every rank).

A rank *process* that dies (killed, its host lost) closes its lifeline.  If the launcher
lets the other ranks live on -- ``srun`` does unless ``--kill-on-bad-exit``; MPICH's
``mpiexec -disable-auto-cleanup``, given that the process it reaps never dies of a signal
(:func:`.launcher.shield_rank`); by default hydra SIGKILLs the whole job at once, and
then nothing can be written -- rank 0 names the dead rank, tells the others to stop,
receives their parts over the lifelines (no MPI call: see :mod:`.lifeline`) and writes the
partial outputs as above; every living rank exits 1.  If rank 0 itself dies, there is no
merged output: each living rank writes its own part into its ``--out``
(``rank<N>.json``, and ``rank<N>.pcap`` with ``--pcap``), says so, and exits 1.  A rank
dying during the final exchange (after the emulation, a fraction of a second) ends the
job without outputs: MPI collectives cannot survive it.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from ..atomic import prepare_outputs
from ..build import build_fabric
from ..errors import UserError
from ..scenario import Scenario
from ..wire.shim import DEFAULT_PORT_BASE
from . import DEFAULT_DILATION
from .addrmap import new_key, write_map
from .handover import SCENARIO_FILE, write_scenario
from .launcher import LAUNCHER_ENV, under_mpi
from .lifeline import Event, Lifelines
from .merge import read_part
from .mpi_hosts import interface_addresses, local_address, plan_addresses
from .mpi_outcome import MpiRun, RankPart, after_death, finish_rank0
from .partition import partition
from .verdict import EXIT_INVALID, time_scale, verdict, worker_map
from .workers import STOP_GRACE, WATCHDOG, Worker, WorkerPool

__all__ = ["run_mpi", "under_mpi", "LAUNCHER_ENV", "local_address", "interface_addresses", "START_DELAY", "MpiRun",
           "RankPart"]

START_DELAY = 0.5
"""Wall seconds from the start barrier to the start of the emulation on every rank."""


def _comm() -> Any:
    try:
        from mpi4py import MPI
    except ImportError:
        raise UserError("node --mpi needs mpi4py and an MPI library: pip install 'ibemu[mpi]'") from None
    return MPI.COMM_WORLD


class RankPace(NamedTuple):
    """What every rank tells the others of its worker's pace (an allgather), for the
    verdict (:func:`.verdict.verdict`)."""
    max_lag_ps: int
    max_slip_ps: int
    slips: int
    datagrams_lost: int
    effective_dilation: float | None


def _worker_args(scnfile: Path, mapfile: Path, dilation: float, realtime: bool, sync: str,
                 ranks: int) -> list[str]:
    """The worker's options: the exact clock's messages go as datagrams (the ranks may be
    on several hosts; :mod:`.syncnet`)."""
    args = ["--scenario-json", str(scnfile), "--map", str(mapfile), "--dilation", repr(float(dilation)),
            "--parent", str(os.getpid()), "--sync", sync, "--processes", str(ranks)]
    return args if realtime else [*args, "--no-realtime"]


def _wait(pool: WorkerPool, watch: float, lines: Lifelines) -> tuple[Worker | None, Event | None]:
    """Pump the worker until it is done, it fails, or a lifeline says something (a rank's
    worker failed, a rank process is gone); (our failed worker, the lifeline's event).
    No MPI call here (:mod:`.lifeline`)."""
    while True:
        failed = pool.pump(watch)
        if failed is not None:
            return failed, None
        for event in lines.poll():
            return None, event
        if all(w.done for w in pool.workers):
            return None, None


def run_mpi(scn: Scenario, *, out_dir: str | Path | None = None, pcap: str | Path | None = None,
            dilation: float = DEFAULT_DILATION, port_base: int = DEFAULT_PORT_BASE, iface: str | None = None,
            realtime: bool = True, watchdog: float = WATCHDOG, window: tuple[int, int] | None = None,
            announce: bool = True, sync: str = "exact", allow_late: bool = False) -> MpiRun:
    """Run *scn* in real time over the ranks of ``MPI.COMM_WORLD``, one part per rank
    (see the module's text); rank 0 writes *out_dir* and the merged capture *pcap*.
    *sync*, *allow_late*: the synchronisation, verdict and exit status of ``ibemu run --clock wall``
    (:mod:`.verdict`), from every rank's slips, lag and losses."""
    comm = _comm()
    rank, size = comm.Get_rank(), comm.Get_size()
    if rank == 0:
        prepare_outputs(out_dir, pcap)
    fabric = build_fabric(scn)
    groups = [g for g in partition(fabric, size) if g]
    if len(groups) < size:
        raise UserError("%d ranks but %s has only %d parts to run (at most one rank per part): use mpiexec -n %d"
                        % (size, scn.name, len(groups), len(groups)))
    amap, hosts = plan_addresses(comm, fabric, groups, iface, port_base)
    _survive_failure_notice()
    key = comm.bcast(new_key() if rank == 0 else None, root=0)
    srv = Lifelines.listen(hosts[0]) if rank == 0 else None
    port = comm.bcast(srv.getsockname()[1] if srv is not None else None, root=0)
    lines = (Lifelines.accept(srv, size, key) if srv is not None
             else Lifelines.connect(rank, hosts[0], port, key))
    try:
        return _run_rank(comm, scn, fabric, groups, hosts, amap, key, lines, out_dir=out_dir, pcap=pcap,
                         dilation=dilation, port_base=port_base, realtime=realtime, watchdog=watchdog, window=window,
                         announce=announce, sync=sync, allow_late=allow_late)
    finally:
        lines.close()


def _run_rank(comm: Any, scn: Scenario, fabric: Any, groups: list[list[str]], hosts: list[str],
              amap: dict[tuple[str, int], tuple[str, int]], key: bytes, lines: Lifelines, *,
              out_dir: str | Path | None, pcap: str | Path | None, dilation: float,
              port_base: int, realtime: bool, watchdog: float, window: tuple[int, int] | None, announce: bool,
              sync: str, allow_late: bool) -> MpiRun:
    """:func:`run_mpi` once the ranks know their parts, addresses, key and lifelines."""
    rank, size = comm.Get_rank(), comm.Get_size()
    out = Path(out_dir) if out_dir is not None else None
    if rank == 0 and out is not None:
        out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="ibemu-mpi%d-" % rank))
    mapfile, scnfile = workdir / "addresses.toml", workdir / SCENARIO_FILE
    write_map(mapfile, amap)
    write_scenario(scnfile, scn)
    args = _worker_args(scnfile, mapfile, dilation, realtime, sync, size)
    other_error, error, dead, said = "", "", -1, ""
    t_wall = time.perf_counter()
    with WorkerPool(workdir, args, bool(pcap), watchdog) as pool:
        pool.spawn([groups[rank]])
        worker = pool.workers[0]
        worker.send(cmd="key", key=key.hex())
        failed = _wait_ready(pool)
        ready = "" if failed is None else "%s %s" % (
            RankPart(rank, groups[rank], hosts[rank], failed.proc.pid, None, failed.part, failed.pcap).label(),
            failed.error_text())
        states = comm.allgather(ready)               # the start barrier: every rank calls it once
        other_error = next((t for r, t in enumerate(states) if t and r != rank), "")
        if failed is None and not other_error:       # every rank ready: start together
            pool.start(time.time() + START_DELAY)
            if rank == 0 and announce:
                print("ibemu: %d ranks on %s (worker pids %s here) running %g ms of emulated time at "
                      "dilation %g: about %.1f s" % (size, ", ".join(sorted(set(hosts))),
                                                       worker.proc.pid, scn.duration / 1e9, dilation,
                                                       scn.duration * dilation / 1e12),
                      file=sys.stderr, flush=True)
            failed, event = _wait(pool, 0.1, lines)
            if event is not None and event.kind == "failed":       # a rank's worker failed
                other_error = str(event.payload)
                if rank == 0:                        # tell the others (not the one that told us)
                    lines.send("failed", event.rank, other_error, to=[r for r in lines.alive() if r != event.rank])
            elif event is not None:                  # "dead" (its lifeline closed) or "stop" (rank 0 says)
                dead = event.rank
                said = "rank %d (host %s; nodes %s) died: its process ended" % (
                    dead, hosts[dead], ", ".join(groups[dead][:6]) + (", ..." if len(groups[dead]) > 6 else ""))
                if rank == 0:                        # (the outputs are written before anything is printed:
                    lines.send("stop", dead)         # without launcher.shield_rank, hydra killed this rank
                                                     # at its first line after another rank was killed)
        if failed is not None:
            error = failed.error_text()
            said = states[rank] or "%s %s" % (RankPart(rank, groups[rank], hosts[rank], failed.proc.pid, None,
                                                       failed.part, failed.pcap).label(), error)
            print("ibemu: %s; stopping the other ranks" % said, file=sys.stderr, flush=True)
            if not states[rank]:                     # (before the start, the barrier told them)
                lines.send("failed", rank, said)     # rank 0 passes it on to the others
        pool.stop(STOP_GRACE)
    wall = time.perf_counter() - t_wall
    data = worker.data or read_part(worker.part)
    cap = worker.pcap.read_bytes() if worker.pcap is not None and worker.pcap.exists() else None
    last_t = int(data["runtime"].get("emulated_ps", worker.t)) if data and data.get("runtime") else worker.t
    if dead >= 0:                                    # a rank process died: no MPI call from here on
        mine = {"rank": rank, "nodes": groups[rank], "host": hosts[rank], "pid": worker.proc.pid, "data": data,
                "pcap": cap, "t": last_t, "error": ""}
        return after_death(rank, size, scn, fabric, dead, said, mine, lines, groups, hosts, workdir, out, pcap,
                           dilation, wall, window, port_base, sync)
    times = comm.allgather(last_t)                   # the ranks' last emulated times, known to all
    st = (data or {}).get("runtime") or {}
    paces: list[RankPace] = [RankPace(*p) for p in comm.allgather(RankPace(
        int(st.get("max_lag_ps", 0)), int(st.get("max_slip_ps", 0)), int(st.get("slips", 0)),
        int(st.get("datagrams_lost", 0)), st.get("effective_dilation")))]
    effs = [p.effective_dilation for p in paces if p.effective_dilation]
    validity = verdict({"max_slip_ps": max(p.max_slip_ps for p in paces), "slips": sum(p.slips for p in paces),
                        "datagrams_lost": sum(p.datagrams_lost for p in paces), "dilation": dilation,
                        "effective_dilation": max(effs) if effs else None,
                        "workers": [{"worker": r, "max_lag_ps": p.max_lag_ps} for r, p in enumerate(paces)]},
                       sync, time_scale(fabric.wiring, worker_map(groups)), who="rank")
    mine = {"rank": rank, "nodes": groups[rank], "host": hosts[rank], "pid": worker.proc.pid, "data": data,
            "pcap": cap, "t": times[rank], "error": error}
    everything = comm.gather(mine, root=0)
    status = 1 if comm.allreduce(1 if (error or other_error) else 0) else 0
    if not status and not validity["valid"] and not allow_late:
        status = EXIT_INVALID
    if rank != 0:
        return MpiRun(status, rank, validity=validity)
    run = finish_rank0(scn, fabric, everything, workdir, out, pcap, dilation, wall, window, port_base, sync)
    run.status = status                              # the same on every rank
    run.validity = validity if run.message == "" else run.validity      # a failed rank: partial, not valid
    return run


def _survive_failure_notice() -> None:
    """MPICH's mpiexec with ``-disable-auto-cleanup`` tells the living ranks that one
    died with SIGUSR1, whose default action ends the process: ignore it here (the
    lifelines tell this rank the same, :mod:`.lifeline`)."""
    import signal
    if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def _wait_ready(pool: WorkerPool) -> Worker | None:
    """Wait until the worker has bound its sockets; the worker, when it failed instead."""
    from .workers import READY_TIMEOUT, WallRunError
    deadline = time.monotonic() + READY_TIMEOUT
    while not all(w.ready for w in pool.workers):
        failed = pool.pump(0.05)
        if failed is not None:
            return failed
        if time.monotonic() > deadline:
            raise WallRunError("the worker did not start within %.0f s" % READY_TIMEOUT)
    return None
