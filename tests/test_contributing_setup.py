"""A contributor's first steps (issue 30 Deliver 4): CONTRIBUTING.md's setup commands, run as
written in a fresh copy of the tree and a fresh venv, give a working editable install whose
tests pass.

The commands are read from the first code block of CONTRIBUTING.md's "Setting up" section
(after its ``git clone`` line, which the copy stands for): the venv is made without
``--system-site-packages`` and ``pip install -e ".[test]"`` installs every dependency into
it (from pip's cache or the index, as a contributor's would).  The copy holds the files git
tracks or would track (``git ls-files``), so uncommitted edits are tested and build
leftovers are not.  The editable install builds the pure-Python core (setup.py, unless
``IBEMU_COMPILE=1``), so no ``.so`` lands beside the sources.

The block's ``pytest`` line runs with test paths appended: the tests that failed when the
editable install compiled the core in place (their fakes subclass the core's classes:
tests/test_sim_scheduler.py, tests/test_cca_hca.py) and a sample of the rest.  It does not
rerun the whole suite: that takes about 25 minutes, CI's budget is 30 and CI already runs
every test on this same pure-Python source tree; what an editable install changes is only
what setup.py builds in place, which the no-``.so`` check and the fakes' tests cover.  The
install itself takes about a minute and a half (pip's cache warm).
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

# the formerly failing tests, and a sample: scenario validation, the CLI, a virtual-clock run
TESTS = ["tests/test_sim_scheduler.py", "tests/test_cca_hca.py", "tests/test_scenario.py",
         "tests/test_api.py"]
IGNORE = shutil.ignore_patterns(".git", "__pycache__", "build", "dist", "*.egg-info", "runs",
                                "reproductions", "out", ".pytest_cache", ".hypothesis", ".venv",
                                "*.so", "site")


def setup_block() -> list[str]:
    """The command lines of the first code block under CONTRIBUTING.md's "## Setting up"."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("\n## Setting up", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S)
    assert block, "CONTRIBUTING.md: no code block under '## Setting up'"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def copy_tree(dest: Path) -> None:
    """The files a fresh clone would hold (with the working tree's edits), or, outside a git
    checkout, the tree without build leftovers."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=False) if shutil.which("git") else None
    if listed is None or listed.returncode != 0:
        shutil.copytree(ROOT, dest, symlinks=True, ignore=IGNORE)
        return
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        src, dst = ROOT / name, dest / name
        if not os.path.lexists(src):
            continue                                    # deleted in the working tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)


def test_contributing_setup_gives_passing_tests(tmp_path: Path) -> None:
    lines = setup_block()
    assert lines[0].startswith("git clone ") and "cd " in lines[0], lines[0]
    assert any("pip install -e" in line for line in lines), lines
    assert lines[-1].endswith("-m pytest -q"), lines[-1]
    src = tmp_path / "ibemu"
    copy_tree(src)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k not in ("VIRTUAL_ENV", "IBEMU_PURE", "IBEMU_COMPILE",
                                                       "IBEMU_PURE_BUILD")}
    env["MPLBACKEND"] = "Agg"
    # python3 is the interpreter running this test (CI's), so the venv is made from it
    steps = [re.sub(r"^python3 ", shlex.quote(sys.executable) + " ", line) for line in lines[1:]]
    steps[-1] += " -p no:cacheprovider " + " ".join(TESTS)
    for step in steps[:-1]:
        done = subprocess.run(["bash", "-c", step], cwd=src, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        assert done.returncode == 0, "%s\n%s\n%s" % (step, done.stdout[-3000:], done.stderr[-3000:])
    assert not list((src / "ibemu").rglob("*.so")), "the editable install compiled the core in place"
    venv_python = src / ".venv" / "bin" / "python"
    elsewhere = tmp_path / "elsewhere"                  # outside the copy: the install is what imports
    elsewhere.mkdir()
    where = subprocess.run([str(venv_python), "-c", "import ibemu, ibemu.core as c; print(ibemu.__file__);"
                            " print(c.core_kind())"], cwd=elsewhere, env=env, capture_output=True,
                           text=True, timeout=120, check=False)
    assert where.returncode == 0, where.stderr
    file, kind = where.stdout.split("\n")[:2]
    assert Path(file).resolve().is_relative_to(src.resolve()), file   # editable: the copy's sources
    assert kind == "pure Python"
    done = subprocess.run(["bash", "-c", steps[-1]], cwd=src, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", done.stdout) and " failed" not in done.stdout, done.stdout[-2000:]
