"""The receiving side of the wall clock's socket delivery (:mod:`.delivery`; issue 4
item 1): the datagrams waiting on the ports' sockets, checked and handed to the scheduler
as deliveries at ``t_start + propagation``; what the other processes sent, taken in during
a long step (the scheduler's *poll*); and the duplicate filter of a link with injected
faults (see :mod:`.delivery`'s text on link faults).

Strangers (issue 8 item 5): a datagram whose source address is not the port's
configured peer is dropped before anything reads it and counted (``strangers``); the
sockets are unconnected so that the kernel does not drop such datagrams uncounted
(:mod:`ibemu.runtime.sockets`).

Forgeries (issue 14 items 1 and 2): a source address is easily forged (a raw socket), so
every datagram also carries a MAC tag under its directed link's key
(:func:`ibemu.wire.shim.link_key` of the run's secret), and its shim sequence number
must fall in the link's replay window (:class:`SeqCheck`).  A datagram from the peer's
address with a wrong tag, or a replayed or out-of-window sequence number, is dropped
before any node or the loss count sees it and counted per port (``forged``,
``forged_by_port``).  On a link with injected faults the duplicate filter sees the
sequence numbers first, so a replay of a datagram it still remembers is counted as a
dropped duplicate instead.
"""
from __future__ import annotations

import select
from collections.abc import Callable
from hashlib import blake2b
from hmac import compare_digest
from typing import Any

from ..sim.scheduler import Scheduler
from ..wire.shim import DEPTH_BITS, KIND_LINK, KIND_MASK, KIND_SYNC, MAGIC, SHIM, SHIM_LEN, TAG_LEN, VERSION
from .portsocket import SEEN_MASK, PortSocket

__all__ = ["DatagramReceiver"]


class DatagramReceiver:
    """Datagrams in: the base of :class:`~.delivery.SocketPorts`, which opens the sockets
    and sets these attributes."""

    sched: Scheduler
    sockets: list[PortSocket]
    bad_datagrams: int
    on_sync: Callable[[PortSocket, bytes], bool] | None
    remote_fds: list[int] | None
    _ep: Any                            # an epoll over the remote sockets, or None
    _remote: dict[int, PortSocket]      # file descriptor -> its port socket, links to other processes
    _buf: bytearray

    @staticmethod
    def _duplicate(ps: PortSocket, dseq: int) -> bool:
        """The duplicate filter of a faulty link: True (counted) for a second copy."""
        d = (dseq - ps.rx_hi) & 0xFFFFFFFF
        if d >= 0x80000000:
            d -= 0x100000000
        ext = ps.rx_ext + d
        if d > 0:
            ps.rx_hi, ps.rx_ext = dseq, ext
        if ps.rx_inj.accept(ext):
            return False
        ps.dup_dropped += 1
        ps.rx.received += 1                     # received (and dropped): sent == received
        return True

    def drain(self, ps: PortSocket, buf: bytearray, limit: int = 1 << 30, sent: bytes | None = None,
              pending: tuple[int, Any] | None = None) -> int:
        """Read the datagrams waiting on *ps* (at most *limit*) into the scheduler;
        return how many were delivered.  *sent*: the datagram this process just sent
        to *ps* (:meth:`_take_local`).  *pending*: ``(length, source)`` of a datagram
        already read into *buf*, taken first.

        The checks, in order (issue 8 item 5, issue 14 items 1 and 2): the source
        address must be the peer port's (else a *stranger*); the tag must be the MAC of
        the rest under the link's key (:mod:`ibemu.wire.shim`), and the sequence number
        inside the replay window and not seen before (:class:`SeqCheck`), else *forged*;
        then the shim must be well formed (else a bad datagram).  A datagram that fails
        is dropped before any node or the loss count sees it."""
        sock = ps.sock
        rx = ps.rx
        node, index, prop, peer = ps.node, ps.index, ps.propagation, ps.peer
        unpack = SHIM.unpack_from
        our_magic = MAGIC
        deliver = self.sched.deliver
        faulty = ps.rx_inj is not None
        key = ps.rx_key
        mv = memoryview(buf)
        same = compare_digest
        delivered = 0
        while limit:
            limit -= 1
            if pending is not None:
                n, src = pending
                pending = None
            else:
                try:
                    n, src = sock.recvfrom_into(buf)
                except BlockingIOError:
                    break
                except ConnectionRefusedError:
                    continue                    # an ICMP error from an earlier send
            if src != peer:
                ps.strangers += 1               # not from the peer port: dropped, counted
                continue
            if key is not None:
                if sent is not None and n == len(sent) and buf[:n] == sent:
                    n -= TAG_LEN                # ours, tagged by this process: authentic
                else:
                    n -= TAG_LEN
                    if n < 0 or not same(blake2b(mv[:n], key=key, digest_size=TAG_LEN).digest(),
                                         mv[n:n + TAG_LEN]):
                        ps.forged += 1          # not authentic: dropped, counted
                        continue
            if n < SHIM_LEN:
                self.bad_datagrams += 1
                continue
            magic, version, flags, dseq, tps = unpack(buf, 0)
            kind = flags & KIND_MASK
            if magic != our_magic or version != VERSION or kind > KIND_SYNC:
                self.bad_datagrams += 1
                continue
            if kind == KIND_SYNC:               # the exact clock's (no frame, no sequence number)
                if self.on_sync is None or not self.on_sync(ps, bytes(mv[SHIM_LEN:n])):
                    self.bad_datagrams += 1
                continue
            if faulty and self._duplicate(ps, dseq):
                continue
            if dseq == rx.expect:
                rx.expect = (dseq + 1) & 0xFFFFFFFF
                rx.received += 1
                rx.seen = ((rx.seen << 1) | 1) & SEEN_MASK
            elif not rx.update(dseq):
                ps.forged += 1                  # replayed or out of the window
                continue
            deliver(tps + prop, node, index, buf[SHIM_LEN:n], kind == KIND_LINK, flags >> DEPTH_BITS, dseq)
            delivered += 1
        return delivered

    def poll_remote(self) -> None:
        """Take in what the other processes sent meanwhile (the scheduler's *poll*, during
        a long step), so that it is handled in time order with the rest instead of late."""
        if self._ep is not None:
            for fd, _ in self._ep.poll(0):
                self.drain(self._remote[fd], self._buf)
            return
        if self.remote_fds is None:
            return                              # no link to another process
        for fd in select.select(self.remote_fds, (), (), 0)[0]:
            self.drain(self._remote[fd], self._buf)

    def drain_all(self) -> None:
        """Read every socket, those of links within this process too (the exact clock
        reads them only at the end: strangers and forgeries are still counted)."""
        for ps in self.sockets:
            self.drain(ps, self._buf)
