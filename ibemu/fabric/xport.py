"""The switch's state per port and of each packet it holds (seed 003 §3 and Table 1;
:class:`ibemu.fabric.switch.Switch` runs the crossbar over them): :class:`Entry`, a
packet resident in an input buffer, waiting in an output FIFO; :class:`XPort`, one
port's FIFOs and arbiter as an output and its busy time and read shares as an input.
"""
from __future__ import annotations

from .node import Port
from .vlarb import VLArbiter

__all__ = ["Entry", "XPort"]


class Entry:
    """A packet resident in the switch."""
    __slots__ = ("frame", "inp", "vl_in", "out", "vl", "blocks", "eligible", "tail",
                 "bypassed", "data", "share")

    def __init__(self, frame: bytearray, inp: int, vl_in: int, out: int, vl: int, blocks: int,
                 eligible: int, tail: int, data: bool) -> None:
        self.frame = frame                  # the packet (its VL and FECN rewritten in place)
        self.inp = inp                      # input port (-1: port 0, the switch's own)
        self.vl_in = vl_in                  # VL it arrived on
        self.out = out                      # output port
        self.vl = vl                        # VL it leaves on
        self.blocks = blocks                # credit blocks it holds in the input buffer
        self.eligible = eligible            # ps: may start on the output link from then on
        self.tail = tail                    # ps: its last byte is in
        self.bypassed = 0                   # times a newer packet was sent before it
        self.data = data                    # a data packet (not an ACK, CNP or MAD)
        self.share = 0                      # output rate it takes of its input's read rate (0: all)


class XPort:
    """The switch's own state of one port: as an output, its FIFOs per VL, its VL15
    queue, the packets waiting (cnt1 of seed 003 §5) and its VL arbiter; as a crossbar
    input, the time it frees (``in_busy``) and the rates of the slower outputs it feeds
    now (``in_share``).  Port 0 (the switch's own, input index -1) has one too, as an
    input only.  One object per port, read by attribute: the tables it replaces were
    int-keyed dicts, a lookup and a boxed int per access (issue 16)."""
    __slots__ = ("index", "port", "queues", "vl15", "queued", "arb", "wake_at", "in_busy", "in_share", "rate")

    def __init__(self, index: int, port: Port | None, nvl: int, arb: VLArbiter | None) -> None:
        self.index = index
        self.port = port                    # None for port 0
        self.queues: list[list[Entry]] = [[] for _ in range(nvl)]
        self.vl15: list[Entry] = []         # VL15 packets (priority, no credits)
        self.queued = 0                     # packets waiting for this output
        self.arb = arb
        self.wake_at = -1                   # pending eligibility timer
        self.in_busy = 0                    # ps: as an input, when its crossbar input frees
        self.in_share = 0                   # as an input: rates of the slower outputs it feeds now
        self.rate = port.rate if port is not None else 0
