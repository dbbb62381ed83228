"""Issue 29 acceptance (speed): a 64-rank allreduce job costs at most 10 % more per event
than greedy flows on the same fabric.

Both runs use fat_tree2 with 128 hosts (radix 16, 16 leaves) and the same 64 hosts
h0, h2, ..., h126: the job is a ring allreduce among them (64 QPs, rank state machines,
posted messages); the flows are the same 64 ring pairs as greedy flows (no dependency).
Each run's time divided by its event count is its cost per event: its CPU time
(``time.process_time``, what the machine's other load disturbs least) and its wall time.
The two kinds run interleaved (flows, job, flows, job, ...) and each keeps its best of
``--repeat`` runs, so a slow spell of a shared machine hits both alike.

``--profile`` adds figures the machine's load cannot disturb: each kind run once under
cProfile, its Python function calls per event, and the share of the job's own code
(ibemu/fabric/job: the rank state machines, the posted generators, the delivery hooks)
in the profiled time.

    python benchmarks/job_cost.py [--duration 2ms] [--repeat 3] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from ibemu.run import run_virtual
from ibemu.scenario.read import scenario_from_dict


def scenario(kind: str, duration: str) -> dict:
    hosts = ["h%d" % i for i in range(0, 128, 2)]
    raw = {"template": {"name": "fat_tree2", "radix": 16, "leaves": 16},
           "scenario": {"name": "cost_" + kind, "duration": duration},
           "output": {"plots": False}}
    if kind == "job":
        raw["job"] = [{"name": "ar", "hosts": hosts,
                       "ops": [{"type": "allreduce", "size": 64 * 65536, "iterations": 1}]}]
    else:
        raw["flow"] = [{"name": "f%d" % i, "src": h, "dst": hosts[(i + 1) % len(hosts)]} for i, h in enumerate(hosts)]
    return raw


def cost(kind: str, duration: str) -> tuple[float, float, int]:
    """(CPU s per event, wall s per event, events) of one run."""
    scn = scenario_from_dict(scenario(kind, duration))
    c0, t0 = time.process_time(), time.perf_counter()
    r = run_virtual(scn, progress=False)
    return (time.process_time() - c0) / r.events, (time.perf_counter() - t0) / r.events, r.events


def profile(kind: str, duration: str) -> None:
    """Calls per event and the job code's share of one profiled run."""
    scn = scenario_from_dict(scenario(kind, duration))
    prof = cProfile.Profile()
    prof.enable()
    r = run_virtual(scn, progress=False)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    calls = sum(v[1] for v in stats.values())
    total = sum(v[2] for v in stats.values())
    job = sum(v[2] for k, v in stats.items() if "/fabric/job/" in k[0].replace("\\", "/"))
    print("%-5s profiled: %.2f Python calls/event; ibemu/fabric/job code: %.3f %% of the time"
          % (kind, calls / r.events, 100 * job / total))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", default="2ms")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="also the profiled figures (calls per event)")
    a = ap.parse_args()
    if a.profile:
        for kind in ("flows", "job"):
            profile(kind, a.duration)
    if a.repeat < 1:
        return
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    events: dict[str, int] = {}
    for i in range(a.repeat):
        for kind in ("flows", "job") if i % 2 == 0 else ("job", "flows"):
            c, w, n = cost(kind, a.duration)
            print("  run %d %-5s %9d events  cpu %.3f us/event  wall %.3f us/event" % (i, kind, n, c * 1e6, w * 1e6),
                  flush=True)
            cpu[kind], wall[kind] = min(cpu.get(kind, c), c), min(wall.get(kind, w), w)
            events[kind] = n
    for kind in ("flows", "job"):
        print("%-5s %9d events  best cpu %.3f us/event  best wall %.3f us/event"
              % (kind, events[kind], cpu[kind] * 1e6, wall[kind] * 1e6))
    for what, best in (("cpu", cpu), ("wall", wall)):
        ratio = best["job"] / best["flows"]
        print("job / flows per event (%s): %.3f (acceptance: at most 1.10) %s"
              % (what, ratio, "ok" if ratio <= 1.10 else "OVER"))


if __name__ == "__main__":
    main()
