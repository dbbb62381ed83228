"""What a run's plots read (issue 28: the plots drawn in a worker process,
:mod:`.plot_worker`): :class:`PlotData`, the parts of :class:`~.metrics.Metrics` that
:mod:`ibemu.plots` reads, copied into plain lists, dicts and arrays that pickle quickly;
and :class:`PlotJob`, that with the time series already computed for flows.csv and
links.csv.  :func:`draw` draws every plot of a run from a job, in this process or in the
worker, so both draw the same figures from the same numbers."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..scenario.model import Scenario
from .metrics import Metrics

@dataclass
class Rows:
    """Series over the run's time bins, in the order of the CSV columns: row k of
    *values* is *labels*[k]'s (one array: it pickles at once, issue 28).  Iterated, the
    (label, series) pairs."""
    labels: list[str]
    values: np.ndarray

    def __iter__(self) -> Iterator[tuple[str, np.ndarray]]:
        return zip(self.labels, self.values, strict=True)


@dataclass
class PlotData:
    """The plots' view of a run's :class:`~.metrics.Metrics` (:class:`ibemu.plots.PlotSource`):
    the same answers to the same calls, computed once in the run's process."""
    window: int
    traces: dict[tuple[str, str], list[tuple[int, float]]]
    events: list[tuple[int, str, str]]
    links: list[str]
    totals: dict[str, tuple[int, int, int]]
    flows: list[str]
    members: dict[str, list[str]]
    lat: dict[str, tuple[np.ndarray, np.ndarray]]
    done: dict[str, int | None]

    @classmethod
    def of(cls, metrics: Metrics) -> PlotData:
        links = metrics.link_names()
        flows = metrics.flow_names()
        return cls(metrics.window, metrics.traces, metrics.events, links,
                   {lbl: metrics.link_totals(lbl) for lbl in links if metrics.has_link(lbl)},
                   flows, metrics.groups(), {n: metrics.latencies(n) for n in flows},
                   {n: metrics.completion(n) for n in flows})

    def link_names(self) -> list[str]:
        return list(self.links)

    def has_link(self, label: str) -> bool:
        return label in self.totals

    def link_totals(self, label: str) -> tuple[int, int, int]:
        return self.totals[label]

    def flow_names(self) -> list[str]:
        return list(self.flows)

    def groups(self) -> dict[str, list[str]]:
        return {g: list(m) for g, m in self.members.items()}

    def latencies(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        empty = np.zeros(0, dtype=np.int64)
        return self.lat.get(name, (empty, empty))

    def completion(self, name: str) -> int | None:
        return self.done.get(name)


@dataclass
class PlotJob:
    """Everything a run's plots are drawn from: the run (:class:`PlotData` or the
    :class:`~.metrics.Metrics` itself), the bins' centres (ms) and the sliding-window
    series of flows.csv and links.csv."""
    source: PlotData | Metrics
    times: np.ndarray
    link_data: Rows
    link_all: Rows
    flow_cols: Rows
    group_cols: Rows


PARTS = 2
"""The plots in two parts that two processes can draw at once (:func:`draw`'s *part*):
0 throughput.png and links.png, 1 links_heatmap.png, cc.png and latency.png (on seed
003's Figure 1, L=R=10, 100 ms, about 0.3 and 0.45 s of CPU)."""


def draw(job: PlotJob, scenario: Scenario, folder: Path, part: int | None = None) -> None:
    """The PNGs of the run into *folder*: throughput.png and links.png
    (:func:`ibemu.plots.plot_run`), links_heatmap.png (:func:`ibemu.plots.plot_run_heatmap`),
    cc.png when variables were traced, latency.png; every one, or those of *part* (:data:`PARTS`)."""
    from ..plots import plot_latency, plot_run, plot_run_heatmap, plot_traces  # matplotlib: only to plot
    src = job.source
    if part in (None, 0):
        plot_run(src, scenario, folder, job.times, dict(job.link_data), dict(job.link_all), dict(job.flow_cols),
                 dict(job.group_cols))
    if part in (None, 1):
        plot_run_heatmap(src, scenario, folder, job.times, dict(job.link_all))
        if src.traces:
            plot_traces(src, scenario, folder)
        plot_latency(src, scenario, folder)
