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

The compiled package comes once per module, one of two ways (the fixture prints which):
- reused: the tests' own environment (``sys.executable``'s, e.g. the quick start's .venv,
  whose ``pip install ".[test]"`` has just compiled the core) holds an installed, not
  editable, ibemu that is provably this tree's build -- every file as its RECORD hashes it,
  the set of ``.py`` files and each one's bytes those of the tree as the wheel lays it out
  (layers/ and scenarios/ as ibemu/layers, ibemu/scenarios), the package data the same,
  and an extension module beside every ``.py`` of the core (``ibemu.core``'s packages) and
  nowhere else.  Its RECORD then stands for the wheel's file list.
- built: otherwise (a stale or editable or pure-Python install, or none) a wheel is built
  from a copy of the tree and installed into a fresh venv (mypyc takes about four minutes
  of one core).
Without a compiled install to reuse and without a C compiler or mypy the compiled half
skips, unless ``IBEMU_REQUIRE_COMPILED=1`` (as in CI, .ci/run), where it fails.  The venvs
are made as in tests/test_wheel.py (``--system-site-packages``, offline,
``--no-build-isolation``) and every command runs from a temporary folder outside the
tree, without PYTHONPATH.
"""
from __future__ import annotations

import base64
import concurrent.futures
import filecmp
import fnmatch
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

from ibemu import __version__
from ibemu.core import COMPILED_PACKAGES, NOT_COMPILED
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


class Compiled(NamedTuple):
    """The compiled package under test: its files as the wheel names them, the bin/ of a venv
    where it is installed, and which way it was had ("reused ..." or "built ...")."""
    names: frozenset[str]
    bin_dir: Path
    how: str


def _wheel_layout() -> dict[str, Path]:
    """The tree's files under the names a wheel built from it gives them (ibemu/, and the
    top-level layers/ and scenarios/ as ibemu/layers, ibemu/scenarios; the checkout's
    symbolic links skipped, IGNORE's patterns left out, as _build_and_install copies it)."""
    layout = {}
    for prefix, top in (("ibemu", ROOT / "ibemu"), ("ibemu/layers", ROOT / "layers"),
                        ("ibemu/scenarios", ROOT / "scenarios")):
        for folder, dirs, files in os.walk(top):         # does not descend into the links
            ignored = IGNORE(folder, dirs + files)
            dirs[:] = [d for d in dirs if d not in ignored and not os.path.islink(os.path.join(folder, d))]
            for name in files:
                if name not in ignored:
                    path = Path(folder, name)
                    layout["%s/%s" % (prefix, path.relative_to(top).as_posix())] = path
    return layout


def _package_data(layout: dict[str, Path]) -> set[str]:
    """The names of the tree's files that pyproject.toml's package-data puts in the wheel."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = table["tool"]["setuptools"]["package-data"]
    return {name for package, patterns in data.items() for name in layout
            for pattern in patterns if fnmatch.fnmatchcase(name, package.replace(".", "/") + "/" + pattern)}


_PROBE = """import importlib.metadata as m, importlib.util as u, json
d = m.distribution("ibemu")
print(json.dumps({"origin": u.find_spec("ibemu").origin, "site": str(d.locate_file("")),
                  "version": d.version, "direct_url": d.read_text("direct_url.json"),
                  "files": [[f.as_posix(), f.hash.mode if f.hash else None, f.hash.value if f.hash else None]
                            for f in d.files or []]}))
"""


def _reusable_install(tmp: Path) -> Compiled | str:
    """The compiled ibemu installed in the tests' own environment, when it is this tree's
    build (the module's docstring lists the proofs); else why not, in one line."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "python").is_file() or not (bin_dir / "ibemu").is_file():
        return "%s has no python and ibemu scripts" % bin_dir
    p = _run([bin_dir / "python", "-c", _PROBE], cwd=tmp)          # outside the tree, no PYTHONPATH
    if p.returncode != 0:
        return "no installed ibemu distribution: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    found = json.loads(p.stdout)
    site = Path(found["site"])
    if json.loads(found["direct_url"] or "{}").get("dir_info", {}).get("editable"):
        return "the installed ibemu is an editable install"
    if found["version"] != tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]:
        return "the installed ibemu is version %s" % found["version"]
    if found["origin"] is None or Path(found["origin"]).resolve() != (site / "ibemu" / "__init__.py").resolve() \
            or (site / "ibemu").resolve() == (ROOT / "ibemu").resolve():
        return "`import ibemu` does not load the installed distribution's files (%s)" % found["origin"]
    for name, mode, value in found["files"]:
        if mode is not None:
            path = site / name
            digest = base64.urlsafe_b64encode(hashlib.new(mode, path.read_bytes()).digest()).rstrip(b"=").decode() \
                if path.is_file() else None
            if digest != value:
                return "installed %s is not the file its RECORD lists" % name
    if not any((site / name).resolve() == (bin_dir / "ibemu").resolve() for name, _, _ in found["files"]):
        return "%s is not the installed distribution's script" % (bin_dir / "ibemu")
    names = frozenset(name for name, _, _ in found["files"])
    package = {name for name in names if name.startswith("ibemu/") and "__pycache__" not in name}
    on_disk = {"ibemu/" + p.relative_to(site / "ibemu").as_posix() for p in (site / "ibemu").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    if on_disk != package:
        return "files under %s not in its RECORD or missing: %s" % (site / "ibemu", sorted(on_disk ^ package)[:5])
    layout, suffix = _wheel_layout(), sysconfig.get_config_var("EXT_SUFFIX")
    sources = {name for name in layout if name.endswith(".py")}
    installed = {name for name in package if name.endswith(".py")}
    if installed != sources:
        return "the installed .py files are not the tree's: %s" % sorted(sources ^ installed)[:5]
    data = {name for name in package if not name.endswith((".py", suffix))}
    if not _package_data(layout) <= data <= set(layout):
        return "the installed package data is not the tree's: %s" % sorted(data ^ _package_data(layout))[:5]
    differ = [name for name in sources | data if (site / name).read_bytes() != layout[name].read_bytes()]
    if differ:
        return "installed files differ from the tree's: %s" % sorted(differ)[:5]
    core = {name.removesuffix(".py") + suffix for name in sources
            if any(name.startswith(p.replace(".", "/") + "/") for p in COMPILED_PACKAGES)
            and name.removesuffix(".py").removesuffix("/__init__").replace("/", ".") not in NOT_COMPILED}
    extensions = {name for name in package if name.endswith(suffix)}
    if extensions != core:
        return "the installed core is not compiled (extension modules missing or extra: %s)" % sorted(
            extensions ^ core)[:5]
    if len([name for name in names if "/" not in name and name.endswith("__mypyc" + suffix)]) != 1:
        return "the installed distribution has no one mypyc runtime library"
    return Compiled(names, bin_dir, "reused the compiled ibemu installed in %s" % site)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    """The compiled package -- reused when the tests' environment holds this tree's
    compiled build, else built once for this module (the module's docstring)."""
    found = _reusable_install(tmp_path_factory.mktemp("probe"))
    if isinstance(found, Compiled):
        print("compiled core: " + found.how)
        return found
    print("compiled core: not reusing the installed ibemu (%s); building the wheel" % found)
    why = None
    if _compiler() is None:
        why = "no C compiler (CC or Python's configured one) on the PATH"
    elif importlib.util.find_spec("mypyc") is None:
        why = "mypy (mypyc) is not installed"
    if why is not None:
        if os.environ.get("IBEMU_REQUIRE_COMPILED") == "1":
            pytest.fail("the compiled core is required here (IBEMU_REQUIRE_COMPILED=1): " + why)
        pytest.skip("compiled core not buildable: " + why)
    wheel, bin_dir = _build_and_install(tmp_path_factory.mktemp("compiled"), _env())
    return Compiled(frozenset(zipfile.ZipFile(wheel).namelist()), bin_dir, "built " + wheel.name)


def test_the_wheel_holds_extension_modules_and_sources(compiled: Compiled) -> None:
    """The wheel's file list (the installed RECORD when the fixture reused an install)."""
    names = compiled.names
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for module in ("ibemu/sim/scheduler", "ibemu/fabric/switch", "ibemu/fabric/credits", "ibemu/fabric/qp/requester",
                   "ibemu/wire/codec", "ibemu/cc/hp/marking", "ibemu/cc/cca/switch"):
        assert module + suffix in names, module
        assert module + ".py" in names, module          # the fallback's sources
    assert not any(n.startswith("ibemu/run") and n.endswith(suffix) for n in names)   # only the core
    assert "ibemu/scenarios/quickstart.toml" in names and "ibemu/layers/wireshark/ibemu.lua" in names


def test_version_says_which_core(compiled: Compiled, tmp_path: Path) -> None:
    bin_dir = compiled.bin_dir
    assert _version(bin_dir, tmp_path) == _expected(COMPILED)
    assert _version(bin_dir, tmp_path, pure=True) == _expected(PURE)
    code = ("import ibemu, ibemu.sim.scheduler as s, ibemu.fabric.switch as w, ibemu.sim.eventq as q; "
            "print(s.__file__); print(w.__file__); print(q.__file__)")
    p = _run([bin_dir / "python", "-c", code], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert all(line.endswith(sysconfig.get_config_var("EXT_SUFFIX")) for line in p.stdout.split()), p.stdout
    # the C queue (ibemu/sim/eventq.c) reads the compiled events' keys from their fields:
    # mypyc's layout passed the check on a probe (False would be slower, not wrong)
    p = _run([bin_dir / "python", "-c", "import ibemu.sim.scheduler as s; print(s.NATIVE_EVENTS)"], cwd=tmp_path)
    assert (p.returncode, p.stdout.strip()) == (0, "True"), p.stderr
    p = _run([bin_dir / "python", "-c", code], cwd=tmp_path, env=_env(IBEMU_PURE="1"))
    assert p.returncode == 0, p.stderr
    assert all(line.endswith(".py") for line in p.stdout.split()), p.stdout
    venv_dir = bin_dir.parent.resolve()
    assert all(venv_dir in Path(line).resolve().parents for line in p.stdout.split()), p.stdout


def test_huge_page_arenas_in_the_compiled_core(compiled: Compiled, tmp_path: Path) -> None:
    """ibemu/sim/arena.c: installed, obmalloc's new arenas come from its chunks; arenas made
    before it and after it are freed (each by the allocator that made it) and reused;
    glibc's heap is advised as it grows (80 MB of 2 KB objects); the process ends cleanly.  (Results with and without it: the byte-identity test below,
    compiled against pure.)"""
    code = ("import gc, ibemu.sim.arena as a\n"
            "before = [[i] for i in range(300000)]\n"           # arenas of the allocator it replaces
            "assert a.install() is True and a.install() is True\n"
            "after = [[i] for i in range(300000)]\n"
            "s = a.stats(); assert s['installed'] and s['arenas'] >= 8 and s['arena_size'] == 1 << 20, s\n"
            "big = [bytes(2000) for _ in range(40000)]; a.refresh()\n"  # glibc's heap grown: advised
            "assert a.stats()['heap_advised'] >= 80 << 20, a.stats()\n"
            "del before, after; gc.collect()\n"
            "again = [[i] for i in range(300000)]\n"
            "t = a.stats(); assert t['arenas'] - s['arenas'] < s['arenas'], (s, t)\n"   # freed ones reused
            "print(a.__file__)\n")
    p = _run([compiled.bin_dir / "python", "-c", code], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith(sysconfig.get_config_var("EXT_SUFFIX")), p.stdout


def _outputs(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")
            if p.is_file() and p.suffix not in compare_base.SKIP_SUFFIXES}


def test_compiled_and_pure_outputs_are_byte_identical(compiled: Compiled, tmp_path: Path) -> None:
    """Every shipped scenario at CI size (benchmarks/compare_base.py's short runs, with a
    capture), compiled and pure, each from its own folder into the same relative output
    path, so the files compare raw, byte for byte.  The runs go two at a time (CI's two
    cores), the pure ones queued first: the pure congestion_tree run alone takes longer
    than all the others, so the second process works through them meanwhile rather than
    waiting for it (one pair per scenario, as before, left a core idle while it ran)."""
    bin_dir = compiled.bin_dir
    names = compare_base.scenarios(ROOT)
    assert len(names) >= 10, names
    cwd = {"pure": tmp_path / "pure", "compiled": tmp_path / "compiled"}
    env = {"compiled": _env(), "pure": _env(IBEMU_PURE="1")}

    def run(kind: str, name: str) -> subprocess.CompletedProcess[str]:
        (cwd[kind] / ("run-" + name)).mkdir(parents=True)            # --pcap needs its folder
        return _run([bin_dir / "ibemu", "run", name, "--duration", compare_base.DURATION, "--out", "run-" + name,
                     "--pcap", "run-%s/capture.pcap" % name, "--no-plots", "-q"], cwd=cwd[kind], env=env[kind])

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        done = {(kind, name): pool.submit(run, kind, name) for kind in cwd for name in names}
    for (kind, name), future in done.items():
        p = future.result()
        assert p.returncode == 0, (kind, name, p.stdout + p.stderr)
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
