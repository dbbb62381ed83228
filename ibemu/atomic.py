"""Atomic file writes (issue 8 item 8: a killed run never leaves a half-written
results.json, series or capture).

:func:`atomic_open` writes to a hidden temporary file next to the target and renames it
over the target only once everything is written and flushed to disk (``os.replace`` is
atomic on POSIX and Windows).  A run killed meanwhile leaves the old file (or none) and
at worst a stray ``.<name>.<pid>.tmp``; an exception removes the temporary file.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path


def temp_path(path) -> Path:
    path = Path(path)
    return path.with_name(".%s.%d.tmp" % (path.name, os.getpid()))


def commit(tmp, path, fh=None) -> None:
    """Flush *fh* (when given) to disk and rename *tmp* over *path*."""
    if fh is not None:
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@contextmanager
def atomic_open(path, mode: str = "w", **kwargs):
    """``open`` for writing, committed atomically when the block ends without error."""
    tmp = temp_path(path)
    try:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path, text: str, encoding: str = "utf-8") -> None:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
