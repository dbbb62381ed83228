"""The shape every collective expansion returns (issue 29 Deliver 1): for each rank, a
list of rounds; a round is the messages the rank posts at once, ``(peer, bytes)``, and
the peers it must then receive one message from each (a peer named twice: two
messages), before its next round may start -- the MPI semantics of a sendrecv, or of
isends and irecvs closed by a waitall.

Messages between the same two ranks are matched in order (MPI's non-overtaking rule on
one communicator and tag), so a rank counts messages per peer and needs no tags.
A message carries at least one byte: an empty MPI message still travels as a packet (an
IBA SEND Only of no payload; ibemu's requester starts a message by its size, so it
sends one byte).
"""
from __future__ import annotations

from typing import TypeAlias

Send: TypeAlias = "tuple[int, int]"
"""(peer rank, bytes)."""
Round: TypeAlias = "tuple[list[tuple[int, int]], list[int]]"
"""(messages posted at once, peers received from before the next round)."""
Schedule: TypeAlias = "list[list[tuple[list[tuple[int, int]], list[int]]]]"
"""Per rank, its rounds in order."""


def at_least_one(nbytes: int) -> int:
    """A message's size in bytes: *nbytes*, but never less than one (see the module)."""
    return nbytes if nbytes > 0 else 1


def chunks(size: int, n: int) -> list[int]:
    """*size* bytes split into *n* chunks as evenly as whole bytes allow (the first
    ``size % n`` one byte larger), as ring algorithms split their buffer."""
    base, extra = divmod(size, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def check_ranks(n: int, least: int = 2) -> None:
    """Refuse fewer than *least* ranks."""
    if n < least:
        raise ValueError("needs at least %d ranks, got %d" % (least, n))


def power_of_two(n: int) -> int:
    """log2(*n*); a ValueError unless *n* is a power of two."""
    if n < 1 or n & (n - 1):
        raise ValueError("needs a power-of-two number of ranks, got %d" % n)
    return n.bit_length() - 1
