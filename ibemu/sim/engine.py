"""The virtual-time engine: the shared scheduler (:mod:`ibemu.sim.scheduler`) driving
the sans-I/O nodes wired port to port, as fast as the CPU allows (../shared/DESIGN.md
§1).  Deterministic: a run is a pure function of the scenario and its seed; no wall
clock is read.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from .scheduler import Capture, FaultyLink, Scheduler, SimNode


class VirtualEngine(Scheduler):
    """Runs nodes wired port to port.

    *wiring* maps ``(node, port)`` to ``(peer_node, peer_port, propagation_ps)``.
    *capture*, when given, has ``write(time_ns, frame, link)`` and receives every frame
    as it starts on a link (so in emulated-time order).
    *faults* maps ``(node, port)`` to the :class:`~ibemu.fabric.faults.LinkFaultInjector`
    of the directed link that port sends on (issue 8): each frame's deliveries come from
    its ``transmit`` and pass its ``accept`` (the duplicate filter) on arrival.

    Without *faults*, every frame arrives exactly as a node of this engine built it, so
    the nodes skip the CRC checks that cannot fail on it (``DELIVER_INTACT``; issue 16)
    -- unless *check_crcs*, which makes them check every frame, as tests/test_sim_engine.py
    does to show that the results are the same.

    ``start(t)`` starts every node; ``run(until)`` runs every event before *until*;
    ``now``, ``events`` and ``frames`` (frame-hops) tell how far it went.
    """

    def __init__(self, nodes: Iterable[SimNode],
                 wiring: Mapping[tuple[SimNode, int], tuple[SimNode, int, int]],
                 capture: Capture | None = None,
                 faults: Mapping[tuple[SimNode, int], FaultyLink] | None = None,
                 check_crcs: bool = False) -> None:
        super().__init__(nodes, capture)
        faults = faults or {}
        self.intact = not faults and not check_crcs
        for (node, port), (peer, pport, prop) in wiring.items():
            self.connect(node, port, peer, pport, prop, faults.get((node, port)))

    def _after(self, node: SimNode) -> None:
        """Kept for tests that give a node a timer from outside (tests/test_mad_inband.py)."""
        self.after(node)
