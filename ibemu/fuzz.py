"""Fuzzing the receive paths of switches and HCAs (issue 8 item 6).

Random and mutated frames -- truncated, extended, wrong PktLen, bad OpCodes, bad VCRC or
ICRC, wrong VL, wrong LNH, random header fields (with the CRCs recomputed, so that the
frame gets past the link checks and reaches the transport), replayed valid frames, pure
garbage, and link flow-control packets with random fields -- are fed to the
``receive`` method of the switch and the HCAs of a small live fabric, in the middle of
real traffic.  After every frame the property checked is: no exception escapes, and the
frame was either *taken* (forwarded by the switch, applied as a flow-control packet,
handed to a queue pair) or *counted* (some node counter, PortRcvErrors and its kin,
went up).  Deterministic for a seed.

CI runs a few tens of thousands of frames (tests/test_fuzz.py); a long campaign is one
command::

    python -m ibemu.fuzz --frames 1000000 --seed 1

Managers (issue 7) have no receive path yet; when they do, they belong here too.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

from .build import build_fabric
from .fabric.hca import HCA
from .fabric.params import FlowSpec
from .fabric.qp import RCResponder
from .fabric.switch import Switch
from .scenario.model import HCASpec, LinkSpec, Scenario, SwitchSpec
from .sim.engine import VirtualEngine
from .units import PS_PER_US
from .wire.crc import lpcrc
from .wire.layout import LRH_LEN, VCRC_LEN
from .wire.mutate import (
    fix_crcs,
    flip_icrc_bit,
    flip_vcrc_bit,
    insert_before_vcrc,
    set_ackreq_byte,
    set_destqp,
    set_dlid,
    set_lnh,
    set_opcode,
    set_pkey,
    set_pktlen,
    set_psn,
    set_vl,
)

MUTATIONS = ("truncate", "extend", "pktlen", "opcode", "vcrc", "icrc", "vl", "lnh", "garbage",
             "bitflip", "header", "pkey", "dlid", "destqp", "psn", "replay")


def fuzz_scenario(seed: int = 1) -> Scenario:
    """One switch, three HCAs, RC SEND / WRITE / READ and UD flows (greedy), so QPs of
    every kind are live while frames are injected."""
    flows = [FlowSpec("send", "A", "B", window=4), FlowSpec("write", "B", "C", op="write", message_size=5000),
             FlowSpec("read", "C", "A", op="read", message_size=3000, window=8),
             FlowSpec("ud", "A", "C", transport="ud", rate=1e8)]
    return Scenario("fuzz", duration=10**12, switches=[SwitchSpec("S")],
                    hcas=[HCASpec("A", 1), HCASpec("B", 2), HCASpec("C", 3)],
                    links=[LinkSpec("A", "S"), LinkSpec("B", "S"), LinkSpec("C", "S")],
                    flows=flows, seed=seed)


def mutate(rng: random.Random, base: bytes, kind: str) -> bytearray:
    """A mutated copy of packet *base* (LRH ... VCRC)."""
    f = bytearray(base)
    n = len(f)
    if kind == "truncate":
        f = f[:rng.randrange(n)]
        if rng.random() < 0.5 and len(f) >= 2:
            if len(f) >= LRH_LEN:
                set_pktlen(f, (len(f) - VCRC_LEN) // 4)
            fix_crcs(f, icrc_too=False)
    elif kind == "extend":
        f = insert_before_vcrc(f, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))))
        if rng.random() < 0.5:
            set_pktlen(f, (len(f) - VCRC_LEN) // 4)
        fix_crcs(f, icrc_too=rng.random() < 0.5)
    elif kind == "pktlen":
        set_pktlen(f, rng.randrange(2048))
        fix_crcs(f, icrc_too=False)
    elif kind == "opcode":
        set_opcode(f, rng.randrange(256))
        fix_crcs(f)
    elif kind == "vcrc":
        flip_vcrc_bit(f, rng.randrange(2), rng.randrange(8))
    elif kind == "icrc":
        flip_icrc_bit(f, rng.randrange(4), rng.randrange(8))
        fix_crcs(f, icrc_too=False)
    elif kind == "vl":
        set_vl(f, rng.randrange(16))
        fix_crcs(f, icrc_too=False)
    elif kind == "lnh":
        set_lnh(f, rng.choice((0, 1, 3)))
        fix_crcs(f)
    elif kind == "garbage":
        f = bytearray(rng.randrange(256) for _ in range(rng.choice((0, 1, 5, 6, 7, 25, 26, 40, 300))))
        if rng.random() < 0.5:
            fix_crcs(f)
    elif kind == "bitflip":
        for _ in range(rng.randint(1, 8)):
            bit = rng.randrange(n * 8)
            f[bit >> 3] ^= 1 << (bit & 7)
        if rng.random() < 0.3:
            fix_crcs(f)
    elif kind == "header":
        for _ in range(rng.randint(1, 6)):
            f[rng.randrange(min(n, 40))] = rng.randrange(256)
        fix_crcs(f, icrc_too=rng.random() < 0.8)
    elif kind == "pkey":
        hi = rng.randrange(256)
        set_pkey(f, (hi << 8) | rng.randrange(256))
        fix_crcs(f)
    elif kind == "dlid":
        hi = rng.choice((0, 0xFF, rng.randrange(256)))
        set_dlid(f, (hi << 8) | rng.randrange(8))
        fix_crcs(f, icrc_too=False)
    elif kind == "destqp":
        set_destqp(f, rng.randrange(1 << 24) if rng.random() < 0.5 else 0x100 + rng.randrange(1, 8))
        fix_crcs(f)
    elif kind == "psn":
        set_psn(f, rng.randrange(1 << 24) if rng.random() < 0.3 else rng.randrange(64))
        set_ackreq_byte(f, rng.choice((0, 1)))
        fix_crcs(f)
    elif kind == "replay":
        pass
    else:
        raise ValueError(kind)
    return f


def mutate_link(rng: random.Random) -> bytearray:
    """A link packet with random fields: garbage, a bad LPCRC, or a good one."""
    head = bytes(rng.randrange(256) for _ in range(4))
    r = rng.random()
    if r < 0.2:
        return bytearray(rng.randrange(256) for _ in range(rng.choice((0, 3, 5, 7, 12))))
    crc = lpcrc(head) if r < 0.6 else rng.randrange(1 << 16)
    return bytearray(head + crc.to_bytes(2, "little"))


class _Taking:
    """A QP table entry that counts the packets its QP takes (the campaign's "taken")."""

    def __init__(self, campaign, handler) -> None:
        self.campaign = campaign
        self.handler = handler
        self.name = getattr(handler, "name", "")

    def on_packet(self, now, frame):
        self.campaign.taken += 1
        return self.handler.on_packet(now, frame)


class FuzzRig:
    """A live fabric whose nodes the fuzzer drives by hand."""

    def __init__(self, seed: int = 1, warmup: int = 50 * PS_PER_US):
        self.rng = random.Random(seed)
        self.fabric = fab = build_fabric(fuzz_scenario(seed))
        self.samples: list[bytes] = []
        cap = self

        # warm up with the real engine and keep the frames it carries as seeds
        class _Grab:
            def write(self, t, frame, link):
                if not link and len(cap.samples) < 400:
                    cap.samples.append(bytes(frame))
        self.engine = VirtualEngine(fab.nodes.values(), fab.wiring, _Grab())
        self.engine.start(0)
        self.engine.run(warmup)
        self.now = warmup
        self.taken = 0
        # count the packets the QPs take: each HCA's QP table entry is wrapped (the QP's
        # own method is not replaced: a compiled QP's methods are read-only)
        flow_qps = {id(qp) for pair in fab.qps.values() for qp in pair}
        for node in fab.nodes.values():
            qps = getattr(node, "qps", None)
            if qps is not None:
                for qpn, handler in list(qps.items()):
                    if id(handler) in flow_qps:
                        qps[qpn] = _Taking(self, handler)
        self.nodes = list(fab.nodes.values())
        self.stats = Counter()

    def _counted(self, node) -> int:
        return sum(node.counters.values())

    def _settle(self, node) -> None:
        """Let *node* finish what the frame started; keep its links credited, its
        outbox empty and runaway READ responses trimmed."""
        self.now += 3 * PS_PER_US
        for port in node.ports.values():
            for tx in port.tx:
                tx.update(tx.fctbs + 256)
        while True:
            d = node.next_deadline()
            if d is None or d > self.now:
                break
            node.wake(d)
        for qps in self.fabric.qps.values():
            for qp in qps:
                if not isinstance(qp, RCResponder):
                    continue
                reads = qp.reads
                if reads and len(reads) > 4:
                    del reads[4:]
                if reads and reads[0][1] > 1 << 16:
                    reads[0][1] = 1 << 16

    @staticmethod
    def _queued(node, frame) -> bool:
        """The switch holds *frame* (waiting for its output)."""
        if not isinstance(node, Switch):
            return False
        for per_vl in node.queues.values():
            for q in per_vl:
                if any(e.frame is frame for e in q):
                    return True
        return any(e.frame is frame for q in node.vl15.values() for e in q)

    def feed(self, node, port: int, frame, link: bool) -> str:
        """Feed one frame; return how it ended: "to_qp" (an HCA handed it to a queue
        pair), "forwarded" (by a switch), "applied" (a link packet), "counted" (dropped
        and counted) or "silent" (none of these: the property fails)."""
        before_c, before_t = self._counted(node), self.taken
        fcps_before = node.counters.get("PortRcvErrors", 0)
        node.outbox.clear()
        node.receive(port, frame, link, self.now)
        self._settle(node)
        forwarded = any(f is frame for _, f, lk, _ in node.outbox if not lk) or self._queued(node, frame)
        node.outbox.clear()
        if self.taken > before_t:
            return "to_qp"                      # passed every check of the HCA
        if forwarded:
            return "forwarded"                  # passed every check of the switch
        if self._counted(node) > before_c:
            return "counted"
        if link and node.counters.get("PortRcvErrors", 0) == fcps_before and len(frame) == 6:
            return "applied"                    # a well-formed link packet
        return "silent"

    def step(self) -> str:
        rng = self.rng
        node = rng.choice(self.nodes)
        port = rng.choice(list(node.ports))
        if rng.random() < 0.15:
            frame, link, kind = mutate_link(rng), True, "link"
        else:
            kind = rng.choice(MUTATIONS)
            base = rng.choice(self.samples)
            lid = node.lid if isinstance(node, HCA) else None
            if lid is not None and rng.random() < 0.7:      # aim at this HCA and its QPs
                aimed = bytearray(base)
                set_dlid(aimed, lid)
                if node.qps and rng.random() < 0.7:
                    set_destqp(aimed, rng.choice(list(node.qps)))
                base = bytes(fix_crcs(aimed))
            frame, link = mutate(rng, base, kind), False
        verdict = self.feed(node, port, frame, link)
        self.stats[(type(node).__name__, kind, verdict)] += 1
        return verdict


def run(frames: int, seed: int = 1, report_every: int = 0, out=sys.stdout) -> Counter:
    """Feed *frames* frames; raises on the first exception (with the seed to replay)
    and returns the per-(node kind, mutation, verdict) counts."""
    rig = FuzzRig(seed)
    t0 = time.perf_counter()
    for i in range(1, frames + 1):
        rig.step()
        if report_every and i % report_every == 0:
            print("%d frames, %.0f/s" % (i, i / (time.perf_counter() - t0)), file=out, flush=True)
    return rig.stats


def summarize(stats: Counter) -> dict:
    out = Counter()
    for (node, _, verdict), n in stats.items():
        out[node + ":" + verdict] += n
        out["total"] += n
    return dict(sorted(out.items()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ibemu.fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seeds", type=int, default=1, help="run seeds seed .. seed+N-1")
    args = p.parse_args(argv)
    bad = 0
    for seed in range(args.seed, args.seed + args.seeds):
        stats = run(args.frames, seed, report_every=max(args.frames // 10, 1))
        s = summarize(stats)
        silent = sum(n for k, n in s.items() if k.endswith(":silent"))
        bad += silent
        print("seed %d: %s" % (seed, s))
    print("no exception; %s" % ("every bad frame counted" if not bad else "%d frames neither taken nor counted" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
