"""The compiled core and its pure-Python fallback (issue 16 Deliver 1).

- A wheel built from the tree where a C compiler exists holds the core (ibemu/sim, fabric,
  wire, cc) as mypyc extension modules beside their ``.py`` files; installed in a venv,
  ``ibemu --version`` says ``compiled (mypyc)``, and with ``IBEMU_PURE=1`` the same
  install runs the ``.py`` sources and says ``pure Python``.
- Both give byte-identical outputs (results.json, config.json, the CSV series, the
  capture; plots skipped) for every shipped scenario at CI size -- the short runs of
  benchmarks/compare_base.py (its scenario list, duration and skipped suffixes).
- Without a C compiler (PATH without gcc/cc, ``CC`` naming a missing program) the package
  builds, installs and runs as pure Python.

The compiled wheel is built once per module (mypyc takes about two minutes of one core).
Without a C compiler or mypy the compiled half skips, unless ``IBEMU_REQUIRE_COMPILED=1``
(as in CI, .ci/run), where it fails.  The venvs are made as in tests/test_wheel.py
(``--system-site-packages``, offline, ``--no-build-isolation``) and every command runs
from a temporary folder outside the tree, without PYTHONPATH.
"""
from __future__ import annotations

import filecmp
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from ibemu import __version__
from test_wheel import see_parent_venv

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _load_compare_base():
    spec = importlib.util.spec_from_file_location("compare_base", ROOT / "benchmarks" / "compare_base.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare_base = _load_compare_base()
IGNORE = shutil.ignore_patterns(".git", "__pycache__", "build", "dist", "*.egg-info", "runs",
                                "reproductions", "out", ".pytest_cache", ".hypothesis", ".venv",
                                "*.pcap", "*.erf", "*.so")
COMPILED, PURE = "compiled (mypyc)", "pure Python"


def _expected(kind: str) -> str:
    """What ``ibemu --version`` prints for a core *kind*."""
    return "ibemu %s (%s core)" % (__version__, kind)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k not in ("VIRTUAL_ENV", "IBEMU_PURE", "IBEMU_PURE_BUILD")}
    env["MPLBACKEND"] = "Agg"
    env.update(extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env or _env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def _compiler() -> str | None:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    return shutil.which(cc.split()[0]) if cc.split() else None


def _build_and_install(tmp: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """Build a wheel from a copy of the tree (without its symbolic links, as a source
    distribution has it) under *env* and install it into a fresh venv; (wheel, venv bin/)."""
    src, dist, env_dir = tmp / "src", tmp / "dist", tmp / "venv"
    shutil.copytree(ROOT, src, symlinks=True, ignore=IGNORE)
    for link in ("layers", "scenarios"):
        (src / "ibemu" / link).unlink()
    p = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, src],
             cwd=tmp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    wheels = sorted(dist.glob("ibemu-*.whl"))
    assert len(wheels) == 1, wheels
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    see_parent_venv(env_dir)                 # the quick start runs the tests in .venv
    bin_dir = env_dir / "bin"
    p = _run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
              wheels[0]], cwd=tmp)
    assert p.returncode == 0, p.stdout + p.stderr
    return wheels[0], bin_dir


def _version(bin_dir: Path, cwd: Path, pure: bool = False) -> str:
    p = _run([bin_dir / "ibemu", "--version"], cwd=cwd, env=_env(IBEMU_PURE="1") if pure else None)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, venv bin/) of the compiled package -- built once for this module."""
    why = None
    if _compiler() is None:
        why = "no C compiler (CC or Python's configured one) on the PATH"
    elif importlib.util.find_spec("mypyc") is None:
        why = "mypy (mypyc) is not installed"
    if why is not None:
        if os.environ.get("IBEMU_REQUIRE_COMPILED") == "1":
            pytest.fail("the compiled core is required here (IBEMU_REQUIRE_COMPILED=1): " + why)
        pytest.skip("compiled core not buildable: " + why)
    return _build_and_install(tmp_path_factory.mktemp("compiled"), _env())


def test_the_wheel_holds_extension_modules_and_sources(compiled: tuple[Path, Path]) -> None:
    wheel, _ = compiled
    names = set(zipfile.ZipFile(wheel).namelist())
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for module in ("ibemu/sim/scheduler", "ibemu/fabric/switch", "ibemu/fabric/credits", "ibemu/fabric/qp/requester",
                   "ibemu/wire/codec", "ibemu/cc/hp/marking", "ibemu/cc/cca/switch"):
        assert module + suffix in names, module
        assert module + ".py" in names, module          # the fallback's sources
    assert not any(n.startswith("ibemu/run") and n.endswith(suffix) for n in names)   # only the core
    assert "ibemu/scenarios/quickstart.toml" in names and "ibemu/layers/wireshark/ibemu.lua" in names


def test_version_says_which_core(compiled: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = compiled
    assert _version(bin_dir, tmp_path) == _expected(COMPILED)
    assert _version(bin_dir, tmp_path, pure=True) == _expected(PURE)
    code = ("import ibemu, ibemu.sim.scheduler as s, ibemu.fabric.switch as w; "
            "print(s.__file__); print(w.__file__)")
    p = _run([bin_dir / "python", "-c", code], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert all(line.endswith(sysconfig.get_config_var("EXT_SUFFIX")) for line in p.stdout.split()), p.stdout
    p = _run([bin_dir / "python", "-c", code], cwd=tmp_path, env=_env(IBEMU_PURE="1"))
    assert p.returncode == 0, p.stderr
    assert all(line.endswith(".py") for line in p.stdout.split()), p.stdout
    venv_dir = bin_dir.parent.resolve()
    assert all(venv_dir in Path(line).resolve().parents for line in p.stdout.split()), p.stdout


def _outputs(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")
            if p.is_file() and p.suffix not in compare_base.SKIP_SUFFIXES}


def test_compiled_and_pure_outputs_are_byte_identical(compiled: tuple[Path, Path], tmp_path: Path) -> None:
    """Every shipped scenario at CI size (benchmarks/compare_base.py's short runs, with a
    capture), compiled and pure side by side (one process each, at once), each from its own
    folder into the same relative output path, so the files compare raw, byte for byte."""
    _, bin_dir = compiled
    names = compare_base.scenarios(ROOT)
    assert len(names) >= 10, names
    cwd = {"compiled": tmp_path / "compiled", "pure": tmp_path / "pure"}
    env = {"compiled": _env(), "pure": _env(IBEMU_PURE="1")}
    for name in names:
        args = [str(bin_dir / "ibemu"), "run", name, "--duration", compare_base.DURATION, "--out", "run-" + name,
                "--pcap", "run-%s/capture.pcap" % name, "--no-plots", "-q"]
        procs = {}
        for kind in cwd:
            (cwd[kind] / ("run-" + name)).mkdir(parents=True)        # --pcap needs its folder
            procs[kind] = subprocess.Popen(args, cwd=cwd[kind], env=env[kind], stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
        for kind, proc in procs.items():
            out, err = proc.communicate(timeout=900)
            assert proc.returncode == 0, (kind, name, out + err)
    files = _outputs(cwd["compiled"])
    assert files == _outputs(cwd["pure"])
    for name in names:
        assert {"results.json", "config.json", "flows.csv", "capture.pcap"} <= {
            p.name for p in files if p.parts[0] == "run-" + name}, name
    differ = [str(rel) for rel in sorted(files)
              if not filecmp.cmp(cwd["compiled"] / rel, cwd["pure"] / rel, shallow=False)]
    assert differ == [], "compiled and pure Python outputs differ: %s" % differ
    for folder in cwd.values():             # the captures are large (hundreds of MB)
        shutil.rmtree(folder)


def test_installs_and_runs_without_a_c_compiler(tmp_path: Path) -> None:
    """A fresh clone on a machine without a C compiler: PATH holds only Python's own folder
    and CC names a program that does not exist; the build falls back to pure Python."""
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(sys.executable, bare / "python")
    env = _env(PATH=str(bare), CC=str(tmp_path / "no-such-cc"))
    assert shutil.which("gcc", path=env["PATH"]) is None and shutil.which("cc", path=env["PATH"]) is None
    wheel, bin_dir = _build_and_install(tmp_path / "build", env)
    names = zipfile.ZipFile(wheel).namelist()
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert not any(n.endswith((".so", ".pyd")) for n in names)
    assert "ibemu/sim/scheduler.py" in names
    work = tmp_path / "work"
    work.mkdir()
    assert _version(bin_dir, work) == _expected(PURE)
    p = _run([bin_dir / "ibemu", "run", "quickstart", "--duration", "1ms", "--out", "q", "--no-plots"], cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Jain fairness" in p.stdout and "%s core" % PURE in p.stdout
    assert (work / "q" / "results.json").is_file()


def test_the_pure_finder_loads_only_the_cores_sources(tmp_path: Path) -> None:
    """IBEMU_PURE's finder: the core's modules and packages from their .py files, even
    with a (stand-in) extension module beside them; other modules left to the usual finders."""
    from importlib.machinery import SourceFileLoader

    from ibemu.core import PureSourceFinder, is_compiled_name
    pkg = tmp_path / "sim"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "scheduler.py").write_text("")
    (pkg / ("scheduler" + sysconfig.get_config_var("EXT_SUFFIX"))).write_bytes(b"not an extension")
    finder = PureSourceFinder()
    spec = finder.find_spec("ibemu.sim.scheduler", [str(pkg)])
    assert spec is not None and spec.origin == str(pkg / "scheduler.py")
    assert isinstance(spec.loader, SourceFileLoader)
    spec = finder.find_spec("ibemu.sim", [str(tmp_path)])
    assert spec is not None and spec.submodule_search_locations == [str(pkg)]
    assert finder.find_spec("ibemu.run", [str(tmp_path)]) is None
    assert finder.find_spec("ibemu.sim.missing", [str(pkg)]) is None
    assert is_compiled_name("ibemu.cc.hp.marking") and not is_compiled_name("ibemu.ccx")
