"""Where congestion control plugs into the fabric: the hooks the nodes and queue pairs
call, declared as Protocols (issue 12; DESIGN §7 "Schemes are plug-ins").

A scheme (:mod:`ibemu.cc`) implements these and attaches them with the nodes' and queue
pairs' own operations -- ``Switch.attach_marker``, ``HCA.attach_notifier``,
``SenderBase.attach_response``, ``Node.attach_cc_agent``, ``HCA.attach_qp`` -- and acts on
the fabric only through the operations offered for it: ``HCA.send_control`` and
``HCA.kick`` (send a control packet, try to send now), ``Switch.inject`` (a packet from
the switch's own port 0), ``SenderBase.set_window``, ``SenderBase.reschedule`` and
``SenderBase.set_ipd``.  It never replaces a method and never writes another object's
fields.  ``now`` is emulated time in integer picoseconds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..wire.layout import Buf
    from .hca import HCA
    from .qp.sender import SenderBase
    from .switch import Switch
    from .xport import Entry


class Marker(Protocol):
    """Switch marking (``Switch.marker``; seed 003 §5, IBA annex A10 Threshold and
    Marking_Rate).  Sees every packet arrive, start on its output link and leave."""

    def on_arrival(self, sw: Switch, e: Entry, now: int) -> None:
        """The packet's first byte arrived and it was queued for its output port."""

    def on_transmit(self, sw: Switch, e: Entry, now: int) -> None:
        """The packet starts on its output link: the place to set FECN."""

    def on_departure(self, sw: Switch, e: Entry, now: int) -> None:
        """Its last byte left: its input buffer space is free again."""


class Notifier(Protocol):
    """What a destination does about the marks it receives (``HCA.attach_notifier``;
    seed 000 §3 and §6.2).  The transport's own echo -- BECN in ACKs, CNPs for marked UD
    packets, READ responses and ACKs -- is built in; a notifier sees each packet a QP
    took and the reply the transport built, and returns the reply to send."""

    def on_packet(self, hca: HCA, now: int, frame: Buf, reply: bytearray | None) -> bytearray | None:
        """After the QP took *frame*; returns *reply* (possibly changed) or None."""


class SourceResponse(Protocol):
    """The source response of a sending QP (``SenderBase.attach_response``; seed 000 §5,
    IBA annex A10 CCTI/CCT)."""

    def gap(self, qp: SenderBase, nbytes: int, t: int) -> int:
        """Time from a packet's start to the next one's (at least *t*, the static rate's)."""

    def on_sent(self, qp: SenderBase, now: int, frame: bytes | bytearray) -> None:
        """A data packet (or a retransmission) started."""

    def on_ack(self, qp: SenderBase, now: int, psn: int, n: int, becn: int) -> None:
        """An ACK or READ response newly acknowledged *n* packets up to *psn*."""

    def on_cnp(self, qp: SenderBase, now: int) -> None:
        """A congestion notification packet for this QP arrived."""


class CCAttributes(Protocol):
    """A node's congestion-control attributes as the management agent reads and writes
    them with CC MADs (``Node.attach_cc_agent``; IBA annex A10)."""

    def get_attribute(self, attr_id: int, attr_mod: int, now: int) -> bytes | None: ...

    def set_attribute(self, attr_id: int, attr_mod: int, data: bytes, now: int) -> bytes | None: ...


class MessageSink(Protocol):
    """Told when an RC responder delivered a message whole (``RCResponder.sink``; a job's
    rank, issue 29): its last packet was taken in order at *now*."""

    def delivered(self, now: int) -> None: ...


class PacketHandler(Protocol):
    """A QP's receive side as the HCA calls it (``HCA.attach_qp``): returns a reply
    frame to send ahead of data, or None."""

    def on_packet(self, now: int, frame: Buf) -> bytearray | None: ...
