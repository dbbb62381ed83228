"""A sample of every frame kind ibemu puts on the wire, for captures, docs and tests.

``ibemu sample --pcap FILE`` writes it as an ERF capture and prints it decoded.
"""
from __future__ import annotations

from .capture.erf import ErfPcapWriter
from .wire import opcodes as op
from .wire.codec import build
from .wire.linkpkt import OP_INIT, OP_NORMAL, build_arn, build_link

PAYLOAD = bytes(range(256)) * 8   # 2048 bytes, the PMTU of seed 003 Table 1


def sample_frames():
    """Return a list of ``(label, link, frame_bytes)``; each value is known to the tests."""
    A, B = 3, 5          # LIDs
    qa, qb = 0x12, 0x34  # QPNs
    out = [
        ("RC SEND_ONLY 2 KB", False, build(dlid=B, slid=A, opcode=op.RC_SEND_ONLY, destqp=qb, psn=100, payload=PAYLOAD)),
        ("RC SEND_ONLY FECN", False, build(dlid=B, slid=A, opcode=op.RC_SEND_ONLY, destqp=qb, psn=101, fecn=1, ackreq=1, payload=PAYLOAD[:256])),
        ("RC SEND_FIRST", False, build(dlid=B, slid=A, opcode=op.RC_SEND_FIRST, destqp=qb, psn=102, payload=PAYLOAD)),
        ("RC SEND_MIDDLE", False, build(dlid=B, slid=A, opcode=op.RC_SEND_MIDDLE, destqp=qb, psn=103, payload=PAYLOAD)),
        ("RC SEND_LAST pad", False, build(dlid=B, slid=A, opcode=op.RC_SEND_LAST, destqp=qb, psn=104, ackreq=1, payload=PAYLOAD[:1001])),
        ("RC ACK BECN", False, build(dlid=A, slid=B, opcode=op.RC_ACKNOWLEDGE, destqp=qa, psn=104, becn=1, ext={"AETH": {"syndrome": 0x1F, "msn": 2}})),
        ("RC NAK PSN seq", False, build(dlid=A, slid=B, opcode=op.RC_ACKNOWLEDGE, destqp=qa, psn=105, ext={"AETH": {"syndrome": 0x60, "msn": 2}})),
        ("RC RDMA_WRITE_ONLY", False, build(dlid=B, slid=A, opcode=op.RC_RDMA_WRITE_ONLY, destqp=qb, psn=105, ext={"RETH": {"va": 0x10000, "r_key": 0x77, "dma_len": 512}}, payload=PAYLOAD[:512])),
        ("RC RDMA_WRITE_ONLY_WITH_IMM", False, build(dlid=B, slid=A, opcode=0x0B, destqp=qb, psn=106, ext={"RETH": {"va": 0x20000, "r_key": 0x77, "dma_len": 64}, "ImmDt": {"immdt": 0xCAFE}}, payload=PAYLOAD[:64])),
        ("RC RDMA_READ_REQUEST", False, build(dlid=B, slid=A, opcode=op.RC_RDMA_READ_REQUEST, destqp=qb, psn=107, ext={"RETH": {"va": 0x30000, "r_key": 0x78, "dma_len": 4096}})),
        ("RC RDMA_READ_RESPONSE_FIRST", False, build(dlid=A, slid=B, opcode=op.RC_RDMA_READ_RESPONSE_FIRST, destqp=qa, psn=107, ext={"AETH": {"syndrome": 0x1F, "msn": 3}}, payload=PAYLOAD)),
        ("RC RDMA_READ_RESPONSE_LAST FECN", False, build(dlid=A, slid=B, opcode=op.RC_RDMA_READ_RESPONSE_LAST, destqp=qa, psn=108, fecn=1, ext={"AETH": {"syndrome": 0x1F, "msn": 3}}, payload=PAYLOAD)),
        ("UD SEND_ONLY", False, build(dlid=B, slid=A, opcode=op.UD_SEND_ONLY, destqp=0x56, psn=7, ext={"DETH": {"q_key": 0x11111111, "src_qp": 0x65}}, payload=PAYLOAD[:1024])),
        ("CNP", False, build(dlid=A, slid=B, opcode=op.CNP, destqp=0x65, psn=0, becn=1)),
        ("RC SEND_ONLY GRH", False, build(dlid=B, slid=A, opcode=op.RC_SEND_ONLY, destqp=qb, psn=109, payload=PAYLOAD[:128],
                                          grh={"tclass": 0, "flowlabel": 0x12345, "hoplmt": 64, "sgid": bytes.fromhex("fe800000000000000000000000000003"), "dgid": bytes.fromhex("fe800000000000000000000000000005")})),
        ("LINK init VL0", True, build_link(OP_INIT, 0, 0, 128)),
        ("LINK normal VL0", True, build_link(OP_NORMAL, 4095, 0, 60)),
        ("LINK normal VL1", True, build_link(OP_NORMAL, 33, 1, 161)),
        ("LINK arn DLID 0x1234", True, build_arn(0x1234)),
    ]
    return out


def write_sample(path, start_ns: int = 1_000, gap_ns: int = 2_068) -> list:
    """Write the sample as an ERF capture, frames *gap_ns* apart; return the sample."""
    frames = sample_frames()
    with ErfPcapWriter(path) as w:
        for i, (_, link, frame) in enumerate(frames):
            w.write(start_ns + i * gap_ns, frame, link=link)
    return frames
