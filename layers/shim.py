"""Scapy layer for ibemu's UDP shim (:mod:`ibemu.wire.shim`, version 2), bound so that
``rdpcap`` or ``sniff`` of loopback traffic dissects UDP / IBEmu / LRH / BTH / ...,
IBLink or IBEmuSync.

The shim is ``magic 'iB' | version 2 | flags | seq u32 | time_ps u64`` (big-endian), the
flags byte being ``depth << 2 | kind``: Scapy reads bit fields most significant bit
first, so *depth* (6 bits) comes before *kind* (2 bits).  Kind 0 is followed by an IBA
packet (LRH on), kind 1 by a link flow-control packet, kind 2 by a synchronisation
message of the exact wall clock (:mod:`ibemu.runtime.syncproto`), which carries no frame.

The emulator's ports are handed out from a range (``DEFAULT_PORT_BASE`` and up); the
shim is bound to every destination port of that range.  :func:`bind_udp_ports` binds
another range.  A datagram in the range without the shim's magic stays Raw.
"""
from __future__ import annotations

from scapy.fields import (BitEnumField, BitField, ByteEnumField, ByteField, IntField, LongField,
                          StrFixedLenField, XLongField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, Raw, bind_bottom_up, bind_layers

from ibemu.wire.shim import DEFAULT_PORT_BASE, DEFAULT_PORT_COUNT, KIND_LINK, KIND_PACKET, KIND_SYNC, MAGIC, VERSION

from .ib import LRH
from .link import IBLink


class IBEmu(Packet):
    name = "ibemu UDP shim"
    fields_desc = [
        StrFixedLenField("magic", MAGIC, 2),
        ByteField("version", VERSION),
        BitField("depth", 0, 6),
        BitEnumField("kind", KIND_PACKET, 2, {KIND_PACKET: "packet", KIND_LINK: "link",
                                              KIND_SYNC: "sync"}),
        IntField("seq", 0),
        LongField("time_ps", 0),
    ]

    @classmethod
    def dispatch_hook(cls, _pkt=None, *args, **kargs):
        if _pkt is not None and _pkt[:2] != MAGIC:
            return Raw
        return cls

    def mysummary(self):
        return self.sprintf("IBEmu %IBEmu.kind% seq=%IBEmu.seq% t=%IBEmu.time_ps%ps depth=%IBEmu.depth%")


class IBEmuSync(Packet):
    """The payload of a kind-2 datagram: one message of the exact clock's protocol,
    ``phase u8 | step u8 | 6 bytes zero | round u64 | a u64 | b u64 | c u64`` (40 bytes,
    :data:`ibemu.runtime.syncproto.MESSAGE`).  Phase 1 (A): *a* is the number of frame
    datagrams sent on the link so far; phase 2 (B): (a, b) is a key (time ps, seq) and
    *c* the idle bits."""
    name = "ibemu sync message (exact clock)"
    fields_desc = [
        ByteEnumField("phase", 1, {1: "A", 2: "B"}),
        ByteField("step", 0),
        StrFixedLenField("reserved", b"\x00" * 6, 6),
        LongField("round", 0),
        LongField("a", 0),
        LongField("b", 0),
        XLongField("c", 0),
    ]

    def extract_padding(self, s):
        return b"", s

    def mysummary(self):
        return self.sprintf("SYNC phase %IBEmuSync.phase% round %IBEmuSync.round% step %IBEmuSync.step%")


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
bind_layers(IBEmu, LRH, kind=KIND_PACKET)
bind_layers(IBEmu, IBLink, kind=KIND_LINK)
bind_layers(IBEmu, IBEmuSync, kind=KIND_SYNC)
