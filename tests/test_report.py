"""ibemu report (issue 18 item 3): one self-contained HTML page per run, checked as text and
in a real headless Chromium (Debian's package; CI installs it and sets IBEMU_REQUIRE_CHROMIUM=1)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ibemu
from ibemu.cli import main
from ibemu.resources import shipped_scenario
from ibemu.results.report import report_html, write_report
from ibemu.results.report_elements import REPORT_MAX_CURVES

PLOTS = ("plot-flows", "plot-links", "plot-latency", "plot-counters", "plot-cc")


@pytest.fixture(scope="module")
def cca_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped cca_opensm scenario for 1 ms: three flows into one port under the IBA
    CCA (FECN marks, BECNs, CCTI and injection-rate traces, logged events)."""
    out = tmp_path_factory.mktemp("cca")
    scn = ibemu.load_scenario(str(shipped_scenario("cca_opensm")), ['scenario.duration="1ms"'])
    scn.output.plots = False
    ibemu.run_virtual(scn, out_dir=out, progress=False)
    return out


def test_report_is_self_contained_and_has_every_part(cca_run: Path) -> None:
    path = write_report(cca_run)
    assert path == cca_run / "report.html"
    text = path.read_text(encoding="utf-8")
    # nothing fetched from the network: no external script, style sheet, image or frame
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)\s*=\s*[\"']?(https?:)?//", text, re.I)
    assert "Plotly" in text and len(text) > 1_000_000             # plotly.js itself is inline
    data = json.loads((cca_run / "results.json").read_text())
    for section in ("scenario", "summary", "throughput", "links", "latency", "counters", "cc"):
        assert '<section id="%s">' % section in text, section
    for div in PLOTS:
        assert 'id="%s"' % div in text, div
    # the summary tables carry the run's numbers (4 significant digits)
    for name, f in data["summary"]["flows"].items():
        assert "<td>%s</td>" % name in text
        assert "<td>%.4g</td>" % f["normalized"] in text
    assert "<td>%.4g</td>" % data["summary"]["fairness"]["jain"] in text
    for port, counters in data["ports"].items():
        if counters["PortRcvBECN"]:
            assert "<td>%s</td><td>%d</td>" % (port, counters["PortRcvBECN"]) in text
    # the CC panel: one per traced variable, and the logged events
    for kind in data["traces"]:
        assert kind in text
    assert data["events"] and data["events"][0]["text"] in text
    # the resolved configuration
    assert "resolved configuration (config.json)" in text
    # the same run gives the same page
    assert report_html(cca_run) == text


def test_report_command_and_run_option(cca_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.html"
    assert main(["report", str(cca_run), "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == report_html(cca_run)
    assert "self-contained" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "not a run's output folder" in capsys.readouterr().err
    out = tmp_path / "qs"
    assert main(["run", "quickstart", "--duration", "200us", "--out", str(out), "--no-plots", "-q", "--report"]) == 0
    assert 'id="plot-links"' in (out / "report.html").read_text(encoding="utf-8")


def test_many_links_get_a_heatmap(tmp_path: Path) -> None:
    """More than REPORT_MAX_CURVES links: the busiest as curves and a heatmap of all."""
    scn = ibemu.santos_fig1(L=5, R=5, window=1)
    scn.duration = 100 * ibemu.PS_PER_US
    scn.output.plots = False
    ibemu.run_virtual(scn, out_dir=tmp_path, progress=False)
    nlinks = len(json.loads((tmp_path / "results.json").read_text())["summary"]["links"])
    assert nlinks > REPORT_MAX_CURVES
    text = report_html(tmp_path)
    assert 'id="plot-links-heatmap"' in text
    assert "busiest 10 of %d links" % nlinks in text


# ------------------------------------------------------------------ the browser

def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("IBEMU_REQUIRE_CHROMIUM") == "1":
        pytest.fail("Chromium is required here (IBEMU_REQUIRE_CHROMIUM=1) but is not installed")
    pytest.skip("no Chromium (apt-get install chromium) - the report's browser test skipped")


def _browse(browser: str, page: Path, profile: Path, *extra: str) -> tuple[str, str]:
    """Open *page* in headless Chromium (no network, an empty profile); its stdout
    (the DOM with --dump-dom) and the console messages it logged."""
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--user-data-dir=%s" % profile, "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=10000", *extra, page.as_uri()]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return r.stdout, "\n".join(console)


def _rendered(dom: str) -> dict[str, bool]:
    """Plot div id -> whether Plotly drew it (an svg.main-svg inside)."""
    out = {}
    for div in PLOTS:
        m = re.search(r'<div id="%s"[^>]*>(.{0,3000})' % div, dom, re.S)
        out[div] = bool(m and 'class="main-svg"' in m.group(1))
    return out


def test_report_renders_in_chromium(cca_run: Path, tmp_path: Path) -> None:
    browser = _chromium()
    page = write_report(cca_run)
    dom, console = _browse(browser, page, tmp_path / "p1", "--dump-dom")
    assert console == ""                                     # no console message at all, errors included
    assert re.search(r'<div id="js-errors"></div>', dom)   # the page's own error box stayed empty
    assert all(_rendered(dom).values()), _rendered(dom)
    # the screenshot: a real picture of the page (many colours: tables, curves, heatmap scale)
    shot = tmp_path / "report.png"
    _browse(browser, page, tmp_path / "p2", "--window-size=1280,3000", "--hide-scrollbars",
            "--screenshot=%s" % shot)
    from matplotlib.image import imread
    img = imread(shot)
    assert img.shape[:2] == (3000, 1280)
    colours = np.unique((img[:, :, :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50
    keep = os.environ.get("IBEMU_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, Path(keep) / "report_cca_opensm.png")


def test_the_browser_check_catches_a_broken_page(cca_run: Path, tmp_path: Path) -> None:
    """The same checks fail on a page whose script breaks (so that they can fail)."""
    browser = _chromium()
    broken = tmp_path / "broken.html"
    text = report_html(cca_run).replace("</body>", "<script>notDefinedAnywhere();</script></body>")
    broken.write_text(text, encoding="utf-8")
    dom, console = _browse(browser, broken, tmp_path / "p", "--dump-dom")
    assert "notDefinedAnywhere" in console
    assert "JavaScript error" in dom
