"""The checks of seed 002's reproductions (ibemu/studies/cca/reproduce.py: dcms_fig3,
dcms_fig4; ibemu/studies/dcms/reproduce.py: dcms_fig5, dcms_fig6, dcms_compare) tell
the truth (issue 13): every paper check quotes seed 002 verbatim and says where, and
the comparison no paper published is a regression bound only.  No emulator runs here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ibemu.studies.cca.reproduce import REPRODUCTIONS as CCA
from ibemu.studies.dcms.reproduce import REPRODUCTIONS as DCMS
from ibemu.studies.reproduction import PAPER, REGRESSION

SEEDS = Path("/work/shared/seeds")
REPS = {r.id: r for r in CCA + DCMS}


def _norm(text: str) -> str:
    """Whitespace collapsed, hyphenation at line ends undone."""
    return re.sub(r"\s+", " ", re.sub(r"-\s*\n\s*", "-", text)).strip()


@pytest.fixture(scope="module")
def seed002() -> str:
    files = sorted(SEEDS.glob("002_*.txt"))
    if not files:
        pytest.skip("seed 002 is not on this machine")
    return _norm(files[0].read_text())


PAPER_CHECKS = [pytest.param(r, c, id="%s-%s" % (r.id, c.metric))
                for r in CCA + DCMS for c in r.checks if c.kind == PAPER]


@pytest.mark.parametrize("rep,check", PAPER_CHECKS)
def test_paper_check_quotes_seed_002(rep, check, seed002):
    assert check.read_from == "text"
    assert check.quote, "a paper check needs the paper's words"
    assert _norm(check.quote) in seed002, check.quote
    assert check.section.startswith("seed 002 §4."), check.section


def test_the_figures_of_seed_002_have_paper_checks_only_with_quotes():
    for rid in ("dcms_fig3", "dcms_fig4", "dcms_fig5", "dcms_fig6"):
        kinds = {c.kind for c in REPS[rid].checks}
        assert PAPER in kinds, rid
        for c in REPS[rid].checks:
            if c.kind == REGRESSION:
                assert c.paper.startswith("no published number"), (rid, c.metric)


def test_dcms_compare_is_regression_only():
    """No paper compares no control, HP, fixed Marking_Rates and DCMS (issue 13, defect 6)."""
    for c in REPS["dcms_compare"].checks:
        assert c.kind == REGRESSION and c.paper.startswith("no published number"), c.metric
        assert not c.departs


def test_unhindered_means_at_least_095():
    """Where seed 002 says the victim ran unhindered, nothing below 0.95 of SDR passes."""
    for rid, metric in (("dcms_fig3", "victim_75_0"), ("dcms_fig3", "victim_300_0"),
                        ("dcms_fig5", "victim_recovered"), ("dcms_fig5", "victim_before")):
        c = next(c for c in REPS[rid].checks if c.metric == metric)
        assert c.lo >= 0.95 and c.hi <= 1.01, (rid, metric, c.lo, c.hi)


def test_departures_name_a_cause():
    for r in CCA + DCMS:
        for c in r.checks:
            if c.departs:
                assert c.kind == PAPER and len(c.departs) > 40, (r.id, c.metric)
