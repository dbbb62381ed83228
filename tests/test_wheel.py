"""The installed package (issue 12 item 4): ``pip install .`` followed by
``ibemu reproduce fig2a`` and ``ibemu run`` of a shipped scenario by name work from a
folder outside the source tree.

The wheel is built from a copy of the tree without its symbolic links ibemu/layers and
ibemu/scenarios (as a source distribution has it; no build/ or *.egg-info lands in the
tree) and installed into a fresh venv made with ``--system-site-packages`` -- the
dependencies come from the machine, the wheel goes in with ``--no-deps
--ignore-installed`` (shadowing any ibemu the machine has, e.g. an editable one).  Commands run with the venv's ``ibemu``
script, from a temporary folder, without PYTHONPATH, so nothing of the source tree is on
the path; the test checks that the imported package is the venv's.  The wheel is built pure Python
(``IBEMU_PURE_BUILD=1``): the compiled core and the no-compiler install are
tests/test_compiled.py's, which builds the one compiled wheel of a test session.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

IGNORE = shutil.ignore_patterns(".git", "__pycache__", "build", "dist", "*.egg-info", "runs",
                                "reproductions", "out", ".pytest_cache", ".hypothesis", ".venv",
                                "*.pcap", "*.erf", "*.so")


def _offline_build_possible() -> bool:
    """setuptools can build a wheel here without fetching anything: it has bdist_wheel
    itself (70.1 and later) or the ``wheel`` package is installed."""
    spec = importlib.util.find_spec("setuptools")
    if spec is None:
        return False
    import setuptools
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


def see_parent_venv(env_dir: Path) -> None:
    """When the tests themselves run in a venv (the README's quick start: .venv), a venv
    made from it with ``--system-site-packages`` sees the base interpreter's packages, not
    the dependencies installed in .venv: a .pth file adds .venv's site-packages after the
    new venv's own (whose ibemu wheel still comes first)."""
    if sys.prefix == sys.base_prefix:
        return
    import site
    own = next((env_dir / "lib").glob("python3*/site-packages"))
    (own / "_parent_venv.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k not in ("VIRTUAL_ENV", "IBEMU_PURE")}
    env["MPLBACKEND"] = "Agg"
    env["IBEMU_PURE_BUILD"] = "1"       # the layout only: tests/test_compiled.py builds the compiled core
    return env


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a venv holding the freshly built wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, dist, env_dir = tmp / "src", tmp / "dist", tmp / "venv"
    shutil.copytree(ROOT, src, symlinks=True, ignore=IGNORE)
    for link in ("layers", "scenarios"):     # as in a source distribution: the build must
        (src / "ibemu" / link).unlink()      # not need the checkout's symbolic links
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)]
    if _offline_build_possible():
        cmd.insert(4, "--no-build-isolation")
    p = _run(cmd, cwd=tmp)
    assert p.returncode == 0, p.stdout + p.stderr
    wheels = sorted(dist.glob("ibemu-*.whl"))
    assert len(wheels) == 1, wheels
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    see_parent_venv(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bin_dir / "python"
    # the machine's pip, run by the venv's interpreter, installs into the venv
    p = _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
              str(wheels[0])], cwd=tmp)
    assert p.returncode == 0, p.stdout + p.stderr
    return bin_dir


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the source tree."""
    work = tmp_path / "work"
    work.mkdir()
    assert ROOT not in work.resolve().parents
    return work


def test_the_venv_imports_the_installed_package(installed: Path, outside: Path) -> None:
    code = ("import ibemu, ibemu.layers, ibemu.resources as r; "
            "print(ibemu.__file__); print(ibemu.layers.__file__); print(r.lua_plugin()); "
            "print(' '.join(r.scenario_names()))")
    p = _run([str(installed / "python"), "-c", code], cwd=outside)
    assert p.returncode == 0, p.stderr
    pkg, layers, lua, names = p.stdout.splitlines()
    venv_dir = installed.parent.resolve()
    for path in (pkg, layers, lua):
        assert venv_dir in Path(path).resolve().parents, (path, venv_dir)
    assert lua.endswith("ibemu/layers/wireshark/ibemu.lua") and Path(lua).is_file()
    assert {"quickstart", "santos_fig1", "cca_opensm", "hp_noncompliant"} <= set(names.split())


def test_a_pure_build_says_so(installed: Path, outside: Path) -> None:
    p = _run([str(installed / "ibemu"), "--version"], cwd=outside)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("(pure Python core)"), p.stdout


def test_reproduce_fig2a_from_the_wheel(installed: Path, outside: Path) -> None:
    p = _run([str(installed / "ibemu"), "reproduce", "fig2a", "--out", "reps"], cwd=outside)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "fig2a — Congestion spreading, L=5 R=1" in p.stdout
    rows = [line.split()[0] for line in p.stdout.splitlines() if line.rstrip().endswith(" ok")]
    assert rows == ["link:root", "link:inter", "flow:victim", "flow:remote1"], p.stdout
    assert (outside / "reps" / "fig2a" / "results.json").is_file()


def test_run_a_shipped_scenario_by_name(installed: Path, outside: Path) -> None:
    p = _run([str(installed / "ibemu"), "run", "quickstart", "--out", "q"], cwd=outside)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (outside / "q" / "results.json").is_file()
    assert "Jain fairness" in p.stdout
    # a scenario naming an opensm.conf file beside it (package data too)
    p = _run([str(installed / "ibemu"), "run", "cca_opensm", "--duration", "200us", "--out", "c",
              "--no-plots", "-q"], cwd=outside)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (outside / "c" / "results.json").is_file()
    # its report, from the installed package (plotly.js inline)
    p = _run([str(installed / "ibemu"), "report", "c"], cwd=outside)
    assert p.returncode == 0, p.stdout + p.stderr
    assert 'id="plot-counters"' in (outside / "c" / "report.html").read_text(encoding="utf-8")


def test_examples_from_the_wheel(installed: Path, outside: Path) -> None:
    """``ibemu examples`` lists the package's scenarios; ``--copy`` writes one (and the
    opensm.conf it names) out, and the copy runs."""
    p = _run([str(installed / "ibemu"), "examples"], cwd=outside)
    assert p.returncode == 0, p.stderr
    listed = [line.split()[0] for line in p.stdout.splitlines()[:-2] if line.strip()]
    shipped = sorted(f.stem for f in (ROOT / "scenarios").glob("*.toml"))
    assert listed == shipped
    p = _run([str(installed / "ibemu"), "examples", "cca_opensm", "--copy", "mine"], cwd=outside)
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in (outside / "mine").iterdir()) == ["cca_opensm.conf", "cca_opensm.toml"]
    assert (outside / "mine" / "cca_opensm.conf").read_bytes() == (ROOT / "scenarios" / "cca_opensm.conf").read_bytes()
    p = _run([str(installed / "ibemu"), "run", "mine/cca_opensm.toml", "--duration", "100us", "--out", "m",
              "--no-plots", "-q"], cwd=outside)
    assert p.returncode == 0, p.stdout + p.stderr
