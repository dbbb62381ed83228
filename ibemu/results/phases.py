"""The phases of a run before and after the event loop -- reading the scenario, building
the fabric, routing, the credit-loop check, writing the outputs -- timed, and shown on
stderr while they last (issue 28 Deliver 5: on an 11,664-host fabric they take minutes,
and a user waiting should see which phase it is in).

A phase with a known amount of work (routing: destination LIDs) draws a tqdm bar; the
others a line with the elapsed time.  Nothing is drawn unless *enabled* and stderr is a
terminal, and a phase shorter than :data:`DELAY` seconds never appears (tqdm's
``delay``), so small runs look as before.  The times are kept either way
(:attr:`Phases.times`, printed in the run summary)."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

__all__ = ["Phases", "DELAY", "Tick"]

DELAY = 1.0          # seconds before a phase is shown

Tick = Callable[[int], None]
"""Called with the units of work done since the last call."""


def _ignore(n: int) -> None:
    del n


class Phases:
    """Named, timed phases; :meth:`phase` is a context manager that yields a tick."""

    def __init__(self, enabled: bool = True, file: IO[str] | None = None) -> None:
        self.file = sys.stderr if file is None else file
        isatty = getattr(self.file, "isatty", None)
        self.shown = bool(enabled and callable(isatty) and isatty())
        self.times: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str, total: int | None = None, unit: str = "it") -> Iterator[Tick]:
        """Time phase *name* (times of a repeated name add up); with *total*, a bar of
        *total* *unit* that the yielded tick advances."""
        t0 = time.perf_counter()
        self.times.setdefault(name, 0.0)             # listed in the order the phases start
        bar: Any = None
        if self.shown:
            from tqdm import tqdm  # imported only when something is drawn
            bar = tqdm(total=total, desc=name, unit=unit, file=self.file, leave=False, delay=DELAY,
                       dynamic_ncols=True, mininterval=0.5,
                       bar_format=("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} "
                                   "[{elapsed}<{remaining}]") if total else "{desc} [{elapsed}]")
        try:
            yield bar.update if bar is not None and total else _ignore
        finally:
            if bar is not None:
                bar.close()
            self.times[name] = self.times.get(name, 0.0) + time.perf_counter() - t0

    def format(self) -> str:
        """``build 1.20 s, run 3.40 s, ...`` in the order the phases started (a phase
        inside another, such as routing inside build, is listed after it)."""
        return ", ".join("%s %.2f s" % (name, t) for name, t in self.times.items())
