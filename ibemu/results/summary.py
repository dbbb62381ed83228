"""The summary of a run: its totals, rates and Jain fairness as a dict
(:func:`summarize`, the ``summary`` of results.json), and that dict as a plain-text
table for the terminal (:func:`format_summary_table`).

Rates are over each flow's active interval (seed 003 §3 reports throughput while a flow
sends); a group's rate is the sum of its members' as a fraction of one member's link,
and fairness is Jain's index among the flows (:func:`~ibemu.results.rates.jain_index`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..units import PS_PER_MS, PS_PER_S
from .rates import between, jain_index

if TYPE_CHECKING:
    from .metrics import Metrics


def summarize(m: Metrics, t_from: int | None = None, t_to: int | None = None) -> dict[str, Any]:
    """Totals and rates of the run recorded in *m*, and over [t_from, t_to] when either
    is given.

    Flows: rx_bytes/rx_packets/messages/tx_*, throughput (bytes/s) over the active
    interval [start, min(stop, duration)], normalized (fraction of the source link,
    packet_overhead included).  Groups: the same for the members' sum over the union
    span of their active intervals, plus Jain's index among members.  Links: bytes,
    utilization (all frames) and data_utilization over the run.  "window" sub-dicts
    hold the same over [t_from, t_to] (intersected with the active interval).
    """
    edges = m.edges()
    win = None
    if t_from is not None or t_to is not None:
        lo = max(0, int(t_from or 0))
        hi = min(m.duration, int(m.duration if t_to is None else t_to))
        if hi <= lo:
            raise ValueError("empty summary window [%r, %r]" % (t_from, t_to))
        win = (lo, hi)
    ov = m.packet_overhead

    def rates(byt: float, pkts: float, t0: int, t1: int, cap: int | None) -> tuple[float, float | None]:
        """(bytes/s, fraction of *cap* with the per-packet overhead) over [t0, t1]."""
        secs = (t1 - t0) / PS_PER_S
        tput = byt / secs if secs > 0 else 0.0
        norm = None
        if cap:
            norm = (byt + ov * pkts) / secs / cap if secs > 0 else 0.0
        return tput, norm

    flows: dict[str, dict[str, Any]] = {}
    run_tputs: dict[str, float] = {}
    win_tputs: dict[str, float] = {}
    for name in m.flow_names():
        rxb, rxp, msg, txb, txp = m.flow_totals(name)
        start, stop = m.active_interval(name)
        cap = m.flow_capacity.get(name)
        tput, norm = rates(rxb, rxp, start, stop, cap)
        f: dict[str, Any] = {"group": m.group_of(name), "rx_bytes": rxb, "rx_packets": rxp, "messages": msg,
                             "tx_bytes": txb, "tx_packets": txp, "start_ps": start, "stop_ps": stop,
                             "throughput": tput, "throughput_gbps": tput * 8e-9, "normalized": norm,
                             "capacity": cap}
        if stop > start:
            run_tputs[name] = tput
        if win:
            a, b = max(start, win[0]), min(stop, win[1])
            wb = between(m.flow_bins(name, "rx_bytes"), edges, a, b)
            wp = between(m.flow_bins(name, "rx_packets"), edges, a, b)
            wt, wn = rates(wb, wp, a, b, cap)
            f["window"] = {"rx_bytes": wb, "rx_packets": wp, "active_ps": max(0, b - a),
                           "messages": between(m.flow_bins(name, "messages"), edges, a, b),
                           "throughput": wt, "throughput_gbps": wt * 8e-9, "normalized": wn}
            if b > a:
                win_tputs[name] = wt
        flows[name] = f

    groups: dict[str, dict[str, Any]] = {}
    for g, members in m.groups().items():
        cap = m.group_capacity(members)
        rxb = sum(flows[x]["rx_bytes"] for x in members)
        rxp = sum(flows[x]["rx_packets"] for x in members)
        start = min(flows[x]["start_ps"] for x in members)
        stop = max(flows[x]["stop_ps"] for x in members)
        tput, norm = rates(rxb, rxp, start, stop, cap)
        gd: dict[str, Any] = {"flows": members, "rx_bytes": rxb, "rx_packets": rxp,
                              "messages": sum(flows[x]["messages"] for x in members),
                              "start_ps": start, "stop_ps": stop, "throughput": tput,
                              "throughput_gbps": tput * 8e-9, "normalized": norm, "capacity": cap,
                              "jain": jain_index(run_tputs[x] for x in members if x in run_tputs)}
        if win:
            a, b = max(start, win[0]), min(stop, win[1])
            wb = sum(flows[x]["window"]["rx_bytes"] for x in members)
            wp = sum(flows[x]["window"]["rx_packets"] for x in members)
            wt, wn = rates(wb, wp, a, b, cap)
            gd["window"] = {"rx_bytes": wb, "rx_packets": wp, "throughput": wt,
                            "messages": sum(flows[x]["window"]["messages"] for x in members),
                            "throughput_gbps": wt * 8e-9, "normalized": wn,
                            "jain": jain_index(win_tputs[x] for x in members if x in win_tputs)}
        groups[g] = gd

    links: dict[str, dict[str, Any]] = {}
    for label in m.link_names():
        allb, datab, datap = m.link_totals(label)
        lcap = m.link_capacity.get(label)
        secs = m.duration / PS_PER_S
        ld: dict[str, Any] = {"bytes": allb, "data_bytes": datab, "data_packets": datap, "capacity": lcap,
                              "utilization": allb / secs / lcap if lcap else None,
                              "data_utilization": datab / secs / lcap if lcap else None}
        if win:
            ws = (win[1] - win[0]) / PS_PER_S
            wb = between(m.link_bins(label, "bytes"), edges, *win)
            wd = between(m.link_bins(label, "data_bytes"), edges, *win)
            ld["window"] = {"bytes": wb, "data_bytes": wd,
                            "data_packets": between(m.link_bins(label, "data_packets"), edges, *win),
                            "utilization": wb / ws / lcap if lcap else None,
                            "data_utilization": wd / ws / lcap if lcap else None}
        links[label] = ld

    fairness: dict[str, Any] = {"jain": jain_index(run_tputs.values()),
                                "groups": {g: groups[g]["jain"] for g in groups}}
    if win:
        fairness["jain_window"] = jain_index(win_tputs.values())
    return {"duration_ps": m.duration, "bin_ps": m.bin,
            "packet_overhead": m.packet_overhead,
            "window": {"from_ps": win[0], "to_ps": win[1]} if win else None,
            "flows": flows, "groups": groups, "links": links, "fairness": fairness,
            "counters": m.counters()}


def format_summary_table(summary: dict[str, Any]) -> str:
    """Plain-text table of a :meth:`Metrics.summary` (or results.json) dict."""
    s = summary.get("summary", summary)
    win = s.get("window")

    def pick(d: dict[str, Any]) -> dict[str, Any]:
        return d.get("window", d) if win else d

    def pct(x: float | None) -> str:
        return "-" if x is None else "%.3f" % x

    def table(head: list[str], rows: list[list[str]], left: int) -> list[str]:
        """Columns before index *left* are left-aligned (names), the rest right-aligned."""
        widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]

        def line(r: list[str]) -> str:
            return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]

    out: list[str] = []
    if win:
        out.append("window %.6g .. %.6g ms" % (win["from_ps"] / PS_PER_MS, win["to_ps"] / PS_PER_MS))

    def row(name: str, group: str, d: dict[str, Any]) -> list[str]:
        d = pick(d)
        return [name, group, "%.3f" % d["throughput_gbps"], pct(d["normalized"]),
                "%.0f" % d["rx_packets"], "%.0f" % d["messages"]]
    rows = [row(name, f.get("group") or "-", f) for name, f in s.get("flows", {}).items()]
    rows += [row("[" + g + "]", g, d) for g, d in s.get("groups", {}).items()]
    if rows:
        out += table(["flow", "group", "Gb/s", "of link", "packets", "messages"], rows, 2)
    lrows = [[lbl, pct(pick(d)["utilization"]), pct(pick(d)["data_utilization"]), "%.0f" % pick(d)["bytes"]]
             for lbl, d in s.get("links", {}).items()]
    if lrows:
        out += [""] + table(["link", "util", "data util", "bytes"], lrows, 1)
    fair = s.get("fairness")
    if fair:
        j = fair.get("jain_window", fair["jain"]) if win else fair["jain"]
        out += ["", "Jain fairness (flows): %.4f" % j]
    return "\n".join(out)
