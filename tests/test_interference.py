"""The interference study (issue 29 Deliver 4) at CI size, as ``ibemu reproduce
interference`` runs it: every check (first principles, the seeds' words) passes."""
from __future__ import annotations

from ibemu.studies.interference import CI, placement, shared_links
from ibemu.studies.registry import BY_ID, run_reproduction


def test_the_collective_shares_links_with_the_hot_spot_only_as_a_victim():
    ring, senders, dest = placement(CI)
    assert dest not in ring and not set(ring) & set(senders)
    assert shared_links(CI) >= 1


def test_interference_reproduction_at_ci_size(tmp_path):
    rows, ok, _ = run_reproduction(BY_ID["interference"], out_dir=tmp_path)
    table = {c.metric: (ours, verdict) for c, ours, verdict in rows}
    assert ok, table
    assert (tmp_path / "interference.md").exists() and (tmp_path / "slowdown.png").exists()
