from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ibemu.testing import check_every_run

# The tools installed beside this Python (a venv's bin/: ibemu, mpiexec and its hydra
# proxy from the MPICH wheel) come first on PATH for the tests' subprocesses, as when the
# venv is activated: the README's test command runs .venv/bin/python without activating it.
_BIN = os.path.dirname(sys.executable)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture(scope="session", autouse=True)
def credit_check_after_every_run() -> Iterator[None]:
    """Every virtual-clock run in the tests (ibemu.run.run_virtual, in this process) ends
    with the credit-leak check of ibemu.testing: traffic stopped, fabric drained, every
    credit back (issue 8).  Registered as an observer of ibemu.run, not through the
    environment, so the product never changes behaviour."""
    with check_every_run():
        yield


@pytest.fixture(scope="session")
def tshark() -> str:
    """Path of tshark; skips (or fails under IBEMU_REQUIRE_TSHARK=1, as in CI) without it."""
    path = shutil.which("tshark")
    if not path:
        if os.environ.get("IBEMU_REQUIRE_TSHARK") == "1":
            pytest.fail("tshark is required here (IBEMU_REQUIRE_TSHARK=1) but is not installed")
        pytest.skip("tshark is not installed (apt-get install tshark) - Wireshark tests skipped")
    return path


@pytest.fixture(scope="session")
def run_tshark(tshark: str) -> Callable[..., str]:
    """Run tshark with arguments; return its stdout (stderr's root warning ignored)."""
    def run(*args: str, timeout: float = 60) -> str:
        r = subprocess.run([tshark, *args], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError("tshark %s failed: %s" % (" ".join(args), r.stderr))
        return r.stdout
    return run


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """File name -> the matplotlib figure saved under it (every ``Figure.savefig`` of the
    test is recorded, and still writes its file)."""
    from matplotlib.figure import Figure

    figures: dict[str, Any] = {}
    original = Figure.savefig

    def savefig(self: Figure, fname, *args, **kw):  # type: ignore[no-untyped-def]
        figures[Path(fname).name] = self
        return original(self, fname, *args, **kw)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return figures
