import os
import shutil
import subprocess

import pytest

# Every virtual-clock run in the tests ends with a credit-leak check (ibemu/run.py):
# traffic stopped, fabric drained, every credit back (issue 8).
os.environ.setdefault("IBEMU_CHECK_CREDITS", "1")


@pytest.fixture(scope="session")
def tshark():
    """Path of tshark; skips (or fails under IBEMU_REQUIRE_TSHARK=1, as in CI) without it."""
    path = shutil.which("tshark")
    if not path:
        if os.environ.get("IBEMU_REQUIRE_TSHARK") == "1":
            pytest.fail("tshark is required here (IBEMU_REQUIRE_TSHARK=1) but is not installed")
        pytest.skip("tshark is not installed (apt-get install tshark) - Wireshark tests skipped")
    return path


@pytest.fixture(scope="session")
def run_tshark(tshark):
    """Run tshark with arguments; return its stdout (stderr's root warning ignored)."""
    def run(*args, timeout=60):
        r = subprocess.run([tshark, *args], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError("tshark %s failed: %s" % (" ".join(args), r.stderr))
        return r.stdout
    return run
