"""Atomic file writes (issue 8 item 8: a killed run never leaves a half-written
results.json, series or capture).

:func:`atomic_open` writes to a hidden temporary file next to the target and renames it
over the target only once everything is written and flushed to disk (``os.replace`` is
atomic on POSIX and Windows).  A run killed meanwhile leaves the old file (or none) and
at worst a stray ``.<name>.<pid>.tmp``; an exception removes the temporary file.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

StrPath = str | os.PathLike[str]


def temp_path(path: StrPath) -> Path:
    path = Path(path)
    return path.with_name(".%s.%d.tmp" % (path.name, os.getpid()))


def commit(tmp: StrPath, path: StrPath, fh: IO[str] | IO[bytes] | None = None) -> None:
    """Flush *fh* (when given) to disk and rename *tmp* over *path*."""
    if fh is not None:
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@overload
def atomic_open(path: StrPath, mode: Literal["w", "x"] = "w", *, encoding: str | None = None,
                errors: str | None = None, newline: str | None = None) -> AbstractContextManager[TextIO]: ...
@overload
def atomic_open(path: StrPath, mode: Literal["wb", "xb"]) -> AbstractContextManager[BinaryIO]: ...


def atomic_open(path: StrPath, mode: str = "w", **kwargs: Any) -> AbstractContextManager[IO[Any]]:
    """``open`` for writing, committed atomically when the block ends without error."""
    return _atomic_open(path, mode, **kwargs)


@contextmanager
def _atomic_open(path: StrPath, mode: str, **kwargs: Any) -> Iterator[IO[Any]]:
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


def atomic_write_text(path: StrPath, text: str, encoding: str = "utf-8") -> None:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
