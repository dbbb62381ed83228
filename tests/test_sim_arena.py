"""Huge-page arenas (ibemu/sim/arena.py, its C twin arena.c, and ibemu/sim/hugepages.py;
issue 28).  The C twin runs in the compiled core: tests/test_compiled.py installs it in a
process and frees arenas made before and after, and its byte-identity test runs every
shipped scenario with it (compiled) against without it (pure).  Here: the pure twin
changes nothing, and a run asks for the arenas unless IBEMU_HUGE_PAGES=0."""
from __future__ import annotations

import pytest

from ibemu.sim import arena, hugepages


def test_the_pure_twin_changes_nothing() -> None:
    assert arena.install() is False
    assert arena.refresh() is None and hugepages.refresh() is None
    assert arena.stats()["installed"] is False and arena.stats()["heap_advised"] == 0


@pytest.mark.parametrize("value, asked", [(None, True), ("1", True), ("0", False), (" 0 ", False)])
def test_a_run_asks_for_them_unless_switched_off(monkeypatch, value, asked) -> None:
    calls: list[int] = []

    def install() -> bool:
        calls.append(1)
        return True
    monkeypatch.setattr(arena, "install", install)
    if value is None:
        monkeypatch.delenv(hugepages.ENV, raising=False)
    else:
        monkeypatch.setenv(hugepages.ENV, value)
    assert hugepages.use_huge_pages() is asked
    assert calls == ([1] if asked else [])
