"""Running a scenario on the virtual-time engine and writing its output folder.

:func:`run_virtual` builds the fabric (:func:`ibemu.build.build_fabric`), drives it on
the :class:`~ibemu.sim.engine.VirtualEngine` to the scenario's duration, samples the port
counters (IBA 16.1.3.5 PortCounters) along the way, and writes results.json, the CSV
series and the plots (:func:`ibemu.results.write_outputs`).

Observers: every function in :data:`observers` is called with a :class:`RunContext`
(the scenario, engine, fabric and result) once a run and its outputs are finished.  The
product registers none; the test suite registers the credit-leak check of
:mod:`ibemu.testing` there (tests/conftest.py), so every virtual-clock run of the tests
ends with it.  An observer's exception propagates to the caller of :func:`run_virtual`.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import atomic_batch, prepare_outputs
from .build import build_fabric
from .fabric.qp.responder import reorder_counters
from .fabric.network import Fabric
from .capture.pcapng import LinkCapture, open_link_capture
from .core import core_kind
from .fabric.counters import TOTALS, sample_totals
from .fabric.faults import engine_faults, fault_counters
from .fabric.node import Port
from .results import Metrics, Progress, format_summary_table, write_outputs
from .results.jobs import job_info
from .results.phases import Phases
from .results.plot_worker import PlotWorker
from .results.summary import link_levels
from .scenario.model import Scenario
from .sim.engine import VirtualEngine
from .sim.hugepages import refresh as refresh_huge_pages, use_huge_pages
from .units import PS_PER_MS

PORT_SAMPLES = 200                 # port counter samples per run (at most; never finer than a bin)


def lids_of(fabric: Fabric) -> dict[str, int]:
    """Node name -> LID (HCAs, and switches' management port 0)."""
    return {name: node.lid for name, node in fabric.nodes.items() if node.lid}


def port_table(fabric: Fabric) -> list[tuple[str, Port]]:
    """("node:port", Port) for every port of the fabric, in a stable order."""
    return [("%s:%d" % (name, p.index), p) for name, node in fabric.nodes.items()
            for p in sorted(node.ports.values(), key=lambda p: p.index)]


def port_sampler(ports: list[tuple[str, Port]], metrics: Metrics) -> Callable[[int], None]:
    """``sample(t)``: the counter totals of *ports* (:func:`port_table`) at *t* into
    *metrics* (:meth:`Metrics.sample_rows`: one flat row per sample, 200 of them a run)."""
    labels = [label for label, _ in ports]
    counters = [p.pc for _, p in ports]

    def sample(t: int) -> None:
        metrics.sample_rows(t, labels, TOTALS, sample_totals(counters, t))
    return sample


@dataclass
class RunResult:
    """What :func:`run_virtual` returns: the summary (as in results.json), the metrics
    with every series, the event count, the wall time taken and the node counters."""
    scenario: Scenario
    metrics: Metrics
    summary: dict[str, Any]
    events: int
    wall_seconds: float
    counters: dict[str, dict[str, int]]
    out_dir: Path | None = None
    phases: Phases | None = None       # build (routing, credit-loop check), run, outputs: wall seconds


@dataclass(frozen=True)
class RunContext:
    """A finished virtual-clock run as its observers see it.

    The engine stopped at the scenario's duration with its capture closed and detached;
    the fabric is in the state the run left it (queues, credits, QPs).  An observer may
    drive both further (:func:`ibemu.testing.drain`) -- the result and the outputs are
    already final."""
    scenario: Scenario
    engine: VirtualEngine
    fabric: Fabric
    result: RunResult


RunObserver = Callable[[RunContext], None]

observers: list[RunObserver] = []
"""Called in order at the end of every :func:`run_virtual` (after the outputs are
written).  Empty in the product; tests/conftest.py appends
:func:`ibemu.testing.check_after_run` for the whole test session."""


def capture_transmit(engine: VirtualEngine, capture: LinkCapture) -> None:
    """Capture every frame on its directed link (issue 18 item 1): the engine's
    transmission hook (:attr:`ibemu.sim.scheduler.Scheduler.transmit`, which the virtual
    clock leaves unset) writes each frame of a node's outbox to the interface of the port
    it leaves from, at the time it starts, then routes the outbox as the engine does
    (:meth:`~ibemu.sim.scheduler.Scheduler.route`).  Same frames, same order as the
    engine's own capture call, which cannot name the link."""
    write = capture.writer.write
    ports = capture.ports
    route = engine.route

    def transmit(node: Any) -> None:
        ids = ports[node]
        for p, frame, link, t0 in node.outbox:
            write(t0 // 1000, frame, link, ids[p])
        route(node)

    engine.transmit = transmit


RUN_GC_YOUNG = 100_000
"""Allocations between the collector's young collections during a run (:func:`long_lived`)."""


@contextmanager
def long_lived() -> Iterator[None]:
    """The objects alive now (the built fabric, its routes and the metrics) are left out
    of the garbage collector's passes until the block ends (:func:`gc.freeze`, then
    :func:`gc.unfreeze`).  They live as long as the run, and a full collection walks every
    one of them: at 11,664 hosts, 3 GB of them, about a tenth of the run (issue 28).
    The collector still runs, over what the run allocates, but after every
    :data:`RUN_GC_YOUNG` allocations, not every 700: the events in flight outlive a young
    collection and were walked again by each older one (a 3,456-host run: 3,617 collections,
    2.7 s; 22 and 0.45 s at 100,000)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], RUN_GC_YOUNG), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def run_virtual(scn: Scenario, out_dir: str | Path | None = None, pcap: str | Path | None = None,
                progress: bool | None = None, window: tuple[int, int] | None = None,
                phases: Phases | None = None, plotter: PlotWorker | None = None) -> RunResult:
    """Run *scn* to its duration on the virtual-time engine.

    *out_dir*: write results.json, CSV series, config.json and plots there.  *pcap*: write
    every frame as an ERF capture.  *progress*: a progress bar (default: for runs of more
    than 10 ms of emulated time, when stderr is a terminal).  *window*: (t_from, t_to) in
    ps for the windowed figures of the summary.  *phases*: where the phases are timed
    (and shown on a terminal unless *progress* is False: :mod:`ibemu.results.phases`);
    the caller's, to add phases of its own such as reading the scenario.  *plotter*: a
    worker process that draws the plots (:mod:`ibemu.results.plot_worker`).

    Output paths (issue 14 item 6): missing parent folders of *out_dir* and *pcap* are
    created; any operating-system error is one :class:`~ibemu.errors.OutputError` naming
    the path and the reason, raised before the run when the paths are wrong, and leaving
    the earlier outputs and capture intact and no temporary or ``.partial`` file when it
    happens while writing (a full disk).
    """
    prepare_outputs(out_dir, pcap)      # missing folders made, a wrong path refused before the run
    use_huge_pages()                    # the fabric's and the run's objects on huge pages (.sim.arena)
    phases = phases or Phases(progress is not False)
    with phases.phase("build"):
        flows = {f.name: f for f in scn.flows}
        metrics = Metrics(scn.duration, scn.output.bin, {}, flows, {}, window_ps=scn.output.window)
        fabric = build_fabric(scn, metrics, phases)
        if scn.jobs:
            metrics.jobs = job_info(scn.jobs)
        metrics.add_links(fabric.link_capacity)
        metrics.add_flow_capacity(fabric.flow_capacity)
        capture = (open_link_capture(pcap, fabric.link_ends, fabric.nodes, scn.output.snaplen, canonical=True)
                   if pcap else None)
        engine = VirtualEngine(fabric.nodes.values(), fabric.wiring, None,
                               faults=engine_faults(fabric.injectors))
        if capture is not None:
            capture_transmit(engine, capture)
    with long_lived():                  # the fabric outlives the run: no collection walks it
        if progress is None:
            progress = scn.duration > 10 * PS_PER_MS
        bar = Progress(scn.duration, enabled=progress)
        ports = port_table(fabric)
        step = max(scn.output.bin, scn.duration // PORT_SAMPLES)
        t0 = time.perf_counter()
        try:
            engine.start(0)
            sample = port_sampler(ports, metrics)
            sample(0)
            refresh_huge_pages()            # (the fabric's growth of the heap)
            t = 0
            while t < scn.duration:
                t = min(t + step, scn.duration)
                engine.run(t, progress=bar.update if bar.enabled else None,
                           progress_step=max(scn.duration // 200, 1))
                sample(t)
                refresh_huge_pages()        # what the heap grew by, on huge pages (.sim.hugepages)
        except BaseException:
            if capture is not None:         # interrupted: the capture keeps the whole records it has
                capture.close()
                engine.transmit = None
            raise
        finally:
            bar.close()
        wall = time.perf_counter() - t0
        phases.times["run"] = wall
        with phases.phase("outputs"):       # (shown while it lasts: 7-9 s at 11,664 hosts)
            counters = {name: dict(sorted(node.counters.items()))
                        for name, node in fabric.nodes.items() if node.counters}
            counters.update(fault_counters(fabric.injectors))      # "link:<label>": lost, corrupted, ...
            counters.update(reorder_counters(q for n in fabric.nodes.values() for q in getattr(n, "qps", {}).values()))
            for node, values in counters.items():
                for key, value in values.items():
                    metrics.counter(node, key, value)
            out = Path(out_dir) if out_dir is not None else None
            summary: dict[str, Any] | None = None
            with atomic_batch():                # the capture and the output folder: all committed, or none
                if capture is not None:
                    capture.close()
                    engine.transmit = None      # the writer is closed: the engine may run on without it
                if out is not None:             # (the summary computed there once the plots are sent)
                    summary = write_outputs(metrics, scn, out, extra={"clock": "virtual", "events": engine.events,
                                                                      "pcap": Path(pcap).name if pcap else None,
                                                                      "lids": lids_of(fabric)},
                                            window=window, plotter=plotter)["summary"]
            if summary is None:
                t_from, t_to = window if window else (None, None)
                summary = metrics.summary(t_from, t_to)
            result = RunResult(scn, metrics, summary, engine.events, wall, counters, out_dir=out, phases=phases)
    if observers:
        context = RunContext(scn, engine, fabric, result)
        for observe in list(observers):
            observe(context)
    return result


def print_summary(result: RunResult) -> None:
    """The summary table, the event count and where the outputs are, on stdout."""
    print(format_summary_table(result.summary, link_levels(result.scenario), result.out_dir))
    phases = " (%s)" % result.phases.format() if result.phases is not None else ""
    print("%d events in %.2f s wall%s, %s core" % (result.events, result.wall_seconds, phases, core_kind()))
    if result.out_dir is not None:
        print("results in %s/" % result.out_dir)
