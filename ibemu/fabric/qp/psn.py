"""PSN arithmetic and the OpCode classes of the RC and UD transports (IBA 9.7, 9.8).

PSNs are 24-bit sequence numbers: every sum is taken modulo :data:`PSN_MOD`, and a
difference ``(a - b) % PSN_MOD`` below :data:`PSN_HALF` means *a* is at or after *b*
(IBA 9.7.1: a PSN is valid within half the sequence space).  The queue pairs write the
arithmetic inline (it runs for every packet); the constants are here.
"""
from __future__ import annotations

from typing import Final

from ...wire import opcodes as OP

PSN_MOD: Final = 1 << 24
PSN_HALF: Final = 1 << 23
ACK_SYNDROME: Final = 0x1F      # AETH: ACK, credit count "invalid" (end-to-end credits not used)
NAK_PSN_SEQ: Final = 0x60       # AETH: NAK, PSN sequence error (IBA 9.7.5.1)

LAST_OPCODES: Final = frozenset((OP.RC_SEND_LAST, OP.RC_SEND_ONLY, OP.RC_RDMA_WRITE_LAST,
                                 OP.RC_RDMA_WRITE_ONLY, 0x03, 0x05, 0x09, 0x0B, 0x16, 0x17))
"""RC requests that end a message (the responder's MSN counts them)."""
RC_REQUESTS: Final = frozenset(list(range(0x00, 0x0D)) + [0x16, 0x17])
"""RC request OpCodes a responder takes: SEND, RDMA WRITE, RDMA READ request."""
RC_RESPONSES: Final = frozenset(range(OP.RC_RDMA_READ_RESPONSE_FIRST, OP.RC_ACKNOWLEDGE + 1))
"""RC responses a requester takes: RDMA READ responses, ACK, ATOMIC ACK."""
UD_SENDS: Final = frozenset((OP.UD_SEND_ONLY, OP.UD_SEND_ONLY + 1))
"""UD SEND-only, with and without immediate data."""
