"""The scenario checker: what every section of a scenario, and every congestion-control
scheme's schema, uses to read a TOML table and report a mistake as one line.

A :class:`Checker` carries the file label and the ``--set`` overrides applied so far;
``checker.err(path, reason)`` makes the :class:`ScenarioError` ``<file>: <key.path>:
<reason>`` (with `` (from --set k=v)`` when an override wrote that key).  The functions
check one value each and return it: :func:`table` (known and required keys),
:func:`tables` (an array of tables), :func:`string`, :func:`integer`, :func:`boolean`,
:func:`identifier` (a node or link name), :func:`name` (a flow, group or scenario
name); :func:`finite_values` checks every number of a raw scenario; :func:`suggest`, :func:`known` and
:func:`unknown_node` word the "did you mean" hints.

Bottom layer: imports only :mod:`ibemu.errors` and :mod:`ibemu.units`.
"""
from __future__ import annotations

import argparse
import difflib
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from .errors import UserError
from .units import describe

__all__ = ["ScenarioError", "cli_number", "Checker", "AnyKeys", "describe", "join", "suggest", "known", "unknown_node",
           "table", "tables", "string", "integer", "boolean", "identifier", "name", "finite_values", "merged"]

T = TypeVar("T")


class ScenarioError(UserError):
    """A mistake in a scenario; ``str()`` is the whole line ``file: key.path: reason``."""

    def __init__(self, file: str, key: str | None, reason: str):
        self.file, self.key, self.reason = file, key, reason
        super().__init__(": ".join(x for x in (file, key, reason) if x))


def join(path: str, key: str | int) -> str:
    """The key path of *key* inside *path*: ``link[2]``, ``cc.hca``, or *key* at the top."""
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    return "%s.%s" % (path, key) if path else str(key)


class Checker:
    """The file being read (*label*) and the overrides applied to it."""

    def __init__(self, label: str):
        self.label = label
        self.overridden: list[tuple[str, str]] = []   # (key path, override text)

    def err(self, path: str | None, reason: str) -> ScenarioError:
        """The error for key *path*, naming the ``--set`` that wrote it, if one did."""
        for p, text in self.overridden:
            if path and (path == p or path.startswith(p + ".") or path.startswith(p + "[")):
                reason += " (from --set %s)" % text
                break
        return ScenarioError(self.label, path, reason)

    def by_set(self, path: str) -> bool:
        """Whether an override set this key (or a table holding it)."""
        return any(path == p or path.startswith(p + ".") for p, _ in self.overridden)

    def conv(self, path: str, fn: Callable[..., T], v: Any, *args: Any) -> T:
        """``fn(v, *args)``, its ValueError turned into the error at *path*."""
        try:
            return fn(v, *args)
        except ValueError as e:
            raise self.err(path, str(e)) from None


class AnyKeys:
    """``allowed`` for :func:`table` when every key is allowed (names chosen by the user)."""

    def __contains__(self, k: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())


def suggest(key: str, allowed: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a close match, else `` (expected one of: ...)``."""
    allowed = list(allowed)
    low = {a.lower(): a for a in allowed}
    close = ([low[key.lower()]] if key.lower() in low else
             difflib.get_close_matches(key, allowed, n=1, cutoff=0.6))
    if close:
        return " (did you mean %r?)" % close[0]
    return " (expected one of: %s)" % ", ".join(allowed)


def known(names: Iterable[object], limit: int = 8) -> str:
    """The first *limit* names, comma-separated, with ", ..." when there are more."""
    texts = [str(n) for n in names]
    return ", ".join(texts[:limit]) + (", ..." if len(texts) > limit else "")


def unknown_node(node: str, nodes: Mapping[str, str]) -> str:
    """The reason for a name that is no node of *nodes* (name -> "switch" | "hca")."""
    close = difflib.get_close_matches(node, list(nodes), n=1, cutoff=0.6)
    if close:
        return "unknown node %r (did you mean %r?)" % (node, close[0])
    ordered = sorted(nodes, key=lambda n: nodes[n] != "switch")    # switches first
    return "unknown node %r (known: %s)" % (node, known(ordered))


def table(ctx: Checker, path: str, v: Any, allowed: Collection[str] | AnyKeys,
          required: Iterable[str] = ()) -> dict[str, Any]:
    """*v* as a table whose keys are all in *allowed* and include every *required* one."""
    if not isinstance(v, dict):
        raise ctx.err(path, "expected a table, got %s" % describe(v))
    for k in v:
        if k not in allowed:
            raise ctx.err(join(path, k), "unknown key" + suggest(k, allowed))
    for k in required:
        if k not in v:
            raise ctx.err(join(path, k), "missing")
    return v


def tables(ctx: Checker, path: str, v: Any) -> list[dict[str, Any]]:
    """*v* as an array of tables (``[[path]]`` entries)."""
    if not isinstance(v, list) or not all(isinstance(t, dict) for t in v):
        raise ctx.err(path, "expected an array of tables ([[%s]] entries), got %s" % (path, describe(v)))
    return v


def string(ctx: Checker, path: str, v: Any, choices: Iterable[str] | None = None) -> str:
    """*v* as a string, one of *choices* when given."""
    if not isinstance(v, str):
        raise ctx.err(path, "expected a string, got %s" % describe(v))
    if choices is not None and v not in choices:
        raise ctx.err(path, "unknown value %r (expected %s)" % (v, " or ".join(repr(c) for c in choices)))
    return v


def integer(ctx: Checker, path: str, v: Any, lo: int | None = None, hi: int | None = None) -> int:
    """*v* as an integer (not a boolean) in [*lo*, *hi*]."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ctx.err(path, "expected an integer, got %s" % describe(v))
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if lo is not None and hi is not None:
            rng = "between %d and %d" % (lo, hi)
        elif lo is not None:
            rng = "at least %d" % lo
        else:
            assert hi is not None
            rng = "at most %d" % hi
        raise ctx.err(path, "must be %s, got %d" % (rng, v))
    return v


def boolean(ctx: Checker, path: str, v: Any) -> bool:
    """*v* as true or false."""
    if not isinstance(v, bool):
        raise ctx.err(path, "expected true or false, got %s" % describe(v))
    return v


# ASCII letters and digits only (re.ASCII: \w and \d would take any script's), matched
# to the end of the string (fullmatch: "$" also matches before a final newline).
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", re.ASCII)
MAX_NAME = 128


def identifier(ctx: Checker, path: str, v: Any) -> str:
    """*v* as a node or link name: ASCII letters, digits, '_', '-', '.' (no ':' or spaces,
    no '..'), at most MAX_NAME characters."""
    s = string(ctx, path, v)
    if not _NAME_RE.fullmatch(s) or ".." in s or len(s) > MAX_NAME:
        raise ctx.err(path, "bad name %r (up to %d letters, digits, '_', '-', '.'; no ':', spaces or '..')"
                      % (s, MAX_NAME))
    return s


def name(ctx: Checker, path: str, v: Any) -> str:
    """*v* as a flow, group or scenario name (issue 14 Deliver 5): printable characters
    (spaces inside allowed), no control or format characters (newlines, NUL, ANSI escapes,
    bidirectional overrides), no path separators, no '..', not only dots, no leading or
    trailing space, at most MAX_NAME characters: such a name is safe on a terminal, in a
    CSV header and as a folder name under runs/."""
    s = string(ctx, path, v)
    if not s.strip():
        raise ctx.err(path, "must not be empty")
    if len(s) > MAX_NAME:
        raise ctx.err(path, "longer than %d characters" % MAX_NAME)
    if not s.isprintable():
        bad = next(c for c in s if not c.isprintable())
        raise ctx.err(path, "bad name %r: control character %r (printable characters only)"
                      % (s, bad))
    if "/" in s or "\\" in s:
        raise ctx.err(path, "bad name %r: no path separators ('/' or '\\')" % s)
    if ".." in s or s.startswith("."):
        raise ctx.err(path, "bad name %r: must not start with '.' or contain '..'" % s)
    if s != s.strip():
        raise ctx.err(path, "bad name %r: no leading or trailing spaces" % s)
    return s


INT64 = (-(2**63), 2**63 - 1)


def finite_values(ctx: Checker, v: Any, path: str = "") -> None:
    """Every float in the raw scenario *v* is finite and every integer fits 64 bits (as
    TOML requires), or the error names its key (issue 14 Deliver 4: no inf or nan reaches
    arithmetic, no OverflowError)."""
    if isinstance(v, dict):
        for k, x in v.items():
            finite_values(ctx, x, join(path, k))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            finite_values(ctx, x, join(path, i))
    elif isinstance(v, float) and not math.isfinite(v):
        raise ctx.err(path or None, "must be a finite number, got %r" % v)
    elif isinstance(v, int) and not isinstance(v, bool) and not INT64[0] <= v <= INT64[1]:
        raise ctx.err(path or None, "integer out of the 64-bit range (TOML integers are 64-bit)")


def merged(entry: Mapping[str, Any], epath: str, defaults: Mapping[str, Any], dpath: str,
           keys: Iterable[str]) -> dict[str, tuple[Any, str]]:
    """``{key: (value, key path)}`` for each of *keys* that the entry at *epath* sets,
    else that its defaults table at *dpath* sets (an entry's key overrides a default)."""
    out = {}
    for k in keys:
        if k in entry:
            out[k] = (entry[k], join(epath, k))
        elif k in defaults:
            out[k] = (defaults[k], join(dpath, k))
    return out


N = TypeVar("N", int, float)


def cli_number(kind: Callable[[str], N], expected: str, check: Callable[[N], str | None]) -> Callable[[str], N]:
    """An argparse ``type=`` for a number on the command line: *kind* reads it (an
    unreadable one: "expected <expected>, got 'x'"), *check* returns why a value is
    refused, or None ("<why>, got 'x'"); argparse prints either as one line."""
    def convert(text: str) -> N:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("expected %s, got %r" % (expected, text)) from None
        why = check(v)
        if why:
            raise argparse.ArgumentTypeError("%s, got %r" % (why, text))
        return v
    return convert
