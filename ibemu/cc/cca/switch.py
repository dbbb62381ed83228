"""The switch side of the IBA CCA: congestion detection per port and VL, and FECN
marking at Marking_Rate (REFERENCE.md "SwitchCongestionSetting"; seed 002 §1; seed 004
"Congestion Marking Function").

**Threshold -> buffer occupancy** (the spec leaves the mapping to the vendor; this is
ibemu's).  Seed 002 §1 (after Gran and Reinemo): a port is congested when the fill
ratio of the input buffers holding packets destined to it exceeds a threshold.  When a
data packet starts on output port *o*, VL *v*, the *occupancy* of (o, v) is, in 64-byte
blocks:

- the packets queued for (o, v) behind it and ready to go (received far enough to be
  forwarded: cut-through, or wholly for store-and-forward) -- packets still arriving
  do not count, so a flow passing through at link speed never makes a port congested;
- plus the departing packet itself when it had to wait for the port behind a packet
  from another input, and its input link is at least as fast as the output's: two
  inputs contended, the aggregate arrival rate exceeded the port's capacity (seed 002
  §2).  Not counted: a packet delayed only behind its own input's previous packet (a
  flow at link rate, slightly bunched), or from a slower input (4X SDR into 4X QDR:
  the wait is serialisation jitter, the output drains faster than any such input fills).

The port-VL is congested if::

    occupancy >= ceil(C × (16 - Threshold) / 16)        (Threshold 1..15; 0: off)

where C is the capacity in blocks of the departing packet's input VL buffer.  The
fraction falls linearly from 15/16 of a buffer (Threshold 1, "loose") to 1/16
(Threshold 15, "aggressive": with buffers of up to 16 MTU packets, one packet of
contention).  Why linear in a buffer's fill: it is the one scale every switch has,
Threshold's 15 steps divide it evenly, and 15 then is the "slightest hint of
congestion" seed 002 §3.1 asks for.

**Root or victim.**  A congested port-VL is the root of the congestion when its link
can take the next waiting packet (it has credits for it after the departing one);
without credits it is a victim of congestion further on -- and stays one while the
backlog built while credits were short is still there: until the last packet that was
waiting when the port last found no credit has left, or the backlog falls below the
threshold.  That backlog is the downstream congestion's, even in the moments a
returning credit lets it send; a backlog that builds later, while credits flow, is the
port's own (issue 31: a port kept full by its own flows after the tree behind it
cleared stayed a victim for the rest of the run, and never marked them).
A port marks as root only, or also as victim when its Victim_Mask bit is set.

**Marking_Rate.**  Packets eligible for marking: data packets (BTH data opcodes) on a
congested port-VL where the port may mark, at least Packet_Size credits (64-byte blocks)
long, not already carrying FECN.  Between two marks a port-VL lets a random number of
eligible packets pass, drawn uniformly from 0..2·Marking_Rate (mean Marking_Rate; 0
marks every eligible packet) from an RNG seeded with the scenario seed, switch, port
and VL -- deterministic for a seed.

Counters: ``FECN_marked:port<p>`` (marks) and ``CC_congested:port<p>`` (packets sent
while the port-VL was congested and the port may mark); the port's PortXmitTimeCong
(:mod:`ibemu.fabric.counters`) runs from a transmission that finds the port congested
as root until one finds it not (or a victim) or the port goes idle; trace ``FECN_marks`` per
``switch:port`` (cumulative, at most one point per ``trace_interval``).
"""
from __future__ import annotations

import random
import zlib
from typing import TYPE_CHECKING

from ...fabric.node import VL15
from ...wire.fields import get_fecn, set_fecn
from .settings import SwitchSetting

if TYPE_CHECKING:
    from ...fabric.recorder import Recorder
    from ...fabric.switch import Switch
    from ...fabric.xport import Entry


def threshold_blocks(threshold: int, capacity_blocks: int) -> int | None:
    """Occupancy (blocks) at which a port-VL is congested; None when Threshold is 0."""
    if threshold <= 0:
        return None
    return _congested_at(threshold, capacity_blocks)


def _congested_at(threshold: int, capacity_blocks: int) -> int:
    """ceil(C × (16 - Threshold) / 16), at least 1, for Threshold 1..15."""
    return max(1, -(-capacity_blocks * (16 - threshold) // 16))


class PortCC:
    """One output port's SwitchPortCongestionSetting and its marking state."""
    __slots__ = ("index", "threshold", "marking_rate", "packet_size", "victim", "rng",
                 "countdown", "marks", "congested", "label", "_thr", "_last_trace", "victim_episode", "victim_tail",
                 "last_inp", "in_congestion")

    def __init__(self, index: int, setting: tuple[int, int, int, bool], nvl: int, seed: int,
                 label: str) -> None:
        self.index = index
        self.threshold, self.marking_rate, self.packet_size, self.victim = setting
        self.rng = random.Random((seed << 32) ^ zlib.crc32(label.encode()))
        self.countdown = [self.draw() for _ in range(nvl)]
        self.victim_episode = [False] * nvl
        self.victim_tail: list[Entry | None] = [None] * nvl   # last packet waiting when credits were short
        self.last_inp: int | None = None    # input of the previous data packet sent
        self.in_congestion = False          # congested and marking (PortXmitTimeCong runs)
        self.marks = 0
        self.congested = 0
        self.label = label
        self._thr: dict[int, int] = {}      # input capacity -> threshold blocks
        self._last_trace: int | None = None  # when FECN_marks was last traced

    def draw(self) -> int:
        """Eligible packets to let pass before the next mark (mean Marking_Rate)."""
        m = self.marking_rate
        return self.rng.randint(0, 2 * m) if m else 0

    def set(self, threshold: int | None = None, marking_rate: int | None = None,
            packet_size: int | None = None, victim: bool | None = None) -> None:
        """Change settings while running (a manager's SwitchPortCongestionSetting Set)."""
        if threshold is not None:
            self.threshold = threshold
            self._thr.clear()
        if packet_size is not None:
            self.packet_size = packet_size
        if victim is not None:
            self.victim = victim
        if marking_rate is not None and marking_rate != self.marking_rate:
            self.marking_rate = marking_rate
            self.countdown = [self.draw() for _ in self.countdown]

    def threshold_for(self, capacity: int) -> int:
        """:func:`threshold_blocks` for an input buffer of *capacity* blocks, cached
        (only asked while Threshold is not 0)."""
        t = self._thr.get(capacity, -1)
        if t == -1:
            t = self._thr[capacity] = _congested_at(self.threshold, capacity)
        return t


class CCAMarker:
    """``Switch.marker`` for the CCA (a :class:`~ibemu.fabric.hooks.Marker`)."""

    def __init__(self, sw: Switch, setting: SwitchSetting, seed: int = 1, recorder: Recorder | None = None,
                 trace_interval: int | None = None) -> None:
        self.sw = sw
        self.ports = {o: PortCC(o, setting.port(o), len(sw.queues[o]), seed, "%s:%d" % (sw.name, o))
                      for o in sw.queues}
        self.recorder = recorder
        self.trace_interval = trace_interval

    def on_arrival(self, sw: Switch, e: Entry, now: int) -> None:
        pass

    def on_departure(self, sw: Switch, e: Entry, now: int) -> None:
        if self.ports[e.out].in_congestion and not sw.queued_at(e.out):
            self._congestion(sw, e.out, now, False)     # the port went idle

    def _congestion(self, sw: Switch, o: int, now: int, flag: bool) -> None:
        """Enter or leave the congested state: PortXmitTimeCong (counters.py) runs
        while a port is congested and may mark (the root of congestion)."""
        pc = self.ports[o]
        if pc.in_congestion != flag:
            pc.in_congestion = flag
            sw.ports[o].pc.congested(now, flag)

    def on_transmit(self, sw: Switch, e: Entry, now: int) -> None:
        if not e.data or e.vl == VL15:
            return
        o, vl = e.out, e.vl
        pc = self.ports[o]
        if pc.threshold == 0:
            return
        thr = pc.threshold_for(sw.ports[e.inp].rx[e.vl_in].capacity)
        q = sw.queues[o][vl]
        if e is pc.victim_tail[vl]:         # the backlog built while credits were short has left
            pc.victim_tail[vl] = None
            pc.victim_episode[vl] = False
        waited = (e.eligible < now and pc.last_inp != e.inp
                  and sw.ports[e.inp].rate >= sw.ports[o].rate)
        pc.last_inp = e.inp
        occ = e.blocks if waited else 0
        for x in q:                         # waiting behind e: arrived (eligible) packets
            if x.eligible <= now:
                occ += x.blocks
        if occ < thr:
            pc.victim_episode[vl] = False   # the backlog is gone: the episode ends
            pc.victim_tail[vl] = None
            if pc.in_congestion:
                self._congestion(sw, o, now, False)
            return
        if q and not sw.ports[o].tx[vl].can_send(q[0].blocks):
            pc.victim_episode[vl] = True    # the backlog waits for credits: a victim
            pc.victim_tail[vl] = q[-1]
        if pc.victim_episode[vl] and not pc.victim:
            if pc.in_congestion:
                self._congestion(sw, o, now, False)
            return                          # a victim, and its Victim_Mask bit is clear
        if not pc.in_congestion:
            self._congestion(sw, o, now, True)
        pc.congested += 1
        sw.count("CC_congested:port%d" % o)
        frame = e.frame
        if e.blocks < pc.packet_size or get_fecn(frame):
            return
        if pc.countdown[vl]:
            pc.countdown[vl] -= 1
            return
        pc.countdown[vl] = pc.draw()
        set_fecn(frame)
        pc.marks += 1
        sw.count("FECN_marked:port%d" % o)
        rec = self.recorder
        if rec is not None:
            if self.trace_interval is None or pc._last_trace is None or \
                    now - pc._last_trace >= self.trace_interval:
                pc._last_trace = now
                rec.trace("FECN_marks", pc.label, now, pc.marks)
