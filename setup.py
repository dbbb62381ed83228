"""The package list and the compiled core for setuptools; everything else is in pyproject.toml.

Packages: ibemu's own, found under ibemu/, plus the repository's top-level layers/ and
scenarios/ folders installed as ``ibemu.layers`` and ``ibemu.scenarios`` (mapped by
``package-dir`` in pyproject.toml).  They are named here rather than discovered because a
source distribution does not carry the checkout's symbolic links ibemu/layers and
ibemu/scenarios (docs/packaging.md).

The compiled core (issue 16 Deliver 1): when a wheel is built, the modules of the packages
named in ``ibemu/core.py`` (``COMPILED_PACKAGES``: sim, fabric, wire, cc, routing) are compiled with
mypyc into extension modules; the ``.py`` files are installed too.  The package stays pure
Python -- and installs all the same -- when ``IBEMU_PURE_BUILD=1`` is set, when no C
compiler is found, when mypy (mypyc) cannot be imported, or when compiling fails: then
every compiled output is dropped, never a part of it (the modules share one mypyc library).

Editable installs (``pip install -e .``: the ``editable_wheel`` and ``develop`` commands)
build the pure-Python core unless ``IBEMU_COMPILE=1`` is set (issue 30): a compiled core
built in place puts ``.so`` files beside the sources, which the checkout then imports, and
the tests' fakes that subclass the core's classes cannot subclass compiled ones
(CONTRIBUTING.md, docs/packaging.md).
"""
from __future__ import annotations

import os
import runpy
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
MAPPED = ["ibemu.layers", "ibemu.scenarios"]
CORE = runpy.run_path(str(HERE / "ibemu" / "core.py"))      # the one list of compiled packages
# setup.py commands that build extension modules (metadata queries do not run mypyc)
BUILDING = {"build", "build_ext", "bdist_wheel", "install", "develop", "editable_wheel", "bdist_egg"}
# the commands of an editable install: pure Python unless COMPILE_ENV asks for the compiled core
EDITABLE = {"develop", "editable_wheel"}
COMPILE_ENV = "IBEMU_COMPILE"
# The compiled core is one C file (mypyc's runtime included): without this flag every call
# between its functions goes through the PLT, as if another library could replace them, and
# none is inlined -- e.g. CPyList_GetItem, a tenth of a 648-host run under perf (issue 28)
LOCAL_CALLS = ["-fno-semantic-interposition"]


def _say(text: str) -> None:
    print("ibemu setup.py: " + text, file=sys.stderr, flush=True)


def compiler_found() -> bool:
    """The C compiler the build would use (``CC`` or Python's configured one) is on the PATH."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    words = shlex.split(cc)
    return bool(words) and shutil.which(words[0]) is not None


def core_sources() -> list[str]:
    """The ``.py`` files of the compiled packages, relative to this folder, minus NOT_COMPILED."""
    skip = set(CORE["NOT_COMPILED"]) | set(CORE["C_SOURCES"])
    files = []
    for package in CORE["COMPILED_PACKAGES"]:
        for path in sorted((HERE / package.replace(".", "/")).rglob("*.py")):
            rel = path.relative_to(HERE)
            module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
            if module not in skip:
                files.append(rel.as_posix())
    return files


def compiled_core() -> list:
    """mypyc's extension modules for the core, or [] for a pure-Python package."""
    if not BUILDING & set(sys.argv[1:]):
        return []
    if os.environ.get("IBEMU_PURE_BUILD", "") not in ("", "0"):
        _say("IBEMU_PURE_BUILD is set: pure-Python core")
        return []
    if EDITABLE & set(sys.argv[1:]) and os.environ.get(COMPILE_ENV, "") in ("", "0"):
        _say("editable install: pure-Python core (%s=1 compiles it in place)" % COMPILE_ENV)
        return []
    if not compiler_found():
        _say("no C compiler found: pure-Python core")
        return []
    try:
        from mypyc.build import mypycify  # noqa: PLC0415 -- optional: no mypy, pure Python
    except ImportError:
        _say("mypy (mypyc) is not installed: pure-Python core")
        return []
    cwd = os.getcwd()
    os.chdir(HERE)                      # mypyc works with paths relative to the project
    try:
        extensions = mypycify(core_sources(), opt_level="3")
        for ext in extensions:
            ext.extra_compile_args = list(ext.extra_compile_args or []) + LOCAL_CALLS
        extensions += [Extension(name, [source], extra_compile_args=["-O3"])
                       for name, source in CORE["C_SOURCES"].items()]
    except (Exception, SystemExit) as exc:   # mypyc exits on a type error
        _say("mypyc failed (%s): pure-Python core" % (exc,))
        return []
    finally:
        os.chdir(cwd)
    for ext in extensions:
        ext.optional = True             # a failing compile is a warning, then AllOrNothing drops the rest
    return extensions


class AllOrNothing(build_ext):
    """build_ext that keeps the compiled core only when every extension module built: the
    per-module shims import one shared mypyc library, so a partial build would not import."""

    def run(self) -> None:
        self.failed: list[str] = []
        super().run()
        if self.failed:
            _say("compiling %s failed: pure-Python core" % ", ".join(self.failed))
            for ext in self.extensions:
                for out in (self.get_ext_fullpath(ext.name),
                            os.path.join(self.build_lib, self.get_ext_filename(ext.name))):
                    if os.path.exists(out):
                        os.remove(out)
            self.extensions = []
            self.distribution.ext_modules = []

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except BaseException:
            self.failed.append(ext.name)
            raise


setup(
    packages=find_packages(include=["ibemu", "ibemu.*"], exclude=MAPPED) + MAPPED,
    ext_modules=compiled_core(),
    cmdclass={"build_ext": AllOrNothing},
)
