"""The summary of a run: its totals, rates and Jain fairness as a dict
(:func:`summarize`, the ``summary`` of results.json), and that dict as a plain-text
table for the terminal (:func:`format_summary_table`).

Rates are over each flow's active interval (seed 003 §3 reports throughput while a flow
sends); a group's rate is the sum of its members' as a fraction of one member's link;
fairness is Jain's index (:func:`~ibemu.results.rates.jain_index`).  Normalized rates
count wire bytes: every delivered data packet's whole frame (headers as present, pad,
ICRC, VCRC), so a flow alone at line rate is 1.0 whatever its operation.

Latency (:mod:`~ibemu.results.latency`): per flow and per group, message latencies (first
byte sent to last delivered) and finite flows' completion times; nearest-rank percentiles.

At cluster scale (issue 15 item 7) the table shows aggregates instead of a row per flow
or link: more than :data:`FLOW_ROWS_MAX` flows give one row per flow group (count,
sum/mean/min/max of the normalized rate, Jain's index, latency p50/p99) and the top and
bottom :data:`TOP_N` flows by rate (the victims show at the bottom); more than
:data:`LINK_ROWS_MAX` directed links give one row per fabric level (``up1``, ``down2``
... from :attr:`~ibemu.scenario.model.LinkSpec.levels`, :func:`link_levels`; links
without one in ``other``) and the top :data:`TOP_N` links.  The full rows are in the run
folder's flow_table.csv and link_table.csv (:mod:`.outputs`).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..units import PS_PER_MS, PS_PER_S, PS_PER_US
from .jobs import job_rows, job_summary
from .latency import latency_stats
from .rates import between, jain_index

if TYPE_CHECKING:
    from ..scenario.model import Scenario
    from .metrics import Metrics

FLOW_ROWS_MAX = 24
"""More flows than this: :func:`format_summary_table` shows per-group aggregates and the
top/bottom :data:`TOP_N` flows instead of a row per flow (24: a terminal page)."""
LINK_ROWS_MAX = 24
"""More directed links than this: per-level aggregates and the top :data:`TOP_N` links."""
TOP_N = 10
"""Rows of the top-N (and bottom-N) tables."""
BUSY_UTILIZATION = 0.9
"""A link at or above this utilization counts as busy in the per-level table."""
OTHER_LEVEL = "other"
"""The level row of links without a level."""
FLOW_TABLE = "flow_table.csv"
"""The run folder's file with one row per flow (:func:`ibemu.results.outputs.write_outputs`)."""
LINK_TABLE = "link_table.csv"
"""The run folder's file with one row per directed link, with its level."""


def link_levels(scenario: Scenario) -> dict[str, str]:
    """Directed link label -> fabric level (``"up1"``, ``"down2"``, ...) of every link
    of *scenario* with :attr:`~ibemu.scenario.model.LinkSpec.levels` set (issue 15 level
    names: hosts are level 0, leaves 1, ...; a->b going up from level i-1 to i is
    ``up<i>``, the reverse ``down<i>``)."""
    out: dict[str, str] = {}
    for link in scenario.links:
        if link.levels:
            for label, level in zip(link.labels(), link.levels):
                out[label] = level
    return out


def level_order(level: str) -> tuple[int, int, str]:
    """Sort key of level names: up1, up2, ... then ..., down2, down1 (a path's order from
    a host up to the roots and back down), then other names, then ``other``."""
    for k, prefix in enumerate(("up", "down")):
        if level.startswith(prefix) and level[len(prefix):].isdigit():
            n = int(level[len(prefix):])
            return (k, n if k == 0 else -n, "")
    return (3 if level == OTHER_LEVEL else 2, 0, level)


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
    counters = m.counters()
    for name, f in flows.items():        # issue 31: a responder with a reorder window (node "flow:<name>")
        if (reorder := counters.get("flow:" + name)) is not None:
            f["out_of_order"] = reorder.get("out_of_order", 0)
            f["reorder_depth"] = reorder.get("reorder_depth", 0)

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
    out = {"duration_ps": m.duration, "bin_ps": m.bin,
           "window": {"from_ps": win[0], "to_ps": win[1]} if win else None,
           "flows": flows, "groups": groups, "links": links, "fairness": fairness,
           "counters": m.counters()}
    if m.jobs or m.job_marks:           # issue 29: only runs with jobs have the key
        out["jobs"] = job_summary(m.job_marks, m.jobs, m.job_baselines)
    return out


def _makespan(m: Metrics, fcts: dict[str, int]) -> int:
    """From the first byte of the first of the finite flows *fcts* (name -> completion
    time, all complete) to the last byte the last of them delivered."""
    firsts = {x: m.first_start(x) for x in fcts}
    return max(firsts[x] + fct for x, fct in fcts.items()) - min(firsts.values())


def format_summary_table(summary: dict[str, Any], link_levels: Mapping[str, str] | None = None,
                         out_dir: str | Path | None = None, *, top: int = TOP_N,
                         max_flows: int = FLOW_ROWS_MAX, max_links: int = LINK_ROWS_MAX) -> str:
    """Plain-text table of a :meth:`Metrics.summary` (or results.json) dict.

    Up to *max_flows* flows and *max_links* directed links: a row each.  More: per-group
    and per-level aggregates and the top (and, for flows, bottom) *top* rows, and a line
    naming the CSV files with every row (in *out_dir* when given).  *link_levels*: label
    -> level (:func:`link_levels`); a results.json dict brings its own ``link_levels``."""
    s = summary.get("summary", summary)
    win = s.get("window")
    levels = dict(summary.get("link_levels") or {}) if "summary" in summary else {}
    levels.update(link_levels or {})

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

    flows: dict[str, dict[str, Any]] = s.get("flows", {})
    groups: dict[str, dict[str, Any]] = s.get("groups", {})
    entries = list(flows.values()) + list(groups.values())
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
    flow_head = ["flow", "group", "Gb/s", "of link", "packets", "messages"]
    if with_lat:
        flow_head += ["p50 us", "p99 us", "max us"]
    if with_fct:
        flow_head.append("done in us")
    aggregated = False
    if len(flows) > max_flows:
        aggregated = True
        out += _group_rows(flows, groups, pick, pct, us, with_lat, table)
        names = list(flows)                   # ties in flow order
        n = min(top, len(names))
        for title, sign in (("top", -1.0), ("bottom", 1.0)):
            ranked = sorted(range(len(names)), key=lambda i: (sign * _rate(pick(flows[names[i]])), i))
            out += ["", "%s %d of %d flows by rate" % (title, n, len(flows))]
            out += table(flow_head, [row(names[i], flows[names[i]].get("group") or "-", flows[names[i]])
                                     for i in ranked[:n]], 2)
    else:
        rows = [row(name, f.get("group") or "-", f) for name, f in flows.items()]
        rows += [row("[" + g + "]", g, d) for g, d in groups.items()]
        if rows:
            out += table(flow_head, rows, 2)
    links: dict[str, dict[str, Any]] = s.get("links", {})
    if len(links) > max_links:
        aggregated = True
        out += [""] + _level_rows(links, levels, pick, pct, table)
        labels = list(links)                  # ties in link order
        order = sorted(range(len(labels)), key=lambda i: (-(pick(links[labels[i]])["utilization"] or 0.0),
                                                          -pick(links[labels[i]])["bytes"], i))
        ranked = [labels[i] for i in order]
        n = min(top, len(ranked))
        out += ["", "top %d of %d links by utilization" % (n, len(links))]
        out += table(["link", "level", "util", "data util", "bytes"],
                     [[lbl, levels.get(lbl, OTHER_LEVEL), pct(pick(links[lbl])["utilization"]),
                       pct(pick(links[lbl])["data_utilization"]), "%.0f" % pick(links[lbl])["bytes"]]
                      for lbl in ranked[:n]], 2)
    else:
        lrows = [[lbl, pct(pick(d)["utilization"]), pct(pick(d)["data_utilization"]), "%.0f" % pick(d)["bytes"]]
                 for lbl, d in links.items()]
        if lrows:
            out += [""] + table(["link", "util", "data util", "bytes"], lrows, 1)
    if s.get("jobs"):
        out += [""] + job_rows(s["jobs"])
    fair = s.get("fairness")
    if fair:
        j = fair.get("jain_window", fair["jain"]) if win else fair["jain"]
        out += ["", "Jain fairness (flows): %.4f" % j]
    if aggregated:
        where = [str(Path(out_dir) / f) if out_dir is not None else f for f in (FLOW_TABLE, LINK_TABLE)]
        out.append("every flow and link: %s, %s%s" % (where[0], where[1],
                                                     "" if out_dir is not None else " in the run folder"))
    return "\n".join(out)


def _rate(d: dict[str, Any]) -> float:
    """A flow's rank for the top/bottom tables: its normalized rate, else its Gb/s."""
    norm = d.get("normalized")
    return float(norm) if norm is not None else float(d["throughput_gbps"])


def _active(f: dict[str, Any]) -> bool:
    """Whether a flow was active in the summary's span (its window when it has one), as
    :func:`summarize` counts it for Jain's index."""
    w = f.get("window")
    return bool(w["active_ps"] > 0) if w is not None else bool(f["stop_ps"] > f["start_ps"])


def _group_rows(flows: dict[str, dict[str, Any]], groups: dict[str, dict[str, Any]], pick: Any, pct: Any,
                us: Any, with_lat: bool, table: Any) -> list[str]:
    """The per-group table: members, the sum/mean/min/max of their normalized rates, the
    sum of their Gb/s, Jain's index among them and the group's latency p50/p99.  Flows
    without a group are one row ``-`` (Jain's index among them; no pooled latency)."""
    members: dict[str, list[str]] = {g: list(d["flows"]) for g, d in groups.items()}
    loose = [x for x, f in flows.items() if not f.get("group")]
    if loose:
        members["-"] = loose
    head = ["group", "flows", "sum", "mean", "min", "max", "Gb/s", "Jain"]
    if with_lat:
        head += ["p50 us", "p99 us"]
    rows = []
    for g, names in members.items():
        norms = [pick(flows[x])["normalized"] for x in names if pick(flows[x])["normalized"] is not None]
        if g in groups:
            gd = pick(groups[g])
            jain = gd.get("jain")
            lat = gd.get("latency") or {}
        else:
            jain = jain_index(pick(flows[x])["throughput"] for x in names if _active(flows[x]))
            lat = {}
        r = [g, str(len(names)), pct(sum(norms) if norms else None),
             pct(sum(norms) / len(norms) if norms else None), pct(min(norms) if norms else None),
             pct(max(norms) if norms else None),
             "%.3f" % sum(pick(flows[x])["throughput_gbps"] for x in names),
             "-" if jain is None else "%.4f" % jain]
        if with_lat:
            r += [us(lat.get("p50_ps")), us(lat.get("p99_ps"))]
        rows.append(r)
    return ["%d flows, rate as a fraction of the source link, per group" % len(flows)] + table(head, rows, 1)


def _level_rows(links: dict[str, dict[str, Any]], levels: Mapping[str, str], pick: Any, pct: Any,
                table: Any) -> list[str]:
    """The per-level table: links, the mean and max utilization (all frames), how many
    are at or above :data:`BUSY_UTILIZATION` and how many carried no data packet (flow
    control only)."""
    by: dict[str, list[str]] = {}
    for lbl in links:
        by.setdefault(levels.get(lbl, OTHER_LEVEL), []).append(lbl)
    rows = []
    for lev in sorted(by, key=level_order):
        utils = [pick(links[x])["utilization"] for x in by[lev] if pick(links[x])["utilization"] is not None]
        rows.append([lev, str(len(by[lev])), pct(sum(utils) / len(utils) if utils else None),
                     pct(max(utils) if utils else None),
                     str(sum(1 for u in utils if u >= BUSY_UTILIZATION)),
                     str(sum(1 for x in by[lev] if not pick(links[x])["data_bytes"]))])
    return (["%d directed links, utilization per fabric level" % len(links)]
            + table(["level", "links", "mean util", "max util", ">=%d%%" % round(100 * BUSY_UTILIZATION), "no data"],
                    rows, 1))
