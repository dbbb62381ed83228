"""Link fault injection (issue 8 item 2): loss, duplication, reordering, bit corruption
and link down/up, per directed link, seeded and deterministic.

Sans-I/O, like the nodes: the *sending* side of a link consults a
:class:`LinkFaultInjector` for every frame it starts --
``transmit(now, frame, link) -> [(extra_delay_ps, frame, seq), ...]`` -- and delivers
what it returns (nothing: lost; two entries: duplicated); the *receiving* side passes
each delivery's link sequence number to :class:`DuplicateFilter.accept` and drops the
frame when it says False.  The virtual-time engine does both (:mod:`ibemu.sim.engine`); the
trio runtime applies the injector at the sending socket and the filter, with the shim's
per-link sequence number, at the receiving one (a duplicate carries the same sequence
number as its original).

Semantics (where the issue was silent, ibemu's documented choices):

- every frame started on a faulty link -- data, ACKs, CNPs and link flow-control
  packets alike -- draws, in this order, loss, corruption, reordering and duplication
  from the link's own RNG, seeded from the scenario seed and the link label, so a run
  is a pure function of scenario and seed and one link's faults do not shift another's;
- *loss* (probability): the frame never arrives;
- *corrupt* (probability): one bit, chosen uniformly over the frame, is flipped in a
  copy; the receiver's VCRC (or LPCRC) check finds it and counts PortRcvErrors;
- *reorder* (probability, with *reorder_depth* D >= 1): the frame is held back by
  k·T + 1 ps, k uniform in 1..D and T its own serialisation time, so up to D
  back-to-back frames of its size overtake it;
- *duplicate* (probability): a second copy follows the first 1 ps later (with the
  same sequence number); the link layer's :class:`DuplicateFilter` drops it and counts
  it, so nothing above the link ever sees a duplicate (UD datagrams are never
  duplicated; RC duplicates come only from retransmission);
- *down* ([start, end) intervals, ps): every frame started while the link is down is
  lost (counted ``down_dropped``).  A link's down intervals apply to both its
  directions.  When it comes back, the cumulative FCTBS/FCCL of the next flow-control
  packets (at least one per ``fc_period``) restore the credits and RC retransmission
  resends what was lost: the link resumes by itself.
"""
from __future__ import annotations

import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..units import PS_PER_S

if TYPE_CHECKING:
    from .node import Node

STAT_KEYS = ("sent", "lost", "corrupted", "reordered", "duplicated", "down_dropped",
             "duplicates_dropped")


@dataclass
class LinkFaults:
    """What may happen to the frames of one directed link (probabilities in [0, 1])."""
    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_depth: int = 3
    corrupt: float = 0.0
    down: list[tuple[int, int]] = field(default_factory=list)   # [start, end) in ps

    def active(self) -> bool:
        return bool(self.loss or self.duplicate or self.reorder or self.corrupt or self.down)


@dataclass
class FaultSpec:
    """A scenario's ``[faults]``: *all* for every directed link, *links* for the ones
    named (a per-link entry is complete: the loader merged the all-links values in)."""
    all: LinkFaults | None = None
    links: dict[str, LinkFaults] = field(default_factory=dict)

    def for_link(self, label: str) -> LinkFaults | None:
        f = self.links.get(label, self.all)
        return f if f is not None and f.active() else None

    def active(self) -> bool:
        return (self.all is not None and self.all.active()) or any(f.active() for f in self.links.values())


def link_seed(seed: int, label: str) -> int:
    """The RNG seed of one directed link's faults (as the ON/OFF generators seed theirs)."""
    return (seed << 32) ^ zlib.crc32(("faults:" + label).encode())


class DuplicateFilter:
    """The receiving end of a link: drops a frame whose link sequence number it has
    already seen.  Remembers the last *window* numbers; older ones count as seen."""
    __slots__ = ("seen", "high", "window", "dropped")

    def __init__(self, window: int = 1 << 16):
        self.seen: set[int] = set()
        self.high = 0
        self.window = window
        self.dropped = 0

    def accept(self, seq: int) -> bool:
        if seq in self.seen or seq <= self.high - self.window:
            self.dropped += 1
            return False
        self.seen.add(seq)
        if seq > self.high:
            self.high = seq
            if len(self.seen) > 2 * self.window:
                low = seq - self.window
                self.seen = {s for s in self.seen if s > low}
        return True


class LinkFaultInjector:
    """The sending end of one directed link under *faults*; *rate* in bytes/s (for the
    reordering delay).  ``enabled`` may be cleared to heal the link (e.g. to let a test
    settle the credits once traffic has stopped).  *node* and *port* name the sending
    end in a built fabric (:func:`make_injectors` sets them; a stand-alone injector has
    none)."""

    def __init__(self, faults: LinkFaults, seed: int, label: str, rate: int, *,
                 node: Node | None = None, port: int = 0) -> None:
        self.faults = faults
        self.label = label
        self.rate = rate
        self.node = node
        self.port = port
        self.rng = random.Random(link_seed(seed, label))
        self.seq = 0
        self.enabled = True
        self.filter = DuplicateFilter()
        self.stats = dict.fromkeys(STAT_KEYS, 0)

    def is_down(self, now: int) -> bool:
        return any(a <= now < b for a, b in self.faults.down)

    def transmit(self, now: int, frame: bytes | bytearray,
                 link: bool = False) -> list[tuple[int, bytes | bytearray, int]]:
        """The deliveries of a frame started at *now*: ``[(extra_delay_ps, frame, seq)]``."""
        self.seq += 1
        seq = self.seq
        st = self.stats
        st["sent"] += 1
        if not self.enabled:
            return [(0, frame, seq)]
        f, rng = self.faults, self.rng
        if f.down and self.is_down(now):
            st["down_dropped"] += 1
            return []
        r_loss, r_corrupt, r_reorder, r_dup = rng.random(), rng.random(), rng.random(), rng.random()
        if r_loss < f.loss:
            st["lost"] += 1
            return []
        if r_corrupt < f.corrupt:
            frame = bytearray(frame)
            bit = rng.randrange(len(frame) * 8)
            frame[bit >> 3] ^= 1 << (bit & 7)
            st["corrupted"] += 1
        delay = 0
        if r_reorder < f.reorder:
            t = -(-len(frame) * PS_PER_S // self.rate)
            delay = rng.randint(1, max(1, f.reorder_depth)) * t + 1
            st["reordered"] += 1
        out = [(delay, frame, seq)]
        if r_dup < f.duplicate:
            out.append((delay + 1, bytearray(frame), seq))
            st["duplicated"] += 1
        return out

    def accept(self, seq: int) -> bool:
        """The receiving end's duplicate check (see :class:`DuplicateFilter`)."""
        if self.filter.accept(seq):
            return True
        self.stats["duplicates_dropped"] += 1
        return False


class BuiltFabric(Protocol):
    """What :func:`make_injectors` reads of a built fabric (:class:`ibemu.fabric.network.Fabric`)."""
    @property
    def nodes(self) -> Mapping[str, Node]: ...
    @property
    def link_ends(self) -> Mapping[str, tuple[str, int, str, int]]: ...   # label -> (node, port, peer, peer_port)
    @property
    def link_capacity(self) -> Mapping[str, int]: ...                     # label -> bytes/s


def make_injectors(fabric: BuiltFabric, spec: FaultSpec | None, seed: int) -> dict[str, LinkFaultInjector]:
    """One injector per faulty directed link of a built fabric: ``{label: injector}``,
    each with ``.node`` (the sending node object) and ``.port`` set."""
    out: dict[str, LinkFaultInjector] = {}
    if spec is None:
        return out
    for label, (a, pa, _b, _pb) in fabric.link_ends.items():
        f = spec.for_link(label)
        if f is None:
            continue
        out[label] = LinkFaultInjector(f, seed, label, fabric.link_capacity[label], node=fabric.nodes[a], port=pa)
    return out


def engine_faults(injectors: Mapping[str, LinkFaultInjector]) -> dict[tuple[Node | None, int], LinkFaultInjector]:
    """``{(node, port): injector}`` as :class:`ibemu.sim.engine.VirtualEngine` takes it."""
    return {(inj.node, inj.port): inj for inj in injectors.values()}


def fault_counters(injectors: Mapping[str, LinkFaultInjector]) -> dict[str, dict[str, int]]:
    """Per-link fault statistics for results: ``{"link:<label>": {stat: n}}``."""
    return {"link:" + label: {k: v for k, v in inj.stats.items() if v}
            for label, inj in sorted(injectors.items())}
