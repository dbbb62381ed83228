"""The order of the events of one instant (issue 27 Deliver 2; :mod:`.scheduler`).

Events run in the order of their *key* ``(time, seq)``,
and *seq* is not a counter of insertions but is derived from the model alone
(:func:`order`), so that every placement of the nodes on processes, and the virtual
clock, runs every node's events in one and the same order::

    seq = depth << 56 | node << 38 | port << 29 | link_seq mod 2**29

- *depth*: how many events of the same instant lie behind this one: an event made by
  an event at the same emulated time (a zero-delay reaction over a link without
  propagation, a timer armed for *now*) has its maker's depth plus one; any other has
  depth 0.  Causes therefore run before their effects at one instant, and a key made
  while an event runs is always greater than that event's key: the heap pops keys in
  increasing order, a pure function of the model.
- *node*: the node's index in the fabric (``SimNode.sched_id``, the build order);
- *port*: the receiving port's *rank* at that instant (:func:`port_rank`): a permutation
  of the node's ports drawn afresh for every instant from the time and the node, so that
  no port wins every tie (ordering simultaneous arrivals by port number would favour
  port 1 over port 2 at every instant: with greedy flows of equal packets on equal links,
  arrivals tie at every packet, and a switch's FIFOs would serve the low ports first);
  :data:`WAKE_PORT` for a deadline, so at one (time, depth) a node takes the frames that
  arrived before its own timers;
- *link_seq*: the frame's number on its directed link (1, 2, ...: the shim's sequence
  number on the wall clock), which keeps a link's frames of one instant in the order
  they were sent.

Before issue 27, *seq* counted insertions into one heap, so events of one instant ran
first in, first out, and that order depended on which events shared a heap: a worker's
heap holds only its own nodes.  The derived key changes the order of simultaneous events
only (never their times), and only where the old order was an accident of insertion.
"""
from __future__ import annotations

from typing import Final

from mypy_extensions import i64

DEPTH_SHIFT: Final = 56
NODE_SHIFT: Final = 38
PORT_SHIFT: Final = 29
LSEQ_MASK: Final = (1 << 29) - 1
MAX_DEPTH: Final = 63
"""Depths beyond it are counted as it (64 zero-delay reactions in one instant)."""
MAX_NODES: Final = 1 << 18
MAX_PORT: Final = 507
"""The highest port number a scheduler orders (IBA switches have at most 254)."""
WAKE_PORT: Final = 511
"""The *port* field of a deadline's key: after every port's deliveries (the module text)."""


def order(depth: int, node: int, port: int, link_seq: int = 0) -> int:
    """The *seq* of an event's key (the module text): *depth* at its instant, the *node*'s
    index, the receiving *port* (:data:`WAKE_PORT` for a deadline), the frame's
    *link_seq* on its directed link."""
    if depth > MAX_DEPTH:
        depth = MAX_DEPTH
    return (depth << DEPTH_SHIFT) | (node << NODE_SHIFT) | (port << PORT_SHIFT) | (link_seq & LSEQ_MASK)


def port_rank(t: i64, node: i64, port: i64) -> i64:
    """The place, 1 to 508, of *port* among *node*'s simultaneous arrivals at time *t*
    (the module text): ``(port + 1) * a mod 509`` with 509 prime and the multiplier
    ``a`` in 1..508 drawn from *t* and *node* by a multiplicative hash (Knuth's
    2654435761 on 26 bits, so that every product fits a machine word), a permutation of
    the ports 0..507 that changes from instant to instant."""
    # 64-bit ints (i64) in the compiled core: plain machine arithmetic, where a Python
    # int's every operation checks for a boxed value (issue 28: 3 % of the event loop).
    # Every value fits: t < 2**63, x < 2**26, x * 2654435761 < 2**58.
    x = (t ^ (t >> 26) ^ (t >> 47) ^ node) & 0x3FFFFFF
    a = 1 + ((x * 2654435761) >> 20) % 508
    return ((port + 1) * a) % 509


def arrival_order(depth: int, t: int, node: int, port: int, link_seq: int) -> int:
    """:func:`order` of a frame's arrival on *node*'s *port* at *t* (its port's rank)."""
    return order(depth, node, port_rank(t, node, port), link_seq)


def depth_of(seq: int) -> int:
    """The depth field of an event's *seq*."""
    return seq >> DEPTH_SHIFT
