"""The HP and seed 003 Figures 2–3 reproduction checks quote the papers verbatim: every
text quote occurs in its seed (whitespace and line-break hyphenation normalised)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ibemu.studies.hp.reproduce import REPRODUCTIONS as HP
from ibemu.studies.reproduction import PAPER
from ibemu.studies.santos import REPRODUCTIONS as SANTOS

SEEDS = Path("/work/shared/seeds")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("-\n", "")).strip().lower()


@pytest.fixture(scope="module")
def seeds():
    files = {n: sorted(SEEDS.glob(n + "_*.txt")) for n in ("000", "003")}
    if not all(files.values()):
        pytest.skip("seed texts not present")
    return {n: norm(f[0].read_text()) for n, f in files.items()}


CHECKS = [pytest.param(r, c, id="%s-%s" % (r.id, c.metric)) for r in SANTOS + HP for c in r.checks]


@pytest.mark.parametrize("rep,check", CHECKS)
def test_paper_checks_quote_the_seed_and_regression_bounds_say_so(rep, check, seeds):
    if check.kind == PAPER:
        assert check.quote and check.section, "a paper check needs the paper's words and where they are"
        if check.read_from == "text":
            seed = "000" if "seed 000" in check.section else "003"
            assert norm(check.quote) in seeds[seed], check.quote
    else:
        assert "no published number" in check.paper
