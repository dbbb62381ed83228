"""The README's quick start on a distribution's own Python (issue 18 item 7, PEP 668).

Both commands make and use a virtual environment themselves; the second one -- the one
CI runs alone (.ci/run takes it with awk) -- too.  On a machine with Debian's system
python3 (/usr/bin/python3 marked EXTERNALLY-MANAGED), the test shows that the system pip
refuses and that a venv made as the quick start makes it installs from the machine's
configured package index.  The whole two commands in a fresh clone take minutes (the
mypyc build); the closing note of issue 18 records that run.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEBIAN_PYTHON = Path("/usr/bin/python3")


def _quick_start() -> list[str]:
    """The Quick start block's lines, as .ci/run extracts them (its awk program)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    m = re.search(r"awk '([^']+)' README.md", ci)
    assert m, "the awk program of .ci/run"
    out = subprocess.run(["awk", m.group(1), str(ROOT / "README.md")], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line.strip()]


def test_both_commands_make_and_use_a_venv() -> None:
    lines = _quick_start()
    assert len(lines) == 2
    for line in lines:
        steps = [shlex.split(s) for s in line.split("&&")]
        assert steps[0] == ["python3", "-m", "venv", ".venv"], line      # each one self-sufficient
        for step in steps[1:]:
            assert step[0].startswith(".venv/bin/"), step                # never the system's pip or python
    first, second = lines
    assert ".venv/bin/pip install ." in first and ".venv/bin/ibemu run " in first
    assert '.venv/bin/pip install ".[test]"' in second and ".venv/bin/python -m pytest" in second


def test_ci_runs_the_second_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "sed -n 2p" in ci and 'eval "$test_cmd"' in ci
    assert "IBEMU_REQUIRE_COMPILED=1" in ci and "IBEMU_REQUIRE_CHROMIUM=1" in ci


def _debian_python() -> Path:
    marker = next(DEBIAN_PYTHON.parent.parent.glob("lib/python3*/EXTERNALLY-MANAGED"), None) \
        if DEBIAN_PYTHON.exists() else None
    if marker is None:
        pytest.skip("no externally managed system python3 at /usr/bin/python3 (PEP 668)")
    r = subprocess.run([str(DEBIAN_PYTHON), "-c", "import ensurepip, venv"], capture_output=True)
    if r.returncode:
        pytest.skip("the system python3 has no venv module (apt-get install python3-venv)")
    return DEBIAN_PYTHON


def test_on_the_system_python_pip_refuses_and_the_venv_installs(tmp_path: Path) -> None:
    py = _debian_python()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    r = subprocess.run([str(py), "-m", "pip", "install", "--dry-run", "plotly"], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert r.returncode != 0 and "externally-managed-environment" in r.stdout + r.stderr
    # the quick start's first step, then its pip, from the machine's configured index
    subprocess.run(["python3", "-m", "venv", ".venv"], check=True, env=env, cwd=tmp_path)
    pip = tmp_path / ".venv" / "bin" / "pip"
    r = subprocess.run([str(pip), "download", "--no-deps", "-q", "-d", "wheels", "plotly"], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert list((tmp_path / "wheels").glob("plotly-*.whl"))
