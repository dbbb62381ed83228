from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest

from ibemu.testing import check_every_run


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
