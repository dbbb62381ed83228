"""No product file over 400 lines (issue 30 Deliver 5 and its acceptance: "No product file
over 400 lines"; the project's rule of one concept per file).  Product files are the
``.py`` files under ibemu/ and layers/ (ibemu/layers is a link to layers/; tests and
benchmarks are not product).  A file over the limit is split along its jobs, not
allowed here.

ALLOWED is empty: the last two files over the limit (ibemu/results/metrics.py and
ibemu/fabric/switch.py) were split for issue 28.  Should a file ever need a stay,
:func:`test_the_allow_list_holds_only_files_still_over_the_limit` fails as soon as it is
400 lines or fewer, so that its entry is removed.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 400
PRODUCT = ("ibemu", "layers")
ALLOWED: set[str] = set()


def product_files(root: Path) -> list[str]:
    """The product's ``.py`` files under *root*, as paths relative to it, each file once:
    a folder that is a symbolic link (ibemu/layers -> layers, ibemu/scenarios) is not
    walked, its target is (layers/) or is no product (scenarios/, TOML files)."""
    out = []
    for top in PRODUCT:
        for folder, dirs, names in os.walk(root / top):        # os.walk does not follow links to folders
            dirs.sort()
            out += [(Path(folder) / n).relative_to(root).as_posix() for n in sorted(names) if n.endswith(".py")]
    return out


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(root: Path) -> dict[str, int]:
    """Every product file over :data:`LIMIT` lines, with its line count."""
    counts = {f: line_count(root / f) for f in product_files(root)}
    return {f: n for f, n in counts.items() if n > LIMIT}


def test_no_product_file_is_over_400_lines():
    over = {f: n for f, n in oversized(ROOT).items() if f not in ALLOWED}
    assert not over, "over %d lines (split each along its jobs):\n%s" % (
        LIMIT, "\n".join("  %s: %d lines" % (f, n) for f, n in sorted(over.items(), key=lambda kv: -kv[1])))


def test_the_allow_list_holds_only_files_still_over_the_limit():
    over = oversized(ROOT)
    stale = sorted(f for f in ALLOWED if f not in over)
    assert not stale, "no longer over %d lines (or gone): remove from ALLOWED in %s: %s" % (
        LIMIT, Path(__file__).name, ", ".join(stale))


def test_the_scan_sees_the_product_and_flags_a_long_file(tmp_path):
    """The check can fail: the scan finds the package's own files (layers/ included, once),
    and on a small tree it flags a file of 401 lines but not one of exactly 400."""
    files = product_files(ROOT)
    assert "ibemu/__init__.py" in files and "layers/ib.py" in files
    assert not any(f.startswith("ibemu/layers/") for f in files)          # the link is not walked twice
    assert not any(f.startswith(("tests/", "benchmarks/")) for f in files)
    pkg = tmp_path / "ibemu"
    pkg.mkdir()
    (pkg / "long.py").write_text("x = 1\n" * (LIMIT + 1))
    (pkg / "exact.py").write_text("x = 1\n" * LIMIT)
    assert oversized(tmp_path) == {"ibemu/long.py": LIMIT + 1}
