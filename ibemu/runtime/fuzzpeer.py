"""A hostile peer for a running wall-clock emulation (issue 8 item 6): it takes the
place of a node that no worker runs (``run_wall(..., external=["X"])``, or an address
map entry nobody binds), binds that node port's address, and sends random and mutated
datagrams at the emulated port it is linked to -- garbage, bad shims, frames with bad
CRCs, truncated, with a wrong PktLen or on a VL the link does not run, link packets with
a bad LPCRC or length, well-formed packets to a LID nobody has, and well-formed packets
with a P_Key the destination does not hold.  Every one must be dropped and counted by
the emulation, which must go on unharmed::

    python -m ibemu.runtime.fuzzpeer --bind 127.0.0.1:18605 --to 127.0.0.1:18604 \\
        --dlid 2 --per-kind 50 --seed 1

It waits for the emulation to start (the first flow-control packet from its peer
port), sends ``--per-kind`` datagrams of every kind in a random order, ``--spacing``
seconds apart, and prints what it sent as JSON: ``{"sent": {kind: n}, "expect":
{where: n}}``, *where* being the counter each kind must land in (:data:`EXPECT`).
The shim sequence numbers of its datagrams with a good shim are consecutive, so they do
not show up as lost datagrams.

It holds the run's secret (``--key``, the controller's ``parts/key``) and signs every
datagram with the key of the link it impersonates (``--link X:1,S:4``; issue 14), so that
its datagrams get past the MAC check and reach the checks this fuzzer is about.  Without
``--key`` every one of them is counted ``forged`` instead.
"""
from __future__ import annotations

import argparse
import json
import random
import socket
import sys
import time
from collections import Counter
from collections.abc import Sequence

from ..wire import codec
from ..wire import opcodes as OP
from ..wire.crc import lpcrc
from ..wire.layout import PACKET_OVERHEAD, PKTLEN_MASK, VCRC_LEN
from ..wire.mutate import fix_vcrc, flip_vcrc_bit, set_pktlen
from ..wire.shim import KIND_LINK, KIND_PACKET, KIND_SYNC, MAGIC, MAX_SHIM_DEPTH, VERSION, link_key, pack_shim, seal

EXPECT = {
    # not an ibemu datagram: the runtime's bad_datagrams
    "short": "bad_datagrams", "magic": "bad_datagrams", "version": "bad_datagrams",
    "kind": "bad_datagrams",
    # link-layer errors at the receiving port: PortRcvErrors
    "vcrc": "PortRcvErrors", "truncated": "PortRcvErrors", "pktlen": "PortRcvErrors",
    "vl": "PortRcvErrors", "tiny": "PortRcvErrors", "link_len": "PortRcvErrors",
    "link_crc": "PortRcvErrors",
    # well-formed, but to a LID the switch cannot route: PortRcvSwitchRelayErrors
    "unroutable": "PortRcvSwitchRelayErrors",
    # well-formed, routed, but a P_Key the destination HCA does not hold
    "pkey": "PortRcvConstraintErrors@dlid",
}
KINDS = tuple(EXPECT)


def _frame(rng: random.Random, dlid: int, slid: int, pkey: int = 0xFFFF, vl: int = 0) -> bytearray:
    return codec.build(dlid=dlid, slid=slid, opcode=OP.RC_SEND_ONLY, destqp=rng.randrange(2, 1 << 24),
                       psn=rng.randrange(1 << 24), pkey=pkey, vl=vl,
                       payload=bytes(rng.randrange(256) for _ in range(rng.choice((4, 64, 256)))))


def make(rng: random.Random, kind: str, seq: int, *, dlid: int, slid: int,
         bad_vl: int = 14, bad_pkey: int = 0x1234, nolid: int = 0xBEEF) -> bytes:
    """One datagram of *kind* (see :data:`EXPECT`), shim sequence number *seq*."""
    shim = pack_shim(KIND_PACKET, seq, 0)
    if kind == "short":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(16)))
    if kind == "magic":
        junk = bytearray(rng.randrange(256) for _ in range(rng.randrange(16, 200)))
        junk[0] = rng.choice([b for b in range(256) if b != MAGIC[0]])
        return bytes(junk)
    if kind == "version":
        return pack_shim(KIND_PACKET, seq, 0, version=rng.choice([v for v in range(256) if v != VERSION])) + \
            bytes(_frame(rng, dlid, slid))
    if kind == "kind":
        # the flags' kind bits 3, no kind (0 packet, 1 link, 2 sync), under any depth
        return pack_shim(KIND_SYNC + 1, seq, 0, depth=rng.randrange(MAX_SHIM_DEPTH + 1)) + \
            bytes(_frame(rng, dlid, slid))
    if kind in ("link_len", "link_crc"):
        head = bytes(rng.randrange(256) for _ in range(4))
        crc = lpcrc(head)
        if kind == "link_len":
            body = (head + crc.to_bytes(2, "little"))[:rng.choice((0, 1, 3, 5))] if rng.random() < 0.5 \
                else head + crc.to_bytes(2, "little") + bytes(rng.randrange(1, 40))
        else:
            body = head + ((crc ^ (1 << rng.randrange(16))).to_bytes(2, "little"))
        return pack_shim(KIND_LINK, seq, 0) + body
    f = _frame(rng, dlid, slid)
    if kind == "vcrc":
        flip_vcrc_bit(f, rng.randrange(2), rng.randrange(8))
    elif kind == "truncated":
        f = fix_vcrc(f[:rng.randrange(PACKET_OVERHEAD, len(f) - 1)])
    elif kind == "pktlen":
        set_pktlen(f, (codec.get_pktlen(f) + rng.choice((-3, -2, -1, 1, 2, 50))) & PKTLEN_MASK)
        f = fix_vcrc(f)
    elif kind == "vl":
        f = _frame(rng, dlid, slid, vl=bad_vl)
    elif kind == "tiny":
        f = fix_vcrc(bytearray(rng.randrange(256) for _ in range(rng.randrange(VCRC_LEN, PACKET_OVERHEAD))))
    elif kind == "unroutable":
        f = codec.build(dlid=nolid, slid=slid, opcode=OP.RC_SEND_ONLY, destqp=5, payload=bytes(8))
    elif kind == "pkey":
        f = _frame(rng, dlid, slid, pkey=bad_pkey)
    else:
        raise ValueError("unknown kind %r" % kind)
    return shim + bytes(f)


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def run(bind: tuple[str, int], to: tuple[str, int], *, dlid: int, slid: int, per_kind: int = 20,
        seed: int = 1, spacing: float = 0.002, wait: float = 30.0, kinds: Sequence[str] = KINDS,
        bad_vl: int = 14, key: bytes | None = None, link: tuple[str, str] = ("", "")
        ) -> dict[str, dict[str, int]]:
    """Send the datagrams (see the module text); return what was sent and where it must
    be counted.  *key*, *link* ((sender, receiver) port labels): sign the datagrams
    with that link's key.  Raises TimeoutError when the emulation does not start within *wait* s."""
    rng = random.Random(seed)
    lkey = link_key(key, *link) if key is not None else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind(tuple(bind))
        sock.settimeout(wait)
        try:
            sock.recvfrom(65536)                # the peer port's first flow-control packet
        except TimeoutError:
            raise TimeoutError("no datagram from %s:%d within %.0f s" % (*to, wait)) from None
        sock.setblocking(False)
        plan = [k for k in kinds for _ in range(per_kind)]
        rng.shuffle(plan)
        sent: Counter[str] = Counter()
        seq = 0
        for kind in plan:
            good_shim = EXPECT[kind] != "bad_datagrams"      # the others never reach the seq check
            if good_shim:
                seq += 1
            d = make(rng, kind, seq if good_shim else seq + 1, dlid=dlid, slid=slid, bad_vl=bad_vl)
            sock.sendto(seal(lkey, d) if lkey is not None else d, tuple(to))
            sent[kind] += 1
            try:                                # keep the socket's queue short
                while True:
                    sock.recvfrom(65536)
            except BlockingIOError:
                pass
            time.sleep(spacing)
    finally:
        sock.close()
    expect: Counter[str] = Counter()
    for kind, n in sent.items():
        expect[EXPECT[kind]] += n
    return {"sent": dict(sent), "expect": dict(expect)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ibemu.runtime.fuzzpeer", description=__doc__.split("\n\n")[0])
    p.add_argument("--bind", required=True, help="HOST:PORT of the node port impersonated")
    p.add_argument("--to", required=True, help="HOST:PORT of the emulated port it is linked to")
    p.add_argument("--dlid", type=int, required=True, help="an HCA's LID (for the P_Key kind)")
    p.add_argument("--slid", type=int, default=0x7F)
    p.add_argument("--per-kind", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--spacing", type=float, default=0.002, help="seconds between datagrams")
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the emulation")
    p.add_argument("--bad-vl", type=int, default=14, help="a VL the link does not run")
    p.add_argument("--key", help="the run's key file (owner-only)")
    p.add_argument("--link", default="", help="SENDER,RECEIVER port labels of the link, e.g. X:1,S:4")
    args = p.parse_args(argv)
    key = None
    if args.key:
        from ..errors import UserError
        from .addrmap import read_key
        try:
            key = read_key(args.key)
        except UserError as e:
            print("fuzzpeer: %s" % e, file=sys.stderr)
            return 1
    sender, _, receiver = args.link.partition(",")
    try:
        out = run(_addr(args.bind), _addr(args.to), dlid=args.dlid, slid=args.slid,
                  per_kind=args.per_kind, seed=args.seed, spacing=args.spacing, wait=args.wait,
                  bad_vl=args.bad_vl, key=key, link=(sender, receiver))
    except TimeoutError as e:
        print("fuzzpeer: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
