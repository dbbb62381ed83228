"""The summary of a run: its totals, rates and Jain fairness as a dict
(:func:`summarize`, the ``summary`` of results.json), and that dict as a plain-text
table for the terminal (:func:`format_summary_table`).

Rates are over each flow's active interval (seed 003 §3 reports throughput while a flow
sends); a group's rate is the sum of its members' as a fraction of one member's link,
and fairness is Jain's index among the flows (:func:`~ibemu.results.rates.jain_index`).
Normalized rates count wire bytes: every delivered data packet's whole frame (LRH,
BTH, DETH / RETH / AETH as present, pad, ICRC, VCRC), so a flow alone at line rate is
1.0 whatever its operation.

Latency (:mod:`~ibemu.results.latency`): per flow and per group, the distribution of
message latencies (first byte sent to last byte delivered) and, for finite flows, the
completion time; nearest-rank percentiles.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..units import PS_PER_MS, PS_PER_S, PS_PER_US
from .latency import latency_stats
from .rates import between, jain_index

if TYPE_CHECKING:
    from .metrics import Metrics


def summarize(m: Metrics, t_from: int | None = None, t_to: int | None = None) -> dict[str, Any]:
    """Totals and rates of the run recorded in *m*, and over [t_from, t_to] when either
    is given.

    Flows: rx_bytes/rx_packets/messages/tx_*, rx_wire_bytes, throughput (bytes/s) over
    the active interval [start, min(stop, duration)], normalized (the wire bytes'
    rate as a fraction of the source link).  ``latency``: count, p50_ps, p99_ps,
    max_ps, mean_ps of the messages delivered whole (None without any);
    ``messages_started``; ``finite`` (pattern ``messages``); ``completion_ps``: a
    finite flow's completion time (None for other flows and while unfinished).

    Groups: the same for the members' sum over the union span of their active
    intervals, plus Jain's index among members; latency over all members' messages;
    ``completion``: the distribution of the finite members' completion times
    (``finite``: how many members are finite); ``completion_ps``: from the first
    member's first byte to the last member's last byte, once every finite member is
    done.

    Links: bytes, utilization (all frames) and data_utilization over the run.
    "window" sub-dicts hold the same over [t_from, t_to] (intersected with the active
    interval; latency of the messages completed in it).
    """
    edges = m.edges()
    win = None
    if t_from is not None or t_to is not None:
        lo = max(0, int(t_from or 0))
        hi = min(m.duration, int(m.duration if t_to is None else t_to))
        if hi <= lo:
            raise ValueError("empty summary window [%r, %r]" % (t_from, t_to))
        win = (lo, hi)
    def rates(byt: float, wire: float, t0: int, t1: int, cap: int | None) -> tuple[float, float | None]:
        """(payload bytes/s, wire bytes/s as a fraction of *cap*) over [t0, t1]."""
        secs = (t1 - t0) / PS_PER_S
        tput = byt / secs if secs > 0 else 0.0
        norm = None
        if cap:
            norm = wire / secs / cap if secs > 0 else 0.0
        return tput, norm

    flows: dict[str, dict[str, Any]] = {}
    run_tputs: dict[str, float] = {}
    win_tputs: dict[str, float] = {}
    lats: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in m.flow_names():
        rxb, rxp, msg, txb, txp = m.flow_totals(name)
        rxw = m.flow_wire_total(name)
        start, stop = m.active_interval(name)
        cap = m.flow_capacity.get(name)
        tput, norm = rates(rxb, rxw, start, stop, cap)
        lats[name] = lat, done = m.latencies(name)
        f: dict[str, Any] = {"group": m.group_of(name), "rx_bytes": rxb, "rx_packets": rxp, "messages": msg,
                             "rx_wire_bytes": rxw,
                             "tx_bytes": txb, "tx_packets": txp, "start_ps": start, "stop_ps": stop,
                             "throughput": tput, "throughput_gbps": tput * 8e-9, "normalized": norm,
                             "capacity": cap, "latency": latency_stats(lat),
                             "messages_started": m.messages_started(name),
                             "finite": m.is_finite(name), "completion_ps": m.completion(name)}
        if stop > start:
            run_tputs[name] = tput
        if win:
            a, b = max(start, win[0]), min(stop, win[1])
            wb = between(m.flow_bins(name, "rx_bytes"), edges, a, b)
            wp = between(m.flow_bins(name, "rx_packets"), edges, a, b)
            ww = between(m.flow_bins(name, "rx_wire_bytes"), edges, a, b)
            wt, wn = rates(wb, ww, a, b, cap)
            f["window"] = {"rx_bytes": wb, "rx_packets": wp, "rx_wire_bytes": ww, "active_ps": max(0, b - a),
                           "messages": between(m.flow_bins(name, "messages"), edges, a, b),
                           "throughput": wt, "throughput_gbps": wt * 8e-9, "normalized": wn,
                           "latency": latency_stats(lat[(done >= a) & (done <= b)])}
            if b > a:
                win_tputs[name] = wt
        flows[name] = f

    groups: dict[str, dict[str, Any]] = {}
    for g, members in m.groups().items():
        cap = m.group_capacity(members)
        rxb = sum(flows[x]["rx_bytes"] for x in members)
        rxp = sum(flows[x]["rx_packets"] for x in members)
        rxw = sum(flows[x]["rx_wire_bytes"] for x in members)
        start = min(flows[x]["start_ps"] for x in members)
        stop = max(flows[x]["stop_ps"] for x in members)
        tput, norm = rates(rxb, rxw, start, stop, cap)
        glat = np.concatenate([lats[x][0] for x in members])
        finite = [x for x in members if m.is_finite(x)]
        fcts = {x: flows[x]["completion_ps"] for x in finite if flows[x]["completion_ps"] is not None}
        gd: dict[str, Any] = {"flows": members, "rx_bytes": rxb, "rx_packets": rxp, "rx_wire_bytes": rxw,
                              "messages": sum(flows[x]["messages"] for x in members),
                              "start_ps": start, "stop_ps": stop, "throughput": tput,
                              "throughput_gbps": tput * 8e-9, "normalized": norm, "capacity": cap,
                              "jain": jain_index(run_tputs[x] for x in members if x in run_tputs),
                              "latency": latency_stats(glat),
                              "messages_started": sum(flows[x]["messages_started"] for x in members),
                              "completion": latency_stats(np.array(list(fcts.values()), dtype=np.int64)),
                              "finite": len(finite),
                              "completion_ps": _makespan(m, fcts) if finite and len(fcts) == len(finite)
                              else None}
        if win:
            a, b = max(start, win[0]), min(stop, win[1])
            wb = sum(flows[x]["window"]["rx_bytes"] for x in members)
            wp = sum(flows[x]["window"]["rx_packets"] for x in members)
            ww = sum(flows[x]["window"]["rx_wire_bytes"] for x in members)
            wt, wn = rates(wb, ww, a, b, cap)
            wlat = np.concatenate([lats[x][0][(lats[x][1] >= a) & (lats[x][1] <= b)] for x in members])
            gd["window"] = {"rx_bytes": wb, "rx_packets": wp, "rx_wire_bytes": ww, "throughput": wt,
                            "messages": sum(flows[x]["window"]["messages"] for x in members),
                            "throughput_gbps": wt * 8e-9, "normalized": wn,
                            "jain": jain_index(win_tputs[x] for x in members if x in win_tputs),
                            "latency": latency_stats(wlat)}
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
            "window": {"from_ps": win[0], "to_ps": win[1]} if win else None,
            "flows": flows, "groups": groups, "links": links, "fairness": fairness,
            "counters": m.counters()}


def _makespan(m: Metrics, fcts: dict[str, int]) -> int:
    """From the first byte of the first of the finite flows *fcts* (name -> completion
    time, all complete) to the last byte the last of them delivered."""
    firsts = {x: m.first_start(x) for x in fcts}
    return max(firsts[x] + fct for x, fct in fcts.items()) - min(firsts.values())


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

    def us(ps: float | None) -> str:
        return "-" if ps is None else "%.2f" % (ps / PS_PER_US)

    entries = list(s.get("flows", {}).values()) + list(s.get("groups", {}).values())
    with_lat = any(pick(d).get("latency") for d in entries)
    with_fct = any(d.get("completion_ps") is not None for d in entries)

    def row(name: str, group: str, d: dict[str, Any]) -> list[str]:
        r = [name, group, "%.3f" % pick(d)["throughput_gbps"], pct(pick(d)["normalized"]),
             "%.0f" % pick(d)["rx_packets"], "%.0f" % pick(d)["messages"]]
        if with_lat:
            lat = pick(d).get("latency") or {}
            r += [us(lat.get("p50_ps")), us(lat.get("p99_ps")), us(lat.get("max_ps"))]
        if with_fct:
            r.append(us(d.get("completion_ps")))
        return r
    rows = [row(name, f.get("group") or "-", f) for name, f in s.get("flows", {}).items()]
    rows += [row("[" + g + "]", g, d) for g, d in s.get("groups", {}).items()]
    if rows:
        head = ["flow", "group", "Gb/s", "of link", "packets", "messages"]
        if with_lat:
            head += ["p50 us", "p99 us", "max us"]
        if with_fct:
            head.append("done in us")
        out += table(head, rows, 2)
    lrows = [[lbl, pct(pick(d)["utilization"]), pct(pick(d)["data_utilization"]), "%.0f" % pick(d)["bytes"]]
             for lbl, d in s.get("links", {}).items()]
    if lrows:
        out += [""] + table(["link", "util", "data util", "bytes"], lrows, 1)
    fair = s.get("fairness")
    if fair:
        j = fair.get("jain_window", fair["jain"]) if win else fair["jain"]
        out += ["", "Jain fairness (flows): %.4f" % j]
    return "\n".join(out)
