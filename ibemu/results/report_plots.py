"""The plot sections of ``ibemu report`` (issue 18 item 3), from the run's CSV series:
flow and group rates, link utilisation (curves, or the busiest and a heatmap of all),
message latency, the ports' counters over time and the congestion-control events."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .reader import Results, read_series
from .report_elements import (
    REPORT_MAX_CURVES,
    REPORT_MAX_PORTS,
    REPORT_MAX_TRACE_KEYS,
    REPORT_TOP,
    busiest,
    figure_html,
    heatmap_figure,
    html_table,
    lines_figure,
    section,
)


def time_series(res: Results, name: str) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """The run's CSV time series *name* as (times in ms, the other columns), or None when
    the run has none."""
    path = res.path / name
    if not path.exists():
        return None
    cols = read_series(path)
    return cols.pop("time_ms", np.zeros(0)), cols


def rates_section(go: Any, res: Results) -> str:
    series = time_series(res, "flows.csv")
    if series is None:
        return ""
    times, cols = series
    groups = {k[len("group:"):]: v for k, v in cols.items() if k.startswith("group:")}
    flows = {k: v for k, v in cols.items() if not k.startswith("group:")}
    parts = []
    if groups:
        parts.append(figure_html(lines_figure(go, "%s - flow group rates" % res.scenario, times, groups.items(),
                                              "delivered rate (fraction of link bandwidth)"), "plot-groups"))
    if flows:
        if len(flows) <= REPORT_MAX_CURVES:
            curves, title = list(flows.items()), "%s - flow rates" % res.scenario
        else:
            top = busiest(flows, REPORT_TOP)
            curves = [(k, flows[k]) for k in top]
            title = "%s - busiest %d of %d flows" % (res.scenario, len(top), len(flows))
        parts.append(figure_html(lines_figure(go, title, times, curves, "delivered rate (fraction of link bandwidth)"),
                                 "plot-flows"))
    note = "<p class=note>Sliding-window rates as in flows.csv, each a fraction of its source link.</p>"
    return section("Throughput", "throughput", note + "".join(parts))


def links_section(go: Any, res: Results) -> str:
    series = time_series(res, "links.csv")
    if series is None:
        return ""
    times, cols = series
    links = {k: v for k, v in cols.items() if not k.endswith(":data")}
    if not links:
        return ""
    parts = []
    ytitle = "utilization (fraction of link bandwidth)"
    if len(links) <= REPORT_MAX_CURVES:
        parts.append(figure_html(lines_figure(go, "%s - link utilization (all frames)" % res.scenario, times,
                                              links.items(), ytitle), "plot-links"))
    else:
        top = busiest(links, REPORT_TOP)
        parts.append(figure_html(lines_figure(go, "%s - busiest %d of %d links" % (res.scenario, len(top), len(links)),
                                              times, [(k, links[k]) for k in top], ytitle), "plot-links"))
        levels = res.data.get("link_levels") or {}
        order = sorted(links, key=lambda k: (levels.get(k, "~"), list(links).index(k)))
        parts.append(figure_html(heatmap_figure(go, "%s - every link's utilization" % res.scenario, times, links,
                                                order, "directed link (by level)" if levels else "directed link",
                                                "utilization"), "plot-links-heatmap"))
    return section("Link utilization", "links", "".join(parts))


def latency_section(go: Any, res: Results) -> str:
    try:
        rows = res.latency()
    except FileNotFoundError:
        return ""
    have = {n: r for n, r in rows.items() if r.get("p50_us")}
    if not have:
        return ""
    groups = {n: r for n, r in have.items() if r["kind"] == "group"}
    chosen = groups if groups else have
    names = list(chosen)[:40]
    fig = go.Figure()
    for col, label in (("p50_us", "p50"), ("p99_us", "p99"), ("max_us", "max")):
        fig.add_trace(go.Bar(x=names, y=[float(chosen[n][col]) if chosen[n][col] else None for n in names],
                             name=label))
    fig.update_layout(title="%s - message latency per %s" % (res.scenario, "group" if groups else "flow"),
                      xaxis_title="group" if groups else "flow", yaxis_title="latency (µs)", barmode="group",
                      height=420)
    table = html_table(("name", "kind", "messages", "p50 (µs)", "p99 (µs)", "max (µs)", "mean (µs)",
                        "completion (µs)"),
                       [(n, r["kind"], int(r["messages"]),
                         *[float(r[c]) if r[c] else None for c in ("p50_us", "p99_us", "max_us", "mean_us",
                                                                   "completion_us")])
                        for n, r in have.items()], what="rows", csv="latency.csv")
    note = ("<p class=note>Per message, first byte sent to last byte delivered (nearest-rank percentiles, "
            "latency.csv).</p>")
    return section("Latency", "latency", note + figure_html(fig, "plot-latency") + table)


def _port_columns(cols: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """counters.csv's ``node:port:Counter`` columns as counter -> port -> series."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for k, v in cols.items():
        port, _, counter = k.rpartition(":")
        if port:
            out.setdefault(counter, {})[port] = v
    return out


def counters_section(go: Any, res: Results) -> tuple[str, dict[str, dict[str, np.ndarray]], np.ndarray]:
    series = time_series(res, "counters.csv")
    if series is None:
        return "", {}, np.zeros(0)
    times, cols = series
    by = _port_columns(cols)
    if not by or not len(times):
        return "", by, times
    xmit = by.get("PortXmitData") or next(iter(by.values()))
    ports = sorted(xmit, key=lambda p: (-float(xmit[p][-1]), list(xmit).index(p)))[:REPORT_MAX_PORTS]
    counters = list(by)
    fig = go.Figure()
    for c, counter in enumerate(counters):
        for p in ports:
            y = by[counter].get(p)
            fig.add_trace(go.Scatter(x=times, y=y if y is not None else np.zeros(len(times)), name=p,
                                     mode="lines", visible=c == 0, line={"shape": "hv", "width": 1.4}))
    n = len(ports)
    buttons = [{"label": counter, "method": "update",
                "args": [{"visible": [k // n == c for k in range(n * len(counters))]},
                         {"title.text": "%s - %s over time (running total)" % (res.scenario, counter),
                          "yaxis.title.text": _unit(counter)}]}
               for c, counter in enumerate(counters)]
    fig.update_layout(title={"text": "%s - %s over time (running total)" % (res.scenario, counters[0]), "y": 0.97},
                      xaxis_title="emulated time (ms)", yaxis_title=_unit(counters[0]), height=460,
                      updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons,
                                    "x": 0.0, "xanchor": "left", "y": 1.02, "yanchor": "bottom",
                                    "font": {"size": 10}}])
    note = ("<p class=note>The busiest %d of %d ports (by PortXmitData); the buttons choose the counter.</p>"
            % (len(ports), len(xmit)))
    body = note + figure_html(fig, "plot-counters", top=120)
    return section("Port counters over time", "counters", body), by, times


def _unit(counter: str) -> str:
    if counter.endswith("Data"):
        return "%s (4-octet words)" % counter
    if counter in ("PortXmitWait", "PortXmitTimeCong"):
        return "%s (ticks)" % counter
    return "%s (packets)" % counter


def cc_section(go: Any, res: Results, ports: Mapping[str, Mapping[str, np.ndarray]], times: np.ndarray) -> str:
    from plotly.subplots import make_subplots

    traces = res.traces()
    events = res.data.get("events") or []
    panels: list[tuple[str, list[tuple[str, np.ndarray, np.ndarray, str]]]] = []
    marks = []
    try:                                # counted where they end: the HCAs' ports (a switch port counts them too)
        hcas = {h["name"] for h in res.config().get("hca") or [] if isinstance(h, dict) and "name" in h}
    except (OSError, ValueError):
        hcas = set()
    where = "HCA ports" if hcas else "all ports"
    for counter, label in (("PortRcvFECN", "FECN-marked packets received (%s)" % where),
                           ("PortRcvBECN", "BECNs received (%s)" % where)):
        if counter in ports and len(times):
            chosen = [v for p, v in ports[counter].items() if not hcas or p.rsplit(":", 1)[0] in hcas]
            total = np.sum([np.nan_to_num(v) for v in chosen], axis=0) if chosen else np.zeros(len(times))
            if total[-1] > 0:
                marks.append((label, times, total, "hv"))
    if marks:
        panels.append(("packets (running total)", marks))
    for kind in sorted({k for k, _ in traces}):
        keys = sorted(k for kd, k in traces if kd == kind)
        curves = []
        for key in keys[:REPORT_MAX_TRACE_KEYS]:
            t, v = traces[(kind, key)]
            end = res.duration_ps / 1e9
            curves.append(("%s %s" % (kind, key), np.append(t, end), np.append(v, v[-1] if len(v) else np.nan), "hv"))
        title = kind if len(keys) <= REPORT_MAX_TRACE_KEYS else "%s (first %d of %d)" % (
            kind, REPORT_MAX_TRACE_KEYS, len(keys))
        panels.append((title, curves))
    if not panels and not events:
        return ""
    rows = len(panels) + (1 if events else 0)
    titles = [t for t, _ in panels] + (["logged events"] if events else [])
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.25 / rows)
    for r, (_, curves) in enumerate(panels, 1):
        for name, x, y, shape in curves:
            fig.add_trace(go.Scatter(x=x, y=np.where(np.isfinite(y), y, None), name=name, mode="lines",
                                     line={"shape": shape, "width": 1.4}, legendgroup=str(r)), row=r, col=1)
    if events:
        fig.add_trace(go.Scatter(x=[e["time_ms"] for e in events], y=[e["source"] for e in events],
                                 text=[e["text"] for e in events], mode="markers", name="events",
                                 marker={"symbol": "line-ns-open", "size": 12},
                                 hovertemplate="%{x:.5g} ms %{y}: %{text}<extra></extra>"), row=rows, col=1)
    fig.update_xaxes(title_text="emulated time (ms)", row=rows, col=1)
    fig.update_layout(title="%s - congestion control over time" % res.scenario, height=200 + 230 * rows,
                      legend={"tracegroupgap": 12})
    body = ("<p class=note>Marks and BECNs from the HCA ports' PortRcvFECN/PortRcvBECN counters; one panel per traced "
            "congestion-control variable (traces.csv), a step curve per owner; the events results.json logged.</p>"
            + figure_html(fig, "plot-cc"))
    if events:
        body += "<h3>Logged events</h3>" + html_table(("time (ms)", "source", "event"),
                                                      [(e["time_ms"], e["source"], e["text"]) for e in events],
                                                      what="events")
    return section("Congestion control", "cc", body)
