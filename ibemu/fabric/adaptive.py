"""Adaptive routing in a switch (issue 31 Deliver 1): per packet, the output port is
chosen among a *group* of ports that all lead to the destination, instead of the one
port of the linear forwarding table.

- A group is kept per destination LID (:attr:`AdaptiveRouting.groups`); a LID without a
  group, and every VL15 (management) packet, follows the LFT as with static routing.
  :mod:`ibemu.routing.groups` derives the groups (on a fat tree: the up-ports on a
  minimal path) and a scenario can give them explicitly.
- Policies (:data:`POLICIES`):

  - ``credits`` -- the LFT's port as long as it is not congested (it has credits for a
    full packet and less than a full packet's payload is waiting for it); otherwise the
    port with the most free credits (FCCL - FCTBS, IBA 7.9, less the credits the packets
    already waiting for the port will take) on the VL the packet would leave on, then the
    port with the fewest packets waiting for it or on its wire (the output queue, cnt1 of
    seed 003 §5), then a draw from the switch's own random stream among the ports still
    tied.  The first rule is a hysteresis: spreading packets that could go their static
    way at once only adds crossbar conflicts in ibemu's input-buffered switches
    (docs/adaptive.md measures it).  This is the subset of a current switch's adaptive
    routing ibemu models: a load estimate from the switch's local state at the moment
    the packet's header is read, nothing from other switches (no remote congestion
    notification, no flowlets or path pinning).
  - ``random`` -- a uniform draw per packet, as ns-3's ECMP with
    ``RandomEcmpRouting`` (a random route among the equal-cost ones for each packet).
  - ``static`` -- the LFT: the switch gets no :class:`AdaptiveRouting` at all, so its
    forwarding is exactly that of static routing.

Sans-I/O: no time, no I/O.  The random stream is the switch's own
(:func:`switch_rng`: the scenario seed and the switch's name), so where the switch runs
(one process or another, the virtual or the wall clock) cannot change its draws.
"""
from __future__ import annotations

import random
import zlib
from typing import TYPE_CHECKING, Final

from ..wire.layout import MAX_HEADERS
from .arn import Marks
from .credits import blocks_of

if TYPE_CHECKING:
    from .switch import Switch

__all__ = ["POLICIES", "CREDITS", "RANDOM", "STATIC", "AdaptiveRouting", "switch_rng", "pick"]

CREDITS: Final = "credits"
RANDOM: Final = "random"
STATIC: Final = "static"
POLICIES: Final = (CREDITS, RANDOM, STATIC)


def switch_rng(seed: int, name: str) -> random.Random:
    """The switch's own random stream: from the scenario *seed* and its *name*."""
    return random.Random((seed << 32) ^ zlib.crc32(("adaptive:" + name).encode()))


def pick(free: list[int], queued: list[int], rng: random.Random) -> int:
    """Index of the candidate with the most *free* credits, then the fewest *queued*
    packets; among the candidates still tied, a draw from *rng* (none drawn when one
    candidate is best)."""
    best_f = free[0]
    best_q = queued[0]
    tied = [0]
    for i in range(1, len(free)):
        f = free[i]
        q = queued[i]
        if f > best_f or (f == best_f and q < best_q):
            best_f = f
            best_q = q
            tied = [i]
        elif f == best_f and q == best_q:
            tied.append(i)
    if len(tied) == 1:
        return tied[0]
    return tied[rng.randrange(len(tied))]


class AdaptiveRouting:
    """The adaptive routing state of one switch: destination LID -> its group of output
    ports, the policy (``credits`` or ``random``), the switch's random stream, and how
    many packets left by a port other than the LFT's (``rerouted``; also the switch's
    counter ``adaptive_rerouted``); with adaptive routing notifications (:mod:`.arn`),
    the ports notified as congested per DLID (``marks``; None: notifications ignored)."""
    __slots__ = ("groups", "policy", "rng", "rerouted", "full_bytes", "full_blocks", "marks")

    def __init__(self, groups: dict[int, tuple[int, ...]], policy: str, rng: random.Random,
                 mtu: int = 2048, marks: Marks | None = None) -> None:
        if policy not in (CREDITS, RANDOM):
            raise ValueError("adaptive routing policy %r: expected %r or %r" % (policy, CREDITS, RANDOM))
        self.groups = groups
        self.policy = policy
        self.rng = rng
        self.rerouted = 0
        self.full_bytes = mtu                   # "congested": a full packet's payload queued ...
        self.full_blocks = blocks_of(mtu + MAX_HEADERS)     # ... or no credit for a full packet
        self.marks = marks

    def out_port(self, sw: Switch, dlid: int, sl: int, inp: int, default: int | None, now: int) -> int | None:
        """The output port for a packet to *dlid* on service level *sl* that came in on
        port *inp* at *now*; *default* is the LFT's port (used when the LID has no
        group).  The input port itself is never chosen (a switch does not send a packet
        back where it came from)."""
        group = self.groups.get(dlid)
        if group is None:
            return default
        xports = sw.xports
        ports: list[int] = []
        for p in group:
            if p != inp and p in xports:
                ports.append(p)
        if not ports:
            return default
        if self.marks is not None:
            ports = self.marks.usable(ports, dlid, now)     # not where a notification said (.arn)
        if self.policy == RANDOM:
            out = ports[self.rng.randrange(len(ports))] if len(ports) > 1 else ports[0]
        else:
            out = self._least_loaded(sw, ports, sl, inp, default, now)
        if out != default:
            self.rerouted += 1
            sw.count("adaptive_rerouted")
        return out

    def _least_loaded(self, sw: Switch, ports: list[int], sl: int, inp: int, default: int | None,
                      now: int) -> int:
        """Policy ``credits``: the LFT's port while it is not congested (credits for a
        full packet, less than a full packet queued); else the most free credits, then
        the shortest output queue, then the switch's draw (:func:`pick`)."""
        xports = sw.xports
        free: list[int] = []
        queued: list[int] = []
        table = sw.sl2vl
        keep = -1
        for p in ports:
            x = xports[p]
            port = x.port
            if port is None:
                free.append(-(1 << 30))
                queued.append(0)
                continue
            t = table
            if sw.port_sl2vl:
                t = sw.port_sl2vl.get((inp, p)) or sw.port_sl2vl.get((None, p)) or table
            vl = t[sl]
            if vl >= len(port.tx):
                vl = len(port.tx) - 1
            claimed = 0                         # credits the packets waiting for the port will take
            nbytes = 0
            for q in x.queues:
                for e in q:
                    nbytes += len(e.pkt)
            for e in x.queues[vl]:
                claimed += e.blocks
            f = port.tx[vl].available() - claimed
            free.append(f)
            queued.append(x.queued + (1 if port.busy_until > now else 0))
            if p == default and f >= self.full_blocks and nbytes < self.full_bytes:
                keep = p
        if keep >= 0:
            return keep
        return ports[pick(free, queued, self.rng)]
