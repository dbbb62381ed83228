"""How a wall-clock worker's recorder travels to the controller (issue 27: the merged
results equal the virtual clock's): times and message numbers packed compactly into its
JSON part, and the test that a trace's points are already among another part's."""
from __future__ import annotations

import base64
import zlib
from array import array
from typing import Any

import numpy as np

from .latency import Times

__all__ = ["pack_times", "unpack_times", "contains_points"]


def pack_times(a: Times) -> str:
    """An array("q") of times or message numbers for a worker's JSON part: its
    differences (small: the values mostly grow) as little-endian int64, zlib, base64."""
    d = np.diff(np.asarray(a, dtype=np.int64), prepend=np.int64(0)).astype("<i8")
    return base64.b64encode(zlib.compress(d.tobytes(), 6)).decode("ascii")


def unpack_times(text: str) -> Times:
    """The array("q") :func:`pack_times` packed."""
    d = np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype="<i8")
    return array("q", np.cumsum(d, dtype=np.int64).tobytes())


def contains_points(big: list[tuple[int, Any]], small: list[tuple[int, Any]]) -> bool:
    """Whether every point of *small* is in *big* (as many times)."""
    pool: dict[tuple[int, Any], int] = {}
    for p in big:
        pool[p] = pool.get(p, 0) + 1
    for p in small:
        if not pool.get(p):
            return False
        pool[p] -= 1
    return True
