"""The exact clock's messages in shared memory (issue 27 Deliver 1, one host): a file
that the controller makes and every worker maps, written without locks::

    per directed link of the fabric (the wiring's order), by its sender:
        count                                   frame datagrams sent on it so far
    then per worker (the placement's order), by that worker, two of them (even rounds,
    odd rounds: a worker may write its next round's while a slower one still reads this
    one's, never two rounds ahead):
        round+1 | H_time | H_seq | (M_time | M_seq) x workers          uint64 words

Every field is an aligned 64-bit word in the machine's byte order, written and read
whole (a ``memoryview`` cast to ``Q``: one 8-byte store or load, never torn, where
``struct`` would copy byte by byte and a reader could catch half of a change from 255
to 256). A worker writes its record fields first and round last; a reader reads the
round first (program order on x86-64), so a round it sees is never paired with older
fields.  A round is stored plus one: 0 means nothing yet.  The placement (the node
names of each worker) is in ``FILE.json`` beside it.

Here a round needs one barrier instead of :mod:`.syncnet`'s phases A and B, because
every worker reads every record.  After its window a worker writes its link counts, the
key H of its earliest pending event (the frames sent to it in the window not yet taken
in), and for each worker d the least arrival key M_d of the frames it sent to d in the
window.  Once every worker's record of the round is in, each computes every worker k's
earliest key ``N_k = min(H_k, M_i->k over every i)`` -- every frame in flight is
counted -- and its limit, the least over the other workers k of N_k carried over the
cheapest path of cut links from k to it (:func:`.syncproto.distances`,
:func:`.syncproto.bound`); the run is over when every N_k is at or after the end.  Then
it takes in the frames its links counted, and runs its next window.  The frames
themselves still travel as datagrams (captures and live Wireshark see them); only the
counts and keys skip the sockets.
"""
from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..sim.scheduler import INF
from .portsocket import PortSocket
from .syncproto import FOREVER, InLink, bound, distances

SPIN = 200
"""Reads of a round word in a tight loop before waiting the driver's way (yielding the CPU)."""
LINK_RECORD = 8


def worker_record(workers: int) -> int:
    """Bytes of a worker's two records (even and odd rounds) in a run of *workers*."""
    return 2 * 8 * (3 + 2 * workers)


def create_sync_file(path: str | Path, links: int, groups: Sequence[Sequence[str]]) -> Path:
    """The zeroed file of an exact run with *links* link records and one worker record
    per group of *groups*, and its placement beside it (the controller's)."""
    p = Path(path)
    p.write_bytes(bytes(LINK_RECORD * max(1, links) + worker_record(len(groups)) * len(groups)))
    Path(str(p) + ".json").write_text(json.dumps({"links": links, "groups": [list(g) for g in groups]}))
    return p


def _key(t: int, seq: int) -> tuple[int, int]:
    return (FOREVER, 0) if t >= INF else (t, seq)


class ShmSync:
    """The shared-memory transport (:class:`.syncproto.Transport`).  *index*: a link's
    record number from its sending port's ``(node name, port)``; *wiring*: the fabric's
    ``(node, port) -> (peer, peer_port, propagation)``; *mine*: this worker's node
    names; *drain*: reads the cut links' sockets (frames still come as datagrams);
    *duration*: the end of the run (ps); *take*: reads one cut link's socket (the
    frames it counted were sent before, so they are there: no poll of every socket)."""

    def __init__(self, path: str | Path, sockets: Sequence[PortSocket], index: Callable[[str, int], int],
                 wiring: Mapping[Any, Any], mine: Sequence[str], drain: Callable[[], None],
                 duration: int, take: Callable[[PortSocket], object] | None = None) -> None:
        meta = json.loads(Path(str(path) + ".json").read_text())
        groups: list[list[str]] = meta["groups"]
        owner = {n: i for i, g in enumerate(groups) for n in g}
        me = {owner.get(n) for n in mine}
        if len(me) != 1 or None in me:
            raise ValueError("%s: this worker's nodes %s are not one group of the placement" % (path, list(mine)))
        self.me: int = me.pop()                                     # type: ignore[assignment]
        self.workers = w = len(groups)
        cut = [(owner[n.name], owner[p.name], prop) for (n, _pt), (p, _pp, prop) in wiring.items()
               if n.name in owner and p.name in owner and owner[n.name] != owner[p.name]]
        dist = distances(w, cut)
        self.to_me = [(k, wk) for k in range(w) if k != self.me and (wk := dist[k][self.me]) is not None]
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
        self._rec = worker_record(w)
        self._wbase = LINK_RECORD * max(1, int(meta["links"]))
        if self._wbase + self._rec * w > len(self._map):
            raise ValueError("%s: too short for its placement" % path)
        self._words = memoryview(self._map).cast("Q")          # 8-byte words (the module text)
        self.drain = drain
        self.duration = duration
        self.remote = [ps for ps in sockets if ps.remote]
        self.out_at = [(ps, index(ps.node.name, ps.index) * LINK_RECORD, owner[ps.peer_key[0]]) for ps in self.remote]
        self.in_at = [(ps, index(*ps.peer_key) * LINK_RECORD) for ps in self.remote]
        self.links: dict[PortSocket, InLink] = {ps: InLink("%s:%d" % (ps.node.name, ps.index)) for ps in self.remote}
        self._others = [k for k in range(w) if k != self.me]
        self._out_words = [(ps, off >> 3, dest) for ps, off, dest in self.out_at]
        self._in_words = [(ps, off >> 3) for ps, off in self.in_at]
        self.take = take
        self._sent = [FOREVER] * (2 * w)                # (M_time, M_seq) per destination, per round
        self._lay = (self._layout(0), self._layout(1))

    def inbound(self, ps: Any) -> InLink:
        return self.links[ps]

    def poll(self) -> None:
        self.drain()

    def _layout(self, parity: int) -> tuple[int, list[int], list[tuple[int, int, int, list[int]]], list[int]]:
        """The words of the rounds of *parity* (even, odd): this worker's record, the
        others' round words, per worker k that can reach this one its key's word, its
        path (props, hops) and the words of the frames in flight to it, and every time
        word the stop rule reads (precomputed: a round then reads words, no arithmetic)."""
        w = self.workers
        starts = [(self._wbase + self._rec * k + (self._rec // 2) * parity) >> 3 for k in range(w)]
        reach = [(starts[k] + 1, props, hops, [starts[i] + 3 + 2 * k for i in range(w)])
                 for k, (props, hops) in self.to_me]
        times = [starts[k] + 1 for k in range(w)] + [starts[i] + 3 + 2 * k for i in range(w) for k in range(w)]
        return starts[self.me], [starts[k] for k in self._others], reach, times

    async def exchange(self, driver: Any, rnd: int) -> tuple[tuple[int, int], bool]:
        words = self._words
        mine, others, reach, times = self._lay[rnd & 1]
        sent = self._sent
        for i in range(len(sent)):
            sent[i] = FOREVER
        for ps, word, dest in self._out_words:
            words[word] = ps.frames_sent()
            mt = ps.win_t
            if mt < INF:
                i = 2 * dest
                if mt < sent[i] or (mt == sent[i] and ps.win_s < sent[i + 1]):
                    sent[i] = mt
                    sent[i + 1] = ps.win_s
                ps.win_t = INF
                ps.win_s = 0
        heap = driver.sched.heap
        if heap:
            top = heap[0]
            words[mine + 1] = top.time
            words[mine + 2] = top.seq
        else:
            words[mine + 1] = FOREVER
            words[mine + 2] = 0
        at = mine + 3
        for i, v in enumerate(sent):
            words[at + i] = 0 if v == FOREVER and i & 1 else v
        target = rnd + 1
        words[mine] = target                            # the round last (the module text)
        for o in others:                                # the barrier: a spin on each round word
            if words[o] != target:
                for _ in range(SPIN):
                    if words[o] == target:
                        break
                else:
                    await driver.wait(lambda o=o: words[o] == target, "key", None)
        lt, ls = INF, 0
        for hw, props, hops, flight in reach:           # the workers whose frames can reach this one
            nt, ns = words[hw], words[hw + 1]
            for s in flight:                            # ... and the frames in flight to them
                mt = words[s]
                if mt < nt or (mt == nt and words[s + 1] < ns):
                    nt, ns = mt, words[s + 1]
            if nt < FOREVER:
                bt, bs = bound(nt, ns, props, hops)
                if bt < lt or (bt == lt and bs < ls):
                    lt, ls = bt, bs
        duration = self.duration
        done = True
        for s in times:                                 # over when every key and frame in flight is past the end
            if words[s] < duration:
                done = False
                break
        take = self.take
        short = False
        for ps, word in self._in_words:                 # the frames the inbound links counted
            rx = ps.rx
            if rx.received < words[word]:
                if take is not None:
                    take(ps)                            # sent before counted: already in the socket
                if rx.received < words[word]:
                    short = True
        if short:
            await self._take_frames(driver)
        return (lt, ls), done

    async def _take_frames(self, driver: Any) -> None:
        """Wait until every frame the inbound links counted is in the heap."""
        words = self._words
        counts = [(ps, words[word]) for ps, word in self._in_words]
        await driver.wait(lambda: all(ps.rx.received >= c for ps, c in counts), "frames")

    def close(self) -> None:
        self._words.release()
        self._map.close()
