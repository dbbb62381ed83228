"""One-line summaries of frames, from the codec (no Scapy), in the style of the layers'
``summary()``: ``LRH 3>5 VL0 SL0 / BTH RC_SEND_ONLY qp=0x12 psn=100 FECN``."""
from __future__ import annotations

from .codec import CodecError, parse
from .layout import Buf
from .linkpkt import OP_ARN, get_arn_dlid, parse_link
from .opcodes import AETH_KINDS, NAK_CODES, opcode_name


def aeth_text(syndrome: int) -> str:
    """Decode an AETH syndrome (IBA 9.7.5.1): ACK with its credit count, RNR NAK with its
    timer, or NAK with its code."""
    kind, value = (syndrome >> 5) & 3, syndrome & 0x1F
    if kind == 0:
        return "ACK credits=%s" % ("invalid" if value == 31 else value)
    if kind == 1:
        return "RNR_NAK timer=%d" % value
    if kind == 3:
        return "NAK %s" % NAK_CODES.get(value, "code=%d" % value)
    return "%s 0x%02x" % (AETH_KINDS[kind], syndrome)


def summarize_packet(frame: Buf) -> str:
    """Summary of an IBA packet; raises CodecError when it does not parse."""
    f = parse(frame)
    parts = ["LRH %d>%d VL%d SL%d" % (f.slid, f.dlid, f.vl, f.sl)]
    if f.grh is not None:
        parts.append("GRH")
    bth = "BTH %s qp=0x%x psn=%d" % (opcode_name(f.opcode), f.destqp, f.psn)
    if f.fecn:
        bth += " FECN"
    if f.becn:
        bth += " BECN"
    if f.ackreq:
        bth += " A"
    parts.append(bth)
    for name, fields in f.ext.items():
        if name == "AETH":
            parts.append("AETH %s msn=%d" % (aeth_text(fields["syndrome"]), fields["msn"]))
        elif name == "RETH":
            parts.append("RETH va=0x%x len=%d" % (fields["va"], fields["dma_len"]))
        elif name == "DETH":
            parts.append("DETH src_qp=0x%x" % fields["src_qp"])
        else:
            parts.append(name)
    if f.payload:
        parts.append("%d B" % len(f.payload))
    return " / ".join(parts)


def summarize_link(frame: Buf) -> str:
    op, fctbs, vl, fccl, _ = parse_link(frame)
    if op == OP_ARN:
        return "LINK arn DLID=%d" % get_arn_dlid(frame)
    return "LINK %s VL%d FCTBS=%d FCCL=%d" % ("init" if op == 1 else "normal" if op == 0 else "op%d" % op,
                                             vl, fctbs, fccl)


def summarize(frame: Buf, link: bool) -> str:
    """Summary of any frame; a frame that does not parse gives ``MALFORMED (reason)``."""
    try:
        return summarize_link(frame) if link else summarize_packet(frame)
    except (CodecError, ValueError) as e:
        return "MALFORMED (%s)" % e
