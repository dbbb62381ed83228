"""Figures drawn in a forked child while the caller goes on (issue 28: a study's figures
of one case, about 1.1 s at 648 hosts, drawn on the other core while the next case runs
or the study's own figure is drawn).

:meth:`Drawer.draw` forks a child that calls ``fn(*args)`` and ends, 0 on success; the
caller goes on at once.  :meth:`Drawer.join` waits for every child, and draws again in
the caller's process each figure whose child failed (one line on stderr saying so), so an
error -- an unwritable path included -- is raised there as it would have been without the
child.  Forking follows :mod:`.plot_worker`'s rules: not with other threads running (then
every figure is drawn in the caller's process); the child only draws and writes files.

``IBEMU_PLOT_WORKER=0`` draws every figure in the caller's process.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from .plot_worker import ENV, other_threads


def _child(fn: Callable[..., None], args: tuple[Any, ...]) -> None:
    """Draw, and end 0; on any failure end 1 without a word (the caller draws it again,
    and reports the error there)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the caller ends it (join / close)
    try:
        fn(*args)
    except BaseException:
        os._exit(1)


class Drawer:
    """The figures being drawn by children (:meth:`draw`), until :meth:`join`."""

    def __init__(self) -> None:
        self.pending: list[tuple[Any, Callable[..., None], tuple[Any, ...]]] = []

    def draw(self, fn: Callable[..., None], *args: Any) -> None:
        """``fn(*args)`` in a forked child; in this process when no child can be forked."""
        if os.environ.get(ENV, "1").strip() == "0" or other_threads():
            fn(*args)
            return
        try:
            process = multiprocessing.get_context("fork").Process(target=_child, args=(fn, args),
                                                                  name="ibemu-draw", daemon=True)
            process.start()
        except (OSError, ValueError):
            fn(*args)
            return
        self.pending.append((process, fn, args))

    def join(self) -> None:
        """Wait for every child; draw here what a failed child did not.  Interrupted, or
        a figure's error raised here: the children not yet joined stay for :meth:`close`."""
        while self.pending:
            process, fn, args = self.pending[0]
            process.join()
            del self.pending[0]
            if process.exitcode != 0:
                print("ibemu: figure drawer: %s ended with exit code %s; drawing it in this process"
                      % (getattr(fn, "__name__", "a figure"), process.exitcode), file=sys.stderr)
                fn(*args)

    def close(self) -> None:
        """End every child still drawing (on an error or an interrupt)."""
        pending, self.pending = self.pending, []
        for process, _, _ in pending:
            if process.is_alive():
                process.terminate()
            process.join()
