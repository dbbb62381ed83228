"""The packet layout lives in ibemu/wire/ only (issue 12, deliverable 5).

Product code outside ``ibemu/wire/`` reads and writes frame fields through the accessors
of :mod:`ibemu.wire.codec` (and :mod:`ibemu.wire.linkpkt`, :mod:`ibemu.wire.mad`), with
sizes and offsets from :mod:`ibemu.wire.layout`.  This test walks the AST of every module
of ``ibemu/`` outside ``ibemu/wire/`` and reports each place that indexes a frame by a
literal offset:

- a subscript ``X[...]`` whose index or slice contains an integer literal anywhere
  (``frame[8]``, ``frame[28:36]``, ``f[:-2]``, ``frame[off + 1]``,
  ``frame[12 if lnh == 2 else 52]``), where ``X`` is
  - a name or attribute that names a frame: ``frame``, ``pkt``, ``packet``, ``reply``,
    ``buf``, ``raw``, ``mad``, ``datagram``, ``ack``, ``cnp`` (``e.frame`` too);
  - one of the short names ``f``, ``p``, ``b``, ``data`` -- only in a module that
    imports ``ibemu.wire`` (elsewhere they are dict rows, flow names ...);
  - ``memoryview(...)``, ``bytes(...)`` or ``bytearray(...)`` of such a name;
- a call ``*.unpack_from(fmt, X, <int literal>)`` / ``*.pack_into(fmt, X, <int literal>, ...)``
  with such an ``X`` (``Struct.unpack_from(X, <int literal>)`` too), but for offset 0: a
  struct read from the start of a buffer carries its layout in the struct.

Literals inside a call in the index (``f[rng.randrange(2)]``) and shift counts
(``frame[bit >> 3]``, a bit position) do not count.

Subscripts by string keys (``data["completed"]``) and by computed or named offsets
(``buf[SHIM_LEN:n]``) are not reported.  There are no exceptions: a field the accessors
lack gets one in ibemu/wire/ (raw writes for the fuzzers: :mod:`ibemu.wire.mutate`; the
UDP shim: :mod:`ibemu.wire.shim`).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "ibemu"
FRAME_NAMES = frozenset({"frame", "pkt", "packet", "reply", "buf", "raw", "mad", "datagram",
                         "ack", "cnp"})
SHORT_NAMES = frozenset({"f", "p", "b", "data"})
WRAPPERS = frozenset({"memoryview", "bytes", "bytearray"})


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in WRAPPERS \
            and node.args:
        return _name(node.args[0])
    return None


def _has_int_literal(node: ast.AST) -> bool:
    """An integer literal in *node*, other than inside a call (``rng.randrange(2)``) or as
    a shift count (``bit >> 3``)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Call):
        return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.RShift)):
        return _has_int_literal(node.left)
    return any(_has_int_literal(child) for child in ast.iter_child_nodes(node))


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def _imports_wire(tree: ast.Module) -> bool:
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and \
                (n.module == "wire" or n.module.startswith("wire.") or ".wire" in "." + n.module
                 or n.module.startswith("ibemu.wire")):
            return True
        if isinstance(n, ast.ImportFrom) and n.level and n.module is None and \
                any(a.name == "wire" for a in n.names):
            return True
        if isinstance(n, ast.Import) and any(a.name.startswith("ibemu.wire") for a in n.names):
            return True
    return False


def findings(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: text`` of every literal-offset frame access in *path*."""
    src = path.read_text()
    tree = ast.parse(src, str(path))
    names = FRAME_NAMES | (SHORT_NAMES if _imports_wire(tree) else frozenset())
    out = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Subscript):
            hit = _name(node.value) in names and _has_int_literal(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("unpack_from", "pack_into"):
            args = node.args        # (fmt, buffer, offset) or, on a Struct, (buffer, offset)
            hit = any(_name(a) in names and _has_int_literal(o) and not _is_zero(o)
                      for a, o in zip(args, args[1:]))
        if hit:
            out.append("%s:%d: %s" % (path.relative_to(root).as_posix(), node.lineno,
                                      ast.get_source_segment(src, node)))
    return out


def _product_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "wire" not in p.relative_to(ROOT).parts[:1])


def test_no_literal_frame_offsets_outside_wire():
    files = _product_files()
    assert ROOT / "fuzz.py" in files and not any(p.parent == ROOT / "wire" for p in files)
    bad = [hit for path in files for hit in findings(path)]
    assert not bad, "frame fields by literal offset (use ibemu.wire.codec accessors):\n" + "\n".join(bad)


def test_the_lint_catches_the_patterns():
    """The rule finds what it is meant to find, and not string keys or named offsets."""
    import tempfile
    src = '''
from ibemu.wire.codec import get_dlid
def g(frame, e, f, buf, rows, off):
    a = frame[8]; b = frame[28:36]; c = e.frame[12 if frame[1] & 3 == 2 else 52]
    d = f[:-2]; x = frame[off + 1]; y = memoryview(frame)[8:off]
    z = S.unpack_from(buf, 4); w = struct.unpack_from(">Q", buf, 8)
    ok = rows[0], buf[off:off], frame[OFF], f["name"], get_dlid(frame), frame[bit >> 3]
    ok2 = S.unpack_from(buf, 0), frame[rng.randrange(n)]
'''
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sample.py"
        path.write_text(src)
        found = findings(path, Path(tmp))
    # frame[8], frame[28:36], e.frame[...], its frame[1], f[:-2], frame[off + 1],
    # memoryview(frame)[8:off], S.unpack_from(buf, 4), struct.unpack_from(">Q", buf, 8)
    assert len(found) == 9, found
