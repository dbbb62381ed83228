"""The CNP a destination sends for a FECN-marked packet (IBA annex A10; seed 000 §3;
../shared/REFERENCE.md "CNP"): used by the RC responder, the RC requester (for marked ACKs
and READ responses) and the UD receiver alike."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...wire import opcodes as OP
from ...wire.codec import build
from ...wire.fields import get_pkey, get_sl, get_slid
from ...wire.layout import Buf

if TYPE_CHECKING:
    from ..hca import HCA


def answer_cnp(hca: HCA, frame: Buf, remote_qpn: int, vl: int) -> bytearray:
    """The CNP answering FECN-marked *frame*, sent to the QP that sent it: LRH + BTH,
    BECN set, PSN 0, SL and P_Key copied (REFERENCE.md, as hfi1 builds it).  Counted as
    ``cnp_sent`` at *hca*."""
    hca.count("cnp_sent")
    return build(dlid=get_slid(frame), slid=hca.lid, opcode=OP.CNP, psn=0,
                 destqp=remote_qpn, vl=vl, sl=get_sl(frame), becn=1, pkey=get_pkey(frame))
