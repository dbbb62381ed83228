"""The exact clock's messages in shared memory (issue 27 Deliver 1, one host): a file
that the controller makes and every worker maps, written without locks::

    per directed link of the fabric (addrmap.port_keys order), by its sender:
        a_round+1 | a_count                                  2 x uint64
    then per worker (the placement's order), by that worker:
        n_round+1 | n_time | n_seq                           3 x uint64, little-endian

A record is written fields first and round last; a reader reads the round first
(aligned 8-byte stores and loads, in program order on x86-64), so a round it sees is
never paired with older fields.  A round is stored plus one: 0 means nothing yet.  The
placement (the node names of each worker) is in ``FILE.json`` beside it.

Phase B here is one step: each worker writes its earliest key and reads every other's,
so its limit is exact at once: the least over the other workers k of their key carried
over the cheapest path of cut links from k to it (:func:`.syncproto.distances`,
:func:`.syncproto.bound`); and the run is over when every key is at or after the end.
The frames themselves still travel as datagrams (captures and live Wireshark see them);
only the counts and keys skip the sockets, which costs a store instead of two system
calls and a MAC per message.
"""
from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..sim.scheduler import INF
from .portsocket import PortSocket
from .syncproto import PHASE_A, FOREVER, InLink, bound, distances

_U64 = struct.Struct("<Q")
_A = struct.Struct("<2Q")
_KEY = struct.Struct("<2Q")
LINK_RECORD = 16
WORKER_RECORD = 24


def create_sync_file(path: str | Path, links: int, groups: Sequence[Sequence[str]]) -> Path:
    """The zeroed file of an exact run with *links* link records and one worker record
    per group of *groups*, and its placement beside it (the controller's)."""
    p = Path(path)
    p.write_bytes(bytes(LINK_RECORD * max(1, links) + WORKER_RECORD * len(groups)))
    Path(str(p) + ".json").write_text(json.dumps({"links": links, "groups": [list(g) for g in groups]}))
    return p


class ShmSync:
    """The shared-memory transport (:class:`.syncproto.Transport`).  *index*: a link's
    record number from its sending port's ``(node name, port)``; *wiring*: the fabric's
    ``(node, port) -> (peer, peer_port, propagation)``; *mine*: this worker's node
    names; *drain*: reads the cut links' sockets (frames still come as datagrams);
    *duration*: the end of the run (ps)."""

    def __init__(self, path: str | Path, sockets: Sequence[PortSocket], index: Callable[[str, int], int],
                 wiring: Mapping[Any, Any], mine: Sequence[str], drain: Callable[[], None],
                 duration: int) -> None:
        meta = json.loads(Path(str(path) + ".json").read_text())
        groups: list[list[str]] = meta["groups"]
        owner = {n: i for i, g in enumerate(groups) for n in g}
        me = {owner.get(n) for n in mine}
        if len(me) != 1 or None in me:
            raise ValueError("%s: this worker's nodes %s are not one group of the placement" % (path, list(mine)))
        self.me: int = me.pop()                                     # type: ignore[assignment]
        self.workers = len(groups)
        cut = [(owner[n.name], owner[p.name], prop) for (n, _pt), (p, _pp, prop) in wiring.items()
               if n.name in owner and p.name in owner and owner[n.name] != owner[p.name]]
        dist = distances(self.workers, cut)
        self.to_me = [(k, dist[k][self.me]) for k in range(self.workers) if k != self.me and dist[k][self.me]]
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
        self._wbase = LINK_RECORD * max(1, int(meta["links"]))
        if self._wbase + WORKER_RECORD * self.workers > len(self._map):
            raise ValueError("%s: too short for its placement" % path)
        self.drain = drain
        self.duration = duration
        remote = [ps for ps in sockets if ps.remote]
        self.out_at = {ps: index(ps.node.name, ps.index) * LINK_RECORD for ps in remote}
        self.links: dict[PortSocket, InLink] = {ps: InLink("%s:%d" % (ps.node.name, ps.index)) for ps in remote}
        self._in = [(self.links[ps], index(*ps.peer_key) * LINK_RECORD) for ps in remote]

    def send_count(self, ps: Any, rnd: int, count: int) -> None:
        off = self.out_at[ps]
        _U64.pack_into(self._map, off + 8, count)
        _U64.pack_into(self._map, off, rnd + 1)         # the round last (the module text)

    def inbound(self, ps: Any) -> InLink:
        return self.links[ps]

    def poll(self) -> None:
        self.drain()
        m = self._map
        u64 = _U64.unpack_from
        for link, off in self._in:
            ar = u64(m, off)[0] - 1                     # the round first (the module text)
            if ar > link.a_round:
                link.take(PHASE_A, 0, ar, u64(m, off + 8)[0], 0, 0, 0)

    def _round_of(self, k: int) -> int:
        return int(_U64.unpack_from(self._map, self._wbase + WORKER_RECORD * k)[0]) - 1

    async def phase_b(self, driver: Any, rnd: int, key: tuple[int, int], idle: bool) -> tuple[tuple[int, int], bool]:
        m = self._map
        off = self._wbase + WORKER_RECORD * self.me
        t = FOREVER if key[0] >= INF else key[0]
        _KEY.pack_into(m, off + 8, t, key[1])
        _U64.pack_into(m, off, rnd + 1)
        others = range(self.workers)
        await driver.wait(lambda: all(self._round_of(k) >= rnd for k in others), "key")
        keys = [_KEY.unpack_from(m, self._wbase + WORKER_RECORD * k + 8) for k in others]
        limit: tuple[int, int] = (INF, 0)
        for k, (props, hops) in self.to_me:         # type: ignore[misc]
            kt, ks = keys[k]
            if kt < FOREVER:
                b = bound(kt, ks, props, hops)
                if b < limit:
                    limit = b
        done = all(kt >= self.duration for kt, _ in keys)
        return limit, done

    def close(self) -> None:
        self._map.close()
