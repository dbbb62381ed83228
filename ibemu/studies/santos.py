"""Seed 003 §3–4 (Santos et al.), Figures 2 and 3: congestion spreading without
congestion control on the Figure 1 scenario (the ``santos_fig1`` template of
:mod:`ibemu.scenario.templates`), each one run measured over 45–55 ms of 100 ms."""
from __future__ import annotations

from ..scenario.builders import santos_fig1
from .reproduction import Check, Reproduction

__all__ = ["REPRODUCTIONS"]

# Figure 3(b)'s "optimal static rates": the root link's capacity for data shared by its
# ten flows.  Each data packet (2048 B of payload behind 26 B of headers and CRCs) is
# answered by an ACK whose buffer credit comes back on the root link in a 6-byte
# flow-control packet, sent between data packets (issue 13), so data gets 2074/2080 of
# the link; a rate of exactly 1/10 would oversubscribe it by 0.3 % and spread congestion.
OPTIMAL_RATE = 2074 / (2074 + 6) / 10

REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "fig2a", "Congestion spreading, L=5 R=1, buffer 4 packets, no window",
        "seed 003 §3, Figure 2(a)",
        lambda: santos_fig1(L=5, R=1, buffer_packets=4, name="fig2a"), (45, 55),
        [Check("link:root", "≈100 %", 0.95, 1.01),
         Check("link:inter", "about 30 % (1/3: two flows at 1/6 each)", 0.24, 0.36),
         Check("flow:victim", "about 15 % (1/6)", 0.11, 0.20),
         Check("flow:remote1", "≈ victim's rate (1/6)", 0.11, 0.20)]),
    Reproduction(
        "fig2b", "Window of one packet removes spreading, L=5 R=1",
        "seed 003 §4.2, Figure 2(b)",
        lambda: santos_fig1(L=5, R=1, buffer_packets=4, window=1, name="fig2b"), (45, 55),
        [Check("link:inter", "fully used (slightly under: starvation prevention)", 0.88, 1.01),
         Check("flow:victim", "takes the idle bandwidth (5/6)", 0.75, 0.90),
         Check("link:root", "≈100 % (slightly under)", 0.88, 1.01)]),
    Reproduction(
        "fig3a", "Spreading returns with L=5 R=5, window 1",
        "seed 003 §4.2, Figure 3(a)",
        lambda: santos_fig1(L=5, R=5, buffer_packets=4, window=1, name="fig3a"), (45, 55),
        [Check("flow:victim", "held down by spreading (far below its 1/2 share)", 0.0, 0.25),
         Check("link:inter", "under-utilized", 0.0, 0.75),
         Check("link:root", "≈100 %", 0.95, 1.01)]),
    Reproduction(
        "fig3b", "Optimal static rates, L=5 R=5",
        "seed 003 §4.2, Figure 3(b)",
        lambda: santos_fig1(L=5, R=5, buffer_packets=4, window=1,
                            rate={"local": OPTIMAL_RATE, "remote": OPTIMAL_RATE}, name="fig3b"), (45, 55),
        [Check("group:local", "ideal: 5 × 1/10", 0.47, 0.52),
         Check("group:remote", "ideal: 5 × 1/10", 0.47, 0.52),
         Check("flow:victim", "ideal: 1/2", 0.47, 0.52),
         Check("link:inter", "fully used", 0.95, 1.01),
         Check("link:root", "fully used", 0.95, 1.01)]),
]
