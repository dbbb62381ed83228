"""``--set key.path=value`` overrides of a scenario, applied to its raw TOML before
templates are expanded and sections validated.
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from typing import Any

from ..validate import Checker, ScenarioError, join

__all__ = ["apply_overrides", "run_overrides"]

_OVR_PART = re.compile(r"([A-Za-z0-9_\-]+)((?:\[[0-9]+\])*)")       # ASCII digits only


def apply_overrides(raw: dict[str, Any], overrides: Iterable[str], label: str = "<overrides>",
                    checker: Checker | None = None) -> dict[str, Any]:
    """Apply "key.path=value" strings to a raw TOML dict in place (value read as a TOML
    value, else taken as a string); ``flow[2].window=1`` indexes arrays of tables.
    *checker* (default: a new one for *label*) records what each override set, so that
    a later error at that key names the ``--set`` that wrote it."""
    ctx = checker or Checker(label)
    for text in overrides:
        key, sep, val = str(text).partition("=")
        key = key.strip()

        def bad(reason: str, text: str = text) -> ScenarioError:
            return ScenarioError(ctx.label, "--set %s" % text, reason)

        if not sep or not key:
            raise bad("expected key.path=value, e.g. template.L=10")
        tokens: list[str | int] = []
        for part in key.split("."):
            m = _OVR_PART.fullmatch(part)
            if not m:
                raise bad("cannot read key path %r (expected e.g. scenario.duration or flow[0].window)" % key)
            tokens.append(m[1])
            tokens.extend(int(i) for i in re.findall(r"[0-9]+", m[2]))
        try:
            parsed = tomllib.loads("v = " + val)
            value = parsed["v"] if list(parsed) == ["v"] else val.strip()
        except tomllib.TOMLDecodeError:
            value = val.strip()
        node: Any = raw
        path = ""
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1
            if isinstance(node, list):
                if isinstance(tok, str) and tok.isascii() and tok.isdigit():
                    tok = int(tok)
                if not isinstance(tok, int):
                    raise bad("%s is an array; index it as %s[0]" % (path, path))
                if tok >= len(node):
                    raise bad("%s has %d entries, no [%d]" % (path, len(node), tok))
            elif isinstance(node, dict):
                if isinstance(tok, int):
                    raise bad("%s is not an array" % (path or "the top level"))
                if not last and tok not in node:
                    node[tok] = {}
            else:
                raise bad("%s is a value, not a table" % path)
            path = join(path, tok)
            if last:
                node[tok] = value
            else:
                node = node[tok]
        ctx.overridden.append((path, text))
    return raw


def run_overrides(sets: Iterable[str] | None, seed: int | None, duration: str | None) -> list[str]:
    """The overrides of a command that runs a scenario: its ``--set`` strings, then
    ``--seed`` and ``--duration`` as the scenario keys they stand for."""
    out = list(sets or [])
    if seed is not None:
        out.append("scenario.seed=%d" % seed)
    if duration is not None:
        out.append('scenario.duration="%s"' % duration)
    return out
