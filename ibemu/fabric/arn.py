"""Adaptive routing notifications (ARN; issue 31): remote congestion information for
adaptive routing.

A switch that routes adaptively (:mod:`.adaptive`) sees only its own state: the credits
and queues of its output ports.  On a two-level fat tree the congestion that costs a
permutation its throughput is one hop further, at a spine's down port, where several
leaves happen to send to the same destination leaf at once; the leaves see it only
when the spine's input buffer from them is full, and by then a packet waits at its head
(docs/adaptive.md, "Where the rest goes").  Current switches add a notification from
the congested switch to the one before it:

- Mellanox's patent US 9,014,006 (Haramaty, Zahavi, Gabbay, Crupnicoff, Marelli,
  Bloch), "Adaptive routing using inter-switch notifications";
- Rocher-Gonzalez, Escudero-Sahuquillo, Garcia and Quiles, "Congestion management in
  high-performance interconnection networks using adaptive routing notifications"
  (arXiv 2502.00616), where the switch at the root of a congestion tree sends a small
  control packet naming the destination and the congested port upstream.

The subset ibemu models (``[routing] arn = true``, with adaptive routing):

- **Trigger** (:class:`Notifier`, in the switch that queues the packet): a packet that
  arrives on an input port and is queued for an output behind at least
  ``arn_threshold`` full packets' worth of bytes (MTU; default 1).  Bytes, not
  packets: an ACK ahead of a packet is no congestion (a shift by one leaf, which static
  routing carries without contention, sends ACKs down the same spine ports as data,
  and counting them as packets moved its flows for nothing).  The switch then notifies
  the input's upstream neighbour about the packet's DLID, at most once per
  ``arn_hold`` for each (input port, DLID).
- **Wire**: a six-byte link packet of ibemu's own (:func:`ibemu.wire.linkpkt.build_arn`:
  Op 2, reserved in IBA 7.9.4.1), sent as flow-control packets are, when the link is
  free, between packets, taking the link for its six bytes.  A node that does not route
  adaptively (an HCA, a static switch) counts it (``arn_ignored``) and drops it.
- **Reaction** (:class:`Marks`, in the adaptive switch that receives it): for
  ``arn_hold`` after it arrives, the port it came in on is not chosen for that DLID
  while another port of the group is not so marked (:meth:`Marks.usable`).  The static
  port of the LFT gets no preference while it is marked.
- **Deadlock freedom**: a notification only narrows a group for a while, never adds a
  port, so the credit-loop check over every port of every group
  (:mod:`ibemu.routing.cdg`) still covers every path a packet can take.
- Not modelled: notifications forwarded further upstream, congestion-tree isolation
  (Rocher-Gonzalez et al.'s reserved buffers), flows or flowlets (marks are per DLID),
  the vendor's packet format and timing.

Defaults, measured by the adaptive study (docs/adaptive.md): threshold 1, hold 10 µs
(about five 2 KiB packets at 4x SDR).  Sans-I/O: ``now`` is an argument.
"""
from __future__ import annotations

from typing import Final

__all__ = ["ARN_THRESHOLD", "ARN_HOLD", "Notifier", "Marks"]

ARN_THRESHOLD: Final = 1             # full packets (MTU bytes) waiting ahead
ARN_HOLD: Final = 10_000_000            # ps: 10 µs


class Notifier:
    """The sending side: when a packet queued for an output calls for a notification
    upstream (module text, "Trigger")."""
    __slots__ = ("hold", "ahead", "last")

    def __init__(self, threshold: int = ARN_THRESHOLD, hold: int = ARN_HOLD, mtu: int = 2048) -> None:
        if threshold < 1:
            raise ValueError("arn_threshold must be at least 1, got %d" % threshold)
        if hold <= 0:
            raise ValueError("arn_hold must be positive, got %d ps" % hold)
        self.hold = hold
        self.ahead = threshold * mtu        # bytes waiting ahead that make a notification
        self.last: dict[int, int] = {}      # (input port << 16 | DLID) -> when last notified

    def due(self, inp: int, dlid: int, ahead: int, now: int) -> bool:
        """Whether a packet to *dlid* from input *inp*, queued behind *ahead* bytes of
        packets waiting for its output, calls for a notification now (and record it if
        so)."""
        if ahead < self.ahead:
            return False
        key = (inp << 16) | dlid
        last = self.last.get(key)
        if last is not None and now - last < self.hold:
            return False
        self.last[key] = now
        return True


class Marks:
    """The receiving side: (port, DLID) pairs notified as congested, each until its
    hold ends (module text, "Reaction")."""
    __slots__ = ("hold", "until")

    def __init__(self, hold: int = ARN_HOLD) -> None:
        self.hold = hold
        self.until: dict[int, int] = {}     # (port << 16 | DLID) -> end of the mark

    def notified(self, port: int, dlid: int, now: int) -> None:
        self.until[(port << 16) | dlid] = now + self.hold

    def marked(self, port: int, dlid: int, now: int) -> bool:
        return self.until.get((port << 16) | dlid, -1) > now

    def usable(self, ports: list[int], dlid: int, now: int) -> list[int]:
        """The ports of *ports* not marked for *dlid*; all of them when every one is."""
        if not self.until:
            return ports
        free = [p for p in ports if not self.marked(p, dlid, now)]
        return free if free else ports
