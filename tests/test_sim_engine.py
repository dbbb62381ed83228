"""The virtual-time engine (ibemu/sim/engine.py): frames delivered intact.

Without fault injectors every frame reaches its receiver exactly as a node of the same
engine built it, so the engine hands it over with ``receive_intact`` and the nodes skip
computing its CRCs (issue 16).  That may change nothing but the speed: every shipped
scenario, run once so and once with every CRC checked (``check_crcs=True``), carries the
same frames at the same times and ends with the same counters.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ibemu.build import build_fabric
from ibemu.fabric.switch import Switch
from ibemu.scenario.builders import quickstart
from ibemu.scenario.read import load_scenario
from ibemu.fabric.faults import engine_faults
from ibemu.sim.engine import VirtualEngine
from ibemu.sim.scheduler import DELIVER_INTACT

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))


class _Trace:
    """A digest of every frame the engine carries (time, bytes, kind) and their count."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.frames = 0

    def write(self, time_ns: int, frame: Any, link: bool) -> None:
        self.digest.update(b"%d %d " % (time_ns, link) + bytes(frame))
        self.frames += 1


def _run(path: Path, check_crcs: bool) -> tuple[str, int, dict[str, Any], VirtualEngine]:
    scn = load_scenario(path, ['scenario.duration="1ms"'])
    fabric = build_fabric(scn)
    trace = _Trace()
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring, trace,
                           faults=engine_faults(fabric.injectors),
                           check_crcs=check_crcs)
    engine.start(0)
    engine.run(scn.duration)
    state = {name: (dict(node.counters), [p.pc.totals(scn.duration) for p in node.ports.values()])
             for name, node in fabric.nodes.items()}
    return trace.digest.hexdigest(), trace.frames, state, engine


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_intact_delivery_changes_nothing(path: Path) -> None:
    fast, n_fast, state_fast, engine = _run(path, check_crcs=False)
    checked, n_checked, state_checked, _ = _run(path, check_crcs=True)
    assert n_fast > 1000, n_fast
    assert (fast, n_fast) == (checked, n_checked)
    assert state_fast == state_checked
    assert engine.intact == (not _injectors(path))


def _injectors(path: Path) -> bool:
    return bool(build_fabric(load_scenario(path, ['scenario.duration="1ms"'])).injectors)


def test_scenarios_are_there() -> None:
    assert len(SCENARIOS) >= 10


def test_receive_checks_but_receive_intact_trusts() -> None:
    """A frame with a bad VCRC handed to ``receive`` is dropped and counted; the same
    frame through ``receive_intact`` is not checked (only the engine calls it, for the
    frames it carried itself, which cannot be wrong)."""
    fabric = build_fabric(quickstart(duration_ms=1))
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring)
    assert engine.intact
    seen: list[bytes] = []

    class _Cap:
        def write(self, t: int, frame: Any, link: bool) -> None:
            if not link and len(frame) > 256:
                seen.append(bytes(frame))
    engine.capture = _Cap()
    engine.start(0)
    engine.run(20_000_000)                          # 20 us: data flows
    assert seen
    frame = bytearray(seen[0])
    frame[-1] ^= 0x01                               # break its VCRC
    sw = next(n for n in fabric.nodes.values() if isinstance(n, Switch))
    port_in = next(iter(sw.ports))
    before = sw.counters.get("PortRcvErrors", 0)
    sw.receive(port_in, bytearray(frame), False, engine.now)
    assert sw.counters.get("PortRcvErrors", 0) == before + 1
    sw.receive_intact(port_in, bytearray(frame), False, engine.now)
    assert sw.counters.get("PortRcvErrors", 0) == before + 1


def test_a_faulty_link_turns_intact_delivery_off() -> None:
    path = ROOT / "scenarios" / "santos_fig1.toml"
    scn = load_scenario(path, ['scenario.duration="1ms"', 'faults.corrupt=0.01'])
    fabric = build_fabric(scn)
    assert fabric.injectors
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring, faults=engine_faults(fabric.injectors))
    assert not engine.intact
    engine.start(0)
    engine.run(5_000_000)
    assert all(ev.kind != DELIVER_INTACT for ev in engine.heap)
