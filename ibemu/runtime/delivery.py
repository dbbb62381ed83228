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
  virtual-time engine.

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

Strangers (issue 8 item 5): a datagram whose source address is not the port's
configured peer is dropped before anything reads it and counted (``strangers``); the
sockets are unconnected so that the kernel does not drop such datagrams uncounted
(:mod:`ibemu.runtime.sockets`).
"""
from __future__ import annotations

import select
from collections.abc import Callable, Mapping
from typing import Any

from ..fabric.faults import DuplicateFilter
from ..sim.scheduler import INF, Scheduler, SimNode
from ..wire.shim import KIND_LINK, MAGIC, SHIM, SHIM_LEN, VERSION
from .sockets import open_port_socket, resolve

DUP_WINDOW = 4096
"""Sequence numbers a faulty link's duplicate filter remembers here.  A duplicate is sent
right after its original on the same socket, so it arrives right after it; the virtual
clock's window (65,536, for copies held back by reordering) would cost a worker about
8 MB per faulty link it receives on."""


class SeqCheck:
    """Per-link datagram sequence check: counts lost (a gap), and late or duplicate
    datagrams (a sequence number already passed).  Sequence numbers are u32 and wrap."""
    __slots__ = ("expect", "lost", "late", "received")

    def __init__(self) -> None:
        self.expect = 1
        self.lost = 0
        self.late = 0
        self.received = 0

    def update(self, seq: int) -> None:
        self.received += 1
        d = (seq - self.expect) & 0xFFFFFFFF
        if d == 0:
            self.expect = (seq + 1) & 0xFFFFFFFF
        elif d < 0x80000000:            # ahead: the ones in between were lost
            self.lost += d
            self.expect = (seq + 1) & 0xFFFFFFFF
        else:                           # behind: reordered or duplicated
            self.late += 1
            if self.lost:
                self.lost -= 1          # it was counted lost when the gap appeared


class PortSocket:
    """One emulated port's UDP socket; it sends to and accepts datagrams from *peer*
    (the peer port's numeric (host, port)) only."""
    __slots__ = ("sock", "node", "index", "propagation", "tx_seq", "rx", "send_errors",
                 "drop_every", "dropped", "addr", "peer", "local_peer", "inj", "rx_inj",
                 "rx_hi", "rx_ext", "inj_lost", "dup_sent", "dup_dropped", "strangers")

    def __init__(self, sock: Any, node: SimNode, index: int, propagation: int,
                 addr: Any, peer: tuple[str, int]) -> None:
        self.sock = sock
        self.node = node
        self.index = index
        self.propagation = propagation
        self.addr = addr
        self.peer = peer
        self.tx_seq = 0
        self.rx = SeqCheck()
        self.send_errors = 0
        self.drop_every = 0             # fault injection (tests): skip every n-th link packet
        self.dropped = 0
        self.local_peer: PortSocket | None = None   # the peer's PortSocket when in this process
        self.inj: Any = None            # LinkFaultInjector of the link this port sends on
        self.rx_inj: Any = None         # ... and of the link it receives from
        self.rx_hi = 0                  # highest sequence number received (32 bits) ...
        self.rx_ext = 0                 # ... and unwrapped (for the duplicate filter)
        self.inj_lost = 0               # frames the injector lost (no datagram sent)
        self.dup_sent = 0               # second copies sent (the injector duplicated)
        self.dup_dropped = 0            # second copies received and dropped
        self.strangers = 0              # datagrams from an address that is not the peer


class SocketPorts:
    """The sockets of the ports of *sched*'s nodes, and the delivery through them.

    *wiring*: the fabric's ``(node, port) -> (peer, peer_port, propagation)``;
    *addresses*: ``(node name, port) -> (host, udp port)`` of every wired port;
    *capture*: gets every frame these nodes send; *rcvbuf(node, port)*: SO_RCVBUF;
    *faults*, *faults_until*: see the module text.
    """

    def __init__(self, sched: Scheduler, wiring: Mapping[Any, Any], addresses: Mapping[Any, Any],
                 capture: Any = None, rcvbuf: Callable[[Any, int], int] | None = None,
                 drop_link_every: int = 0, faults: Mapping[Any, Any] | None = None,
                 faults_until: int | None = None) -> None:
        self.sched = sched
        self.capture = capture
        self.faults_until = INF if faults_until is None else int(faults_until)
        self.bad_datagrams = 0
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
            if node in local and peer in local:
                self.ports[node][port].local_peer = self.ports[peer][pport]
        self._buf = bytearray(65536)
        # sockets whose peer is in another process, polled during long steps
        self._remote = {ps.sock.fileno(): ps for ps in self.sockets if ps.local_peer is None}
        self.remote_fds = list(self._remote) if self._remote and max(self._remote) < 1024 else None

    # ------------------------------------------------------------------ sending
    def transmit(self, node: SimNode) -> None:
        """Send the node's outbox, each frame behind its shim (the scheduler's
        *transmit*).  When the peer port is in this process, take the datagram off the
        peer's socket at once (loopback delivers it during ``send``): within a process no
        frame is ever behind its receiver."""
        cap = self.capture
        pack = SHIM.pack
        faults_until = self.faults_until
        ports = self.ports[node]
        for p, frame, link, ts in node.outbox:
            if cap is not None:
                cap.write(ts // 1000, frame, link)
            ps = ports.get(p)
            if ps is None:
                continue                        # unconnected port: the frame goes nowhere
            if ps.inj is not None and ts < faults_until:
                self._send_faulty(ps, frame, link, ts)
                continue
            ps.tx_seq = s = (ps.tx_seq + 1) & 0xFFFFFFFF
            if link and ps.drop_every and s % ps.drop_every == 0:
                ps.dropped += 1
                continue
            try:
                ps.sock.sendto(pack(MAGIC, VERSION, link, s, -(-ts // 1000)) + frame, ps.peer)
            except OSError:                     # incl. BlockingIOError
                ps.send_errors += 1             # counted; shows up as a loss at the peer
                continue
            if ps.local_peer is not None:
                self._take_local(ps.local_peer)
        node.outbox.clear()

    def _send_faulty(self, ps: PortSocket, frame: Any, link: bool, ts: int) -> None:
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
            try:
                ps.sock.sendto(pack(MAGIC, VERSION, link, s, -(-(ts + extra) // 1000)) + f, ps.peer)
            except OSError:
                ps.send_errors += 1
                continue
            if ps.local_peer is not None:
                self._take_local(ps.local_peer)

    def _take_local(self, lp: PortSocket) -> None:
        """Take the datagram just sent to *lp* (a port of this process) off its socket."""
        buf = self._buf
        try:
            n, src = lp.sock.recvfrom_into(buf)
        except OSError:
            return                              # not there yet: its receive task takes it
        if src != lp.peer:                      # a stranger's datagram was waiting before ours
            lp.strangers += 1
            self.drain(lp, buf)
            return
        if n < SHIM_LEN:
            self.bad_datagrams += 1
            return
        magic, version, kind, dseq, tns = SHIM.unpack_from(buf, 0)
        if magic != MAGIC or version != VERSION or kind > KIND_LINK:
            self.bad_datagrams += 1
            return
        if lp.rx_inj is not None and self._duplicate(lp, dseq):
            return
        rx = lp.rx
        if dseq == rx.expect:
            rx.expect = (dseq + 1) & 0xFFFFFFFF
            rx.received += 1
        else:
            rx.update(dseq)
        self.sched.deliver(tns * 1000 + lp.propagation, lp.node, lp.index, buf[SHIM_LEN:n],
                           kind == KIND_LINK)

    # ------------------------------------------------------------------ receiving
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

    def drain(self, ps: PortSocket, buf: bytearray, limit: int = 1 << 30) -> None:
        """Read the datagrams waiting on *ps* (at most *limit*) into the scheduler."""
        sock = ps.sock
        rx = ps.rx
        node, index, prop, peer = ps.node, ps.index, ps.propagation, ps.peer
        unpack = SHIM.unpack_from
        our_magic = MAGIC
        deliver = self.sched.deliver
        faulty = ps.rx_inj is not None
        while limit:
            limit -= 1
            try:
                n, src = sock.recvfrom_into(buf)
            except BlockingIOError:
                break
            except ConnectionRefusedError:
                continue                        # an ICMP error from an earlier send
            if src != peer:
                ps.strangers += 1               # not from the peer port: dropped, counted
                continue
            if n < SHIM_LEN:
                self.bad_datagrams += 1
                continue
            magic, version, kind, dseq, tns = unpack(buf, 0)
            if magic != our_magic or version != VERSION or kind > KIND_LINK:
                self.bad_datagrams += 1
                continue
            if faulty and self._duplicate(ps, dseq):
                continue
            if dseq == rx.expect:
                rx.expect = (dseq + 1) & 0xFFFFFFFF
                rx.received += 1
            else:
                rx.update(dseq)
            deliver(tns * 1000 + prop, node, index, buf[SHIM_LEN:n], kind == KIND_LINK)

    def poll_remote(self) -> None:
        """Take in what the other processes sent meanwhile (the scheduler's *poll*, during
        a long step), so that it is handled in time order with the rest instead of late."""
        assert self.remote_fds is not None
        for fd in select.select(self.remote_fds, (), (), 0)[0]:
            self.drain(self._remote[fd], self._buf)

    # ------------------------------------------------------------------ the end
    def close(self) -> None:
        for ps in self.sockets:
            ps.sock.close()

    def counters(self) -> dict[str, Any]:
        """The datagram counters, for results.json."""
        socks = self.sockets
        return {
            "datagrams_sent": sum(p.tx_seq - p.dropped - p.send_errors + p.dup_sent for p in socks),
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
            "send_errors": sum(p.send_errors for p in socks),
            "bad_datagrams": self.bad_datagrams}
