"""The building blocks of ``ibemu report``'s page (issue 18 item 3): its style sheet and
JavaScript-error box, table cells and tables, sections, and the Plotly figures (curves
over time, a heatmap) with the limits that keep a large run's page readable."""
from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UserError

if TYPE_CHECKING:
    import plotly.graph_objects as go


REPORT_MAX_CURVES = 12      # more links (flows) than this: the busiest as curves, a heatmap of all
REPORT_TOP = 10             # curves drawn then
REPORT_MAX_ROWS = 300       # table rows shown (the CSV tables have all)
REPORT_MAX_COLUMNS = 400    # time bins of a heatmap at most (neighbours averaged)
REPORT_MAX_PORTS = 16       # ports in the counters plot (the busiest by PortXmitData)
REPORT_MAX_TRACE_KEYS = 12  # curves per congestion-control panel

CSS = """
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
ERROR_HOOK = """
window.addEventListener("error", function (e) {
  var box = document.getElementById("js-errors");
  if (box) { box.style.display = "block"; box.textContent += "JavaScript error: " + e.message + "\\n"; }
});
"""


def plotly_module() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise UserError("the report needs Plotly (an ibemu dependency): pip install plotly") from None
    return go


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def cell_text(x: Any, digits: int = 4) -> str:
    """A cell: numbers to *digits* significant digits, None empty."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return "" if not np.isfinite(x) else "%.*g" % (digits, x)
    return esc(x)


def html_table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, what: str = "rows",
               csv: str | None = None) -> str:
    """An HTML table; beyond :data:`REPORT_MAX_ROWS` rows the first ones and a note."""
    shown = rows[:REPORT_MAX_ROWS]
    out = ["<div class=scroll><table><thead><tr>", "".join("<th>%s</th>" % esc(h) for h in head),
           "</tr></thead><tbody>"]
    for r in shown:
        out.append("<tr>" + "".join("<td>%s</td>" % cell_text(c) for c in r) + "</tr>")
    out.append("</tbody></table></div>")
    if len(rows) > len(shown):
        out.append("<p class=note>first %d of %d %s%s</p>" % (len(shown), len(rows), what,
                                                           "; %s has them all" % csv if csv else ""))
    return "".join(out)


def figure_html(fig: go.Figure, div_id: str, top: int = 60) -> str:
    """A figure's div and script, without Plotly's JavaScript (the page has it once)."""
    fig.update_layout(template="plotly_white", margin={"l": 70, "r": 30, "t": top, "b": 55},
                      legend={"font": {"size": 11}})
    text: str = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                            config={"displaylogo": False, "responsive": True})
    return '<div class="plot">%s</div>' % text


def busiest(series: Mapping[str, np.ndarray], n: int) -> list[str]:
    """The *n* names with the highest mean (NaN as 0), busiest first, ties in name order."""
    means = {k: float(np.nan_to_num(v).mean()) if len(v) else 0.0 for k, v in series.items()}
    return sorted(means, key=lambda k: (-means[k], list(series).index(k)))[:n]


def coarsen(times: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def lines_figure(go: Any, title: str, times: np.ndarray, curves: Iterable[tuple[str, np.ndarray]], ytitle: str,
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


def heatmap_figure(go: Any, title: str, times: np.ndarray, series: Mapping[str, np.ndarray],
                   order: Sequence[str], ytitle: str, ctitle: str) -> go.Figure:
    grid = np.nan_to_num(np.array([series[k] for k in order], dtype=np.float64).reshape(len(order), len(times)))
    t, grid = coarsen(times, grid)
    fig = go.Figure(go.Heatmap(z=grid, x=t, y=list(order), zmin=0.0, zmax=1.0, colorscale="Viridis",
                               colorbar={"title": {"text": ctitle, "side": "right"}},
                               hovertemplate="%{y}<br>%{x:.4g} ms<br>%{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="emulated time (ms)", yaxis_title=ytitle,
                      height=min(260 + 14 * len(order), 1400))
    fig.update_yaxes(autorange="reversed", showticklabels=len(order) <= 80)
    return fig


def section(title: str, anchor: str, body: str) -> str:
    return '<section id="%s"><h2>%s</h2>%s</section>' % (anchor, esc(title), body)
