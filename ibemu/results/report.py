"""``ibemu report RUN_DIR``: one self-contained HTML page for a run's output folder (issue 18 item 3).

The page reads only what the run wrote (:func:`~ibemu.results.reader.load_results`):

- the scenario (name, seed, duration, clock, source) and its resolved configuration (config.json);
- the summary tables: flows, groups, links (with their fabric level), fairness, the
  congestion-control counters of the summary and the ports' counter totals;
- interactive plots (Plotly, its JavaScript inlined once in the page, so that it opens
  without network access): flow and group rates over time (flows.csv), link utilisation
  over time (links.csv: every link as a curve up to :data:`~ibemu.results.report_elements.REPORT_MAX_CURVES` links, else
  the busiest ones and a heatmap of all), message latency per flow or group
  (latency.csv: p50, p99, max), the ports' counters over time (counters.csv, one counter
  at a time, chosen with buttons), and the congestion-control events over time: FECN
  marks and BECNs received (the ports' PortRcvFECN / PortRcvBECN), every traced variable
  (traces.csv: CCTI, injection rate, CWND, marking rate ... one panel each) and the
  logged events (results.json ``events``).

Every element has a fixed id, so the same run gives the same page byte for byte.  A
script at the top of the page shows any JavaScript error in a red box (the browser test
in tests/test_report.py looks for it and for Chromium's console errors).

The page is put together here from :mod:`.report_elements` (style, tables, figures),
:mod:`.report_tables`, :mod:`.report_plots` and :mod:`.report_jobs` (its sections).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import OutputError, UserError
from .reader import load_results
from .report_elements import CSS, ERROR_HOOK, esc, figure_html, html_table, plotly_module, section
from .report_jobs import jobs_section
from .report_plots import cc_section, counters_section, latency_section, links_section, rates_section
from .report_tables import scenario_section, summary_section

REPORT_NAME = "report.html"


def report_html(run_dir: str | Path) -> str:
    """The report page of the run folder *run_dir*, as text."""
    go = plotly_module()
    from plotly.offline import get_plotlyjs

    try:
        res = load_results(run_dir)
    except FileNotFoundError as e:
        raise UserError("%s: not a run's output folder (no results.json)" % run_dir) from e
    counters_html, ports, times = counters_section(go, res)
    sections = [scenario_section(res), summary_section(res), rates_section(go, res), links_section(go, res),
                latency_section(go, res), jobs_section(go, res.summary.get("jobs"), section, html_table, figure_html),
                counters_html, cc_section(go, res, ports, times)]
    sections = [s for s in sections if s]
    toc = " · ".join('<a href="#%s">%s</a>' % (a, t) for a, t in (
        ("scenario", "scenario"), ("summary", "summary"), ("throughput", "throughput"), ("links", "links"),
        ("latency", "latency"), ("jobs", "jobs"), ("counters", "port counters"), ("cc", "congestion control"))
        if any(s.startswith('<section id="%s"' % a) for s in sections))
    from .. import __version__
    return "".join([
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width, initial-scale=1'>",
        "<title>ibemu report: %s</title><style>%s</style>" % (esc(res.scenario), CSS),
        "<script>%s</script>" % ERROR_HOOK,
        '<script type="text/javascript">%s</script>' % get_plotlyjs(),
        "</head><body><div id=js-errors></div>",
        "<h1>ibemu run: %s</h1>" % esc(res.scenario),
        "<p class=note>seed %d, %g ms emulated; written by ibemu %s from %s. Self-contained: "
        "open it without network access.</p>" % (res.seed, res.duration_ps / 1e9, __version__, esc(res.path.name)),
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
