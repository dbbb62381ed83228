"""The virtual-time engine: a discrete-event loop over a heap keyed by (time, sequence),
driving the sans-I/O nodes (in the manner of SimPy's core).  Deterministic: a run is a
pure function of the scenario and its seed; no wall clock is read.
"""
from __future__ import annotations

from heapq import heappop, heappush

INF = 1 << 62
_DELIVER, _WAKE, _DELIVER_FAULTY = 0, 1, 2


class VirtualEngine:
    """Runs nodes wired port to port.

    *wiring* maps ``(node, port)`` to ``(peer_node, peer_port, propagation_ps)``.
    *capture*, when given, has ``write(time_ns, frame, link)`` and receives every frame
    as it starts on a link (so in emulated-time order).
    *faults* maps ``(node, port)`` to the :class:`~ibemu.fabric.faults.LinkFaultInjector`
    of the directed link that port sends on (issue 8): each frame's deliveries come from
    its ``transmit`` and pass its ``accept`` (the duplicate filter) on arrival.
    """

    def __init__(self, nodes, wiring, capture=None, faults=None):
        self.nodes = list(nodes)
        self.peer = {n: {} for n in self.nodes}
        faults = faults or {}
        for (node, port), target in wiring.items():
            self.peer[node][port] = tuple(target[:3]) + (faults.get((node, port)),)
        self.capture = capture
        self.heap: list = []
        self.seq = 0
        self.now = 0
        self.events = 0
        self.frames = 0                 # frames delivered across links (frame-hops)
        self._wake_at = {n: INF for n in self.nodes}

    def _after(self, node) -> None:
        """Take the node's transmissions and its next deadline (outside :meth:`run`,
        whose loop inlines the same steps because it is the hot path)."""
        heap = self.heap
        if node.outbox:
            peers = self.peer[node]
            cap = self.capture
            for port, frame, link, t0 in node.outbox:
                target = peers.get(port)
                if cap is not None:
                    cap.write(t0 // 1000, frame, link)
                if target is None:
                    continue                    # unconnected port: the frame goes nowhere
                peer, pport, prop, inj = target
                if inj is not None:
                    for extra, f2, lseq in inj.transmit(t0, frame, link):
                        self.seq += 1
                        self.frames += 1
                        heappush(heap, (t0 + prop + extra, self.seq, _DELIVER_FAULTY, peer, pport,
                                        f2, (link, lseq, inj)))
                    continue
                self.seq += 1
                self.frames += 1
                heappush(heap, (t0 + prop, self.seq, _DELIVER, peer, pport, frame, link))
            node.outbox.clear()
        d = node.next_deadline()
        if d is not None and d < self._wake_at[node]:
            self._wake_at[node] = d
            self.seq += 1
            heappush(heap, (d, self.seq, _WAKE, node, 0, None, False))

    def start(self, t: int = 0) -> None:
        for node in self.nodes:
            node.start(t)
            self._after(node)

    def run(self, until: int, progress=None, progress_step: int = 0) -> None:
        """Process every event before time *until* (ps).  *progress(now)* is called about
        every *progress_step* ps of emulated time."""
        heap = self.heap
        peer = self.peer
        cap = self.capture
        wake_at = self._wake_at
        next_report = self.now + progress_step if progress else INF
        events = 0
        frames = 0
        seq = self.seq
        while heap and heap[0][0] < until:
            t, _, kind, node, port, frame, link = heappop(heap)
            events += 1
            if kind == _DELIVER:
                node.receive(port, frame, link, t)
            elif kind == _DELIVER_FAULTY:
                link, lseq, inj = link
                if not inj.accept(lseq):
                    continue                    # a duplicate: the link layer drops it
                node.receive(port, frame, link, t)
            else:
                if wake_at[node] == t:
                    wake_at[node] = INF
                node.wake(t)
            # the node's transmissions, then its next deadline (inlined _after)
            if node.outbox:
                peers = peer[node]
                for p, f, lk, t0 in node.outbox:
                    if cap is not None:
                        cap.write(t0 // 1000, f, lk)
                    target = peers.get(p)
                    if target is not None:
                        inj = target[3]
                        if inj is None:
                            seq += 1
                            frames += 1
                            heappush(heap, (t0 + target[2], seq, _DELIVER, target[0], target[1], f, lk))
                        else:
                            for extra, f2, lseq in inj.transmit(t0, f, lk):
                                seq += 1
                                frames += 1
                                heappush(heap, (t0 + target[2] + extra, seq, _DELIVER_FAULTY,
                                                target[0], target[1], f2, (lk, lseq, inj)))
                node.outbox.clear()
            timers = node.timers
            if timers:
                d = timers[0][0]
                if d < wake_at[node]:
                    wake_at[node] = d
                    seq += 1
                    heappush(heap, (d, seq, _WAKE, node, 0, None, False))
            if t >= next_report:
                self.now = t
                progress(t)
                next_report = t + progress_step
        self.seq = seq
        self.frames += frames
        self.events += events
        self.now = until
