"""A built fabric: the wired nodes, the queue pairs of every flow and the link fault
injectors, as :func:`ibemu.build.build_fabric` makes it from a scenario.

Driver-neutral: the virtual-time engine (:mod:`ibemu.sim`) and the wall-clock runtime
(:mod:`ibemu.runtime`) both run a :class:`Fabric`; congestion-control schemes
(:mod:`ibemu.cc`) are installed on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from .hca import HCA
from .node import Node
from .qp import FlowSource, RCResponder, UDReceiver
from .recorder import Recorder

if TYPE_CHECKING:
    from .faults import LinkFaultInjector
    from .job.rank import Rank

Wiring: TypeAlias = "dict[tuple[Node, int], tuple[Node, int, int]]"
"""(node, port) -> (peer node, peer port, propagation in ps)."""
LinkEnds: TypeAlias = "tuple[str, int, str, int]"
"""A directed link's (node, port, peer node, peer port), by name."""


@dataclass
class Fabric:
    nodes: dict[str, Node]
    wiring: Wiring
    link_capacity: dict[str, int]       # directed link label -> bytes/s
    flow_capacity: dict[str, int]       # flow name -> bytes/s of its source link
    link_ends: dict[str, LinkEnds] = field(default_factory=dict)   # label -> its ends
    qps: dict[str, tuple[FlowSource, RCResponder | UDReceiver]] = field(default_factory=dict)
    """flow name -> (the source's QP, the destination's QP)"""
    injectors: dict[str, LinkFaultInjector] = field(default_factory=dict)
    """directed link label -> its fault injector (faulty links only)"""
    jobs: dict[str, list[Rank]] = field(default_factory=dict)
    """job name -> its ranks (issue 29)"""

    def hcas(self) -> dict[str, HCA]:
        """The HCAs by name."""
        return {name: n for name, n in self.nodes.items() if isinstance(n, HCA)}

    def peer_of(self, node: Node, port: int) -> Node | None:
        """The node at the other end of *node*'s *port* (None: unconnected)."""
        end = self.wiring.get((node, port))
        return end[0] if end is not None else None

    # -- operations on a built fabric from outside a run (e.g. ibemu.testing's drain)
    def stop_traffic(self, now: int) -> None:
        """End every flow's traffic at *now*: no new message starts from then on (one
        already started runs to its end)."""
        for snd, _ in self.qps.values():
            if snd.gen.stop > now:
                snd.gen.stop = now

    def heal_links(self) -> None:
        """Switch every link fault injector off: frames pass unchanged from now on."""
        for inj in self.injectors.values():
            inj.enabled = False

    def set_recorder(self, recorder: Recorder) -> None:
        """Report what every node does to *recorder* from now on (a plain
        :class:`~ibemu.fabric.recorder.Recorder` records nothing)."""
        for node in self.nodes.values():
            node.recorder = recorder
