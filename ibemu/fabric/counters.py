"""Port counters in IBA units: PortCounters (IBA 16.1.3.5), PortCountersExtended
(16.1.4.11) and PortXmitConCtrl's PortXmitTimeCong (annex A10; seed 002's
"PortXmitCongTime").  Layouts and names: ../shared/REFERENCE.md.

A port keeps running totals that never wrap (Python ints).  The two PerfMgt views are
computed from them against a per-view baseline that a reset moves:

- PortCounters: each field has its spec width (16, 8, 4 or 32 bits) and *saturates*
  at its maximum ("stops counting", IBA 16.1.3.5) until reset;
- PortCountersExtended: 64-bit fields that wrap modulo 2^64 and are not saturated.

Units: PortXmitData / PortRcvData count the octets between the start-of-packet
delimiter and the VCRC, the VCRC excluded (IBA 16.1.3.5), divided by 4 -- a packet's
PktLen; link packets are not counted, and neither are they in the packet counts.
PortXmitWait counts *ticks* in which the port had a packet to
send but no credits for it; ibemu's tick is the time to send one 64-byte credit block at
the port's rate (64 ns at 4X SDR), documented in docs and the scenario schema.  Waiting
and congested time are tracked as intervals in emulated ps, so a tick count is exact
however rarely the node is called.  PortXmitTimeCong is in the same ticks.
"""
from __future__ import annotations

from typing import Final

from collections.abc import Collection

from ..units import PS_PER_S
from ..wire.fields import get_lnh
from ..wire.layout import CN_GLOBAL, CN_LOCAL, VCRC_LEN, Buf
from ..wire.opcodes import LNH_IBA_GLOBAL

TICK_BYTES: Final = 64                      # PortXmitWait tick: one credit block at the port rate

# (IBA name, total attribute, width in PortCounters or None)
COUNTERS = (
    ("PortRcvErrors", "rcv_errors", 16),
    ("PortRcvRemotePhysicalErrors", None, 16),
    ("PortRcvSwitchRelayErrors", "rcv_switch_relay_errors", 16),
    ("PortXmitDiscards", "xmit_discards", 16),
    ("PortXmitConstraintErrors", None, 8),
    ("PortRcvConstraintErrors", "rcv_constraint_errors", 8),
    ("ExcessiveBufferOverrunErrors", "excessive_buffer_overrun", 4),
    ("VL15Dropped", "vl15_dropped", 16),
    ("PortXmitData", "xmit_words", 32),
    ("PortRcvData", "rcv_words", 32),
    ("PortXmitPkts", "xmit_pkts", 32),
    ("PortRcvPkts", "rcv_pkts", 32),
    ("PortXmitWait", "xmit_wait", 32),
)
EXTENDED = (
    ("PortXmitData", "xmit_words"), ("PortRcvData", "rcv_words"),
    ("PortXmitPkts", "xmit_pkts"), ("PortRcvPkts", "rcv_pkts"),
    ("PortUnicastXmitPkts", "xmit_pkts"), ("PortUnicastRcvPkts", "rcv_pkts"),
    ("PortMulticastXmitPkts", None), ("PortMulticastRcvPkts", None),
)
# the other counters results.json reports (not in PortCounters)
OTHER = (("PortXmitTimeCong", "xmit_time_cong"), ("PortRcvFECN", "rcv_fecn"), ("PortRcvBECN", "rcv_becn"))
TOTALS: Final = tuple(name for name, _, _ in COUNTERS) + tuple(name for name, _ in OTHER)
"""The names of :meth:`PortCounters.totals`, in the order of :meth:`PortCounters.append_totals`."""
_MASK64: Final = (1 << 64) - 1


class PortCounters:
    """Running totals of one port (see the module docstring for units)."""
    __slots__ = ("tick_ps", "xmit_bytes", "rcv_bytes", "xmit_pkts", "rcv_pkts", "rcv_errors",
                 "rcv_switch_relay_errors", "xmit_discards", "rcv_constraint_errors",
                 "excessive_buffer_overrun", "vl15_dropped", "rcv_fecn", "rcv_becn",
                 "_wait_ps", "_wait_since", "_cong_ps", "_cong_since", "_base", "_base_ext")
    # running totals (bytes, packets, errors), all set to 0 by __init__
    xmit_bytes: int
    rcv_bytes: int
    xmit_pkts: int
    rcv_pkts: int
    rcv_errors: int
    rcv_switch_relay_errors: int
    xmit_discards: int
    rcv_constraint_errors: int
    excessive_buffer_overrun: int
    vl15_dropped: int
    rcv_fecn: int
    rcv_becn: int

    def __init__(self, rate: int):
        self.tick_ps = max(1, TICK_BYTES * PS_PER_S // rate)
        self.xmit_bytes = self.rcv_bytes = self.xmit_pkts = self.rcv_pkts = 0
        self.rcv_errors = self.rcv_switch_relay_errors = self.xmit_discards = 0
        self.rcv_constraint_errors = self.excessive_buffer_overrun = self.vl15_dropped = 0
        self.rcv_fecn = self.rcv_becn = 0
        self._wait_ps = self._cong_ps = 0
        # ps when the port began to wait for credits / to be congested; -1: it is not
        # (an int, not an Optional: the compiled core keeps it unboxed, issue 16)
        self._wait_since = -1
        self._cong_since = -1
        self._base: dict[str, int] = {}         # PortCounters name -> total at its last reset
        self._base_ext: dict[str, int] = {}     # PortCountersExtended name -> total at its last reset

    # -- updates (hot path: plain attribute arithmetic in the callers)
    def transmitted(self, nbytes: int, now: int = -1) -> None:
        """A packet of *nbytes* (VCRC included) started: count it, and the port is no
        longer waiting for credits."""
        self.xmit_bytes += nbytes - VCRC_LEN
        self.xmit_pkts += 1
        if self._wait_since >= 0 and now >= 0:
            self.waiting(now, False)

    def received(self, frame: Buf) -> None:
        """A packet arrived (counted before the link checks, as every arrival is);
        FECN and BECN are read where its BTH is, after a GRH when there is one."""
        n = len(frame)
        self.rcv_bytes += n - VCRC_LEN if n > VCRC_LEN else 0
        self.rcv_pkts += 1
        if n <= CN_LOCAL:
            return
        glob = get_lnh(frame) == LNH_IBA_GLOBAL
        if not glob or n > CN_GLOBAL:
            # FECN bit 7, BECN bit 6 (IBA 9.2); the same read on a frame typed bytes is
            # native in the compiled core (an HCA's packets; ibemu/wire/fields.py)
            if isinstance(frame, bytes):
                cn = frame[CN_GLOBAL] if glob else frame[CN_LOCAL]
            else:
                cn = frame[CN_GLOBAL] if glob else frame[CN_LOCAL]
            if cn & 0x80:
                self.rcv_fecn += 1
            if cn & 0x40:
                self.rcv_becn += 1

    def waiting(self, now: int, flag: bool) -> None:
        """The port has (True) or no longer has (False) a packet blocked for credits."""
        if flag:
            if self._wait_since < 0:
                self._wait_since = now
        elif self._wait_since >= 0:
            self._wait_ps += now - self._wait_since
            self._wait_since = -1

    def congested(self, now: int, flag: bool) -> None:
        """Enter or leave the congested state (a CCA switch port that marks)."""
        if flag:
            if self._cong_since < 0:
                self._cong_since = now
        elif self._cong_since >= 0:
            self._cong_ps += now - self._cong_since
            self._cong_since = -1

    # -- derived totals
    @property
    def xmit_words(self) -> int:
        return self.xmit_bytes // 4

    @property
    def rcv_words(self) -> int:
        return self.rcv_bytes // 4

    def wait_ps(self, now: int) -> int:
        return self._wait_ps + (now - self._wait_since if self._wait_since >= 0 else 0)

    def cong_ps(self, now: int) -> int:
        return self._cong_ps + (now - self._cong_since if self._cong_since >= 0 else 0)

    def totals(self, now: int) -> dict[str, int]:
        """Every counter as a running total in IBA units at time *now* (:data:`TOTALS`)."""
        row: list[int] = []
        self.append_totals(row, now)
        return dict(zip(TOTALS, row))

    def append_totals(self, out: list[int], now: int) -> None:
        """Append the totals of :meth:`totals` to *out*, in the order of :data:`TOTALS`
        (``COUNTERS`` then ``OTHER``, each attribute read directly: a run samples every
        port 200 times, and a dict per port per sample, with the appends after it, was
        2.8 % of a 648-host study case; issue 28).  tests/test_counters.py checks the
        order against the tables."""
        tick = self.tick_ps
        out.append(self.rcv_errors)                 # PortRcvErrors
        out.append(0)                               # PortRcvRemotePhysicalErrors (not modelled)
        out.append(self.rcv_switch_relay_errors)
        out.append(self.xmit_discards)
        out.append(0)                               # PortXmitConstraintErrors (not modelled)
        out.append(self.rcv_constraint_errors)
        out.append(self.excessive_buffer_overrun)
        out.append(self.vl15_dropped)
        out.append(self.xmit_bytes // 4)            # PortXmitData (xmit_words)
        out.append(self.rcv_bytes // 4)             # PortRcvData (rcv_words)
        out.append(self.xmit_pkts)
        out.append(self.rcv_pkts)
        out.append(self.wait_ps(now) // tick)       # PortXmitWait
        out.append(self.cong_ps(now) // tick)       # PortXmitTimeCong
        out.append(self.rcv_fecn)
        out.append(self.rcv_becn)

    def _total(self, attr: str | None, now: int) -> int:
        if attr is None:
            return 0
        if attr == "xmit_wait":
            return self.wait_ps(now) // self.tick_ps
        if attr == "xmit_time_cong":
            return self.cong_ps(now) // self.tick_ps
        total: int = getattr(self, attr)
        return total

    # -- the PerfMgt views
    def port_counters(self, now: int) -> dict[str, int]:
        """PortCounters: spec widths, saturating, since the last reset."""
        out: dict[str, int] = {}
        for name, attr, width in COUNTERS:
            v = self._total(attr, now) - self._base.get(name, 0)
            out[name] = min(v, (1 << width) - 1)
        return out

    def extended(self, now: int) -> dict[str, int]:
        """PortCountersExtended: 64 bits, wrapping, since the last reset."""
        return {name: (self._total(attr, now) - self._base_ext.get(name, 0)) & _MASK64
                for name, attr in EXTENDED}

    def reset(self, now: int, extended: bool = False, names: Collection[str] | None = None) -> None:
        """Set the selected counters of one view to zero (a PerfMgt Set)."""
        if extended:
            for name, attr in EXTENDED:
                if names is None or name in names:
                    self._base_ext[name] = self._total(attr, now)
        else:
            for name, attr, _ in COUNTERS:
                if names is None or name in names:
                    self._base[name] = self._total(attr, now)


def sample_totals(counters: list[PortCounters], now: int) -> list[int]:
    """The :meth:`~PortCounters.append_totals` of every port of *counters*, one after
    another: a run's sample of its ports (``ibemu.run``; a loop in the compiled core)."""
    out: list[int] = []
    for pc in counters:
        pc.append_totals(out, now)
    return out
