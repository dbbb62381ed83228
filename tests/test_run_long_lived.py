"""ibemu.run.long_lived: the built fabric is out of the collector's passes during the run,
and back in afterwards, so that runs in one process do not keep each other's (issue 28)."""
from __future__ import annotations

import gc

import ibemu
from ibemu.resources import shipped_scenario
from ibemu.run import RUN_GC_YOUNG, long_lived


def test_frozen_inside_and_thawed_after():
    before = gc.get_freeze_count()
    with long_lived():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == 0


def test_young_collections_rarer_inside_and_as_before_after():
    before = gc.get_threshold()
    with long_lived():
        assert gc.get_threshold()[0] == max(before[0], RUN_GC_YOUNG)
        assert gc.get_threshold()[1:] == before[1:]
    assert gc.get_threshold() == before


def test_a_run_leaves_nothing_frozen(tmp_path):
    scn = ibemu.load_scenario(str(shipped_scenario("quickstart")), ['scenario.duration="0.05ms"'])
    scn.output.plots = False
    gc.unfreeze()
    ibemu.run_virtual(scn, out_dir=tmp_path, progress=False)
    assert gc.get_freeze_count() == 0


def test_thawed_when_the_run_fails():
    before = gc.get_threshold()
    try:
        with long_lived():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
