"""What a reproduction is: a figure of a seed paper, the checks that judge ours against
the paper's words, and the cache of runs one study invocation shares.

The types live here, apart from :mod:`.registry`, so that each study module
(:mod:`.santos`, :mod:`.hp.reproduce`, ...) can declare its reproductions and the
registry can list them without an import circle.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..scenario import Scenario

__all__ = ["Check", "Reproduction", "RunCache", "Mapper", "Runner", "PAPER", "REGRESSION", "OK", "MISMATCH", "DEPARTS",
           "FIXED"]

T = TypeVar("T")


Mapper = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]
"""``mapper(fn, items) -> [fn(x) for x in items]``, possibly in parallel (a Dask pool's
:meth:`~ibemu.studies.sweep_pool.DaskPool.map`)."""


class RunCache:
    """Runs memoised for one study invocation (``ibemu reproduce all`` shares the
    DCMS testbed runs between Figures 3 and 4).  A run is a pure function of its
    settings, so a key names the study and the settings, e.g. ``("cca", 2048, 75)``.

    A figure's sweep hands its independent runs to :meth:`map` (or :meth:`get_many`):
    one after another by default, or through *mapper* -- ``ibemu reproduce --full`` sets
    a Dask pool's map there (issue 17 Deliver 2), so a paper's sweep uses every core or
    a cluster.  The functions and items must then pickle (module-level functions)."""

    def __init__(self, mapper: Mapper | None = None) -> None:
        self._runs: dict[Hashable, Any] = {}
        self.mapper = mapper

    def map(self, fn: Callable[[Any], T], items: Iterable[Any]) -> list[T]:
        """``[fn(x) for x in items]``, through the mapper when there is one."""
        items = list(items)
        if self.mapper is None or len(items) < 2:
            return [fn(x) for x in items]
        return self.mapper(fn, items)

    def get_many(self, keys: Sequence[Hashable], fn: Callable[[Any], T], items: Sequence[Any]) -> list[T]:
        """:meth:`get` for each key, the missing values computed together by
        ``map(fn, items)`` (``items[i]`` computes ``keys[i]``)."""
        todo = [i for i, k in enumerate(keys) if k not in self._runs]
        for i, value in zip(todo, self.map(fn, [items[i] for i in todo])):
            self._runs[keys[i]] = value
        return [self._runs[k] for k in keys]

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value stored under *key*, computed (once) by *compute*."""
        if key not in self._runs:
            self._runs[key] = compute()
        value: T = self._runs[key]
        return value

    def __len__(self) -> int:
        return len(self._runs)


Runner = Callable[[Path | None, bool, RunCache], dict[str, float]]
"""``runner(out_dir, full, cache) -> {metric: value}``: plots and values go to *out_dir*
(None: none), *full* asks for the paper's whole sweep instead of the CI-sized one."""


PAPER, REGRESSION = "paper", "regression"
OK, MISMATCH, DEPARTS, FIXED = "ok", "MISMATCH", "departs", "FIXED?"


@dataclass
class Check:
    """One figure judged against a band.

    A *paper* check's band is read from the paper: *quote* holds the paper's words (or,
    with ``read_from="figure"``, what the figure shows) and *section* where they are
    (``"seed 003 §4.2, Figure 3(a)"``).  The band is never widened to fit ibemu.  A
    *regression* check (``kind=REGRESSION``) has no published number behind it: it
    only guards ibemu against unnoticed change and is printed apart from the paper's.

    *departs* names a known departure of ibemu from the paper and its cause: the check
    is then expected to fail (verdict ``departs``, printed with both values); should it
    pass, the verdict ``FIXED?`` fails the figure so that the departure is struck from
    the fidelity table (the test suite tracks each as a strict xfail).
    """
    metric: str          # "link:<label>", "flow:<name>" or "group:<name>" (fraction of link rate),
                         # or any name a custom runner reports
    paper: str           # what the paper says, in short
    lo: float            # accepted range for ours
    hi: float
    unit: str = "%"      # "%": shown as a percentage; else the unit printed after the value
    quote: str = ""      # the paper's words the band comes from (verbatim, for read_from="text")
    section: str = ""    # where: "seed NNN §x.y" and/or "Figure n"
    read_from: str = "text"     # "text": *quote* is verbatim; "figure": read off a plot
    kind: str = PAPER    # PAPER or REGRESSION
    departs: str = ""    # a known departure's cause ("" = none)

    def verdict(self, ours: float) -> str:
        """``ok``, ``MISMATCH``, ``departs`` (a known departure, as expected) or
        ``FIXED?`` (a known departure that no longer departs)."""
        inside = self.lo <= ours <= self.hi
        if self.departs:
            return FIXED if inside else DEPARTS
        return OK if inside else MISMATCH


@dataclass
class Reproduction:
    """One figure.  Either *build* (a scenario run once, measured over *window_ms*) or
    *runner* (:data:`Runner`) for figures made of several runs (sweeps, comparisons) or
    of a formula.  *figure*: with *build*, the paper's figure (its number and caption) that
    :func:`~ibemu.studies.figure_axes.plot_rate_figure` draws from the run as figure.png."""
    id: str
    title: str
    source: str
    build: Callable[[], Scenario] | None
    window_ms: tuple[float, float] | None
    checks: list[Check] = field(default_factory=list)
    runner: Runner | None = None
    figure: str | None = None


TIE_ORDER = ("issue 27: simultaneous events now run in an order derived from the model (causal depth, node, a "
             "per-instant permutation of the ports, link sequence; ibemu/sim/scheduler.py), not first in, first "
             "out of one heap; with greedy flows of equal packets on equal links, arrivals tie at every packet, and "
             "which tied packet a switch queues first moves this CI-size figure by a few points: ")
"""The cause of the departures issue 27's order of simultaneous events brought."""
