"""Errors that reach the user as one clear line, never a traceback: :class:`UserError`
(bad input, exit status 2) and :class:`OutputError` (an output that cannot be written,
exit status 1)."""
from __future__ import annotations

import os


class UserError(Exception):
    """Bad input from the user: a scenario, a capture, an option."""


class OutputError(UserError):
    """An output (``--out`` folder, ``--pcap`` capture, one of their files) could not be
    written (issue 14 item 6): the message names the path and the operating system's
    reason (``strerror``), e.g. ``cannot write runs/x/results.json: No space left on
    device``.  The command exits with status 1."""

    def __init__(self, path: str | os.PathLike[str], reason: str, what: str = "cannot write") -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__("%s %s: %s" % (what, self.path, reason))

    @classmethod
    def from_os(cls, path: str | os.PathLike[str], e: OSError, what: str = "cannot write") -> OutputError:
        """The error for *path* from the operating system's error *e* (its strerror)."""
        reason = e.strerror or (os.strerror(e.errno) if e.errno else str(e))
        return cls(path, reason, what)

    @classmethod
    def from_errno(cls, path: str | os.PathLike[str], errno: int, what: str = "cannot write") -> OutputError:
        """The error for *path* with the operating system's text for *errno*."""
        return cls(path, os.strerror(errno), what)
