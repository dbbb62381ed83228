"""An external sink HCA for an exact wall-clock run, written from docs/sync-protocol.md
alone: it imports nothing from ibemu (standard library only: hashlib's BLAKE2b for the
link keys and tags, a bitwise CRC-16 for the VCRC and LPCRC, tomllib for the address
map), as a program in another language would be written.

It takes the place of an HCA that no worker runs (``run_wall(..., external=[NODE],
transport="net")``) on its one port, and behaves as ibemu's HCA does as a sink
(ibemu/fabric/hca.py, node.py): it sends the flow-control init packets at emulated 0,
takes data packets into its VL buffer, frees them when their last byte is in and returns
the credit at once with a flow-control packet (IBA FCCL = ABR + free blocks), sends one
where none went out for a whole ``fc_period``, and resynchronises its ABR on the peer's
flow-control packets.  On a ``flow_control = "wire"`` link a flow-control packet takes
six bytes of link time and waits for a link still busy with the previous one.

It speaks the exact clock's protocol on the link's own socket: phase A (frames sent so
far), phase B (its earliest pending event's key, ``relay_steps`` steps, the idle bits)
and stops when bit W of its idle bits is set.  It orders its own events by ibemu's key
(time, depth, node, port rank, link sequence), so its flow-control packets leave at the
very picosecond and depth where ibemu's HCA would send them.

Usage (every time in ps)::

    python tests/peers/sink_peer.py --map OUT/parts/addresses.toml --key OUT/parts/key \\
        --port X:1 --peer S:2 --node-index 2 --processes 2 --duration 200000000 \\
        --propagation 0 --rate 1000000000 --buffer-blocks 132 --fc-period 20000000 \\
        --report peer.json

It waits (``--wait`` s) for the first datagram from its peer port (the worker's socket is
bound then), runs to the end of the run and writes a JSON report: data packets, their
wire and payload bytes, the time of the last one's tail, flow-control packets sent and
received, rounds, and the datagrams it dropped.  Exit status 0, or 1 with one line on
stderr (its worker silent for ``--wait`` s, an unreadable map or key).
"""
from __future__ import annotations

import argparse
import hashlib
import heapq
import hmac
import json
import select
import socket
import struct
import sys
import time
import tomllib

# ------------------------------------------------------------------ the bytes (docs/sync-protocol.md)
SHIM = struct.Struct(">2sBBIQ")             # magic 'iB', version 2, flags, seq, time_ps
MESSAGE = struct.Struct(">BB6xQQQQ")        # phase, step, round, a, b, c
TAG_LEN = 16
KIND_PACKET, KIND_LINK, KIND_SYNC = 0, 1, 2
PHASE_A, PHASE_B = 1, 2
NEVER = 1 << 62                             # a key time at or after it: nothing, ever
FOREVER = (1 << 64) - 1
DEPTH_SHIFT, NODE_SHIFT, PORT_SHIFT = 56, 38, 29
MAX_DEPTH, WAKE_PORT, LSEQ_MASK = 63, 511, (1 << 29) - 1
OP_NORMAL, OP_INIT = 0, 1
UD_SEND_ONLY = 0x64
LRH_BTH_DETH = 8 + 12 + 8
CRCS = 4 + 2                                # ICRC, VCRC


def link_key(secret: bytes, sender: str, receiver: str) -> bytes:
    return hashlib.blake2b(("ibemu link %s > %s" % (sender, receiver)).encode(), key=secret[:64],
                           digest_size=32).digest()


def crc16(data: bytes) -> int:
    """The VCRC / LPCRC: CRC-16 polynomial 0x100B reflected (0xD008), init and xorout 0xFFFF."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xD008 if crc & 1 else crc >> 1
    return crc ^ 0xFFFF


def link_packet(op: int, fctbs: int, vl: int, fccl: int) -> bytes:
    head = struct.pack(">HH", (op << 12) | (fctbs & 0xFFF), (vl << 12) | (fccl & 0xFFF))
    return head + struct.pack("<H", crc16(head))


def order(depth: int, node: int, port: int, link_seq: int = 0) -> int:
    return (min(depth, MAX_DEPTH) << DEPTH_SHIFT) | (node << NODE_SHIFT) | (port << PORT_SHIFT) | (link_seq & LSEQ_MASK)


def port_rank(t: int, node: int, port: int) -> int:
    x = (t ^ (t >> 26) ^ (t >> 47) ^ node) & 0x3FFFFFF
    a = 1 + ((x * 2654435761) >> 20) % 508
    return ((port + 1) * a) % 509


def hop(t: int, seq: int, propagation: int) -> tuple[int, int]:
    if t >= NEVER:
        return FOREVER, 0
    if propagation > 0:
        return t + propagation, 0
    return t, min((seq >> DEPTH_SHIFT) + 1, MAX_DEPTH) << DEPTH_SHIFT


class PeerError(Exception):
    pass


# ------------------------------------------------------------------ the sink HCA
T_FC_TICK, T_LINK_WAKE, T_RX_DONE = 0, 1, 2


class Sink:
    """One port of a sink HCA (ibemu/fabric/hca.py and node.py, as a sink)."""

    def __init__(self, rate: int, vls: int, blocks: int, fc_period: int, wire: bool) -> None:
        self.rate = rate
        self.fc_period = fc_period
        self.capacity = blocks
        self.abr = [0] * vls                # receiver: adjusted blocks received (mod 4096)
        self.used = [0] * vls               # ... blocks held in the buffer
        self.fctbs = [0] * vls              # sender: total blocks sent (a sink sends none)
        self.last_fcp = [-(1 << 62)] * vls
        self.pending: dict[int, int] = {}   # VL -> op of a flow-control packet waiting for the link
        self.busy_until = 0
        self.wake_at = -1
        self.fcp_time = self.tx_time(6) if wire else 0
        self.timers: list[tuple[int, int, int, object]] = []
        self.tseq = 0
        self.outbox: list[tuple[bytes, bool, int]] = []     # (frame, link packet, t_start)
        self.packets = self.wire_bytes = self.payload_bytes = 0
        self.last_tail = 0
        self.fcp_sent = self.fcp_received = self.bad = 0

    def tx_time(self, nbytes: int) -> int:
        return -(-nbytes * 10**12 // self.rate)

    def at(self, t: int, kind: int, arg: object = None) -> None:
        self.tseq += 1
        heapq.heappush(self.timers, (t, self.tseq, kind, arg))

    def deadline(self) -> int:
        return self.timers[0][0] if self.timers else NEVER

    # the flow-control packets
    def fccl(self, vl: int) -> int:
        return (self.abr[vl] + self.capacity - self.used[vl]) & 0xFFF

    def emit(self, vl: int, op: int, now: int) -> None:
        self.last_fcp[vl] = now
        self.fcp_sent += 1
        self.outbox.append((link_packet(op, self.fctbs[vl], vl, self.fccl(vl)), True, now))

    def send_fcp(self, vl: int, now: int, op: int = OP_NORMAL) -> None:
        if not self.fcp_time:
            self.emit(vl, op, now)
            return
        if self.pending.get(vl) != OP_INIT:
            self.pending[vl] = op
        self.link_blocked(now)

    def link_blocked(self, now: int) -> bool:
        if self.busy_until <= now:
            if not self.pending:
                return False
            vl = next(iter(self.pending))
            self.emit(vl, self.pending.pop(vl), now)
            self.busy_until = now + self.fcp_time
        if self.pending and self.wake_at != self.busy_until:
            self.wake_at = self.busy_until
            self.at(self.busy_until, T_LINK_WAKE)
        return True

    def try_send(self, now: int) -> None:
        if self.busy_until > now or self.pending:
            self.link_blocked(now)

    # the node's entry points
    def start(self, now: int) -> None:
        for vl in range(len(self.abr)):
            self.send_fcp(vl, now, OP_INIT)
        if self.fc_period:
            self.at(now + self.fc_period, T_FC_TICK)
        self.try_send(now)

    def receive(self, frame: bytes, link: bool, now: int) -> None:
        if link:
            if len(frame) != 6 or crc16(frame[:4]) != struct.unpack_from("<H", frame, 4)[0]:
                self.bad += 1
                return
            self.fcp_received += 1
            a, b = struct.unpack_from(">HH", frame)
            vl, fctbs = b >> 12, a & 0xFFF
            if vl >= len(self.abr):
                self.bad += 1
                return
            old, self.abr[vl] = self.abr[vl], fctbs
            if old != fctbs:                # packets were lost on the way: correct the FCCL now
                self.send_fcp(vl, now)
            self.try_send(now)
            return
        n = len(frame)
        vl = frame[0] >> 4
        if n < 8 + 12 + CRCS or crc16(frame[:-2]) != struct.unpack_from("<H", frame, n - 2)[0] \
                or vl >= len(self.abr):
            self.bad += 1
            return
        blocks = (n + 63) >> 6
        self.abr[vl] = (self.abr[vl] + blocks) & 0xFFF
        if self.used[vl] + blocks > self.capacity:      # the sender overran its credit
            self.bad += 1
            return
        self.used[vl] += blocks
        self.at(now + self.tx_time(n), T_RX_DONE, frame)

    def wake(self, now: int) -> None:
        while self.timers and self.timers[0][0] <= now:
            t, _, kind, arg = heapq.heappop(self.timers)
            if kind == T_FC_TICK:
                for vl, last in enumerate(self.last_fcp):
                    if t - last >= self.fc_period:
                        self.send_fcp(vl, t)
                self.at(t + self.fc_period, T_FC_TICK)
            elif kind == T_LINK_WAKE:
                if self.wake_at == t:
                    self.wake_at = -1
                self.try_send(t)
            else:
                self.rx_done(t, arg)        # type: ignore[arg-type]

    def rx_done(self, now: int, frame: bytes) -> None:
        vl = frame[0] >> 4
        n = len(frame)
        self.used[vl] -= (n + 63) >> 6
        self.send_fcp(vl, now)
        if frame[8] == UD_SEND_ONLY:
            pad = (frame[9] >> 4) & 3
            self.packets += 1
            self.wire_bytes += n
            self.payload_bytes += n - LRH_BTH_DETH - pad - CRCS
            self.last_tail = now
        self.try_send(now)


# ------------------------------------------------------------------ the exact clock's process
class Peer:
    def __init__(self, args: argparse.Namespace, secret: bytes, me: tuple[str, int], them: tuple[str, int]) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(me)
        self.them = them
        self.tx_key = link_key(secret, args.port, args.peer)
        self.rx_key = link_key(secret, args.peer, args.port)
        self.node, self.port = args.node_index, int(args.port.rpartition(":")[2])
        self.prop = args.propagation
        self.end = args.duration
        self.steps = max(1, args.processes - 1)          # relay_steps
        self.bound = max(1, args.processes - 1)          # W
        self.wait_s = args.wait
        self.sink = Sink(args.rate, args.vls, args.buffer_blocks, args.fc_period, args.flow_control == "wire")
        self.heap: list[tuple[int, int, int, bytes, bool]] = []  # (time, seq, kind, frame, link); kind 0 deliver, 1 wake
        self.wake_at = NEVER
        self.wake_key = order(0, self.node, WAKE_PORT)
        self.cur_t = self.cur_depth = 0
        self.clip = (NEVER, 0)
        self.tx_seq = 0                                  # frame datagrams sent
        self.rx_expect, self.rx_count = 1, 0
        self.a_round, self.a_count = -1, 0               # the inbound link's last A ...
        self.b_at, self.b_time, self.b_seq = (-1, 0), 0, 0   # ... and last B
        self.bits: dict[int, int] = {}                   # round -> its idle bits
        self.history: list[bool] = []
        self.rounds = 0
        self.dropped = {"strays": 0, "forged": 0, "strangers": 0, "bad": 0, "lost": 0}

    # datagrams
    def send(self, kind: int, seq: int, t: int, depth: int, body: bytes) -> None:
        d = SHIM.pack(b"iB", 2, kind | (min(depth, 63) << 2), seq, t) + body
        self.sock.sendto(d + hashlib.blake2b(d, key=self.tx_key, digest_size=TAG_LEN).digest(), self.them)

    def message(self, phase: int, rnd: int, a: int, b: int = 0, c: int = 0, step: int = 0) -> None:
        self.send(KIND_SYNC, 0, 0, 0, MESSAGE.pack(phase, step, rnd, min(a, FOREVER), b, c))

    def transmit(self) -> None:
        """The node's outbox as frame datagrams (the shim's depth, the window clip)."""
        for frame, link, ts in self.sink.outbox:
            self.tx_seq += 1
            depth = min(self.cur_depth + 1, MAX_DEPTH) if ts + self.prop == self.cur_t else 0
            self.send(KIND_LINK if link else KIND_PACKET, self.tx_seq, ts, depth, frame)
            clip = (ts + self.prop, min(depth + 1, MAX_DEPTH) << DEPTH_SHIFT)
            self.clip = min(self.clip, clip)
        self.sink.outbox.clear()

    def poll(self, timeout: float) -> None:
        """Read every datagram waiting (waiting up to *timeout* s for the first)."""
        if not select.select([self.sock], [], [], timeout)[0]:
            return
        while True:
            try:
                d, src = self.sock.recvfrom(65536)
            except BlockingIOError:
                return
            self.take(d, src)

    def take(self, d: bytes, src: tuple[str, int]) -> None:
        if src != self.them:
            self.dropped["strangers"] += 1
            return
        body, tag = d[:-TAG_LEN], d[-TAG_LEN:]
        if len(d) < TAG_LEN or not hmac.compare_digest(
                hashlib.blake2b(body, key=self.rx_key, digest_size=TAG_LEN).digest(), tag):
            self.dropped["forged"] += 1
            return
        if len(body) < SHIM.size:
            self.dropped["bad"] += 1
            return
        magic, version, flags, seq, tps = SHIM.unpack_from(body)
        kind, depth = flags & 3, flags >> 2
        if magic != b"iB" or version != 2 or kind > KIND_SYNC:
            self.dropped["bad"] += 1
            return
        if kind == KIND_SYNC:
            self.sync_message(body[SHIM.size:])
            return
        if seq != self.rx_expect:           # loopback neither loses nor reorders in a healthy run
            self.dropped["lost"] += (seq - self.rx_expect) & 0xFFFFFFFF
        self.rx_expect = (seq + 1) & 0xFFFFFFFF
        self.rx_count += 1
        t = tps + self.prop
        key = order(depth, self.node, port_rank(t, self.node, self.port), seq)
        heapq.heappush(self.heap, (t, key, 0, body[SHIM.size:], kind == KIND_LINK))

    def sync_message(self, payload: bytes) -> None:
        if len(payload) != MESSAGE.size:
            self.dropped["bad"] += 1
            return
        phase, step, rnd, a, b, c = MESSAGE.unpack(payload)
        if phase == PHASE_A and rnd == self.a_round + 1:
            self.a_round, self.a_count = rnd, a
            return
        r0, s0 = self.b_at
        nxt = (r0, s0 + 1) if 0 <= r0 and s0 < self.steps - 1 else (r0 + 1, 0)
        if phase == PHASE_B and (rnd, step) == nxt:
            self.b_at, self.b_time, self.b_seq = (rnd, step), a, b
            if step == self.steps - 1:
                self.bits[rnd] = c
                self.bits.pop(rnd - 3, None)
            return
        self.dropped["strays"] += 1          # out of turn: dropped, counted

    def wait(self, ready, what: str) -> None:
        t_end = time.monotonic() + self.wait_s
        self.poll(0)
        while not ready():
            if time.monotonic() > t_end:
                raise PeerError("no %s from %s:%d for %.0f s (round %d)" % (what, *self.them, self.wait_s, self.rounds))
            self.poll(0.05)

    # the scheduler (ibemu/sim/scheduler.py, for one node)
    def arm(self, t: int, dnext: int) -> None:
        d = self.sink.deadline()
        if d < self.wake_at:
            self.wake_at = d
            heapq.heappush(self.heap, (d, self.wake_key | (dnext if d == t else 0), 1, b"", False))

    def next_key(self) -> tuple[int, int]:
        return (self.heap[0][0], self.heap[0][1]) if self.heap else (NEVER, 0)

    def window(self, limit: tuple[int, int]) -> None:
        if limit[0] >= self.end:
            limit = (self.end, 0)
        self.clip = (NEVER, 0)
        while self.heap and self.heap[0][:2] < min(limit, self.clip):
            t, seq, kind, frame, link = heapq.heappop(self.heap)
            depth = seq >> DEPTH_SHIFT
            self.cur_t, self.cur_depth = t, depth
            if kind == 0:
                self.sink.receive(frame, link, t)
            else:
                if self.wake_at == t:
                    self.wake_at = NEVER
                self.sink.wake(t)
            self.transmit()
            self.arm(t, min(depth + 1, MAX_DEPTH) << DEPTH_SHIFT)

    def idle_bits(self, rnd: int, idle: bool) -> int:
        self.history.append(idle)
        h, r = self.history, len(self.history) - 1
        before = self.bits.get(rnd - 1, 0)
        bits = 0
        for m in range(min(self.bound, 63) + 1):
            if r - m < 0 or not h[r - m] or (m and not (before >> (m - 1)) & 1):
                break
            bits |= 1 << m
        del h[:-64]
        return bits

    def phases(self, r: int) -> tuple[tuple[int, int], bool]:
        """Phases A and B of round *r*: the limit of the next window, and the stop."""
        self.message(PHASE_A, r, self.tx_seq)
        self.wait(lambda: self.a_round >= r and self.rx_count >= self.a_count, "count")
        key = self.next_key()
        bits = self.idle_bits(r, key[0] >= self.end)
        value = key
        for step in range(self.steps):
            if step:
                value = min(key, hop(self.b_time, self.b_seq, self.prop))
            self.message(PHASE_B, r, value[0], value[1], bits if step == self.steps - 1 else 0, step)
            self.wait(lambda: self.b_at >= (r, step), "promise")
        return hop(self.b_time, self.b_seq, self.prop), bool((bits >> min(self.bound, 63)) & 1)

    def run(self) -> None:
        self.sock.settimeout(self.wait_s)
        try:
            d, src = self.sock.recvfrom(65536)       # the worker is up: its socket is bound
        except TimeoutError:
            raise PeerError("nothing from %s:%d within %.0f s" % (*self.them, self.wait_s)) from None
        self.sock.setblocking(False)
        self.take(d, src)
        self.sink.start(0)                           # emulated 0, depth 0
        self.transmit()
        self.arm(0, 1 << DEPTH_SHIFT)
        limit, done = self.phases(0)
        while not done:
            self.rounds += 1
            self.window(limit)
            limit, done = self.phases(self.rounds)

    def report(self) -> dict[str, object]:
        s = self.sink
        return {"packets": s.packets, "wire_bytes": s.wire_bytes, "payload_bytes": s.payload_bytes,
                "last_tail_ps": s.last_tail, "fcp_sent": s.fcp_sent, "fcp_received": s.fcp_received,
                "bad_frames": s.bad, "frames_sent": self.tx_seq, "frames_received": self.rx_count,
                "rounds": self.rounds, **self.dropped}


def _address(amap: dict[str, str], port: str) -> tuple[str, int]:
    host, _, udp = amap[port].rpartition(":")
    return socket.gethostbyname(host), int(udp)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--map", required=True, help="the run's address map (parts/addresses.toml)")
    p.add_argument("--key", required=True, help="the run's key file (parts/key)")
    p.add_argument("--port", required=True, help="NODE:PORT this peer is, e.g. X:1")
    p.add_argument("--peer", required=True, help="NODE:PORT of the port it is linked to, e.g. S:2")
    p.add_argument("--node-index", type=int, required=True, help="the node's index in the fabric (its key's node)")
    p.add_argument("--processes", type=int, default=2, help="processes of the run: its workers and external peers")
    p.add_argument("--duration", type=int, required=True, help="the end of the run (ps)")
    p.add_argument("--propagation", type=int, default=0, help="the link's propagation delay (ps)")
    p.add_argument("--rate", type=int, default=10**9, help="the link's rate (bytes/s)")
    p.add_argument("--vls", type=int, default=1, help="data VLs on the link")
    p.add_argument("--buffer-blocks", type=int, required=True, help="the port's buffer per VL (64-byte blocks)")
    p.add_argument("--fc-period", type=int, default=262_144_000, help="flow-control period (ps)")
    p.add_argument("--flow-control", choices=("wire", "ideal"), default="wire")
    p.add_argument("--wait", type=float, default=60.0, help="wall seconds to wait for the worker")
    p.add_argument("--report", help="write the report (JSON) here; default stdout")
    args = p.parse_args(argv)
    try:
        with open(args.map, "rb") as f:
            amap = tomllib.load(f)["ports"]
        with open(args.key, encoding="ascii") as f:
            secret = bytes.fromhex(f.read().strip())
        peer = Peer(args, secret, _address(amap, args.port), _address(amap, args.peer))
    except (OSError, KeyError, ValueError) as e:
        print("sink_peer: %s" % e, file=sys.stderr)
        return 1
    try:
        peer.run()
    except PeerError as e:
        print("sink_peer: %s" % e, file=sys.stderr)
        return 1
    finally:
        peer.sock.close()
    text = json.dumps(peer.report(), sort_keys=True)
    if args.report:
        with open(args.report, "w", encoding="ascii") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
