"""Switch packet marking of the HP scheme (seed 003 §5; seed 000 §3, §4, §6).

One :class:`HPMarker` per compliant switch (``Switch.marker``).  Only data packets
(SEND, RDMA WRITE, RDMA READ response) are ever marked, never ACKs or CN packets, and
marking only sets FECN (no switch clears it, seed 000 §3).  Everything is per VL.

An input buffer (input port, VL) is **full** when the receipt of a packet's last byte
leaves it without room for one more maximum-size packet (seed 003 §5); the check runs
at that packet's tail.  Room is counted in credits (``full = "credits"``, the default: a
packet occupies its space until its last byte has left, as the link-level flow control
sees it, and that is what blocks the upstream switch) or counting only the packets still
waiting (``full = "waiting"``: a packet being forwarded, typically cut through, frees its
space as it leaves).  The packets "in" the buffer, the ones marked, are those not yet
transmitted (a packet already being sent can no longer be marked, seed 003 footnote 5).

- ``naive``: mark every data packet of a full input buffer.
- ``input`` (input-triggered, seed 003 §5): every output VL that is the destination of at
  least one packet of the full buffer is congested; all data packets in the switch waiting
  for it are marked when they are transmitted.  Counters per output VL: cnt1 = data
  packets in the switch for it, cnt2 = how many of the next transmitted to mark; on the
  trigger cnt2 = cnt1, and each transmission marks while cnt2 > 0 (so it marks the first
  packets to leave, not necessarily the ones that were there).  cnt1 "is incremented and
  decremented as packets enter and leave the switch" (seed 003 §5): a packet counts from
  its arrival until its last byte has left (``on_departure``), so the one being sent is
  counted too -- it can no longer be marked, and the counter marks one packet more
  ("this counter implementation may mark a different set of packets than a direct
  packet scanning approach").
- ``input-output``: input-triggered plus output-triggered marking: every arrival that
  leaves cnt1 of an output VL above ``output_threshold`` ("the total number of packets
  that are waiting for an output link exceeds a threshold", seed 003 §5) sets cnt2 = cnt1
  (as every tail that leaves an input buffer full triggers input marking; a count that
  stays above the threshold keeps marking).
- refinements of seed 000 §4 (options): ``propagating`` marks all packets of a full
  buffer (§4a) in addition; ``root_needs_credits`` makes an output VL a root only while
  it has credits for a maximum-size packet, and revokes the decision (cnt2 = 0, the
  remainder unmarked) when it runs out (§4b ii–iii).
- ``mark_blocked_for_noncompliant`` (§6.1): packets for an output VL whose peer is a
  non-compliant switch are marked as soon as that VL is blocked (no credits).
- non-compliant CAs (§6.2): marking a packet for a non-compliant destination, when it was
  not marked before, also sends a CN to the subnet manager (``notify``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeAlias

from ...fabric.node import VL15
from ...wire.fields import get_fecn, set_fecn

if TYPE_CHECKING:
    from ...fabric.switch import Switch
    from ...fabric.xport import Entry
    from .config import HPSpec

PortVL: TypeAlias = "tuple[int, int]"
"""(port, VL): an input buffer (input port, its VL) or an output VL (output port, VL)."""
Notify: TypeAlias = "Callable[[Switch, bytearray, int], None]"
"""``notify(switch, frame, now)``: the switch marked *frame* (seed 000 §6.2)."""


class HPMarker:
    """The HP marking of one switch (a :class:`~ibemu.fabric.hooks.Marker`)."""

    def __init__(self, spec: HPSpec, max_blocks: int, nc_peer_ports: Iterable[int] = (),
                 notify: Notify | None = None) -> None:
        self.mode = spec.marking
        self.threshold = spec.output_threshold if spec.marking == "input-output" else None
        self.propagating = spec.propagating or spec.marking == "naive"
        self.triggered = spec.marking in ("input", "input-output")
        self.root_needs_credits = spec.root_needs_credits
        self.nc_peers = set(nc_peer_ports) if spec.mark_blocked_for_noncompliant else set()
        self.max_blocks = max_blocks
        self.full_waiting = spec.full == "waiting"
        self.notify = notify                # (sw, frame, now) -> None, for non-compliant CAs
        self.resident: dict[PortVL, dict[Entry, None]] = {}  # (inp, vl_in) -> entries not yet transmitted
        self.cnt1: dict[PortVL, int] = {}   # (out, vl) -> data packets in the switch for it
        self.cnt2: dict[PortVL, int] = {}   # (out, vl) -> next packets to mark

    # ------------------------------------------------------------------ hooks
    def on_arrival(self, sw: Switch, e: Entry, now: int) -> None:
        if e.vl_in == VL15:
            return
        key = (e.inp, e.vl_in)
        res = self.resident.get(key)
        if res is None:
            res = self.resident[key] = {}
        res[e] = None
        if e.data:
            k = (e.out, e.vl)
            c = self.cnt1.get(k, 0) + 1
            self.cnt1[k] = c
            if self.threshold is not None and c > self.threshold:
                sw.count("hp_output_triggers")
                self._root(sw, k, c)
            if e.out in self.nc_peers and self._blocked(sw, k):
                self.mark(sw, e, now)
        if sw.ports[e.inp].rx[e.vl_in].free() < self.max_blocks:
            sw.at(e.tail, self._check_full, sw, key)    # full only when a tail arrives

    def on_transmit(self, sw: Switch, e: Entry, now: int) -> None:
        if e.vl_in == VL15:
            return
        self.resident[(e.inp, e.vl_in)].pop(e, None)
        k = (e.out, e.vl)
        if e.data:
            c2 = self.cnt2.get(k, 0)
            if c2 > 0:
                self.cnt2[k] = c2 - 1
                self.mark(sw, e, now)
        if (self.root_needs_credits or e.out in self.nc_peers) and self._blocked(sw, k):
            if self.root_needs_credits and self.cnt2.get(k, 0):
                sw.count("hp_root_revoked")
                self.cnt2[k] = 0                    # revoked: the remainder goes unmarked
            if e.out in self.nc_peers:
                for q in sw.queues[e.out][e.vl]:
                    if q.data:
                        self.mark(sw, q, now)

    def on_departure(self, sw: Switch, e: Entry, now: int) -> None:
        """The packet's last byte left the switch: it leaves cnt1 (seed 003 §5)."""
        if e.vl_in != VL15 and e.data:
            self.cnt1[(e.out, e.vl)] -= 1

    # ------------------------------------------------------------------ detection
    def _blocked(self, sw: Switch, k: PortVL) -> bool:
        """An output VL is blocked when it lacks credits for a maximum-size packet."""
        out, vl = k
        return not sw.ports[out].tx[vl].can_send(self.max_blocks)

    def _check_full(self, now: int, sw: Switch, key: PortVL) -> None:
        inp, vl = key
        rx = sw.ports[inp].rx[vl]
        if self.full_waiting:
            free = rx.capacity - sum(e.blocks for e in self.resident.get(key, ()))
        else:
            free = rx.free()
        if free < self.max_blocks:
            self.full(sw, key, now)

    def full(self, sw: Switch, key: PortVL, now: int) -> None:
        """Input buffer *key* = (port, VL) became full: mark (seed 003 §5, seed 000 §4)."""
        sw.count("hp_full_buffers")
        res = self.resident.get(key, ())
        if self.propagating:
            for e in res:
                if e.data:
                    self.mark(sw, e, now)
        if self.triggered:
            roots = {(e.out, e.vl) for e in res if e.data}
            for k in roots:
                if self.root_needs_credits and self._blocked(sw, k):
                    continue                        # the root is downstream
                self._root(sw, k, self.cnt1.get(k, 0))

    def _root(self, sw: Switch, k: PortVL, c1: int) -> None:
        if c1 > self.cnt2.get(k, 0):
            self.cnt2[k] = c1

    def mark(self, sw: Switch, e: Entry, now: int) -> None:
        frame = e.frame
        if get_fecn(frame):
            return
        set_fecn(frame)
        sw.count("hp_marked")
        if self.notify is not None:
            self.notify(sw, frame, now)
