"""The documentation site (issue 30 Deliver 1): ``mkdocs build --strict`` succeeds, so a
broken link, a missing page or a reference that cannot be generated fails CI; and strict
mode does catch a broken link (a two-page site with one, built with the same checks).

The site builds into a temporary folder (about 5-10 s); mkdocs, Material, mkdocstrings
and mkdocs-gen-files come with the test extra (and the docs extra)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mkdocs() -> list[str]:
    if shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists():
        pytest.fail("mkdocs is not installed: pip install -e '.[test]' (or '.[docs]')")
    return [sys.executable, "-m", "mkdocs"]


def _build(config: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true")
    return subprocess.run([*_mkdocs(), "build", "--strict", "-f", str(config), "-d", str(site)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_site_builds_in_strict_mode(tmp_path):
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site", ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    site = tmp_path / "site"
    for page in ("index.html", "reference/cli/index.html", "reference/scenario/index.html",
                 "reference/api/index.html", "how-to/plugin-scheme/index.html"):
        assert (site / page).is_file(), page
    cli = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    assert "ibemu run" in cli and "--pcap" in cli                     # generated from the parsers
    scenario = (site / "reference/scenario/index.html").read_text(encoding="utf-8")
    assert "flow[].rate_fraction" in scenario and "cc.cca.CCTI_Timer" in scenario
    api = (site / "reference/api/index.html").read_text(encoding="utf-8")
    assert "load_scenario" in api and "run_virtual" in api           # rendered by mkdocstrings
    plugin = (site / "how-to/plugin-scheme/index.html").read_text(encoding="utf-8")
    assert "QueueMarker" in plugin                                    # the example, included whole


def test_strict_mode_fails_on_a_broken_link(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the other page](other.md) and [a lost one](lost.md).\n")
    (docs / "other.md").write_text("# Other\n")
    config = tmp_path / "mkdocs.yml"
    main = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    validation = main[main.index("\nvalidation:") + 1:main.index("\nnav:") + 1]
    config.write_text("site_name: t\nstrict: true\n" + validation + "nav:\n  - index.md\n  - other.md\n")
    done = _build(config, tmp_path / "site", tmp_path)
    assert done.returncode != 0 and "lost.md" in done.stdout + done.stderr


def test_the_readme_is_short_and_keeps_the_quick_start():
    """Issue 30 Deliver 2: at most 200 lines; the Quick start's first code block holds the
    two commands (the main command, and the test command .ci/run extracts)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    block = text.split("## Quick start", 1)[1].split("```", 2)[1].splitlines()[1:]
    assert block[0].endswith("ibemu run scenarios/santos_fig1.toml --clock wall --pcap "
                             "runs/santos_fig1/capture.pcapng --snaplen 96 --report")
    assert block[1] == 'python3 -m venv .venv && .venv/bin/pip install ".[test]" && .venv/bin/python -m pytest -q'
