"""The plots of ``ibemu run`` drawn in a worker process (issue 28: matplotlib's import,
about 0.55 s, and its drawing, 0.15-0.3 s a figure, ran one after the other after the
event loop).

:meth:`PlotWorker.start` forks the worker once the scenario is read, before the fabric is
built.  The worker imports matplotlib and lays out a first figure (its fonts loaded) while
the run's process builds the fabric and runs the event loop on the other core; then it
waits.  After the run, :func:`~.outputs.write_outputs` sends it a
:class:`~.plot_data.PlotJob` (the time series of flows.csv and links.csv and what the plots
read of the metrics, :class:`~.plot_data.PlotData`, not the metrics themselves), writes the
other files while the worker draws into the folder's hidden temporary plots folder, and
then waits for its answer.  The worker draws the plots in two parts at once
(:data:`~.plot_data.PARTS`): it forks a helper, warm as itself, that draws the second
while it draws the first, so the run's process waits about as long as the longer part
takes, where a 2-core machine has a core free.  The PNGs are those the run's process
would draw: the same code (:func:`~.plot_data.draw`) on the same numbers.

Why ``fork`` (not ``forkserver`` or ``spawn``): the worker starts with the modules already
imported and the scenario in memory, at the cost of a ``fork`` (milliseconds), where a
fresh interpreter would import numpy and ibemu again.  ``fork`` is unsafe when another
thread holds a lock the child then needs.  At the fork, the run's process has one Python
thread, and on a terminal tqdm's monitor, waiting on its own event (:func:`other_threads`;
with any other thread, the plots are drawn in-process).  Its native threads are OpenBLAS's
pool, which numpy's OpenBLAS stops before a fork and starts again after it (its
``pthread_atfork`` handler, ``openblas_fork_handler``).  The child only imports, draws with matplotlib's Agg canvas and
writes files, and prints nothing (its warnings are sent back, and shown by the run's process).
Its own fork of the helper is the same case: one Python thread, and OpenBLAS's pool.

A worker that cannot be started, dies, or fails otherwise than on a file costs one line on
stderr naming what failed, and the plots are drawn in the run's process as before.  An
operating-system error while writing a PNG is raised as the in-process path raises it.
The worker ignores SIGINT (a Ctrl-C reaches the whole process group): the run's process
ends it (:meth:`PlotWorker.close`) on every way out, an interrupt included, and the worker
ends its helper then.  A helper that cannot be forked leaves the worker to draw both parts;
one that dies is a failure of the worker.

``IBEMU_PLOT_WORKER=0`` draws the plots in the run's process (:data:`ENV`).
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..scenario.model import Scenario
from .plot_data import PlotJob, draw

ENV = "IBEMU_PLOT_WORKER"
"""``0``: ``ibemu run`` draws its plots in its own process (no worker)."""

Caught = list[tuple[str, type[Warning], str, int]]
"""Warnings raised while drawing: (message, category, file, line)."""
Answer = tuple[str, Any, Caught]
"""What the worker answers: ``ok`` (None), ``oserror`` (the OSError) or ``error`` (its
text), and the warnings raised."""


def note(text: str) -> None:
    print("ibemu: plot worker: %s; drawing the plots in this process" % text, file=sys.stderr)


def other_threads() -> list[str]:
    """The names of the threads running besides this one and tqdm's monitor (which
    :class:`~.phases.Phases` leaves behind on a terminal: it wakes every 10 s to check
    tqdm's bars, under tqdm's lock, which the worker never takes)."""
    me = threading.current_thread()
    return [t.name for t in threading.enumerate()
            if t is not me and t.is_alive() and type(t).__name__ != "TMonitor"]


def _warm_up() -> None:
    """Import matplotlib's figure and Agg canvas and draw a small figure with text in
    memory, which loads the font list and the default font (cached for the run's figures)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..plot_layout import LOG_TICK, Margins
    fig = Figure(figsize=(2, 2), dpi=110)
    ax = fig.add_subplot()
    ax.plot([0.0, 1.0], [0.0, 1.0])
    ax.set_title("warm-up")
    ax.set_xlabel("time (ms)")
    Margins(fig).width([LOG_TICK])
    canvas: Any = FigureCanvasAgg(fig)
    canvas.draw()


def _serve(conn: Connection, scenario: Scenario) -> None:
    """The worker: warm up, take one job, draw it (:func:`_draw_split`), answer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _warm_up()
        folder, job = conn.recv()
    except EOFError:                # the run's process is gone or gave up: nothing to draw
        return
    except Exception as e:          # told to the run's process, which draws itself
        _answer(conn, ("error", "%s: %s" % (type(e).__name__, e), []))
        return
    _answer(conn, _draw_split(conn, job, scenario, Path(folder)))


def _draw_part(job: PlotJob, scenario: Scenario, folder: Path, part: int | None) -> Answer:
    """Draw *part* of the plots (None: all); the answer: ok / oserror / error, and the
    warnings raised."""
    detail: Any = None
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        try:
            draw(job, scenario, folder, part)
            kind = "ok"
        except OSError as e:
            kind, detail = "oserror", e
        except Exception as e:      # told to the run's process, which draws itself
            kind, detail = "error", "%s: %s" % (type(e).__name__, e)
    return kind, detail, [(str(w.message), w.category, w.filename, w.lineno) for w in log]


def _draw_split(conn: Connection, job: PlotJob, scenario: Scenario, folder: Path) -> Answer:
    """The plots' two parts (:data:`~.plot_data.PARTS`) drawn at once: part 1 by a helper
    forked now (warm: matplotlib imported and its fonts loaded), part 0 here.  The
    answer: the first part's failure if any, else the helper's; the warnings of both, in
    the in-process order.  All drawn here when the helper cannot be forked."""
    reader, writer = multiprocessing.Pipe(duplex=False)
    try:
        pid = os.fork()
    except OSError:
        reader.close()
        writer.close()
        return _draw_part(job, scenario, folder, None)
    if pid == 0:                    # the helper: draws, answers, and ends without Python's exit
        code = 0
        try:
            conn.close()            # the run's process reads the worker's death, not the helper's
            reader.close()
            _answer(writer, _draw_part(job, scenario, folder, 1))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    writer.close()

    def end(signum: int, frame: Any) -> None:       # ended by the run's process: the helper too
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, end)
    first = _draw_part(job, scenario, folder, 0)
    try:
        second: Answer = reader.recv()
    except (EOFError, OSError):
        second = ("error", "its second drawer ended before answering", [])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # before the helper is reaped (its pid free again)
    os.waitpid(pid, 0)
    kind, detail, _ = first if first[0] != "ok" else second
    return kind, detail, first[2] + second[2]


def _answer(conn: Connection, answer: Answer) -> None:
    try:
        conn.send(answer)
    except (OSError, ValueError):   # the run's process is gone
        pass


class PlotWorker:
    """A started worker process (:func:`started`)."""

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.sent = False

    @classmethod
    def start(cls, scenario: Scenario) -> PlotWorker | None:
        """Fork the worker; None (and one line on stderr, unless the switch :data:`ENV`
        is off) when it cannot be."""
        if os.environ.get(ENV, "1").strip() == "0":
            return None
        others = other_threads()
        if others:
            note("forking is unsafe with other threads running (%s)" % ", ".join(others))
            return None
        try:
            ctx = multiprocessing.get_context("fork")
            mine, theirs = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(theirs, scenario), name="ibemu-plots", daemon=True)
            process.start()
        except (OSError, ValueError) as e:
            note("cannot start it (%s)" % e)
            return None
        theirs.close()              # the worker's end: closed here, so its death reads as the end of the pipe
        return cls(process, mine)

    def submit(self, folder: Path, job: PlotJob) -> bool:
        """Send *job* (PNGs into *folder*); False (one line) when it cannot be sent."""
        try:
            self.conn.send((os.fspath(folder), job))
        except Exception as e:      # a dead worker, or a job that does not pickle
            note("could not send it the run (%s: %s)" % (type(e).__name__, e))
            self.close()
            return False
        self.sent = True
        return True

    def wait(self) -> bool:
        """Wait for the worker's answer: True when it drew the plots; False (one line on
        stderr) when it did not, and the plots are to be drawn here.  Its warnings are
        shown here; its OSError on a file is raised."""
        try:
            kind, detail, caught = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            note("it ended before answering (exit code %s)" % self.process.exitcode)
            return False
        finally:
            self.close()
        for message, category, filename, lineno in caught:
            warnings.warn_explicit(message, category, filename, lineno)
        if kind == "oserror":
            raise detail
        if kind != "ok":
            note("it failed (%s)" % detail)
            return False
        return True

    def close(self) -> None:
        """End the worker if it still runs, and reap it (idempotent)."""
        self.conn.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()


@contextmanager
def started(scenario: Scenario, enabled: bool = True) -> Iterator[PlotWorker | None]:
    """A worker for *scenario*'s plots while the block runs (None: not *enabled*, plots
    off, or it could not be started), ended on the way out whatever happens."""
    worker = PlotWorker.start(scenario) if enabled and scenario.output.plots else None
    try:
        yield worker
    finally:
        if worker is not None:
            worker.close()
