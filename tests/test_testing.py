"""ibemu.testing: the credit-leak check every virtual-clock run of the test suite ends
with (registered by tests/conftest.py as an observer of ibemu.run), and the drain it
relies on.  Each check must also fire: a credit taken away on purpose is reported."""
from __future__ import annotations

import pytest

import ibemu.run
from ibemu.build import build_fabric
from ibemu.fabric.faults import engine_faults
from ibemu.fabric.recorder import Recorder
from ibemu.run import RunContext, run_virtual
from ibemu.scenario.builders import quickstart, santos_fig1
from ibemu.sim.engine import VirtualEngine
from ibemu.testing import CreditLeak, assert_no_credit_leak, check_after_run, check_every_run, drain, settle
from ibemu.units import PS_PER_MS


def _congested() -> tuple[VirtualEngine, ibemu.fabric.network.Fabric]:
    """A greedy santos_fig1 run (4-packet buffers) stopped while its queues are full."""
    scn = santos_fig1(L=3, R=1, buffer_packets=4, duration_ms=2, victim=None, name="leak")
    fab = build_fabric(scn, Recorder())
    eng = VirtualEngine(fab.nodes.values(), fab.wiring, faults=engine_faults(fab.injectors))
    eng.start(0)
    eng.run(scn.duration)
    return eng, fab


def test_the_suite_checks_every_run() -> None:
    """tests/conftest.py has registered the check for the whole session."""
    assert check_after_run in ibemu.run.observers


def test_drain_empties_a_congested_fabric_and_finds_a_leak() -> None:
    eng, fab = _congested()
    assert sum(fab.nodes["B"].queued.values()) > 0              # congested when stopped
    assert drain(eng, fab) == []
    fab.nodes["B"].ports[1].rx[0].used += 2                     # a leak: two blocks never freed
    problems = drain(eng, fab, drain_ps=PS_PER_MS)
    assert any("still held" in p for p in problems)


def test_a_leaked_credit_is_reported_in_a_built_fabric() -> None:
    eng, fab = _congested()
    assert drain(eng, fab) == []
    assert_no_credit_leak(fab)                                  # quiet: nothing to report
    fab.nodes["L1"].port.tx[0].fctbs += 1                       # a block sent that never arrived
    with pytest.raises(CreditLeak, match="FCTBS"):
        assert_no_credit_leak(fab)
    with pytest.raises(AssertionError):                         # a CreditLeak fails a test as an assert does
        assert_no_credit_leak(fab)


def test_settle_resynchronises_credits_after_a_stop() -> None:
    eng, fab = _congested()
    fab.stop_traffic(eng.now)
    eng.run(eng.now + 5 * PS_PER_MS)                            # the queues empty
    settle(eng, fab)
    assert_no_credit_leak(fab)


def test_the_after_run_check_fires_on_a_run_that_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    """An observer ahead of the check takes a credit away: run_virtual raises."""
    def leak(context: RunContext) -> None:
        context.fabric.nodes["S"].ports[1].rx[0].used += 1

    monkeypatch.setattr(ibemu.run, "observers", [leak, check_after_run])
    scn = quickstart(duration_ms=0.2)
    scn.output.plots = False
    with pytest.raises(CreditLeak, match="credit leak after the run of %s" % scn.name):
        run_virtual(scn, progress=False)


def test_the_check_leaves_the_run_result_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Draining records nothing: the metrics are those of the run itself."""
    scn = quickstart(duration_ms=0.5)
    scn.output.plots = False
    monkeypatch.setattr(ibemu.run, "observers", [])
    plain = run_virtual(scn, progress=False)
    with check_every_run():
        checked = run_virtual(scn, progress=False)
    assert checked.summary == plain.summary
    assert checked.metrics.summary() == plain.metrics.summary()
    assert checked.metrics.export_bins() == plain.metrics.export_bins()
