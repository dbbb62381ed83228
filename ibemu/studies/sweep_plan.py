"""The points of a sweep (issue 17 Deliver 1): ``--grid`` and ``--zip`` values read
as ``--set`` reads them, and :func:`plan`, which turns the grids (product), the zipped
keys (one dimension, varied together) and the seeds into :class:`Point` s, each one run
of :func:`ibemu.studies.sweep.run_sweep`."""
from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from ..errors import UserError

SEED_KEY = "scenario.seed"

Row = dict[str, Any]
"""A point's row: its swept values, seed, status and metrics (sweep.csv's columns)."""


# ---------------------------------------------------------------- the points
def parse_values(text: str) -> list[str]:
    """``"1,2,{a=1, b=2}"`` -> ``["1", "2", "{a=1, b=2}"]``: values split at the commas
    outside brackets, braces and quotes (a value is TOML, as for ``--set``)."""
    values: list[str] = []
    depth, quote, cur = 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            values.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    values.append("".join(cur).strip())
    if quote or depth:
        raise UserError("cannot read the values %r: an unclosed quote or bracket" % text)
    if any(not v for v in values):
        raise UserError("an empty value in %r (values are separated by commas)" % text)
    return values


def _key_values(option: str, text: str) -> tuple[str, list[str]]:
    key, sep, vals = text.partition("=")
    key = key.strip()
    if not sep or not key or not vals.strip():
        raise UserError("%s %s: expected KEY=V1,V2,... e.g. %s template.L=2,5" % (option, text, option))
    return key, parse_values(vals)


def toml_value(text: str) -> Any:
    """A swept value as the scenario reads it (a TOML value, else the text)."""
    try:
        parsed = tomllib.loads("v = " + text)
    except tomllib.TOMLDecodeError:
        return text
    return parsed["v"] if list(parsed) == ["v"] else text


@dataclass(frozen=True)
class Point:
    """One run of the sweep: the swept (key, value text) pairs in the order of the
    options, and the seed (``scenario.seed``)."""
    keys: tuple[tuple[str, str], ...]
    seed: int

    def overrides(self) -> list[str]:
        """The ``--set`` strings of this point, the seed last."""
        return ["%s=%s" % kv for kv in self.keys] + ["%s=%d" % (SEED_KEY, self.seed)]

    def label(self) -> str:
        """``template.L=2 template.R=5 seed=1``: the point in messages."""
        return " ".join(["%s=%s" % kv for kv in self.keys] + ["seed=%d" % self.seed])

    def folder(self) -> str:
        """The point's run folder name: its values readable, then a hash of its exact
        overrides (two points never share a folder)."""
        short = ",".join("%s=%s" % (k.rsplit(".", 1)[-1], v.strip("\"'")) for k, v in self.keys) or "base"
        short = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", short)[:80]
        digest = hashlib.sha256("\n".join(self.overrides()).encode()).hexdigest()[:8]
        return "%s,seed=%d-%s" % (short, self.seed, digest)


def plan(grids: Sequence[str], zips: Sequence[str] = (), seeds: int = 1, base_seed: int = 1) -> list[Point]:
    """The points of ``--grid KEY=V1,V2 ...`` (their product), ``--zip KEY=V1,V2 ...``
    (all zipped keys one dimension: their i-th values together) and *seeds* seeds from
    *base_seed* on, in a stable order (the first grid varies slowest, the seed fastest)."""
    if seeds < 1:
        raise UserError("--seeds must be at least 1, got %d" % seeds)
    dims: list[list[tuple[tuple[str, str], ...]]] = []
    seen: set[str] = set()

    def claim(option: str, key: str) -> None:
        if key in seen:
            raise UserError("%s %s: the key is swept twice" % (option, key))
        if key == SEED_KEY:
            raise UserError("%s %s: give the seeds with --seeds N" % (option, key))
        seen.add(key)

    for g in grids:
        key, vals = _key_values("--grid", g)
        claim("--grid", key)
        dims.append([((key, v),) for v in vals])
    if zips:
        zipped = [_key_values("--zip", z) for z in zips]
        n = len(zipped[0][1])
        for key, vals in zipped:
            claim("--zip", key)
            if len(vals) != n:
                raise UserError("--zip %s has %d values, %s has %d: zipped keys need as many"
                                % (key, len(vals), zipped[0][0], n))
        dims.append([tuple((key, vals[i]) for key, vals in zipped) for i in range(n)])
    points = []
    for combo in product(*dims):
        keys = tuple(kv for part in combo for kv in part)
        points.extend(Point(keys, base_seed + s) for s in range(seeds))
    return points
