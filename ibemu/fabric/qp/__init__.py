"""Queue pairs: the RC transport (SEND, RDMA WRITE, RDMA READ) and UD.

- :mod:`.psn` -- PSN arithmetic constants, AETH syndromes, OpCode classes;
- :mod:`.sender` -- :class:`SenderBase` (connection, rate limit, congestion-control
  hook; every sending QP) and :class:`FlowSource` (window and generator; the source of
  a flow);
- :mod:`.requester` -- :class:`RCRequester`: data or READ requests, go-back-N recovery;
- :mod:`.responder` -- :class:`RCResponder`: PSN check, ACK/NAK, READ responses;
- :mod:`.ud` -- :class:`UDSender`, :class:`UDReceiver`;
- :mod:`.cnp` -- the CNP answering a FECN-marked packet (IBA A10).

Sender side (``ready``/``next_size``/``next_packet``), receiver side (``on_packet``,
which returns an ACK, NAK or CNP to send, or None).  IBA 9.7 / 9.8; seed 000 §3 / §5.1
for the window, AckReq and notification rules.

Congestion notification is always on, because nothing is marked unless a
congestion-control scheme marks it: an RC ACK carries BECN equal to the FECN of the last
packet it acknowledges (and a FECN-marked data packet ends ACK coalescing); a FECN-marked
UD packet, READ response or ACK is answered with one CNP (opcode 0x80, BECN set, no
payload) to the QP that sent it.

Payload checking: with ``qp.integrity`` set (:mod:`ibemu.fabric.integrity`) payloads
carry a deterministic pattern of (flow, message, offset) and both ends record message
digests, so a test can prove delivery exactly once, intact and in order.
"""
from __future__ import annotations

from ...wire.fields import get_psn, payload_len, payload_of, set_ackreq
from ...wire.layout import packet_size as wire_size
from ..traffic import INF
from .cnp import answer_cnp
from .psn import (ACK_SYNDROME, LAST_OPCODES, NAK_PSN_SEQ, PSN_HALF, PSN_MOD, RC_REQUESTS,
                  RC_RESPONSES, UD_SENDS)
from .requester import RCRequester
from .responder import RCResponder
from .sender import FlowSource, SenderBase
from .ud import UDReceiver, UDSender

__all__ = ["RCRequester", "RCResponder", "UDSender", "UDReceiver", "SenderBase", "FlowSource",
           "answer_cnp", "INF", "wire_size", "payload_len", "payload_of", "get_psn", "set_ackreq",
           "NAK_PSN_SEQ", "ACK_SYNDROME", "PSN_MOD", "PSN_HALF", "LAST_OPCODES", "RC_REQUESTS",
           "RC_RESPONSES", "UD_SENDS"]
