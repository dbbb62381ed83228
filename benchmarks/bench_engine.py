"""Virtual-time engine speed on the seed 003 Figure 1 scenario with L=10, R=10.

Prints frame-hops per second (every frame that crosses a link: data packets, ACKs and
link flow-control packets), packet-hops per second (data and ACK packets only), events
per second, and wall seconds per emulated millisecond.  Target: >= 100,000 frame-hops/s
on one core.

    python benchmarks/bench_engine.py [--ms 20] [--repeat 3] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from ibemu.build import build_fabric
from ibemu.fabric.recorder import Recorder
from ibemu.scenario.builders import santos_fig1
from ibemu.sim import VirtualEngine
from ibemu.wire.linkpkt import LINK_LEN


class PacketCount(Recorder):
    """Counts the frames that cross a link."""

    def __init__(self) -> None:
        self.packets = 0

    def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
        if nbytes != LINK_LEN:              # link flow-control packets are not packets
            self.packets += 1


def once(ms: float, profile: bool = False) -> tuple[float, int, int, int]:
    """(wall seconds, frame-hops, packet-hops, events) of one run of *ms* emulated ms."""
    scn = santos_fig1(L=10, R=10, duration_ms=ms, victim=(ms * 0.4, ms * 0.6))
    rec = PacketCount()
    fabric = build_fabric(scn, rec)
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring)
    engine.start(0)
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    t0 = time.perf_counter()
    engine.run(scn.duration)
    wall = time.perf_counter() - t0
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    return wall, engine.frames, rec.packets, engine.events


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ms", type=float, default=20.0, help="emulated milliseconds per run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    if a.profile:
        once(a.ms, True)
        return
    wall, frames, packets, events = min((once(a.ms) for _ in range(a.repeat)), key=lambda r: r[0])
    print("seed 003 Fig. 1, L=10 R=10, %.0f ms emulated, best of %d runs" % (a.ms, a.repeat))
    print("  frame-hops      %9d   %10.0f /s   (data + ACK + link flow-control packets)" % (frames, frames / wall))
    print("  packet-hops     %9d   %10.0f /s   (data + ACK packets)" % (packets, packets / wall))
    print("  events          %9d   %10.0f /s" % (events, events / wall))
    print("  wall per emulated ms: %.3f s  (%.1f x slower than real time)" % (wall / a.ms, wall / a.ms * 1000))


if __name__ == "__main__":
    main()
