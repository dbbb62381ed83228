"""Atomic file writes (issue 8 item 8: a killed run never leaves a half-written
results.json, series or capture) and output paths that fail in one line (issue 14 item 6).

:func:`atomic_open` writes to a hidden temporary file next to the target and renames it
over the target only once everything is written and flushed to disk (``os.replace`` is
atomic on POSIX and Windows).  A run killed meanwhile leaves the old file (or none) and
at worst a stray ``.<name>.<pid>.tmp``; an exception removes the temporary file.

Inside :func:`atomic_batch` the renames wait for the end of the block: a run's output
folder and capture are committed together, or -- on any error, a full disk included --
not at all, every temporary file removed and the earlier results left as they were.

Every operating-system error on the way is raised as :class:`~ibemu.errors.OutputError`,
one line naming the path and the system's reason (``strerror``); :func:`prepare_dir` and
:func:`prepare_file` create missing parent folders and check an output path before a
run starts, so that a wrong ``--out`` or ``--pcap`` fails at once, not after the run.
"""
from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from .errors import OutputError

StrPath = str | os.PathLike[str]

_batch: ContextVar[list[tuple[Path, Path]] | None] = ContextVar("ibemu_atomic_batch", default=None)
"""The renames :func:`atomic_batch` holds back: (temporary file, target)."""


def temp_path(path: StrPath) -> Path:
    path = Path(path)
    return path.with_name(".%s.%d.tmp" % (path.name, os.getpid()))


def discard(tmp: StrPath) -> None:
    """Remove a temporary file if it is there (quietly: this runs on an error path)."""
    try:
        os.unlink(tmp)
    except OSError:
        pass


def replace(tmp: StrPath, path: StrPath) -> None:
    """Rename *tmp* over *path* now, or at the end of the :func:`atomic_batch` running.

    A failed rename removes *tmp* and raises :class:`OutputError` naming *path*."""
    pending = _batch.get()
    if pending is not None:
        pending.append((Path(tmp), Path(path)))
        return
    try:
        os.replace(tmp, path)
    except OSError as e:
        discard(tmp)
        raise OutputError.from_os(path, e) from None


def commit(tmp: StrPath, path: StrPath, fh: IO[str] | IO[bytes] | None = None) -> None:
    """Flush *fh* (when given) to disk and rename *tmp* over *path* (:func:`replace`)."""
    if fh is not None:
        try:
            fh.flush()
            os.fsync(fh.fileno())
        except OSError as e:
            discard(tmp)
            raise OutputError.from_os(path, e) from None
    replace(tmp, path)


@contextmanager
def atomic_batch() -> Iterator[None]:
    """Hold back the renames of :func:`atomic_open` (and :func:`replace`) until the block
    ends, then do them all; on an exception remove every temporary file instead, so the
    targets keep their earlier contents.  A batch inside a batch joins the outer one.

    Before renaming, every target is checked: a directory where a file is to go fails
    the whole batch (``Is a directory``) with nothing renamed."""
    if _batch.get() is not None:
        yield
        return
    pending: list[tuple[Path, Path]] = []
    token = _batch.set(pending)
    try:
        yield
    except BaseException:
        _batch.reset(token)
        for tmp, _ in pending:
            discard(tmp)
        raise
    _batch.reset(token)
    try:
        for _tmp, path in pending:
            if path.is_dir():
                raise OutputError.from_errno(path, errno.EISDIR)
        while pending:
            tmp, path = pending[0]
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise OutputError.from_os(path, e) from None
            pending.pop(0)
    finally:
        for tmp, _ in pending:
            discard(tmp)


@overload
def atomic_open(path: StrPath, mode: Literal["w", "x"] = "w", *, encoding: str | None = None,
                errors: str | None = None, newline: str | None = None) -> AbstractContextManager[TextIO]: ...
@overload
def atomic_open(path: StrPath, mode: Literal["wb", "xb"]) -> AbstractContextManager[BinaryIO]: ...


def atomic_open(path: StrPath, mode: str = "w", **kwargs: Any) -> AbstractContextManager[IO[Any]]:
    """``open`` for writing, committed atomically when the block ends without error.

    An operating-system error while opening, writing, flushing or renaming is raised as
    :class:`OutputError` naming *path*; the temporary file is removed."""
    return _atomic_open(path, mode, **kwargs)


@contextmanager
def _atomic_open(path: StrPath, mode: str, **kwargs: Any) -> Iterator[IO[Any]]:
    tmp = temp_path(path)
    try:
        with open(tmp, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        discard(tmp)
        raise OutputError.from_os(path, e) from None
    except BaseException:
        discard(tmp)
        raise
    replace(tmp, path)


def atomic_write_text(path: StrPath, text: str, encoding: str = "utf-8") -> None:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)


def prepare_dir(path: StrPath, option: str | None = None) -> Path:
    """Make the output folder *path* and its missing parents; check it takes files.

    Raises :class:`OutputError` (naming *option* when given, e.g. ``--out``) for a file in
    the way (``Not a directory``), a read-only file system, a folder without permission,
    or anything else the system refuses -- found by creating and removing a probe file."""
    p = Path(path)
    what = "%s %s" % (option, os.fspath(path)) if option else os.fspath(path)
    if p.exists() and not p.is_dir():
        raise OutputError(what, os.strerror(errno.ENOTDIR), "cannot write to")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(what, os.strerror(errno.ENOTDIR), "cannot write to") from None
    except OSError as e:
        raise OutputError.from_os(what, e, "cannot create") from None
    probe = p / (".ibemu-probe.%d.tmp" % os.getpid())
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise OutputError.from_os(what, e, "cannot write to") from None
    os.close(fd)
    discard(probe)
    return p


def prepare_file(path: StrPath, option: str | None = None) -> Path:
    """Make the missing parent folders of the output file *path* and check it can be
    written there (:func:`prepare_dir`); a directory at *path* is ``Is a directory``."""
    p = Path(path)
    what = "%s %s" % (option, os.fspath(path)) if option else os.fspath(path)
    if p.is_dir():
        raise OutputError(what, os.strerror(errno.EISDIR), "cannot write")
    parent = p.parent
    if parent.exists() and not parent.is_dir():
        raise OutputError(what, os.strerror(errno.ENOTDIR), "cannot write")
    try:
        prepare_dir(parent)
    except OutputError as e:
        raise OutputError(what, e.reason, "cannot write") from None
    return p


def prepare_outputs(out_dir: StrPath | None, pcap: StrPath | None) -> None:
    """Before a run: the ``--out`` folder and the ``--pcap`` file's folder exist (missing
    parents created) and take files; otherwise one :class:`OutputError`."""
    if out_dir is not None:
        prepare_dir(out_dir, "--out")
    if pcap:
        prepare_file(pcap, "--pcap")
