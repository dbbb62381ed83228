"""The exact clock's messages as datagrams (issue 27 Deliver 1, several hosts): each
synchronisation message of :mod:`.syncproto` travels on its cut link's own sockets as a
kind-2 datagram, shim and tag like a frame's (:mod:`ibemu.wire.shim`), so it needs no
channel of its own, crosses hosts and network namespaces as frames do, and an external
peer speaks it with nothing but the link (docs/sync-protocol.md).  A link that carried
no frame in a window still carries its messages every round: they are the null
datagrams of a conservative simulator.

Phase B takes :func:`.syncproto.relay_steps` steps here: in step 0 a worker sends its
earliest key; in step s its earliest key or, if less, the least key its inbound links
said in step s - 1 plus that link's hop.  After the last step a worker holds, for every
worker within that many links upstream, the least key at which anything that worker
does can reach it, which is its limit.

Messages are authenticated by the link key like frames; they take no sequence number
(the frames' numbers stay the frames' link sequence, :mod:`ibemu.sim.scheduler`), and
freshness comes from the round and step they carry (:meth:`.syncproto.InLink.take`).
"""
from __future__ import annotations

from typing import Any

from ..wire.shim import KIND_SYNC, pack_shim, seal
from .delivery import SocketPorts
from .portsocket import PortSocket
from .syncproto import PHASE_A, PHASE_B, InLink, Rounds, decode, encode, least, relay_steps

SYNC_SHIM = pack_shim(KIND_SYNC, 0, 0)


class NetSync:
    """The datagram transport (:class:`.syncproto.Transport`) over *io*'s cut links, in a
    run of *workers* processes."""

    def __init__(self, io: SocketPorts, workers: int) -> None:
        self.io = io
        self.steps = relay_steps(workers)
        self.rounds = Rounds(max(1, workers - 1))
        self.remote = [ps for ps in io.sockets if ps.remote]
        self.links: dict[PortSocket, InLink] = {
            ps: InLink("%s:%d" % (ps.node.name, ps.index), ps.propagation) for ps in self.remote}
        io.on_sync = self._on_sync

    def _on_sync(self, ps: PortSocket, payload: bytes) -> bool:
        m = decode(payload)
        link = self.links.get(ps)
        if m is None or link is None:
            return False
        link.take(*m, last_step=self.steps - 1)
        return True

    def _send(self, ps: Any, payload: bytes) -> None:
        d = SYNC_SHIM + payload
        if ps.tx_key is not None:
            d = seal(ps.tx_key, d)
        try:
            ps.sock.sendto(d, ps.peer)
        except OSError as e:
            raise RuntimeError("exact clock: cannot send on cut link %s:%d (%s)" % (
                ps.node.name, ps.index, e)) from e

    def inbound(self, ps: Any) -> InLink:
        return self.links[ps]

    def poll(self) -> None:
        self.io.poll_remote()

    def close(self) -> None:
        """Nothing of its own to release (the sockets are the loop's)."""

    async def exchange(self, driver: Any, rnd: int) -> tuple[tuple[int, int], bool]:
        """Phase A (the counts; then every frame counted is taken in), then phase B's
        steps (the module text)."""
        pairs = [(self.links[ps], ps) for ps in self.remote]
        for ps in self.remote:
            self._send(ps, encode(PHASE_A, rnd, ps.frames_sent()))
        await driver.wait(lambda: all(ln.a_round >= rnd and ps.rx.received >= ln.a_count for ln, ps in pairs),
                          "count")
        key = driver.sched.next_key()
        idle = key[0] >= driver.loop.duration
        links = [ln for ln, _ in pairs]
        bits = self.rounds.idle_bits(rnd, idle, links)
        last = self.steps - 1
        value = key
        for step in range(self.steps):
            if step:
                value = min(key, least(ln.key() for ln in links))
            payload = encode(PHASE_B, rnd, value[0], value[1], bits if step == last else 0, step)
            for ps in self.remote:
                self._send(ps, payload)
            await driver.wait(lambda at=(rnd, step): all(ln.b_at >= at for ln in links), "promise")
        return least(ln.key() for ln in links), self.rounds.done(bits)
