"""The ranks' addresses under MPI (split from :mod:`.mpi`, issue 27): which address of
its host each rank's nodes use, and the address map every rank agrees on."""
from __future__ import annotations

import fcntl
import socket
import struct
from collections.abc import Sequence
from typing import Any

from ..errors import UserError
from .addrmap import port_keys
from .sockets import free_port_block

SIOCGIFADDR = 0x8915
IFR_ADDR = 20
"""Offset of the IPv4 address in a struct ifreq: ifr_name (16 bytes), then a sockaddr_in
whose sin_family and sin_port take 4."""

def interface_addresses() -> dict[str, str]:
    """``{interface: IPv4 address}`` of this host's (this network namespace's)
    interfaces that have one (Linux: SIOCGIFADDR)."""
    out: dict[str, str] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                ifreq = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            out[name] = socket.inet_ntoa(ifreq[IFR_ADDR:IFR_ADDR + 4])
    return out


def _common_bits(a: str, b: str) -> int:
    x = int(struct.unpack("!I", socket.inet_aton(a))[0]) ^ int(struct.unpack("!I", socket.inet_aton(b))[0])
    return 32 - x.bit_length()


def local_address(mine: dict[str, str], everyone: Sequence[dict[str, str]], iface: str | None = None) -> str:
    """The address this rank's nodes use.  *mine*: this rank's
    :func:`interface_addresses`; *everyone*: every rank's.  *iface*: that interface's
    address.  Else 127.0.0.1 when every rank sees the same addresses (one host), else
    this rank's non-loopback address sharing the most leading bits with another
    rank's (the network they share)."""
    if iface:
        if iface not in mine:
            raise UserError("--iface %s: no IPv4 address on this host (interfaces: %s)"
                            % (iface, ", ".join(sorted(mine)) or "none"))
        return mine[iface]
    own = sorted({a for a in mine.values() if not a.startswith("127.")})
    if all(sorted(set(e.values())) == sorted(set(mine.values())) for e in everyone):
        return "127.0.0.1"
    others = {a for e in everyone if sorted(set(e.values())) != sorted(set(mine.values()))
              for a in e.values() if not a.startswith("127.")}
    if not own or not others:
        raise UserError("this host has no address the other ranks can reach; give --iface")
    return max(own, key=lambda a: (max(_common_bits(a, o) for o in others), a))



def plan_addresses(comm: Any, fabric: Any, groups: list[list[str]], iface: str | None,
                    port_base: int) -> tuple[dict[tuple[str, int], tuple[str, int]], list[str]]:
    """The address map every rank agrees on, and each rank's host address."""
    rank = comm.Get_rank()
    mine = interface_addresses()
    everyone = comm.allgather(mine)
    err = ""
    try:
        host = local_address(mine, everyone, iface)
    except UserError as e:
        host, err = "", str(e)
    keys = port_keys(fabric)
    own = [k for k in keys if k[0] in set(groups[rank])]
    hosts = comm.allgather((host, len(own), err))
    bad = [(r, e) for r, (_, _, e) in enumerate(hosts) if e]
    if bad:
        raise UserError("rank %d: %s" % bad[0])
    first: dict[str, int] = {}
    for r, (h, _, _) in enumerate(hosts):
        first.setdefault(h, r)
    base = None
    if first[host] == rank:                         # the first rank on this address picks the block
        total = sum(n for h, n, _ in hosts if h == host)
        try:
            base = free_port_block(host, max(1, total), port_base)
        except UserError as e:
            err = str(e)
    bases = comm.allgather((base, err))
    bad = [(r, e) for r, (_, e) in enumerate(bases) if e]
    if bad:
        raise UserError("rank %d: %s" % bad[0])
    amap: dict[tuple[str, int], tuple[str, int]] = {}
    next_port = {h: bases[r][0] for h, r in first.items()}
    for r, group in enumerate(groups):
        h = hosts[r][0]
        names = set(group)
        for k in keys:
            if k[0] in names:
                amap[k] = (h, next_port[h])
                next_port[h] += 1
    return amap, [h for h, _, _ in hosts]
