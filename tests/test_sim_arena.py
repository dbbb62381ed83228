"""Huge-page arenas (ibemu/sim/arena.py, its C twin arena.c, and ibemu/sim/hugepages.py;
issue 28).  The C twin runs in the compiled core: tests/test_compiled.py installs it in a
process and frees arenas made before and after, and its byte-identity test runs every
shipped scenario with it (compiled) against without it (pure).  Here: the pure twin
changes nothing, and a run asks for the arenas unless IBEMU_HUGE_PAGES=0."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cext import compile_extension
from ibemu.sim import arena, hugepages

SOURCE = Path(arena.__file__).with_suffix(".c")
# the C twin, loaded from where it was compiled, in a process of its own: arenas made
# before and after install() freed and reused, glibc's heap advised as it grows
CHECK = """
import gc, importlib.util, sys
spec = importlib.util.spec_from_file_location("arena", sys.argv[1])
a = importlib.util.module_from_spec(spec); spec.loader.exec_module(a)
before = [[i] for i in range(300000)]
assert a.install() is True and a.install() is True
after = [[i] for i in range(300000)]
s = a.stats(); assert s["installed"] and s["arenas"] >= 8 and s["arena_size"] == 1 << 20, s
big = [bytes(2000) for _ in range(40000)]; a.refresh()
assert a.stats()["heap_advised"] >= 80 << 20, a.stats()
del before, after, big; gc.collect()
again = [[i] for i in range(300000)]
t = a.stats(); assert t["arenas"] - s["arenas"] < s["arenas"] and t["free"] >= 0, (s, t)
print("ok", t["chunks"], t["arenas"])
"""


def test_the_c_twin_compiled_here(tmp_path: Path) -> None:
    out = compile_extension(SOURCE, tmp_path, "the C arenas")
    ran = subprocess.run([sys.executable, "-c", CHECK, str(out)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("ok 1 "), ran.stdout


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
