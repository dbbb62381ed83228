"""Running a scenario on the virtual-time engine and writing its output folder."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .build import build_fabric
from .capture.erf import ErfPcapWriter
from .config import PS_PER_MS, Scenario
from .engine import VirtualEngine
from .results import Metrics, Progress, format_summary_table, write_outputs

from .wire.layout import PACKET_OVERHEAD as WIRE_OVERHEAD     # LRH, BTH, ICRC, VCRC of a SEND packet
PORT_SAMPLES = 200                 # port counter samples per run (at most; never finer than a bin)


def lids_of(fabric) -> dict[str, int]:
    """Node name -> LID (HCAs, and switches' management port 0)."""
    return {name: node.lid for name, node in fabric.nodes.items() if getattr(node, "lid", 0)}


def port_table(fabric) -> list:
    """("node:port", Port) for every port of the fabric, in a stable order."""
    return [("%s:%d" % (name, p.index), p) for name, node in fabric.nodes.items()
            for p in sorted(node.ports.values(), key=lambda p: p.index)]


@dataclass
class RunResult:
    scenario: Scenario
    metrics: Metrics
    summary: dict
    events: int
    wall_seconds: float
    counters: dict
    out_dir: Path | None = None


def run_virtual(scn: Scenario, out_dir=None, pcap=None, progress: bool | None = None,
                window: tuple[int, int] | None = None) -> RunResult:
    """Run *scn* to its duration on the virtual-time engine.

    *out_dir*: write results.json, CSV series, config.json and plots there.  *pcap*: write
    every frame as an ERF capture.  *progress*: a progress bar (default: for runs of more
    than 10 ms of emulated time, when stderr is a terminal).  *window*: (t_from, t_to) in
    ps for the windowed figures of the summary.
    """
    flows = {f.name: f for f in scn.flows}
    metrics = Metrics(scn.duration, scn.output.bin, {}, flows, {},
                      packet_overhead=WIRE_OVERHEAD, window_ps=scn.output.window)
    fabric = build_fabric(scn, metrics)
    metrics.add_links(fabric.link_capacity)
    metrics.add_flow_capacity(fabric.flow_capacity)
    capture = ErfPcapWriter(pcap) if pcap else None
    from .fabric.faults import engine_faults, fault_counters
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring, capture,
                           faults=engine_faults(fabric.injectors))
    if progress is None:
        progress = scn.duration > 10 * PS_PER_MS
    bar = Progress(scn.duration, enabled=progress)
    ports = port_table(fabric)
    step = max(scn.output.bin, scn.duration // PORT_SAMPLES)
    t0 = time.perf_counter()
    try:
        engine.start(0)
        metrics.sample_ports(0, {label: p.pc.totals(0) for label, p in ports})
        t = 0
        while t < scn.duration:
            t = min(t + step, scn.duration)
            engine.run(t, progress=bar.update if bar.enabled else None,
                       progress_step=max(scn.duration // 200, 1))
            metrics.sample_ports(t, {label: p.pc.totals(t) for label, p in ports})
    finally:
        bar.close()
        if capture is not None:
            capture.close()
    wall = time.perf_counter() - t0
    counters = {name: dict(sorted(node.counters.items()))
                for name, node in fabric.nodes.items() if node.counters}
    counters.update(fault_counters(fabric.injectors))      # "link:<label>": lost, corrupted, ...
    for node, values in counters.items():
        for key, value in values.items():
            metrics.counter(node, key, value)
    t_from, t_to = window if window else (None, None)
    summary = metrics.summary(t_from, t_to)
    result = RunResult(scn, metrics, summary, engine.events, wall, counters)
    if out_dir is not None:
        out = Path(out_dir)
        write_outputs(metrics, scn, out, extra={"clock": "virtual", "events": engine.events,
                                                "pcap": Path(pcap).name if pcap else None,
                                                "lids": lids_of(fabric)},
                      window=window)
        result.out_dir = out
    if os.environ.get("IBEMU_CHECK_CREDITS") == "1":
        _check_credits(engine, fabric)
    return result


def _check_credits(engine, fabric) -> None:
    """The test suite's after-every-run check (tests/conftest.py sets
    IBEMU_CHECK_CREDITS=1): once the run and its outputs are done, stop the traffic, let
    the fabric drain, and fail if any credit or queue entry is missing
    (:func:`ibemu.fabric.integrity.drain_and_check`)."""
    from .fabric.integrity import drain_and_check
    problems = drain_and_check(engine, fabric, fabric.injectors)
    if problems:
        raise AssertionError("credit leak after the run of %s:\n  %s" % (fabric_name(fabric), "\n  ".join(problems)))


def fabric_name(fabric) -> str:
    return ", ".join(sorted(fabric.nodes)[:6]) + (" ..." if len(fabric.nodes) > 6 else "")


def print_summary(result: RunResult) -> None:
    print(format_summary_table(result.summary))
    print("%d events in %.2f s wall" % (result.events, result.wall_seconds))
    if result.out_dir is not None:
        print("results in %s/" % result.out_dir)
