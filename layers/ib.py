"""Scapy layers for InfiniBand transport packets: LRH, GRH, BTH and extension headers.

Field names follow the IBA specification (lower case): LRH (IBA 7.7), GRH (8.3),
BTH (9.2), RDETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH (9.3).
The ICRC is a trailer of the BTH and the VCRC a trailer of the LRH; both are computed in
post_build when left None (the ICRC at the LRH, which alone sees the whole packet),
so a test can force a bad value.  CRC rules: :mod:`ibemu.wire.crc`.

    >>> LRH(dlid=5, slid=3)/BTH(opcode="RC_SEND_ONLY", destqp=0x12, psn=100, fecn=1)/Raw(b"x")
"""
from __future__ import annotations

import struct

from scapy.fields import (
    BitEnumField,
    BitField,
    ByteEnumField,
    ByteField,
    FCSField,
    IntField,
    IP6Field,
    LongField,
    ShortField,
    ThreeBytesField,
    X3BytesField,
    XIntField,
    XLongField,
    XShortField,
)
from scapy.packet import Packet, Raw, bind_layers

from ibemu.wire.crc import icrc as _icrc
from ibemu.wire.crc import vcrc as _vcrc
from ibemu.wire.opcodes import OPCODES, opcode_name
from ibemu.wire.summary import aeth_text as aeth_syndrome_text

OPCODE_NAMES = {code: name for code, (name, _) in OPCODES.items()}
LNH_NAMES = {0: "Raw", 1: "IPv6", 2: "IBA_LOCAL", 3: "IBA_GLOBAL"}


class LRH(Packet):
    """Local Route Header (8 bytes) with the VCRC trailer of the whole packet."""
    name = "InfiniBand LRH"
    fields_desc = [
        BitField("vl", 0, 4),
        BitField("lver", 0, 4),
        BitField("sl", 0, 4),
        BitField("rsvd1", 0, 2),
        BitEnumField("lnh", 2, 2, LNH_NAMES),
        ShortField("dlid", 0),
        BitField("rsvd2", 0, 5),
        BitField("pktlen", None, 11),
        ShortField("slid", 0),
        FCSField("vcrc", None, fmt="<H"),
    ]

    def post_build(self, p, pay):
        body, vcrc_bytes = pay[:-2], pay[-2:]
        if self.pktlen is None:
            word = (p[4] << 8 | p[5]) & 0xF800 | (((len(p) + len(body)) >> 2) & 0x7FF)
            p = p[:4] + struct.pack(">H", word) + p[6:]
        bth = self.getlayer(BTH)
        if self.lnh in (2, 3) and bth is not None and bth.icrc is None and len(body) >= 4:
            body = body[:-4] + struct.pack("<I", _icrc(body[:-4], self.lnh))
        if self.vcrc is None:
            vcrc_bytes = struct.pack("<H", _vcrc(p + body))
        return p + body + vcrc_bytes

    def mysummary(self):
        return self.sprintf("LRH %LRH.slid%>%LRH.dlid% VL%LRH.vl% SL%LRH.sl%")


class GRH(Packet):
    """Global Route Header (40 bytes), present when LRH.lnh == 3."""
    name = "InfiniBand GRH"
    fields_desc = [
        BitField("ipver", 6, 4),
        BitField("tclass", 0, 8),
        BitField("flowlabel", 0, 20),
        ShortField("paylen", None),
        ByteField("nxthdr", 0x1B),
        ByteField("hoplmt", 0),
        IP6Field("sgid", "::"),
        IP6Field("dgid", "::"),
    ]

    def post_build(self, p, pay):
        if self.paylen is None:
            p = p[:4] + struct.pack(">H", len(pay)) + p[6:]
        return p + pay

    def mysummary(self):
        return self.sprintf("GRH %GRH.sgid% > %GRH.dgid%")


class BTH(Packet):
    """Base Transport Header (12 bytes) with the ICRC trailer."""
    name = "InfiniBand BTH"
    fields_desc = [
        ByteEnumField("opcode", 0, OPCODE_NAMES),
        BitField("se", 0, 1),
        BitField("m", 0, 1),
        BitField("padcnt", None, 2),
        BitField("tver", 0, 4),
        XShortField("pkey", 0xFFFF),
        BitField("fecn", 0, 1),
        BitField("becn", 0, 1),
        BitField("resv6", 0, 6),
        X3BytesField("destqp", 0),
        BitField("ackreq", 0, 1),
        BitField("resv7", 0, 7),
        ThreeBytesField("psn", 0),
        FCSField("icrc", None, fmt="<I"),
    ]

    def post_build(self, p, pay):
        body, icrc_bytes = pay[:-4], pay[-4:]
        if self.padcnt is None:
            pad = (-len(body)) & 3
            p = p[:1] + bytes([p[1] & 0xCF | pad << 4]) + p[2:]
            body += bytes(pad)
        return p + body + icrc_bytes

    def guess_payload_class(self, payload):
        ext = OPCODES.get(self.opcode, ("", ()))[1]
        return EXT_LAYERS[ext[0]] if ext else Raw

    def mysummary(self):
        s = "BTH %s qp=0x%x psn=%d" % (opcode_name(self.opcode), self.destqp, self.psn)
        if self.fecn:
            s += " FECN"
        if self.becn:
            s += " BECN"
        return s, [LRH, GRH]


class _ExtHeader(Packet):
    """An extension header; the next one is chosen from the BTH OpCode's header list."""

    def _bth(self):
        u = self.underlayer
        while u is not None and not isinstance(u, BTH):
            u = u.underlayer
        return u

    def guess_payload_class(self, payload):
        bth = self._bth()
        if bth is not None:
            ext = OPCODES.get(bth.opcode, ("", ()))[1]
            name = type(self).__name__
            if name in ext and ext.index(name) + 1 < len(ext):
                return EXT_LAYERS[ext[ext.index(name) + 1]]
        return Raw


class RDETH(_ExtHeader):
    name = "InfiniBand RDETH"
    fields_desc = [ByteField("rsvd", 0), X3BytesField("ee_context", 0)]


class DETH(_ExtHeader):
    name = "InfiniBand DETH"
    fields_desc = [XIntField("q_key", 0), ByteField("rsvd", 0), X3BytesField("src_qp", 0)]

    def mysummary(self):
        return self.sprintf("DETH src_qp=%DETH.src_qp%"), _WITH_HEADERS

    def guess_payload_class(self, payload):
        """To QP 0 or 1 (the SMI and GSI) a UD SEND-only payload is a MAD (IBA 13.5)."""
        bth = self._bth()
        if (bth is not None and bth.opcode == 0x64 and bth.destqp in (0, 1) and len(payload) == 256
                and payload[:1] == b"\x01"):
            from .mad import MAD
            return MAD
        return super().guess_payload_class(payload)


class RETH(_ExtHeader):
    name = "InfiniBand RETH"
    fields_desc = [XLongField("va", 0), XIntField("r_key", 0), IntField("dma_len", 0)]

    def mysummary(self):
        return self.sprintf("RETH va=%RETH.va% len=%RETH.dma_len%"), _WITH_HEADERS


class AtomicETH(_ExtHeader):
    name = "InfiniBand AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("r_key", 0),
                   LongField("swap_data", 0), LongField("cmp_data", 0)]


class _SyndromeField(ByteField):
    def i2repr(self, pkt, x):
        return "0x%02x (%s)" % (x, aeth_syndrome_text(x or 0))


class AETH(_ExtHeader):
    name = "InfiniBand AETH"
    fields_desc = [_SyndromeField("syndrome", 0), ThreeBytesField("msn", 0)]

    def mysummary(self):
        return "AETH %s msn=%d" % (aeth_syndrome_text(self.syndrome), self.msn), _WITH_HEADERS


class AtomicAckETH(_ExtHeader):
    name = "InfiniBand AtomicAckETH"
    fields_desc = [LongField("orig_rem_data", 0)]


class ImmDt(_ExtHeader):
    name = "InfiniBand ImmDt"
    fields_desc = [XIntField("immdt", 0)]


class IETH(_ExtHeader):
    name = "InfiniBand IETH"
    fields_desc = [XIntField("r_key", 0)]


_WITH_HEADERS = [LRH, GRH, BTH]   # summaries show the headers beneath an extension header
EXT_LAYERS = {cls.__name__: cls for cls in
              (RDETH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH)}

bind_layers(LRH, BTH, lnh=2)
bind_layers(LRH, GRH, lnh=3)
bind_layers(GRH, BTH, nxthdr=0x1B)
# defaults used when building BTH()/X() without an OpCode
bind_layers(BTH, AETH, opcode=0x11)
bind_layers(BTH, RETH, opcode=0x0A)
bind_layers(BTH, DETH, opcode=0x64)
bind_layers(BTH, RDETH, opcode=0x44)
bind_layers(BTH, AtomicETH, opcode=0x14)
bind_layers(BTH, IETH, opcode=0x17)
bind_layers(BTH, ImmDt, opcode=0x05)
