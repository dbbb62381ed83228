"""Typed scenario objects: what a TOML scenario is validated into, and what a Python
script builds directly for scripted experiments.

Times are integer picoseconds (:mod:`ibemu.units`), rates bytes per second; the
parameters of links, switches, HCAs and flows are :mod:`ibemu.fabric.params` (defaults
of seed 003 Table 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..fabric.faults import FaultSpec
from ..fabric.params import FlowSpec, HCAParams, LinkParams, SwitchParams
from ..units import PS_PER_MS, PS_PER_US

if TYPE_CHECKING:       # ibemu.cc's scheme packages import ibemu.build, which imports this module
    from ..cc.registry import CCSpec

__all__ = ["SwitchSpec", "HCASpec", "LinkSpec", "OutputSpec", "Scenario", "link_labels"]


@dataclass
class SwitchSpec:
    name: str
    params: SwitchParams = field(default_factory=SwitchParams)
    ports: int | None = None                # None: as many as links attach
    lft: dict[int, int] | None = None       # DLID -> out port; None: shortest paths


@dataclass
class HCASpec:
    name: str
    lid: int
    params: HCAParams = field(default_factory=HCAParams)


@dataclass
class LinkSpec:
    a: str                                  # node name
    b: str
    a_port: int | None = None               # None: next free port
    b_port: int | None = None
    params: LinkParams = field(default_factory=LinkParams)
    name: str | None = None                 # label used in results; default "a->b"

    def labels(self) -> tuple[str, str]:
        """Labels of the two directions: (name or "a->b", name + ".rev" or "b->a")."""
        if self.name:
            return self.name, self.name + ".rev"
        return "%s->%s" % (self.a, self.b), "%s->%s" % (self.b, self.a)


def link_labels(link: LinkSpec) -> tuple[str, str]:
    """Labels of a link's two directions (see :meth:`LinkSpec.labels`)."""
    return link.labels()


@dataclass
class OutputSpec:
    bin: int = 100 * PS_PER_US              # time-series bin
    window: int = 2 * PS_PER_MS             # sliding window for throughput (seed 003: 2 ms)
    plots: bool = True
    plot_links: list[str] = field(default_factory=list)   # link labels to plot; [] = all
    plot_groups: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    name: str
    duration: int                           # ps
    switches: list[SwitchSpec] = field(default_factory=list)
    hcas: list[HCASpec] = field(default_factory=list)
    links: list[LinkSpec] = field(default_factory=list)
    flows: list[FlowSpec] = field(default_factory=list)
    seed: int = 1
    output: OutputSpec = field(default_factory=OutputSpec)
    source: str | None = None               # file it came from
    resolved: dict[str, Any] = field(default_factory=dict)   # the resolved configuration, for results
    cc: CCSpec | None = None                # None: no congestion control
    faults: FaultSpec | None = None         # None: no link faults
