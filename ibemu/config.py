"""Typed scenario objects: what a TOML scenario is validated into, and what a Python
script builds directly for scripted experiments.

Times are integer picoseconds (``PS_PER_NS`` etc. below), rates bytes per second.
Defaults follow seed 003 Table 1: 1 GB/s links (IB 4X SDR), 2048-byte PMTU, input
buffers of 4 packets per port, 40 ns header forwarding delay, FIFO output scheduling
with bypass limit 4.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .fabric.params import FlowSpec, HCAParams, LinkParams, SwitchParams, VLArbTable  # noqa: F401
from .units import LANE_DATA_BPS, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US, WIDTHS, ib_rate  # noqa: F401


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
    resolved: dict = field(default_factory=dict)   # the resolved configuration, for results
    cc: object = None                       # ibemu.cc.CCSpec; None: no congestion control
    faults: object = None                   # ibemu.fabric.faults.FaultSpec; None: no link faults
