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
from ..fabric.job.spec import JobSpec
from ..fabric.params import FlowSpec, HCAParams, LinkParams, SwitchParams
from ..units import PS_PER_MS, PS_PER_US

if TYPE_CHECKING:       # ibemu.cc's scheme packages import ibemu.build, which imports this module
    from ..cc.registry import CCSpec

__all__ = ["SwitchSpec", "HCASpec", "LinkSpec", "OutputSpec", "RoutingSpec", "Scenario", "link_labels",
           "node_guids", "guids_of", "SWITCH_GUID_BASE", "HCA_GUID_BASE"]

# Default node GUIDs (issue 15): predictable, in list order, under a made-up OUI.  A
# switch's port GUID is its node GUID (IBA 14.2.5.6: one port GUID, port 0); an HCA's
# port 1 GUID is its node GUID + 1, as in ibnetdiscover's example (REFERENCE-FABRICS §1).
SWITCH_GUID_BASE = 0x0002C90000000000
HCA_GUID_BASE = 0x0002C90100000000


@dataclass
class SwitchSpec:
    name: str
    params: SwitchParams = field(default_factory=SwitchParams)
    ports: int | None = None                # None: as many as links attach
    lft: dict[int, int] | None = None       # DLID -> out port; wins over the routing engine's entry
    guid: int | None = None                 # node GUID; None: SWITCH_GUID_BASE + 1 + index
    desc: str | None = None                 # NodeDescription; None: the name
    adaptive: bool | None = None            # adaptive routing here; None: routing.adaptive
    adaptive_policy: str | None = None      # credits | random | static; None: routing.adaptive_policy
    adaptive_groups: dict[int, list[int]] | None = None   # DLID -> its group of ports; wins over the derived


@dataclass
class HCASpec:
    name: str
    lid: int                                # base LID (LMC > 0: lid .. lid + 2^LMC - 1)
    params: HCAParams = field(default_factory=HCAParams)
    guid: int | None = None                 # node GUID; None: HCA_GUID_BASE + 0x10 * (1 + index)
    desc: str | None = None                 # NodeDescription; None: the name


@dataclass
class LinkSpec:
    a: str                                  # node name
    b: str
    a_port: int | None = None               # None: next free port
    b_port: int | None = None
    params: LinkParams = field(default_factory=LinkParams)
    name: str | None = None                 # label used in results; default "a->b"
    levels: tuple[str, str] | None = None   # fabric level of the a->b and b->a directions ("up1", "down1")

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
    snaplen: int | None = None              # bytes of each frame a capture stores (issue 18); None: all


@dataclass
class RoutingSpec:
    """How the subnet manager fills the switches' LFTs (issue 15; OpenSM's names,
    REFERENCE-FABRICS §3).  ``engine``: "minhop" (OpenSM's default), "updn", "ftree" or
    "file" (``lft_file``, an opensm-lfts.dump or ibroute dump); ``lmc``: 2^LMC LIDs per
    HCA port; ``roots``: switch names for updn/ftree (empty: found automatically);
    ``check_credit_loops``: refuse a routing whose channel dependency graph has a cycle;
    ``adaptive``, ``adaptive_policy``: adaptive routing (issue 31, :mod:`ibemu.fabric.adaptive`);
    ``reorder_window``: the RC responders' out-of-order window in packets (0: in order only);
    ``arn``, ``arn_threshold``, ``arn_hold``: adaptive routing notifications (:mod:`ibemu.fabric.arn`).
    From an opensm.conf (issue 18, :mod:`ibemu.scenario.opensm_routing`): ``fallback``,
    the engines tried in order when ``engine`` fails (OpenSM's ``routing_engine`` list,
    then minhop unless ``no_fallback``); ``opensm``, what the file set, for the run's note."""
    engine: str = "minhop"
    lmc: int = 0
    roots: list[str] = field(default_factory=list)
    lft_file: str | None = None
    check_credit_loops: bool = True
    adaptive: bool = False                  # adaptive routing in every switch (issue 31)
    adaptive_policy: str = "credits"        # credits | random | static (ibemu.fabric.adaptive)
    reorder_window: int = 0                 # RC responders take packets up to this far ahead of the expected PSN
    arn: bool = False                       # adaptive routing notifications (ibemu.fabric.arn)
    arn_threshold: int = 1                  # ... sent for a packet queued behind this many MTUs of bytes
    arn_hold: int = 10_000_000              # ps: ... heeded, and sent again, after this long
    fallback: list[str] = field(default_factory=list)
    opensm: list[str] = field(default_factory=list)


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
    routing: RoutingSpec = field(default_factory=RoutingSpec)
    jobs: list[JobSpec] = field(default_factory=list)   # closed-loop workloads (issue 29); their flows are in flows


def guids_of(switches: list[SwitchSpec], hcas: list[HCASpec]) -> dict[str, int]:
    """Every node's GUID: the spec's own, else the default of :data:`SWITCH_GUID_BASE`
    / :data:`HCA_GUID_BASE` by list position."""
    out = {s.name: s.guid if s.guid is not None else SWITCH_GUID_BASE + 1 + i for i, s in enumerate(switches)}
    out.update({h.name: h.guid if h.guid is not None else HCA_GUID_BASE + 0x10 * (1 + i)
                for i, h in enumerate(hcas)})
    return out


def node_guids(scn: Scenario) -> dict[str, int]:
    """Every node's GUID (:func:`guids_of` its switches and HCAs)."""
    return guids_of(scn.switches, scn.hcas)
