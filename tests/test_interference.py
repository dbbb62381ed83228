"""The interference study (issue 29 Deliver 4).  Its checks at CI size run in
tests/test_reproduce.py (every registered reproduction); here its placement, and its
output files as ``ibemu study interference --ci-size`` writes them."""
from __future__ import annotations

from ibemu.studies.interference import CI, main, placement, shared_links


def test_the_collective_shares_links_with_the_hot_spot_only_as_a_victim():
    ring, senders, dest = placement(CI)
    assert dest not in ring and not set(ring) & set(senders)
    assert shared_links(CI) >= 1


def test_study_command_prints_the_slowdown_per_case(tmp_path, capsys):
    assert main(str(tmp_path), False, "alone,none", None) == 0
    out = capsys.readouterr().out
    assert "none   collective slowdown" in out
    assert (tmp_path / "interference.md").exists() and (tmp_path / "slowdown.png").exists()
