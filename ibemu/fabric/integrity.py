"""End-to-end delivery checks (issue 8 acceptance): every RC message exactly once,
intact and in order; UD datagrams never duplicated; and no link credit leaked.

:class:`PayloadCheck` is attached to the queue pairs (:func:`attach`).  Their payloads
then carry a deterministic pattern of (flow, message, offset) instead of zeros, the
sending side records a digest of every message the first time it sends it, and the
receiving side a digest of every message as it is delivered (in order, RC; as it
arrives, UD).  :func:`verify` compares the two records; it takes plain dicts
(:meth:`PayloadCheck.export`), so records made in different processes -- the trio
runtime's workers -- can be merged and compared the same way.

:func:`credit_leaks` looks at a quiet fabric: on every directed link and data VL the
sender's FCTBS equals the receiver's ABR, the receiver's buffer is empty, and the sender
holds the whole buffer as credit; no switch queue or HCA response is left.
:func:`credit_state` and :func:`credit_problems` split that check in two, so that each
worker of the trio runtime reports the ends of links it runs and the controller checks
the merged reports.  Draining a fabric before the check (stopping the traffic, healing
the links) is test instrumentation: :mod:`ibemu.testing`.
"""
from __future__ import annotations

import hashlib
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .hca import HCA
from .node import Node
from .switch import Switch

if TYPE_CHECKING:
    from .network import Fabric


Record = dict[str, dict[str, list[Any]]]
"""``PayloadCheck.export()``: ``sent``/``received`` digests and ``ud_received`` PSNs, per flow."""


class FabricView(Protocol):
    """What the credit check reads of a built fabric (:class:`ibemu.fabric.network.Fabric`)."""
    @property
    def nodes(self) -> Mapping[str, Node]: ...
    @property
    def link_ends(self) -> Mapping[str, tuple[Any, ...]]: ...   # label -> (node, port, peer, peer_port)


class PayloadCheck:
    """Message digests on both sides, per flow."""

    def __init__(self) -> None:
        self.sent: dict[str, list[bytes]] = {}
        self.received: dict[str, list[bytes]] = {}
        self.ud_received: dict[str, list[int]] = {}    # UD: PSNs in arrival order
        self._tx: dict[str, hashlib.blake2b] = {}     # flow -> digest of the message being sent
        self._rx: dict[str, hashlib.blake2b] = {}     # flow -> digest of the message being received

    @staticmethod
    def payload(flow: str, msg: int, offset: int, n: int) -> bytes:
        """The payload bytes at *offset* of message *msg* of *flow* (64-byte pattern)."""
        seed = hashlib.blake2b(("%s/%d/%d" % (flow, msg, offset)).encode(), digest_size=64).digest()
        return (seed * (n // 64 + 1))[:n]

    def tx(self, flow: str, data: bytes, last: bool) -> None:
        h = self._tx.get(flow)
        if h is None:
            h = self._tx[flow] = hashlib.blake2b(digest_size=16)
        h.update(data)
        if last:
            self.sent.setdefault(flow, []).append(h.digest())
            del self._tx[flow]

    def rx(self, flow: str, data: bytes, last: bool, psn: int | None = None) -> None:
        h = self._rx.get(flow)
        if h is None:
            h = self._rx[flow] = hashlib.blake2b(digest_size=16)
        h.update(data)
        if last:
            self.received.setdefault(flow, []).append(h.digest())
            del self._rx[flow]
            if psn is not None:
                self.ud_received.setdefault(flow, []).append(psn)

    def export(self) -> Record:
        return {"sent": self.sent, "received": self.received, "ud_received": self.ud_received}


def merge_records(records: Iterable[Mapping[str, Mapping[str, Sequence[Any]]]]) -> Record:
    """One record from the ``export()`` of several processes' checks (a flow's sending
    and receiving ends each live in exactly one process)."""
    out: Record = {"sent": {}, "received": {}, "ud_received": {}}
    for rec in records:
        for part in out:
            for flow, items in rec.get(part, {}).items():
                out[part].setdefault(flow, []).extend(items)
    return out


def attach(fabric: Fabric, check: PayloadCheck | None = None) -> PayloadCheck:
    """Attach *check* (a new one by default) to both ends of every flow of *fabric*."""
    check = check or PayloadCheck()
    for snd, rcv in fabric.qps.values():
        snd.integrity = check
        rcv.integrity = check
    return check


def verify(record: Mapping[str, Mapping[str, Sequence[Any]]], ud_flows: Container[str] = (),
           complete: bool = True) -> list[str]:
    """Problems found in *record* (``PayloadCheck.export()``, or several merged).

    RC flows: the received digests must equal the sent ones in order (with *complete*,
    all of them; else a prefix: messages may still be in flight).  UD flows: every
    received datagram intact (its digest among the sent ones at its PSN) and no PSN
    twice; losses are allowed and counted by the caller.
    """
    problems: list[str] = []
    sent, received = record["sent"], record["received"]
    for flow in sorted(set(sent) | set(received)):
        s, r = sent.get(flow, []), received.get(flow, [])
        if flow in ud_flows:
            psns = record.get("ud_received", {}).get(flow, [])
            if len(set(psns)) != len(psns):
                problems.append("%s: a UD datagram was delivered twice" % flow)
            for psn, d in zip(psns, r):
                if psn >= len(s) or s[psn] != d:
                    problems.append("%s: UD datagram PSN %d corrupted" % (flow, psn))
                    break
            continue
        if len(r) > len(s):
            problems.append("%s: %d messages received, only %d sent (duplicates)" % (flow, len(r), len(s)))
        for i, (a, b) in enumerate(zip(s, r)):
            if a != b:
                problems.append("%s: message %d differs (corrupted, duplicated or out of order)" % (flow, i))
                break
        if complete and len(r) < len(s):
            problems.append("%s: %d of %d messages delivered" % (flow, len(r), len(s)))
    return problems


def credit_leaks(fabric: FabricView) -> list[str]:
    """Credit and buffer state that is not back to idle (see the module docstring)."""
    return credit_problems([credit_state(fabric)])


def credit_state(fabric: FabricView, names: Iterable[str] | None = None) -> dict[str, Any]:
    """The credit and queue state of the nodes *names* (default: all), JSON-ready, for
    :func:`credit_problems`: a process of the trio runtime reports the ends of links it
    runs, and the controller merges the reports of all of them."""
    here = set(fabric.nodes) if names is None else set(names)
    links: dict[str, dict[str, list[list[int]]]] = {}
    for label, (a, pa, b, pb) in sorted(fabric.link_ends.items()):
        entry: dict[str, list[list[int]]] = {}
        if a in here:
            entry["tx"] = [[tx.fctbs, tx.available(), tx.fccl] for tx in fabric.nodes[a].ports[pa].tx]
        if b in here:
            entry["rx"] = [[rx.abr, rx.used, rx.capacity] for rx in fabric.nodes[b].ports[pb].rx]
        if entry:
            links[label] = entry
    nodes: dict[str, list[int]] = {}
    for name in sorted(here):
        node = fabric.nodes[name]
        queued = sum(node.queued.values()) if isinstance(node, Switch) else 0  # packets in output queues
        ctrl = len(node.ctrl) if isinstance(node, HCA) else 0      # responses (ACKs, CNPs) to send
        nodes[name] = [queued, ctrl]
    return {"links": links, "nodes": nodes}


def credit_problems(states: Iterable[Mapping[str, Any]]) -> list[str]:
    """Problems in the merged :func:`credit_state` reports *states* (a link is checked
    when both its ends were reported)."""
    links: dict[str, dict[str, Any]] = {}
    nodes: dict[str, list[int]] = {}
    for st in states:
        for label, entry in st["links"].items():
            links.setdefault(label, {}).update(entry)
        nodes.update(st["nodes"])
    problems: list[str] = []
    for label, entry in sorted(links.items()):
        if "tx" not in entry or "rx" not in entry:
            continue
        for vl, ((fctbs, available, fccl), (abr, used, capacity)) in enumerate(zip(entry["tx"], entry["rx"])):
            where = "%s VL%d" % (label, vl)
            if used:
                problems.append("%s: %d blocks still held in the receive buffer" % (where, used))
            if fctbs != abr:
                problems.append("%s: FCTBS %d != ABR %d" % (where, fctbs, abr))
            if available != capacity:
                problems.append("%s: sender has %d of %d blocks of credit (FCCL %d, FCTBS %d)"
                                % (where, available, capacity, fccl, fctbs))
    for name, (queued, ctrl) in sorted(nodes.items()):
        if queued:
            problems.append("%s: %d packets still queued" % (name, queued))
        if ctrl:
            problems.append("%s: %d responses not sent" % (name, ctrl))
    return problems

