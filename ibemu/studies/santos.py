"""Seed 003 §3–4 (Santos et al.), Figures 2 and 3: congestion spreading without
congestion control on the Figure 1 scenario (the ``santos_fig1`` template of
:mod:`ibemu.scenario.templates`), each one run measured over 45–55 ms of 100 ms.

Every band is read from the paper's words (quoted beside it, seed 003's text); none
is fitted to ibemu.  Readings used throughout: "about x" accepts x ± 2 points and
the exact fraction the text derives (e.g. "about 15%" and 1/6); "fully utilized"
and "oversubscribed" mean ≥ 95 % (a measured utilisation may read a hair above 100 %
at the window's edges, hence 1.01); "slight under-utilization" ≥ 90 % (the paper's own
"high ... utilization (> 90%)", §5); "ideal throughputs" ± 5 % of the ideal.
"""
from __future__ import annotations

from dataclasses import replace

from ..scenario.builders import santos_fig1
from .reproduction import Check, Reproduction

__all__ = ["REPRODUCTIONS"]

# Seed 003's links take no time for link flow-control packets (issue 13, Deliver 6): Table 1
# lists none, and Figure 3(b)'s "ideal throughputs" at rates of exactly 1/10 for ten flows
# need a root link that gives data all of its time.  On a link where each 6-byte
# flow-control packet takes its time (ibemu's default, "wire"), the ACK of every data
# packet costs 6 of every 2080 bytes of the root, so 10 x 1/10 oversubscribes it by 0.3 %
# and congestion spreads: the victim of Figure 3(b) gets 0.31 instead of 1/2.  Under the
# HP scheme (L = R = 10, LIPD with discrete rates) the twenty flows' fair IPD of 19 fills
# an ideal root exactly and overfills a "wire" one, and the victim falls from 0.31 to
# 0.10 (scenarios/hp_santos_fig1.toml, 6 ms).  So the seed 003 reproductions run on
# ideal links; benchmarks/link_overhead.py shows what the wire costs per link.
LINKS = "ideal"

S3, S42 = "seed 003 §3, Figure 2(a)", "seed 003 §4.2"

REPRODUCTIONS: list[Reproduction] = [
    Reproduction(
        "fig2a", "Congestion spreading, L=5 R=1, buffer 4 packets, no window",
        "seed 003 §3, Figure 2(a)",
        lambda: santos_fig1(L=5, R=1, buffer_packets=4, name="fig2a", flow_control=LINKS), (45, 55),
        [Check("link:root", "6 flows × 1/6: fully used", 0.95, 1.01,
               quote="Since there are 6 flows contending for the root link, each flow consumes approximately",
               section=S3),
         Check("link:inter", "about 30 % (1/3: two flows at 1/6)", 0.28, 0.36,
               quote="even though the inter-switch link is only about 30% utilized", section=S3),
         Check("flow:victim", "about 15 % (1/6)", 0.13, 0.19,
               quote="the victim flow uses only about 15% of the bandwidth on the interswitch link",
               section=S3),
         Check("flow:remote1", "same rate as the victim (1/6)", 0.13, 0.19,
               quote="Thus both the remote and victim flows are transmitted at the same rate", section=S3)]),
    Reproduction(
        "fig2b", "Window of one packet removes spreading, L=5 R=1",
        "seed 003 §4.2, Figure 2(b)",
        lambda: santos_fig1(L=5, R=1, buffer_packets=4, window=1, name="fig2b", flow_control=LINKS), (45, 55),
        # the idle bandwidth is what the remote flow (1/6 of the root) leaves: 5/6 ± 5 %
        [Check("link:inter", "fully utilized (slight under-utilization)", 0.90, 1.01,
               quote="Hence the inter-switch link is fully utilized and the victim flow consumes all its idle "
                     "bandwidth (the slight under-utilization of the root link and the inter-switch link is an "
                     "artifact of the starvation prevention function of switch B's scheduling mechanism)",
               section=S42 + ", Figure 2(b)"),
         Check("flow:victim", "all the idle bandwidth (5/6)", 0.79, 0.875,
               quote="the victim flow consumes all its idle bandwidth", section=S42 + ", Figure 2(b)"),
         Check("link:root", "fully used (slight under-utilization)", 0.90, 1.01,
               quote="the slight under-utilization of the root link", section=S42 + ", Figure 2(b)")]),
    Reproduction(
        "fig3a", "Spreading returns with L=5 R=5, window 1",
        "seed 003 §4.2, Figure 3(a)",
        lambda: santos_fig1(L=5, R=5, buffer_packets=4, window=1, name="fig3a", flow_control=LINKS), (45, 55),
        # held down, not dead: switch A alternates among its inputs (§3), so the victim
        # keeps at least half a remote flow's 1/10; "high throughput" it is not: at most
        # half its 1/2 share.  The inter-switch link carries the remote flows' 5 × 1/10
        # at least, and is "under-utilized" (below the 90 % the paper calls high).
        [Check("flow:victim", "no high throughput (≤ half its 1/2 share; not starved)", 0.05, 0.25,
               quote="congestion spreading prevents the victim flow from achieving high throughput",
               section=S42 + ", Figure 3(a)"),
         Check("link:inter", "under-utilized (remote flows' 1/2 at least)", 0.5, 0.9,
               quote="the inter-switch link is under-utilized", section=S42 + ", Figure 3(a)"),
         Check("link:root", "oversubscribed: fully used", 0.95, 1.01,
               quote="Congestion spreading originates at the oversubscribed link connecting switch B to end "
                     "device B_C", section="seed 003 §3")]),
    Reproduction(
        "fig3b", "Optimal static rates, L=5 R=5",
        "seed 003 §4.2, Figure 3(b)",
        lambda: santos_fig1(L=5, R=5, buffer_packets=4, window=1,
                            rate={"local": 0.1, "remote": 0.1}, name="fig3b",
                            flow_control=LINKS), (45, 55),
        [Check("group:local", "ideal: 5 × 1/10", 0.475, 0.525,
               quote="The graph shows that all flows can achieve their ideal throughputs when their injection "
                     "rates are set appropriately.", section=S42 + ", Figure 3(b)"),
         Check("group:remote", "ideal: 5 × 1/10", 0.475, 0.525,
               quote="all flows can achieve their ideal throughputs", section=S42 + ", Figure 3(b)"),
         Check("flow:victim", "ideal: 1/2", 0.475, 0.525,
               quote="all flows can achieve their ideal throughputs", section=S42 + ", Figure 3(b)"),
         Check("link:inter", "ideal: 5 × 1/10 + 1/2, fully used", 0.95, 1.01,
               quote="all flows can achieve their ideal throughputs", section=S42 + ", Figure 3(b)"),
         Check("link:root", "ideal: 10 × 1/10, fully used", 0.95, 1.01,
               quote="all flows can achieve their ideal throughputs", section=S42 + ", Figure 3(b)")]),
]

_FIG2 = "Congestion Spreading Example (L = 5, R = 1): buffer capacity = 4 packets"
_FIG3 = "Congestion Spreading (L = 5, R = 5): fixed window vs. rate control (buffer capacity = 4 packets)"
FIGURES = {"fig2a": "seed 003 Figure 2(a), no window: " + _FIG2,
           "fig2b": "seed 003 Figure 2(b), window 1: " + _FIG2,
           "fig3a": "seed 003 Figure 3(a), fixed window: " + _FIG3,
           "fig3b": "seed 003 Figure 3(b), rate control: " + _FIG3}
"""Each run's figure.png: the paper's figure number and caption (figure_axes.plot_rate_figure)."""
REPRODUCTIONS = [replace(r, figure=FIGURES[r.id]) for r in REPRODUCTIONS]
