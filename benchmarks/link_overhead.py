"""What the link flow-control packets cost on the wire (issue 13, Deliver 4).

Runs seed 003's Figure 2(a) (L=5, R=1, one-way data with ACKs back), the engine
benchmark's scenario (L=10, R=10) and two hosts sending to each other (two-way data) on
the virtual clock and prints, for the
busiest links, the data utilisation and the whole utilisation (data, ACKs and link
flow-control packets), and the flows' summed normalised throughput.  Run it on two
trees (``PYTHONPATH=<tree> python benchmarks/link_overhead.py``) to compare a tree
whose flow-control packets take no link time with one whose packets occupy the link.

    python benchmarks/link_overhead.py [--ms 20]
"""
from __future__ import annotations

import argparse

from ibemu.run import run_virtual
from ibemu.scenario import Scenario, scenario_from_dict
from ibemu.scenario.builders import santos_fig1
from ibemu.units import PS_PER_MS


def two_way(ms: float) -> Scenario:
    """H1 and H2 send to each other through one switch, both greedy RC SENDs: each link
    carries one way's data, the other way's ACKs and both ways' flow-control packets."""
    return scenario_from_dict({
        "scenario": {"name": "two_way", "duration": "%gms" % ms},
        "switch": [{"name": "S"}], "hca": [{"name": "H1"}, {"name": "H2"}],
        "link": [{"a": "H1", "b": "S"}, {"a": "S", "b": "H2"}],
        "flow": [{"name": "f12", "src": "H1", "dst": "H2"}, {"name": "f21", "src": "H2", "dst": "H1"}],
    }, label="two_way")


def report(name: str, scn_ms: float, scn: Scenario | None = None, **kw: object) -> None:
    if scn is None:
        scn = santos_fig1(duration_ms=scn_ms, name=name, flow_control="wire", **kw)  # type: ignore[arg-type]
    window = (int(scn_ms * 0.45 * PS_PER_MS), int(scn_ms * 0.55 * PS_PER_MS))
    r = run_virtual(scn, window=window, progress=False)
    print("%s (measured over %g-%g ms)" % (name, scn_ms * 0.45, scn_ms * 0.55))
    links = sorted(r.summary["links"].items(), key=lambda kv: -kv[1]["window"]["utilization"])
    print("  %-14s %10s %12s %10s" % ("link", "data util", "all frames", "overhead"))
    for label, v in links[:6]:
        w = v["window"]
        print("  %-14s %9.2f%% %11.2f%% %9.2f%%" % (label, 100 * w["data_utilization"], 100 * w["utilization"],
                                                 100 * (w["utilization"] - w["data_utilization"])))
    flows = r.summary["flows"]
    for f in ("victim",):
        if f in flows:
            print("  victim normalised throughput %.2f%%" % (100 * flows[f]["window"]["normalized"]))
    print("  sum of normalised flow throughput %.4f" % sum(v["window"]["normalized"] for v in flows.values()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=float, default=20.0)
    a = ap.parse_args()
    report("fig2a", a.ms, L=5, R=1, buffer_packets=4, victim=(round(a.ms * 0.4, 6), round(a.ms * 0.6, 6)))
    report("engine benchmark, L=10 R=10", a.ms, L=10, R=10, victim=(round(a.ms * 0.4, 6), round(a.ms * 0.6, 6)))
    report("two-way H1 <-> H2", a.ms, two_way(a.ms))


if __name__ == "__main__":
    main()
