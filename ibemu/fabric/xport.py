"""The switch's state per port and of each packet it holds (seed 003 §3 and Table 1;
:class:`ibemu.fabric.switch.Switch` runs the crossbar over them): :class:`Entry`, a
packet resident in an input buffer, waiting in an output FIFO; :class:`XPort`, one
port's FIFOs and arbiter as an output and, as a crossbar input, how much of its read
rate the outputs it feeds take.

The crossbar input's read rate (:meth:`XPort.can_feed`, :meth:`XPort.feed`):

- ``WHOLE`` (seed 003's crossbar: cut-through, no speedup; and port 0): the input sends
  one packet at a time; it is busy until that packet's last byte has left (and is in).
- ``SLOWER`` (store-and-forward, no speedup): the whole packet is in the buffer, read at
  the input's own link rate; an input faster than an output takes only that output's
  rate of its own, so it may feed several slower outputs while their rates add up to no
  more than its own (seed 002's testbed: S2 port 20 into 23 and 24; issue 13).
- ``SPEEDUP`` (``crossbar_speedup`` s > 1, either mode): the input reads its buffer at
  s times its link rate, and every transfer takes the rate of its output (at most the
  whole read rate) while it lasts, so an input may feed several outputs at once as long
  as their rates add up to no more than s times its own.  An output still sends at its
  link rate, and a cut-through packet still leaves no earlier than its bytes arrive (the
  switch's eligibility rule).  This is the internal speedup of a combined input-output
  queued switch: Chuang, Goel, McKeown and Prabhakar ("Matching output queueing with a
  combined input/output-queued switch", IEEE JSAC 17(6), 1999; Stanford CSL-TR-98-758)
  show a speedup of 2 - 1/N necessary and sufficient for such a switch to emulate an
  output-queued one exactly -- with virtual output queues and their matching algorithm
  (e.g. Critical Cell First), which ibemu does not model: here only the read rate grows,
  the FIFOs and their bypass rule stay seed 003's.
"""
from __future__ import annotations

from typing import Final

from .node import Port
from .vlarb import VLArbiter

__all__ = ["Entry", "XPort", "WHOLE", "SLOWER", "SPEEDUP"]

WHOLE: Final = 0        # the input's read rules (module docstring)
SLOWER: Final = 1
SPEEDUP: Final = 2


class Entry:
    """A packet resident in the switch: :attr:`pkt` as it came (``bytes`` from an HCA, which
    the compiled core reads natively; issue 28), :attr:`frame` the same packet writable."""
    __slots__ = ("pkt", "inp", "vl_in", "out", "vl", "blocks", "eligible", "tail",
                 "bypassed", "data", "share")

    def __init__(self, frame: bytes | bytearray, inp: int, vl_in: int, out: int, vl: int, blocks: int,
                 eligible: int, tail: int, data: bool) -> None:
        self.pkt = frame                    # the packet (a bytearray once :attr:`frame` was read)
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

    @property
    def frame(self) -> bytearray:
        """The packet as a ``bytearray``, for a marker to rewrite its FECN and the switch its
        VL in place (made from :attr:`pkt` on first use, and kept there)."""
        f = self.pkt
        if isinstance(f, bytearray):
            return f
        w = self.pkt = bytearray(f)
        return w


class XPort:
    """The switch's own state of one port: as an output, its FIFOs per VL, its VL15
    queue, the packets waiting (cnt1 of seed 003 §5) and its VL arbiter; as a crossbar
    input, its read rule and read rate (``rule``, ``read``), the time it frees
    (``in_busy``: rule ``WHOLE``) and the rates of the outputs it feeds now
    (``in_share``).  Port 0 (the switch's own, input index -1) has one too, as an
    input only.  One object per port, read by attribute: the tables it replaces were
    int-keyed dicts, a lookup and a boxed int per access (issue 16)."""
    __slots__ = ("index", "port", "queues", "vl15", "queued", "arb", "wake_at", "in_busy", "in_share", "rate",
                 "rule", "read", "bit")

    def __init__(self, index: int, port: Port | None, nvl: int, arb: VLArbiter | None,
                 rule: int = WHOLE, speedup: float = 1.0) -> None:
        self.index = index
        self.port = port                    # None for port 0
        self.queues: list[list[Entry]] = [[] for _ in range(nvl)]
        self.vl15: list[Entry] = []         # VL15 packets (priority, no credits)
        self.queued = 0                     # packets waiting for this output
        self.arb = arb
        self.wake_at = -1                   # pending eligibility timer
        self.in_busy = 0                    # ps: as an input, when its crossbar input frees
        self.in_share = 0                   # as an input: rates of the outputs it feeds now (not WHOLE)
        self.rate = port.rate if port is not None else 0
        self.rule = rule if port is not None else WHOLE     # port 0 is read whole
        self.read = self.rate if rule != SPEEDUP else round(speedup * self.rate)   # bytes/s it reads
        self.bit = 0                        # its bit in the switch's mask of outputs with packets (0: port 0)

    def waiting_bytes(self) -> int:
        """Bytes of the packets waiting for this output, every VL (not VL15's)."""
        n = 0
        for q in self.queues:
            for e in q:
                n += len(e.pkt)
        return n

    def can_feed(self, now: int, rate: int) -> bool:
        """Can this input feed an output of *rate* now?  ``WHOLE``: it is sending nothing;
        ``SLOWER``: an output slower than the input needs its rate left of the read rate,
        any other the whole input; ``SPEEDUP``: the output's rate (at most the read rate)
        left of the read rate."""
        if self.in_busy > now:
            return False
        used = self.in_share
        rule = self.rule
        if rule == SPEEDUP:
            read = self.read
            return used + (rate if rate < read else read) <= read
        if rule == SLOWER:
            read = self.read
            if read > rate:
                return used + rate <= read
        return used == 0

    def feed(self, e: Entry, rate: int, end: int) -> None:
        """The input starts feeding *e* to an output of *rate*, whose last byte leaves at
        *end*: it takes the output's rate of its read rate until then (undone by
        :meth:`fed`), or, read whole, it is busy until *end* and *e*'s last byte is in."""
        rule = self.rule
        read = self.read
        if rule == SPEEDUP or (rule == SLOWER and read > rate):
            share = rate if rate < read else read
            e.share = share
            self.in_share += share
        else:
            self.in_busy = end if end > e.tail else e.tail

    def fed(self, e: Entry) -> None:
        """*e*'s last byte has left: its share of the read rate is free again."""
        if e.share:
            self.in_share -= e.share
