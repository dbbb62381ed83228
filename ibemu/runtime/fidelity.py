"""``ibemu fidelity``: how closely the real-time emulation matches the virtual-time engine
on the same scenario (issue 4 item 4; ../shared/DESIGN.md §1: "the emulation's fidelity
can be measured by comparing the two").

Both runs share every line of node logic; the differences come only from the wall clock:
frames that reach another process after their receiver has moved past their arrival time
(the runtime's *slips*), and a machine too slow for the dilation.  Compared per flow:
delivered throughput over its active interval; per link: data bytes carried (data
utilization).  ``worst`` is the largest relative difference among the entries that carry
at least :data:`MIN_SHARE` of their link in the virtual run (tiny ones are noise).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..run import RunResult, run_virtual
from ..scenario import Scenario
from .controller import run_wall
from .verdict import format_verdict
from .report import format_runtime_line

__all__ = ["MIN_SHARE", "compare_summaries", "compare", "format_fidelity"]

MIN_SHARE = 0.01


def _rows(v: dict[str, Any], w: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, fv in v["flows"].items():
        fw = w["flows"].get(name, {})
        rows.append({"kind": "flow", "name": name, "virtual": fv["throughput"],
                     "wall": fw.get("throughput", 0.0), "share": fv.get("normalized") or 0.0})
    for label, lv in v["links"].items():
        lw = w["links"].get(label, {})
        if not lv["data_bytes"] and not lw.get("data_bytes"):
            continue
        rows.append({"kind": "link", "name": label, "virtual": lv["data_bytes"],
                     "wall": lw.get("data_bytes", 0), "share": lv.get("data_utilization") or 0.0})
    for r in rows:
        r["ratio"] = r["wall"] / r["virtual"] if r["virtual"] else None
    return rows


def compare_summaries(virtual: dict[str, Any], wall: dict[str, Any]) -> dict[str, Any]:
    """Rows (kind, name, virtual, wall, ratio, share) and the worst relative error."""
    rows = _rows(virtual, wall)
    errs = [abs(r["ratio"] - 1) for r in rows if r["ratio"] is not None and r["share"] >= MIN_SHARE]
    return {"rows": rows, "worst": max(errs) if errs else None}


def compare(scn: Scenario, dilation: float, workers: int | None = None,
            out_dir: str | Path | None = None, port_base: int | None = None,
            virtual: RunResult | None = None, realtime: bool = True, sync: str = "exact",
            allow_late: bool = False, place: list[list[str]] | None = None) -> dict[str, Any]:
    """Run *scn* on both clocks (*virtual*: a virtual-clock result to reuse); return
    :func:`compare_summaries` plus both results, and the wall run's verdict
    (``validity``: :func:`ibemu.runtime.verdict.verdict`, the rule ``ibemu run`` applies;
    *allow_late* only changes how it is reported)."""
    kw: dict[str, Any] = {} if port_base is None else {"port_base": port_base}
    v = virtual or run_virtual(scn)
    w = run_wall(scn, out_dir=out_dir, workers=workers, dilation=dilation, realtime=realtime,
                 sync=sync, place=place, **kw)
    report = compare_summaries(v.summary, w.summary)
    report.update(dilation=dilation, workers=len(w.runtime["workers"]), runtime=w.runtime,
                  virtual_seconds=v.wall_seconds, wall_seconds=w.wall_seconds,
                  validity=w.validity, allow_late=allow_late)
    return report


def format_fidelity(report: dict[str, Any]) -> str:
    lines = ["dilation %g, %d workers (wall run %.1f s; virtual run %.1f s)" % (
        report["dilation"], report["workers"], report["wall_seconds"], report["virtual_seconds"])]
    head = "%-5s %-14s %12s %12s %8s" % ("", "name", "virtual", "wall", "wall/virt")
    lines += [head, "-" * len(head)]
    for r in report["rows"]:
        unit = 8e-9 if r["kind"] == "flow" else 1e-6
        ratio = "-" if r["ratio"] is None else "%.4f" % r["ratio"]
        lines.append("%-5s %-14s %12.4f %12.4f %8s" % (r["kind"], r["name"], r["virtual"] * unit,
                                                       r["wall"] * unit, ratio))
    lines.append("(flows: Gb/s delivered over their active time; links: MB of data carried)")
    if report["worst"] is not None:
        lines.append("largest difference: %.2f %% (entries above %.0f %% of their link)" % (
            100 * report["worst"], 100 * MIN_SHARE))
    lines.append(format_runtime_line(report["runtime"]))
    lines.append(format_verdict(report["validity"], report.get("allow_late", False)))
    return "\n".join(lines)
