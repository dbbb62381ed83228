"""One of the core's hand-written C modules (``ibemu.core.C_SOURCES``) compiled on its
own for its tests (tests/test_sim_eventq.py, tests/test_sim_arena.py): with the C
compiler setup.py would use, ``-Wall -Werror``; skipped without one, unless
``IBEMU_REQUIRE_COMPILED=1`` (CI), where that fails."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest


def compile_extension(source: Path, out_dir: Path, what: str) -> Path:
    """Compile *source* into an extension module in *out_dir*; its path.  *what* names
    the module in the skip message ("the C queue")."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    words = shlex.split(cc)
    if not words or shutil.which(words[0]) is None:
        if os.environ.get("IBEMU_REQUIRE_COMPILED") == "1":
            pytest.fail("a C compiler is required here (IBEMU_REQUIRE_COMPILED=1): none is on the PATH")
        pytest.skip("no C compiler: %s is not checked" % what)
    out = out_dir / (source.stem + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = words + ["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I" + sysconfig.get_paths()["include"],
                   str(source), "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out
