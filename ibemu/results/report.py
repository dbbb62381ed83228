"""``ibemu report RUN_DIR``: one self-contained HTML page for a run's output folder (issue 18 item 3).

The page reads only what the run wrote (:func:`~ibemu.results.reader.load_results`):

- the scenario (name, seed, duration, clock, source) and its resolved configuration (config.json);
- the summary tables: flows, groups, links (with their fabric level), fairness, the
  congestion-control counters of the summary and the ports' counter totals;
- interactive plots (Plotly, its JavaScript inlined once in the page, so that it opens
  without network access): flow and group rates over time (flows.csv), link utilisation
  over time (links.csv: every link as a curve up to :data:`REPORT_MAX_CURVES` links, else
  the busiest ones and a heatmap of all), message latency per flow or group
  (latency.csv: p50, p99, max), the ports' counters over time (counters.csv, one counter
  at a time, chosen with buttons), and the congestion-control events over time: FECN
  marks and BECNs received (the ports' PortRcvFECN / PortRcvBECN), every traced variable
  (traces.csv: CCTI, injection rate, CWND, marking rate ... one panel each) and the
  logged events (results.json ``events``).

Every element has a fixed id, so the same run gives the same page byte for byte.  A
script at the top of the page shows any JavaScript error in a red box (the browser test
in tests/test_report.py looks for it and for Chromium's console errors).
"""
from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import OutputError, UserError
from .reader import Results, load_results, read_series
from .report_jobs import jobs_section

if TYPE_CHECKING:
    import plotly.graph_objects as go

REPORT_NAME = "report.html"
REPORT_MAX_CURVES = 12      # more links (flows) than this: the busiest as curves, a heatmap of all
REPORT_TOP = 10             # curves drawn then
REPORT_MAX_ROWS = 300       # table rows shown (the CSV tables have all)
REPORT_MAX_COLUMNS = 400    # time bins of a heatmap at most (neighbours averaged)
REPORT_MAX_PORTS = 16       # ports in the counters plot (the busiest by PortXmitData)
REPORT_MAX_TRACE_KEYS = 12  # curves per congestion-control panel

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1200px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.4em 0}
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.scroll{max-height:28em;overflow:auto}.note{color:#666;font-size:.85em}
pre{background:#f7f7f7;padding:.6em;font-size:.8em;max-height:30em;overflow:auto}
#js-errors{display:none;background:#fdd;border:1px solid #c00;padding:.5em;white-space:pre-wrap}
"""

# shows any script error on the page itself (before Plotly, so that its errors count too)
_ERROR_HOOK = """
window.addEventListener("error", function (e) {
  var box = document.getElementById("js-errors");
  if (box) { box.style.display = "block"; box.textContent += "JavaScript error: " + e.message + "\\n"; }
});
"""


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise UserError("the report needs Plotly (an ibemu dependency): pip install plotly") from None
    return go


def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(x: Any, digits: int = 4) -> str:
    """A cell: numbers to *digits* significant digits, None empty."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return "" if not np.isfinite(x) else "%.*g" % (digits, x)
    return _esc(x)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, what: str = "rows", csv: str | None = None) -> str:
    """An HTML table; beyond :data:`REPORT_MAX_ROWS` rows the first ones and a note."""
    shown = rows[:REPORT_MAX_ROWS]
    out = ["<div class=scroll><table><thead><tr>", "".join("<th>%s</th>" % _esc(h) for h in head),
           "</tr></thead><tbody>"]
    for r in shown:
        out.append("<tr>" + "".join("<td>%s</td>" % _num(c) for c in r) + "</tr>")
    out.append("</tbody></table></div>")
    if len(rows) > len(shown):
        out.append("<p class=note>first %d of %d %s%s</p>" % (len(shown), len(rows), what,
                                                           "; %s has them all" % csv if csv else ""))
    return "".join(out)


def _figure_html(fig: go.Figure, div_id: str, top: int = 60) -> str:
    """A figure's div and script, without Plotly's JavaScript (the page has it once)."""
    fig.update_layout(template="plotly_white", margin={"l": 70, "r": 30, "t": top, "b": 55},
                      legend={"font": {"size": 11}})
    text: str = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                            config={"displaylogo": False, "responsive": True})
    return '<div class="plot">%s</div>' % text


def _busiest(series: Mapping[str, np.ndarray], n: int) -> list[str]:
    """The *n* names with the highest mean (NaN as 0), busiest first, ties in name order."""
    means = {k: float(np.nan_to_num(v).mean()) if len(v) else 0.0 for k, v in series.items()}
    return sorted(means, key=lambda k: (-means[k], list(series).index(k)))[:n]


def _coarsen(times: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most :data:`REPORT_MAX_COLUMNS` time columns: neighbouring bins averaged."""
    if grid.shape[1] <= REPORT_MAX_COLUMNS:
        return times, grid
    step = -(-grid.shape[1] // REPORT_MAX_COLUMNS)
    ncols = -(-grid.shape[1] // step)
    padded = np.full((grid.shape[0], ncols * step), np.nan)
    padded[:, :grid.shape[1]] = grid
    t = np.full(ncols * step, np.nan)
    t[:len(times)] = times
    return (np.nanmean(t.reshape(ncols, step), axis=1),
            np.nanmean(padded.reshape(grid.shape[0], ncols, step), axis=2))


def _lines(go: Any, title: str, times: np.ndarray, curves: Iterable[tuple[str, np.ndarray]], ytitle: str,
           *, yrange: tuple[float, float] | None = (0.0, 1.05), shape: str = "linear") -> go.Figure:
    fig = go.Figure()
    for name, y in curves:
        fig.add_trace(go.Scatter(x=times, y=np.where(np.isfinite(y), y, None), name=name, mode="lines",
                                 line={"shape": shape, "width": 1.5}))
    fig.update_layout(title=title, xaxis_title="emulated time (ms)", yaxis_title=ytitle, showlegend=True,
                      height=430)
    if yrange:
        fig.update_yaxes(range=list(yrange))
    return fig


def _heatmap(go: Any, title: str, times: np.ndarray, series: Mapping[str, np.ndarray],
             order: Sequence[str], ytitle: str, ctitle: str) -> go.Figure:
    grid = np.nan_to_num(np.array([series[k] for k in order], dtype=np.float64).reshape(len(order), len(times)))
    t, grid = _coarsen(times, grid)
    fig = go.Figure(go.Heatmap(z=grid, x=t, y=list(order), zmin=0.0, zmax=1.0, colorscale="Viridis",
                               colorbar={"title": {"text": ctitle, "side": "right"}},
                               hovertemplate="%{y}<br>%{x:.4g} ms<br>%{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="emulated time (ms)", yaxis_title=ytitle,
                      height=min(260 + 14 * len(order), 1400))
    fig.update_yaxes(autorange="reversed", showticklabels=len(order) <= 80)
    return fig


def _section(title: str, anchor: str, body: str) -> str:
    return '<section id="%s"><h2>%s</h2>%s</section>' % (anchor, _esc(title), body)


def _scenario_section(res: Results) -> str:
    d = res.data
    extra = d.get("extra") or {}
    rows = [("scenario", res.scenario), ("seed", res.seed), ("emulated duration (ms)", d.get("duration_ms")),
            ("clock", extra.get("clock", "")), ("source", d.get("source") or ""),
            ("summary window", "%s" % (d["summary"].get("window") or "whole run")),
            ("bin (µs)", d["summary"].get("bin_ps", 0) / 1e6 if d["summary"].get("bin_ps") else None)]
    for key in ("events", "pcap", "core", "valid", "lost"):
        if extra.get(key) is not None:
            rows.append((key, extra[key] if not isinstance(extra[key], (dict, list)) else json.dumps(extra[key])))
    body = _table(("", "value"), rows)
    cfg = res.path / "config.json"
    if cfg.exists():
        text = json.dumps(json.loads(cfg.read_text(encoding="utf-8")), indent=2, sort_keys=True)
        body += ("<details><summary>resolved configuration (config.json)</summary><pre>%s</pre></details>"
                 % _esc(text))
    return _section("Scenario", "scenario", body)


def _summary_section(res: Results) -> str:
    s = res.summary
    body = []
    flows = s.get("flows") or {}
    rows = []
    for name, f in flows.items():
        lat = f.get("latency") or {}
        rows.append((name, f.get("group") or "", f.get("start_ps", 0) / 1e9, f.get("stop_ps", 0) / 1e9,
                     f.get("throughput_gbps"), f.get("normalized"), f.get("rx_bytes"), f.get("rx_packets"),
                     f.get("messages"), None if lat.get("p50_ps") is None else lat["p50_ps"] / 1e6,
                     None if lat.get("p99_ps") is None else lat["p99_ps"] / 1e6))
    body.append("<h3>Flows</h3>" + _table(
        ("flow", "group", "start (ms)", "stop (ms)", "throughput (Gb/s)", "normalized", "bytes delivered",
         "packets", "messages", "latency p50 (µs)", "latency p99 (µs)"), rows, what="flows", csv="flow_table.csv"))
    groups = s.get("groups") or {}
    if groups:
        rows = [(g, d.get("flows") if not isinstance(d.get("flows"), list) else len(d["flows"]),
                 d.get("throughput_gbps"), d.get("normalized"), d.get("jain"))
                for g, d in groups.items()]
        body.append("<h3>Groups</h3>" + _table(("group", "flows", "throughput (Gb/s)", "normalized",
                                                "Jain's index"), rows))
    levels = res.data.get("link_levels") or {}
    rows = [(lbl, levels.get(lbl, ""), None if not d.get("capacity") else d["capacity"] * 8e-9,
             d.get("bytes"), d.get("data_packets"), d.get("utilization"), d.get("data_utilization"))
            for lbl, d in (s.get("links") or {}).items()]
    rows.sort(key=lambda r: -(r[5] or 0.0))
    body.append("<h3>Links (busiest first)</h3>" + _table(
        ("link", "level", "capacity (Gb/s)", "bytes", "data packets", "utilization", "data utilization"),
        rows, what="links", csv="link_table.csv"))
    fair = s.get("fairness") or {}
    rows = [("all flows", fair.get("jain"))] + [(g, j) for g, j in (fair.get("groups") or {}).items()]
    body.append("<h3>Fairness (Jain's index)</h3>" + _table(("flows", "Jain's index"), rows))
    counters = s.get("counters") or {}
    if counters:
        rows = [(node, key, v) for node, d in sorted(counters.items()) for key, v in sorted(d.items())]
        body.append("<h3>Congestion-control counters</h3>" + _table(("node", "counter", "value"), rows))
    ports = res.data.get("ports") or {}
    if ports:
        names = sorted({k for d in ports.values() for k, v in d.items() if v})
        rows = [(p, *[d.get(k, 0) for k in names]) for p, d in ports.items() if any(d.values())]
        body.append("<h3>Port counters at the end (IBA 16.1.3.5; nonzero columns)</h3>"
                    + _table(("port", *names), rows, what="ports"))
    return _section("Summary", "summary", "".join(body))


def _time_series(res: Results, name: str) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """The run's CSV time series *name* as (times in ms, the other columns), or None when
    the run has none."""
    path = res.path / name
    if not path.exists():
        return None
    cols = read_series(path)
    return cols.pop("time_ms", np.zeros(0)), cols


def _rates_section(go: Any, res: Results) -> str:
    series = _time_series(res, "flows.csv")
    if series is None:
        return ""
    times, cols = series
    groups = {k[len("group:"):]: v for k, v in cols.items() if k.startswith("group:")}
    flows = {k: v for k, v in cols.items() if not k.startswith("group:")}
    parts = []
    if groups:
        parts.append(_figure_html(_lines(go, "%s - flow group rates" % res.scenario, times, groups.items(),
                                         "delivered rate (fraction of link bandwidth)"), "plot-groups"))
    if flows:
        if len(flows) <= REPORT_MAX_CURVES:
            curves, title = list(flows.items()), "%s - flow rates" % res.scenario
        else:
            top = _busiest(flows, REPORT_TOP)
            curves = [(k, flows[k]) for k in top]
            title = "%s - busiest %d of %d flows" % (res.scenario, len(top), len(flows))
        parts.append(_figure_html(_lines(go, title, times, curves, "delivered rate (fraction of link bandwidth)"),
                                  "plot-flows"))
    note = "<p class=note>Sliding-window rates as in flows.csv, each a fraction of its source link.</p>"
    return _section("Throughput", "throughput", note + "".join(parts))


def _links_section(go: Any, res: Results) -> str:
    series = _time_series(res, "links.csv")
    if series is None:
        return ""
    times, cols = series
    links = {k: v for k, v in cols.items() if not k.endswith(":data")}
    if not links:
        return ""
    parts = []
    ytitle = "utilization (fraction of link bandwidth)"
    if len(links) <= REPORT_MAX_CURVES:
        parts.append(_figure_html(_lines(go, "%s - link utilization (all frames)" % res.scenario, times,
                                         links.items(), ytitle), "plot-links"))
    else:
        top = _busiest(links, REPORT_TOP)
        parts.append(_figure_html(_lines(go, "%s - busiest %d of %d links" % (res.scenario, len(top), len(links)),
                                         times, [(k, links[k]) for k in top], ytitle), "plot-links"))
        levels = res.data.get("link_levels") or {}
        order = sorted(links, key=lambda k: (levels.get(k, "~"), list(links).index(k)))
        parts.append(_figure_html(_heatmap(go, "%s - every link's utilization" % res.scenario, times, links,
                                           order, "directed link (by level)" if levels else "directed link",
                                           "utilization"), "plot-links-heatmap"))
    return _section("Link utilization", "links", "".join(parts))


def _latency_section(go: Any, res: Results) -> str:
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
    table = _table(("name", "kind", "messages", "p50 (µs)", "p99 (µs)", "max (µs)", "mean (µs)",
                    "completion (µs)"),
                   [(n, r["kind"], int(r["messages"]), *[float(r[c]) if r[c] else None for c in
                                                         ("p50_us", "p99_us", "max_us", "mean_us", "completion_us")])
                    for n, r in have.items()], what="rows", csv="latency.csv")
    note = ("<p class=note>Per message, first byte sent to last byte delivered (nearest-rank percentiles, "
            "latency.csv).</p>")
    return _section("Latency", "latency", note + _figure_html(fig, "plot-latency") + table)


def _port_columns(cols: Mapping[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """counters.csv's ``node:port:Counter`` columns as counter -> port -> series."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for k, v in cols.items():
        port, _, counter = k.rpartition(":")
        if port:
            out.setdefault(counter, {})[port] = v
    return out


def _counters_section(go: Any, res: Results) -> tuple[str, dict[str, dict[str, np.ndarray]], np.ndarray]:
    series = _time_series(res, "counters.csv")
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
    body = note + _figure_html(fig, "plot-counters", top=120)
    return _section("Port counters over time", "counters", body), by, times


def _unit(counter: str) -> str:
    if counter.endswith("Data"):
        return "%s (4-octet words)" % counter
    if counter in ("PortXmitWait", "PortXmitTimeCong"):
        return "%s (ticks)" % counter
    return "%s (packets)" % counter


def _cc_section(go: Any, res: Results, ports: Mapping[str, Mapping[str, np.ndarray]], times: np.ndarray) -> str:
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
            + _figure_html(fig, "plot-cc"))
    if events:
        body += "<h3>Logged events</h3>" + _table(("time (ms)", "source", "event"),
                                                  [(e["time_ms"], e["source"], e["text"]) for e in events],
                                                  what="events")
    return _section("Congestion control", "cc", body)


def report_html(run_dir: str | Path) -> str:
    """The report page of the run folder *run_dir*, as text."""
    go = _plotly()
    from plotly.offline import get_plotlyjs

    try:
        res = load_results(run_dir)
    except FileNotFoundError as e:
        raise UserError("%s: not a run's output folder (no results.json)" % run_dir) from e
    counters_html, ports, times = _counters_section(go, res)
    sections = [_scenario_section(res), _summary_section(res), _rates_section(go, res), _links_section(go, res),
                _latency_section(go, res), jobs_section(go, res.summary.get("jobs"), _section, _table, _figure_html),
                counters_html, _cc_section(go, res, ports, times)]
    sections = [s for s in sections if s]
    toc = " · ".join('<a href="#%s">%s</a>' % (a, t) for a, t in (
        ("scenario", "scenario"), ("summary", "summary"), ("throughput", "throughput"), ("links", "links"),
        ("latency", "latency"), ("jobs", "jobs"), ("counters", "port counters"), ("cc", "congestion control"))
        if any(s.startswith('<section id="%s"' % a) for s in sections))
    from .. import __version__
    return "".join([
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width, initial-scale=1'>",
        "<title>ibemu report: %s</title><style>%s</style>" % (_esc(res.scenario), _CSS),
        "<script>%s</script>" % _ERROR_HOOK,
        '<script type="text/javascript">%s</script>' % get_plotlyjs(),
        "</head><body><div id=js-errors></div>",
        "<h1>ibemu run: %s</h1>" % _esc(res.scenario),
        "<p class=note>seed %d, %g ms emulated; written by ibemu %s from %s. Self-contained: "
        "open it without network access.</p>" % (res.seed, res.duration_ps / 1e9, __version__, _esc(res.path.name)),
        "<nav>%s</nav>" % toc, *sections, "</body></html>\n"])


def write_report(run_dir: str | Path, path: str | Path | None = None) -> Path:
    """Write the report of the run folder *run_dir* to *path* (default
    ``RUN_DIR/report.html``), atomically; returns the path."""
    from ..atomic import atomic_write_text

    target = Path(path) if path is not None else Path(run_dir) / REPORT_NAME
    text = report_html(run_dir)
    try:
        atomic_write_text(target, text)
    except OSError as e:
        raise OutputError.from_os(target, e) from None
    return target
