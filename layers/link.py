"""Scapy layer for the InfiniBand link flow-control packet (IBA 7.9.4).

Op(4) FCTBS(12) | VL(4) FCCL(12) | LPCRC(16); the LPCRC is computed in post_build when
None (:mod:`ibemu.wire.linkpkt`).  Op 2 is ibemu's adaptive routing notification
(issue 31, :mod:`ibemu.fabric.arn`): VL 15 and the DLID in the credit fields
(``IBLink(...).arn_dlid()``).
"""
from __future__ import annotations

import struct

from scapy.fields import BitEnumField, BitField, XLEShortField
from scapy.packet import Packet

from ibemu.wire.crc import lpcrc


class IBLink(Packet):
    name = "InfiniBand link flow control"
    fields_desc = [
        BitEnumField("op", 0, 4, {0: "normal", 1: "init", 2: "arn"}),
        BitField("fctbs", 0, 12),
        BitField("vl", 0, 4),
        BitField("fccl", 0, 12),
        XLEShortField("lpcrc", None),
    ]

    def post_build(self, p, pay):
        if self.lpcrc is None:
            p = p[:4] + struct.pack("<H", lpcrc(p[:4]))
        return p + pay

    def extract_padding(self, s):
        return b"", s

    def arn_dlid(self) -> int:
        """The DLID of an adaptive routing notification (op 2)."""
        return (self.fctbs << 4) | (self.fccl >> 8)

    def mysummary(self):
        if self.op == 2:
            return "LINK arn DLID=%d" % self.arn_dlid()
        return self.sprintf("LINK %IBLink.op% VL%IBLink.vl% FCTBS=%IBLink.fctbs% FCCL=%IBLink.fccl%")
