"""Socket delivery for the wall clock (../shared/DESIGN.md §1 and §4; issue 4 item 1):
one UDP socket per node port of this process, frames and credit packets as real
datagrams.  :class:`SocketPorts` is the shared scheduler's *transmit* and *poll*
(:mod:`ibemu.sim.scheduler`); datagrams taken in become its deliveries.

- A node's transmissions carry their emulated start time ``t_start`` (the shim's
  ``time_ns``); the datagram is sent as soon as the node hands it over, which is when
  the wall clock has reached ``t_start``.  The receiver schedules it at
  ``t_start + propagation``.
- Between two nodes of the same process the sender takes the datagram off the peer's
  socket right after ``send`` (loopback delivers it during the call): the frames are real
  datagrams, yet the receiver never sees one late, so a process is exactly the
  virtual-time engine.  With ``local_datagrams=False`` (``IBEMU_LOCAL_DATAGRAMS=0``,
  :mod:`ibemu.runtime.worker`) such frames skip the sockets: handed over at the time and
  in the order their datagram would have, the same results, two system calls and a MAC
  less per frame (issue 16 Deliver 4), but not visible on the loopback interface.

Lost datagrams: every (node, port) socket numbers its datagrams (the shim's per-link
``seq``) and the receiving socket counts gaps (:class:`SeqCheck`).  Credits bound the
data in flight on a link, and SO_RCVBUF is sized for that (:mod:`ibemu.runtime.sockets`),
so a healthy run reports zero.

Link faults (issue 8 item 2; the scenario's ``[faults]``): they are applied at the
sending socket, by the same :class:`~ibemu.fabric.faults.LinkFaultInjector` the
virtual clock uses (*faults*: ``(node, port) -> injector`` of the directed link that port
sends on).  Each frame the node starts goes through ``transmit(t_start, frame, link)``;
each delivery it returns is sent at once with the emulated time ``t_start + extra`` in
its shim, so the receiver's heap puts a held-back frame behind the ones that overtake
it.  A frame the injector loses consumes no sequence number, so the gap count above
stays a count of *socket* losses; injected losses are counted apart
(``datagrams_lost_injected``, and per link in the fault counters).  A duplicate is sent
with its original's sequence number, and the receiving socket hands every sequence
number of a faulty link to the link's ``accept`` (its duplicate filter, with the numbers
unwrapped past 32 bits), which drops the second copy and counts it.  Corrupted copies
are caught by the receiving node's VCRC/ICRC checks, as on the virtual clock.
*faults_until* (emulated ps) heals every link for frames started from then on, so a
test can let the credits settle (:func:`ibemu.testing.settle` on the virtual clock).

The receiving side, with its checks (lost datagrams, strangers, forgeries, the duplicate
filter), is :mod:`.receive`.
"""
from __future__ import annotations

import os
import select
from hashlib import blake2b
from collections.abc import Callable, Mapping
from typing import Any

from ..fabric.faults import DuplicateFilter
from ..sim.scheduler import DEPTH_SHIFT, INF, Scheduler, SimNode
from ..wire.shim import DEPTH_BITS, KEY_LEN, MAGIC, MAX_SHIM_DEPTH, SHIM, SHIM_LEN, TAG_LEN, VERSION, link_key
from .portsocket import DUP_WINDOW, MAX_AHEAD, NO_MAC, REPLAY_WINDOW, PortSocket, SeqCheck, SEEN_MASK
from .receive import DatagramReceiver
from .sockets import open_port_socket, resolve

__all__ = ["DUP_WINDOW", "MAX_AHEAD", "NO_MAC", "REPLAY_WINDOW", "PortSocket", "SeqCheck", "SocketPorts"]


class SocketPorts(DatagramReceiver):
    """The sockets of the ports of *sched*'s nodes, and the delivery through them.

    *wiring*: the fabric's ``(node, port) -> (peer, peer_port, propagation)``;
    *addresses*: ``(node name, port) -> (host, udp port)`` of every wired port;
    *capture*: an :class:`ibemu.capture.pcapng.LinkCapture` that gets every frame these nodes
    send, on its directed link (issue 18); *rcvbuf(node, port)*: SO_RCVBUF;
    *faults*, *faults_until*: see the module text.  *key*: the run's secret (every
    process of a run must have the same); None: a fresh random one (enough when every
    node is in this process); :data:`NO_MAC` (benchmarks only): no tags at all.
    """

    def __init__(self, sched: Scheduler, wiring: Mapping[Any, Any], addresses: Mapping[Any, Any],
                 capture: Any = None, rcvbuf: Callable[[Any, int], int] | None = None,
                 drop_link_every: int = 0, faults: Mapping[Any, Any] | None = None,
                 faults_until: int | None = None, key: bytes | None = None,
                 local_datagrams: bool = True) -> None:
        if key is None:
            key = os.urandom(KEY_LEN)
        self.sched = sched
        self.capture = capture
        self.faults_until = INF if faults_until is None else int(faults_until)
        self.bad_datagrams = 0
        self.local_datagrams = local_datagrams
        self.frames_direct = 0          # frames handed to a node of this process without a datagram
        # the exact clock's handler of a synchronisation datagram (kind 2): (port socket,
        # payload) -> whether it was well formed (ibemu.runtime.syncnet)
        self.on_sync: Callable[[PortSocket, bytes], bool] | None = None
        self.exact = False              # the exact clock: clip the window at frames to other processes
        self._ep: Any = None            # an epoll over the remote sockets: one cheap syscall a poll
        self.ports: dict[Any, dict[int, PortSocket]] = {n: {} for n in sched.nodes}
        self.sockets: list[PortSocket] = []
        local = set(sched.nodes)
        try:
            for (node, port), (peer, pport, prop) in wiring.items():
                if node not in local:
                    continue
                addr = addresses[(node.name, port)]
                paddr = resolve(addresses[(peer.name, pport)])
                sock = open_port_socket(addr, None, rcvbuf(node, port) if rcvbuf else None)
                ps = PortSocket(sock, node, port, prop, addr, paddr)
                ps.drop_every = drop_link_every
                if key:
                    me, them = "%s:%d" % (node.name, port), "%s:%d" % (peer.name, pport)
                    ps.tx_key, ps.rx_key = link_key(key, me, them), link_key(key, them, me)
                if faults:
                    ps.inj = faults.get((node, port))
                    ps.rx_inj = faults.get((peer, pport))
                    if ps.rx_inj is not None:
                        ps.rx_inj.filter = DuplicateFilter(window=DUP_WINDOW)
                self.ports[node][port] = ps
                self.sockets.append(ps)
        except BaseException:
            self.close()
            raise
        for (node, port), (peer, pport, _) in wiring.items():
            if node in local:
                ps = self.ports[node][port]
                ps.peer_key = (peer.name, pport)
                if peer in local:
                    ps.local_peer = self.ports[peer][pport]
                else:
                    ps.remote = True            # a cut link (the exact clock synchronises on it)
        self._buf = bytearray(65536)
        # sockets whose peer is in another process, polled during long steps
        self._remote = {ps.sock.fileno(): ps for ps in self.sockets if ps.local_peer is None}
        epoll = hasattr(select, "epoll")
        self.remote_fds = list(self._remote) if self._remote and (epoll or max(self._remote) < 1024) else None
        if self._remote and epoll:
            self._ep = select.epoll()
            for fd in self._remote:
                self._ep.register(fd, select.EPOLLIN)

    # ------------------------------------------------------------------ sending
    def transmit(self, node: SimNode) -> None:
        """Send the node's outbox, each frame behind its shim (the scheduler's
        *transmit*).  When the peer port is in this process, take the datagram off the
        peer's socket at once (loopback delivers it during ``send``): within a process no
        frame is ever behind its receiver.  The datagram taken off is nearly always the
        one just sent (compared byte for byte: its tag is not computed again), so that
        case is handled here, inline; anything else goes through :meth:`drain`.

        With ``local_datagrams=False`` a frame to a port of this process is handed
        over directly, at the very time its datagram would carry (the shim's
        picoseconds plus the propagation), with its sequence number, in the same order, without the two
        system calls and the tag: the same results, but the frames between nodes of one
        process are no longer visible on the loopback interface (the ``--pcap`` capture
        still has them all)."""
        cap = self.capture
        pack = SHIM.pack
        faults_until = self.faults_until
        ports = self.ports[node]
        direct = not self.local_datagrams
        buf = self._buf
        mv = memoryview(buf)
        sched = self.sched
        deliver = sched.deliver
        cur_t = sched.cur_time                  # the event that made these frames (the key's depth)
        dnext = min(sched.cur_depth + 1, MAX_SHIM_DEPTH)
        for p, frame, link, ts in node.outbox:
            if cap is not None:                 # an ibemu.capture.pcapng.LinkCapture: on its link
                cap.write_port(node, p, ts // 1000, frame, link)
            ps = ports.get(p)
            if ps is None:
                continue                        # unconnected port: the frame goes nowhere
            depth = dnext if ts + ps.propagation == cur_t else 0
            if ps.inj is not None and ts < faults_until:
                self._send_faulty(ps, frame, link, ts, cur_t, dnext)
                continue
            lp = ps.local_peer
            ps.tx_seq = s = (ps.tx_seq + 1) & 0xFFFFFFFF
            if direct and lp is not None and not ps.drop_every:
                self.frames_direct += 1
                lp.rx.expect = (s + 1) & 0xFFFFFFFF     # (the numbers stay in step)
                deliver(ts + lp.propagation, lp.node, lp.index, frame, link, depth, s)
                continue
            if link and ps.drop_every and s % ps.drop_every == 0:
                ps.dropped += 1
                continue
            d = pack(MAGIC, VERSION, link | (depth << DEPTH_BITS), s, ts) + frame
            if ps.tx_key is not None:
                d += blake2b(d, key=ps.tx_key, digest_size=TAG_LEN).digest()
            try:
                ps.sock.sendto(d, ps.peer)
            except OSError:                     # incl. BlockingIOError
                ps.send_errors += 1             # counted; shows up as a loss at the peer
                continue
            if lp is None:
                if self.exact:
                    self._sent_away(ps, ts + ps.propagation, depth)
                continue
            # take it off the peer's socket (the common case inline; see drain for the rules)
            try:
                n, src = lp.sock.recvfrom_into(buf)
            except OSError:
                self.drain(lp, buf)             # not there (or an ICMP error): read what is
                continue
            if n == len(d) and src == lp.peer and mv[:n] == d:
                rx = lp.rx
                if s == rx.expect and lp.rx_inj is None:
                    rx.expect = (s + 1) & 0xFFFFFFFF
                    rx.received += 1
                    rx.seen = ((rx.seen << 1) | 1) & SEEN_MASK
                    deliver(ts + lp.propagation, lp.node, lp.index,
                            buf[SHIM_LEN:n - TAG_LEN if ps.tx_key is not None else n], link, depth, s)
                    continue
            if not self.drain(lp, buf, 1, d, (n, src)):
                self.drain(lp, buf)
        node.outbox.clear()

    def _send_faulty(self, ps: PortSocket, frame: Any, link: bool, ts: int, cur_t: int, dnext: int) -> None:
        """Send a frame through the link's fault injector (see the module text)."""
        deliveries = ps.inj.transmit(ts, frame, link)
        if not deliveries:
            ps.inj_lost += 1                    # lost on purpose: no sequence number used
            return
        ps.tx_seq = s = (ps.tx_seq + 1) & 0xFFFFFFFF
        pack = SHIM.pack
        for k, (extra, f, _) in enumerate(deliveries):
            if k:
                ps.dup_sent += 1                # a second copy, same sequence number
            depth = dnext if ts + extra + ps.propagation == cur_t else 0
            d = pack(MAGIC, VERSION, link | (depth << DEPTH_BITS), s, ts + extra) + f
            if ps.tx_key is not None:
                d += blake2b(d, key=ps.tx_key, digest_size=TAG_LEN).digest()
            try:
                ps.sock.sendto(d, ps.peer)
            except OSError:
                ps.send_errors += 1
                continue
            if ps.local_peer is not None:
                self._take_local(ps.local_peer, d)
            elif self.exact:
                self._sent_away(ps, ts + extra + ps.propagation, depth)

    def _sent_away(self, ps: PortSocket, at: int, depth: int) -> None:
        """The exact clock: a frame left for another process, arriving at *at* at *depth*.
        That process may answer from there on (the next depth of that instant), so nothing
        from there on runs in this window (:meth:`~ibemu.sim.scheduler.Scheduler.clip`);
        and the frame is in flight until the peer takes it in (``win_t``, ``win_s``: the
        least arrival key of the window's frames, :mod:`.syncshm`)."""
        self.sched.clip(at, min(depth + 1, MAX_SHIM_DEPTH) << DEPTH_SHIFT)
        seq = depth << DEPTH_SHIFT
        if at < ps.win_t or (at == ps.win_t and seq < ps.win_s):
            ps.win_t, ps.win_s = at, seq

    def _take_local(self, lp: PortSocket, sent: bytes) -> None:
        """Take the datagram *sent* just now to *lp* (a port of this process) off its
        socket; when what was waiting first was not it (a stranger's or a forged
        datagram), read everything waiting.  A datagram equal byte for byte to *sent*
        is the one this process made and tagged, so its tag is not computed again."""
        if not self.drain(lp, self._buf, 1, sent):
            self.drain(lp, self._buf)

    # ------------------------------------------------------------------ the end
    def close(self) -> None:
        if self._ep is not None:
            self._ep.close()
        for ps in self.sockets:
            ps.sock.close()

    def counters(self) -> dict[str, Any]:
        """The datagram counters, for results.json."""
        socks = self.sockets
        return {
            "datagrams_sent": sum(p.frames_sent() for p in socks) - self.frames_direct,
            "datagrams_received": sum(p.rx.received for p in socks),
            "datagrams_lost": sum(p.rx.lost for p in socks),
            "datagrams_late": sum(p.rx.late for p in socks),
            "datagrams_dropped_injected": sum(p.dropped for p in socks),
            "datagrams_lost_injected": sum(p.inj_lost for p in socks),
            "datagrams_duplicated": sum(p.dup_sent for p in socks),
            "duplicates_dropped": sum(p.dup_dropped for p in socks),
            "strangers": sum(p.strangers for p in socks),
            "strangers_by_port": {"%s:%d" % (p.node.name, p.index): p.strangers
                                  for p in socks if p.strangers},
            "forged": sum(p.forged for p in socks),
            "forged_by_port": {"%s:%d" % (p.node.name, p.index): p.forged
                               for p in socks if p.forged},
            "send_errors": sum(p.send_errors for p in socks),
            "frames_direct": self.frames_direct,
            "bad_datagrams": self.bad_datagrams}
