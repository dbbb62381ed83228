"""Scapy layer for ibemu's UDP shim (:mod:`ibemu.wire.shim`), bound so that ``rdpcap``
or ``sniff`` of loopback traffic dissects UDP / IBEmu / LRH / BTH / ... or IBLink.

The emulator's ports are handed out from a range (``DEFAULT_PORT_BASE`` and up); the
shim is bound to every destination port of that range.  :func:`bind_udp_ports` binds
another range.  A datagram in the range without the shim's magic stays Raw.
"""
from __future__ import annotations

from scapy.fields import ByteEnumField, ByteField, IntField, LongField, StrFixedLenField
from scapy.layers.inet import UDP
from scapy.packet import Packet, Raw, bind_bottom_up, bind_layers

from ibemu.wire.shim import DEFAULT_PORT_BASE, DEFAULT_PORT_COUNT, MAGIC

from .ib import LRH
from .link import IBLink


class IBEmu(Packet):
    name = "ibemu UDP shim"
    fields_desc = [
        StrFixedLenField("magic", MAGIC, 2),
        ByteField("version", 1),
        ByteEnumField("kind", 0, {0: "packet", 1: "link"}),
        IntField("seq", 0),
        LongField("time_ns", 0),
    ]

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt is not None and _pkt[:2] != MAGIC:
            return Raw
        return cls

    def mysummary(self):
        return self.sprintf("IBEmu seq=%IBEmu.seq% t=%IBEmu.time_ns%ns")


class _PortRange:
    """Compares equal to every port of [lo, hi): lets one binding cover a range."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def __eq__(self, other):
        return isinstance(other, int) and self.lo <= other < self.hi

    def __hash__(self):
        return hash((self.lo, self.hi))

    def __repr__(self):
        return "%d-%d" % (self.lo, self.hi - 1)


def bind_udp_ports(lo: int, count: int) -> None:
    """Dissect UDP datagrams to destination ports [lo, lo+count) as ibemu frames."""
    bind_bottom_up(UDP, IBEmu, dport=_PortRange(lo, lo + count))


bind_udp_ports(DEFAULT_PORT_BASE, DEFAULT_PORT_COUNT)
bind_layers(UDP, IBEmu, sport=DEFAULT_PORT_BASE, dport=DEFAULT_PORT_BASE)
bind_layers(IBEmu, LRH, kind=0)
bind_layers(IBEmu, IBLink, kind=1)
