"""The wall clock's lines for people (issue 4 items 2 and 6; issue 8 items 2 and 5): the
runtime counters of a run (datagrams, losses, slips, injected faults, strangers,
overload), the line announcing a run's workers, and ``ibemu node``'s summary of one
part.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..scenario import Scenario
from .loop import OVERLOAD


def format_runtime_line(runtime: dict[str, Any]) -> str:
    """The ``runtime`` table of a run (:func:`ibemu.runtime.merge.merge_runtime`) in a
    line, plus one line each for injected faults, strangers and overloaded workers."""
    line = ("%d datagrams sent, %d received, %d lost; %d cross-process arrivals behind their "
            "receiver (mean %.0f ns, max %.0f ns emulated)" % (
                runtime["datagrams_sent"], runtime["datagrams_received"], runtime["datagrams_lost"],
                runtime["slips"], runtime["mean_slip_ps"] / 1000, runtime["max_slip_ps"] / 1000))
    if runtime.get("datagrams_lost_injected") or runtime.get("datagrams_duplicated"):
        line += ("\nlink faults: %d frames lost and %d duplicated on purpose (%d duplicates dropped "
                 "by the receivers; per link in results.json counters)" % (
                     runtime["datagrams_lost_injected"], runtime["datagrams_duplicated"],
                     runtime["duplicates_dropped"]))
    if runtime.get("strangers") or runtime.get("bad_datagrams") or runtime.get("forged"):
        line += "\n" + _dropped_line(runtime)
    if runtime.get("sync") == "exact":
        waits = ", ".join("worker %s %.2f s" % (w["worker"], w.get("wait_peers_s", 0.0))
                          for w in runtime.get("workers", []) if w.get("wait_peers_s") is not None)
        eff = runtime.get("effective_dilation")
        line += ("\nexact: %s rounds; effective dilation %s (requested %g); wall time waiting for peers: %s"
                 % (max((w.get("rounds", 0) for w in runtime.get("workers", [])), default=0),
                    "%.4g" % eff if eff else "-", runtime.get("dilation") or 0, waits or "-"))
    elif runtime.get("overloaded"):
        emulated_us = 1e6 * OVERLOAD / runtime["dilation"] if runtime.get("dilation") else 0.0
        line += ("\nwarning: worker %s fell more than %.0f ms of wall time (%.0f us emulated) behind "
                 "the wall clock (--sync exact would run slower instead)" % (
                     ", ".join(map(str, runtime["overloaded"])), 1000 * OVERLOAD, emulated_us))
    return line


def _dropped_line(rt: dict[str, Any]) -> str:
    """The datagrams dropped unread: strangers, forged (bad MAC, replayed or out of the
    replay window; issue 14) and malformed."""
    return ("%d datagrams from addresses that are not the port's peer, %d forged (bad MAC, replayed "
            "or out of window) and %d malformed ones dropped" % (
                rt.get("strangers", 0), rt.get("forged", 0), rt.get("bad_datagrams", 0)))


def format_start(scn: Scenario, pids: Sequence[int], dilation: float) -> str:
    """The line ``ibemu run --clock wall`` prints when its workers start."""
    return ("ibemu: %d workers (pids %s) running %g ms of emulated time at dilation %g: "
            "about %.1f s" % (len(pids), " ".join(str(p) for p in pids),
                              scn.duration / 1e9, dilation, scn.duration * dilation / 1e12))


def format_node_summary(scn: Scenario, names: Sequence[str], data: dict[str, Any]) -> str:
    """What ``ibemu node`` prints at the end: per flow received here, its packets and
    messages; the part's datagram counts."""
    here = set(names)
    rx = data["metrics"]["flow_rx"]
    lines = []
    for f in scn.flows:
        if f.dst in here:
            series = rx.get(f.name, [[], [], []])
            lines.append("flow %s: %d packets, %d messages received at %s" % (
                f.name, sum(series[1]) if series[1] else 0, sum(series[2]) if series[2] else 0, f.dst))
    rt = data["runtime"]
    lines.append("%s: %d datagrams sent, %d received, %d lost; %s" % (
        ",".join(names), rt["datagrams_sent"], rt["datagrams_received"], rt["datagrams_lost"],
        "completed" if data["completed"] else "stopped early"))
    if rt.get("strangers") or rt.get("bad_datagrams") or rt.get("forged"):
        lines.append(_dropped_line(rt))
    return "\n".join(lines)
