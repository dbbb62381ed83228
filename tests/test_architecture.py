"""The shape of the code, checked (issue 12; DESIGN §7): layers that depend one way
(import-linter contracts in .importlinter), no import of another module's underscore
names, a strictly typed core (mypy --strict on the scheduler, the fabric, the wire and
the schemes), and a clean linter (ruff, configured in ruff.toml)."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ibemu"
CORE = ["ibemu/sim", "ibemu/fabric", "ibemu/wire", "ibemu/cc", "ibemu/routing"]


def _tool(name: str) -> str:
    path = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(path).exists():
        pytest.fail("%s is not installed: pip install '.[test]'" % name)
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_layers_depend_one_way():
    r = _run([_tool("lint-imports"), "--no-cache"])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_core_is_strictly_typed():
    r = _run([sys.executable, "-m", "mypy", *CORE])
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_linter_is_clean():
    r = _run([_tool("ruff"), "check", "."])
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "layers" in path.relative_to(PACKAGE).parts[:1] or "scenarios" in path.relative_to(PACKAGE).parts[:1]:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append((".".join(parts), path))
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def test_no_module_imports_another_modules_private_names():
    """``from x import _name`` across modules makes the private name the real API."""
    bad = []
    for module, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(module, path.name == "__init__.py", node)
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__") and source != module:
                        bad.append("%s:%d imports %s from %s" % (path.relative_to(ROOT), node.lineno,
                                                                 alias.name, source))
    assert not bad, "\n".join(bad)


def test_checker_catches_a_private_import(tmp_path):
    """The check above can fail: a module importing ``_x`` from a sibling is reported."""
    node = ast.parse("from .sibling import _x\n").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _absolute("ibemu.fabric.hca", False, node) == "ibemu.fabric.sibling"


def test_no_environment_variable_changes_the_product():
    """Test instrumentation lives in ibemu.testing and tests/conftest.py, not behind
    environment switches in the product (issue 12 item 7)."""
    hits = []
    for module, path in _modules():
        text = path.read_text(encoding="utf-8")
        if "IBEMU_CHECK" in text:
            hits.append(str(path.relative_to(ROOT)))
    assert not hits, hits
