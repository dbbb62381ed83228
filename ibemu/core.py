"""Which core is in use: the compiled one (mypyc) or the pure-Python one (issue 16 Deliver 1).

``pip install .`` compiles the hot core -- the packages named in :data:`COMPILED_PACKAGES`
-- with mypyc where a C compiler exists (setup.py reads the list from this file, so it is
kept in one place); the ``.py`` sources are installed beside the extension modules.  With
``IBEMU_PURE=1`` in the environment, ``import ibemu`` installs :class:`PureSourceFinder`
first on ``sys.meta_path``, so those packages load from their ``.py`` sources even where
the compiled modules are installed.  :func:`core_kind` says which one a process runs
(``ibemu --version`` and the run summary print it; results.json does not, since it must
be byte-identical between the two -- docs/packaging.md).

This module imports nothing of ibemu: setup.py executes it on its own (runpy).
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

# the hot core that setup.py compiles: scheduler, fabric nodes, credits, queue pairs, codec, CC hooks
COMPILED_PACKAGES: tuple[str, ...] = ("ibemu.sim", "ibemu.fabric", "ibemu.wire", "ibemu.cc", "ibemu.routing")
# modules of those packages left as Python (none fails to compile today)
NOT_COMPILED: tuple[str, ...] = ()
# modules of those packages whose extension module is hand-written C, not mypyc's: the
# module's .py file is its pure-Python twin (the scheduler's queue and the arenas, issue 28)
C_SOURCES: dict[str, str] = {"ibemu.sim.eventq": "ibemu/sim/eventq.c",
                             "ibemu.sim.arena": "ibemu/sim/arena.c"}      # huge-page arenas
PURE_ENV = "IBEMU_PURE"

COMPILED = "compiled (mypyc)"
PURE = "pure Python"


def is_compiled_name(fullname: str) -> bool:
    """True for a module of :data:`COMPILED_PACKAGES` (the packages themselves included)."""
    return any(fullname == p or fullname.startswith(p + ".") for p in COMPILED_PACKAGES)


class PureSourceFinder:
    """A meta-path finder that loads the compiled core's modules from their ``.py`` files
    (a plain source loader), ignoring the extension modules beside them."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not is_compiled_name(fullname) or path is None:
            return None
        name = fullname.rpartition(".")[2]
        for entry in path:
            package = os.path.join(entry, name)
            init = os.path.join(package, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[package])
            source = package + ".py"
            if os.path.isfile(source):
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def use_pure_python() -> None:
    """Put :class:`PureSourceFinder` first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, PureSourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PureSourceFinder())


def pure_requested() -> bool:
    """``IBEMU_PURE`` is set to something other than empty or ``0``."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def core_kind() -> str:
    """``"compiled (mypyc)"`` when the scheduler was loaded from an extension module,
    else ``"pure Python"``."""
    # the scheduler's loader tells the core kind; imported when asked (setup.py runs this file alone)
    import ibemu.sim.scheduler as module  # noqa: PLC0415
    return COMPILED if isinstance(module.__spec__.loader if module.__spec__ else None,
                                  importlib.machinery.ExtensionFileLoader) else PURE


def version_text(version: str) -> str:
    """The line ``ibemu --version`` prints."""
    return "ibemu %s (%s core)" % (version, core_kind())


class VersionAction(argparse.Action):
    """``--version``: like argparse's, but finds the core kind only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 version: str = "", help: str = "print the version and which core is in use") -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)
        self.version = version

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(version_text(self.version))    # on stdout, as argparse's own version action
        parser.exit()
