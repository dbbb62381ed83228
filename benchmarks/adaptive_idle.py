"""Where the line rate goes in the adaptive study's permutations (docs/adaptive.md, "Where
the rest of the line rate goes"): every switch output port is sampled each microsecond
and put in one of these states, per switch stage (leaf up to a spine, spine down to a
leaf, leaf down to a host):

- ``busy``: sending;
- ``empty``: idle, nothing waiting for it;
- ``inputs busy``: idle with packets waiting, every one it may send (the FIFO head, or a
  newer packet that may bypass it) held by an input that cannot feed it now;
- ``no credits``: idle with a packet it could send, but no credit for it downstream;
- ``not eligible``: idle, the waiting packet's bytes have not arrived yet (cut-through);
- ``starting``: idle with a packet it can send: the sample fell between two events of
  one instant.

    python benchmarks/adaptive_idle.py                        # full size, adaptive, speedup 2
    python benchmarks/adaptive_idle.py --speedup 1 --routing static --ci-size
    python benchmarks/adaptive_idle.py --no-arn               # adaptive, the leaves' own view only

The full size (128 hosts, 200 us) takes about a minute.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ibemu.build import build_fabric
from ibemu.fabric.faults import engine_faults
from ibemu.fabric.switch import Switch
from ibemu.fabric.xport import XPort
from ibemu.sim.engine import VirtualEngine
from ibemu.studies.adaptive import PATTERNS, ROUTINGS, SPEEDUP, permutation_scenario
from ibemu.units import PS_PER_US

STATES = ("busy", "empty", "inputs busy", "no credits", "not eligible", "starting")


def state(sw: Switch, x: XPort, now: int) -> str:
    """The output port *x*'s state at *now* (module docstring)."""
    port = x.port
    assert port is not None
    if port.busy_until > now:
        return "busy"
    if not x.queued:
        return "empty"
    for vl, q in enumerate(x.queues):
        if not q:
            continue
        if q[0].eligible > now:
            return "not eligible"
        limit = len(q) if q[0].bypassed < sw.bypass_limit else 1
        for e in q[:limit]:
            if e.eligible > now:
                break
            if sw.xports[e.inp].can_feed(now, port.rate):
                return "starting" if port.tx[vl].can_send(e.blocks) else "no credits"
        return "inputs busy"
    return "empty"


def stage(switch: str, label: str) -> str:
    """leaf up, spine down or leaf down, from the port's ``A->B`` label."""
    peer = label.partition("->")[2]
    if switch.startswith("S"):
        return "spine down"
    return "leaf down" if peer.startswith("h") else "leaf up"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pattern", choices=PATTERNS, default="permutation")
    ap.add_argument("--routing", choices=ROUTINGS, default="adaptive")
    ap.add_argument("--speedup", type=float, default=SPEEDUP)
    ap.add_argument("--ci-size", action="store_true", help="32 hosts, 100 us (default: 128 hosts, 200 us)")
    ap.add_argument("--from-us", type=int, default=40, help="first sample (us)")
    ap.add_argument("--no-arn", action="store_true", help="adaptive routing without notifications (ARN)")
    args = ap.parse_args()
    scn = permutation_scenario(args.pattern, args.routing, not args.ci_size, args.speedup, not args.no_arn)
    fabric = build_fabric(scn)
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring, None, faults=engine_faults(fabric.injectors))
    engine.start(0)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    t = args.from_us * PS_PER_US
    while t < scn.duration:
        engine.run(t)
        for name, node in fabric.nodes.items():
            if isinstance(node, Switch):
                for x in node.xports.values():
                    if x.port is not None:
                        counts[stage(name, x.port.label)][state(node, x, t)] += 1
        t += PS_PER_US
    print("%s, %s routing%s, crossbar speedup %g, %s; share of output-port samples (every us from %d us):"
          % (args.pattern, args.routing, " without notifications" if args.no_arn and args.routing == "adaptive" else "",
             args.speedup, "CI size" if args.ci_size else "full size", args.from_us))
    print("| stage | " + " | ".join(STATES) + " |")
    print("|---|" + "---:|" * len(STATES))
    for st in ("leaf up", "spine down", "leaf down"):
        n = sum(counts[st].values())
        print("| %s | " % st + " | ".join("%.3f" % (counts[st][s] / n) for s in STATES) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
