"""The hybrid rate/window source response (seed 000 §5; seed 003 §6).

Per flow, :class:`FlowState` keeps the variables of seed 000 §5.1.2: CWND (window, in
packets; OUTS is the QP's ``outs``), CIPD (the congestion-control IPD; in continuous mode
the rate itself, as a fraction of the source link), RPI, APSN and RWL.
:class:`HPResponse` is the ``SenderBase.cc`` hook of one QP and applies the rules of
§5.1.3:

- a packet may go when both the rate (gap (CIPD+1)·packet time) and the window allow;
- on each transmission RWL records what released the packet last: the rate limiter, the
  window (an ACK) or something else (the application, the link) — §5.1;
- unmarked ACKs, when RWL is rate or window, take the packets they cover off RPI
  (never below zero); at zero the limiting factor alone increases (table lookup), RPI
  is reloaded for the new setting, APSN = the last PSN sent (§5.1.3.1); at the top
  setting (CIPD = SIPD) RPI is reloaded all the same, so it never rests at zero;
- a marked ACK for a packet sent after APSN decreases both CIPD and CWND (tables),
  APSN = the last PSN sent; RPI is not reset (§5.1.3.2), unless ``rpi_reset`` (seed 003
  §6.2: the increase is independent of the flow's history; RPI reloaded for the new CIPD);
- a coalesced ACK of N packets with BECN counts as N−1 unmarked then one marked (§3);
- RPI is scaled by PMTU and link speed: table values count reference packets
  (``rpi_mtu`` bytes at ``rpi_rate``), RPI = value × (rpi_mtu/PMTU) × (link/rpi_rate).

Unreliable flows and RDMA READ responses (§5.2) are rate-only: RPI counts transmitted
packets while rate limited, every CN packet decreases the rate, and the rate may start
below Rmax (``unreliable_initial_ipd``, a slow start).

Seed 003 §6.3.2: a flow's state is reset at the start of each ON period (a new flow)
unless ``persistent``, in which case one state serves every flow of a (source,
destination, SL) triple.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...fabric.qp import PSN_MOD, FlowSource
from .functions import RateTable, ResponseFunction, WindowTable, round_rpi

if TYPE_CHECKING:
    from ...fabric.node import Port
    from ...fabric.qp import SenderBase
    from ...fabric.recorder import Recorder
    from .config import HPSpec

RATE, WINDOW, OTHER = "rate", "window", "other"
_HALF = PSN_MOD // 2


def psn_after(a: int, b: int) -> bool:
    """PSN *a* comes after *b* (24-bit sequence arithmetic)."""
    return 0 < (a - b) % PSN_MOD < _HALF


class FlowState:
    """CWND, CIPD, RPI, APSN and RWL of one flow (seed 000 §5.1.2)."""
    __slots__ = ("cwnd", "cipd", "rate", "rpi", "apsn", "apsn_owner", "rwl", "sipd")

    def __init__(self, sipd: int, cwnd: int, cipd: int, rate: float, rpi: int) -> None:
        self.sipd = sipd            # static IPD: CIPD never goes below it
        self.cwnd = cwnd
        self.cipd = cipd            # discrete mode
        self.rate = rate            # continuous mode: fraction of Rmax
        self.rpi = rpi
        self.apsn: int | None = None                # no adjustment yet
        self.apsn_owner: SenderBase | None = None   # the QP that set APSN
        self.rwl = OTHER


class Policy:
    """What all flows share: the response function, its tables and the settings."""

    def __init__(self, spec: HPSpec, fn: ResponseFunction) -> None:
        self.spec = spec
        self.fn = fn
        self.continuous = spec.rates == "continuous"
        self.table: RateTable | None = None if self.continuous else RateTable(fn)   # None: continuous
        self.window = WindowTable(spec.cwnd_max)
        self.levels = fn.levels


class HPResponse:
    """The source response of one QP (``qp.cc``; a :class:`~ibemu.fabric.hooks.SourceResponse`).

    A reliable flow's source (a :class:`~ibemu.fabric.qp.FlowSource`: CWND, OUTS) gets the
    hybrid rate/window response; any other sending QP (RDMA READ responses) is paced by
    rate only (§5.2).  ``source`` is that flow source, None for a rate-only QP."""

    def __init__(self, qp: SenderBase, policy: Policy, state: FlowState | None = None, reliable: bool = True,
                 recorder: Recorder | None = None) -> None:
        self.p = policy
        self.reliable = reliable
        self.source: FlowSource | None = None       # the window's QP (reliable flows only)
        if reliable:
            if not isinstance(qp, FlowSource):
                raise TypeError("QP %s has no window: its response is rate only" % qp.name)
            self.source = qp
        port = qp.hca.port
        if port is None:
            raise ValueError("HCA %s has no port" % qp.hca.name)
        self.port: Port = port                      # the source link (tx_time, its rate)
        self.name = qp.name
        link = port.rate
        spec = policy.spec
        self.scale = (spec.rpi_mtu / qp.hca.mtu) * (link / spec.rpi_rate)
        self.recorder: Recorder = recorder if recorder is not None else qp.hca.recorder
        self.trace = spec.trace
        self.state = state if state is not None else self.fresh(qp)
        self.rate_release = 0       # when the rate limiter let the next packet go
        self.win_release = -1       # when an ACK last opened a full window
        self.win_full = False
        self.last_sent = -1
        self.cycle: int | None = None               # the ON period of the flow's generator
        self.last_len = 0
        if self.source is not None:
            self.source.set_window(self.state.cwnd)
        self._trace_state(0)

    # ------------------------------------------------------------------ state
    def fresh(self, qp: SenderBase) -> FlowState:
        """Initial state: CWND = cwnd_init, CIPD = SIPD (reliable) or the slow-start IPD
        (unreliable, §5.2), RPI for that setting (§5.1.3)."""
        p = self.p
        sipd = min(int(qp.ipd or 0), p.levels - 1)
        cipd = sipd if self.reliable else max(sipd, p.spec.unreliable_initial_ipd)
        st = FlowState(sipd, p.spec.cwnd_init, cipd, 1.0 / (cipd + 1), 1)
        st.rpi = p.window.rpi(st.cwnd) if self.reliable else self._rpi_rate(st)
        return st

    def _rmax(self, st: FlowState) -> float:
        return 1.0 / (st.sipd + 1)

    def _rpi_rate(self, st: FlowState) -> int:
        table = self.p.table
        if table is None:                           # continuous rates
            return 1
        return round_rpi(table.rpi[st.cipd] * self.scale)

    def rate_fraction(self) -> float:
        st = self.state
        return st.rate if self.p.continuous else 1.0 / (st.cipd + 1)

    def _trace_state(self, now: int) -> None:
        if not self.trace:
            return
        st = self.state
        if self.p.continuous:
            self.recorder.trace("CIPD", self.name, now, round(1.0 / st.rate - 1.0, 1))
        else:
            self.recorder.trace("CIPD", self.name, now, st.cipd)
        if self.reliable and self.p.spec.cwnd_max > self.p.spec.cwnd_init:   # else fixed
            self.recorder.trace("CWND", self.name, now, st.cwnd)

    # ------------------------------------------------------------------ hooks
    def gap(self, qp: SenderBase, nbytes: int, t: int) -> int:
        """The rate limit: (CIPD+1) packet times from this packet's start (or 1/rate)."""
        tx = self.port.tx_time(nbytes)
        if self.p.continuous:
            g = int(tx / self.state.rate + 0.5)
        else:
            g = (self.state.cipd + 1) * tx
        return g if g > t else t

    def on_sent(self, qp: SenderBase, now: int, frame: bytes | bytearray) -> None:
        st = self.state
        cycle = qp.on_period()
        if cycle != self.cycle:
            first = self.cycle is None
            self.cycle = cycle
            if not first and not self.p.spec.persistent:   # a new flow (seed 003 §6.3.2)
                self.state = st = self.fresh(qp)
                if self.source is not None:
                    self.source.set_window(st.cwnd)
                qp.reschedule(now + qp.gap_after(len(frame)))
                self._trace_state(now)
        # RWL: what released this packet last (seed 000 §5.1)
        slack = self.port.tx_time(len(frame))
        w = self.win_release if self.win_release >= self.last_sent else -1
        late = max(self.rate_release, w)
        if self.last_sent < 0 or now - late > slack:
            st.rwl = OTHER
        elif w >= self.rate_release:
            st.rwl = WINDOW
        else:
            st.rwl = RATE
        self.last_sent = now
        self.last_len = len(frame)
        src = self.source
        if src is not None:
            self.win_full = src.cwnd is not None and src.outs >= src.cwnd
        elif st.rwl == RATE:                       # §5.2: RPI counts transmitted packets
            st.rpi -= 1
            if st.rpi <= 0:
                st.rpi = 0
                if self._increase(qp, now, RATE):
                    qp.reschedule(now + qp.gap_after(len(frame)))
        self.rate_release = qp.next_allowed

    def on_ack(self, qp: SenderBase, now: int, psn: int, n: int, becn: int) -> None:
        """An ACK (or READ response) newly acknowledging *n* packets up to *psn*."""
        if n <= 0:
            return
        changed = False
        unmarked = n - 1 if becn else n
        st = self.state
        factor = st.rwl if self.p.spec.rwl else RATE
        if unmarked and factor != OTHER and self.reliable:
            st.rpi = max(0, st.rpi - unmarked)
            if st.rpi == 0:
                changed = self._increase(qp, now, factor)
        if becn:
            qp.hca.count("hp_becn_received")
        if becn and (st.apsn is None or st.apsn_owner is not qp or psn_after(psn, st.apsn)):
            self._decrease(qp, now)
        if self.win_full:
            src = self.source                       # (win_full: a reliable flow's source)
            if src is not None and src.cwnd is not None and src.outs < src.cwnd:
                self.win_full = False
                self.win_release = now
        if changed and self.last_sent >= 0:      # a higher rate may let the next go sooner
            qp.reschedule(min(qp.next_allowed, self.last_sent + qp.gap_after(self.last_len)))
            self.rate_release = qp.next_allowed

    def on_cnp(self, qp: SenderBase, now: int) -> None:
        """A CN packet (unreliable flows, READ responses, §5.2): decrease the rate."""
        self._decrease(qp, now)

    # ------------------------------------------------------------------ adjustments
    def _increase(self, qp: SenderBase, now: int, factor: str) -> bool:
        """Increase the limiting factor, reload RPI, set APSN (seed 000 §5.1.3.1).

        "Once RPI reaches zero, then an increase occurs in three steps": the table gives the
        next CIPD (CWND), "RPI is assigned a new value" that "depends on the revised CIPD
        setting", APSN is set.  A flow already at its top (CIPD = SIPD, or CWND at its
        maximum) has no higher setting: step 1 leaves it there and step 2 still reloads RPI
        from the table at that setting, so RPI never rests at zero; since "We chose not to
        re-initialize RPI when the rate or window limit is decreased" (§5.1.3.2), a mark at
        the top leaves the flow a table's worth of unmarked ACKs from its old rate, not
        one.  Nothing changed, so no APSN (its purpose is to ignore marks earned by an old
        setting) and False is returned."""
        st = self.state
        p = self.p
        if factor == WINDOW:
            if st.cwnd >= p.window.cwnd_max:
                st.rpi = p.window.rpi(st.cwnd)      # at the top: step 2 only (see below)
                return False
            st.cwnd = p.window.inc(st.cwnd)
            if self.source is not None:             # (RWL is WINDOW only with a window)
                self.source.set_window(st.cwnd)
            st.rpi = p.window.rpi(st.cwnd)
        else:
            table = p.table
            if table is None:                       # continuous rates
                rmax = self._rmax(st)
                if st.rate >= rmax:
                    st.rpi = self._rpi_rate(st)
                    return False
                st.rate = min(rmax, p.fn.inc(st.rate, 1.0 / (st.rate * self.scale)))
            else:
                if st.cipd <= st.sipd:
                    st.rpi = self._rpi_rate(st)
                    return False
                st.cipd = max(st.sipd, table.inc[st.cipd])
            st.rpi = self._rpi_rate(st)
        self._adjusted(qp)
        qp.hca.count("hp_increases")
        self._trace_state(now)
        return True

    def _decrease(self, qp: SenderBase, now: int) -> None:
        """Decrease CIPD and CWND (tables); APSN = last PSN sent; RPI kept (§5.1.3.2).

        With ``rpi_reset`` RPI is reloaded for the new setting instead: seed 003 §6.2 asks
        that "the time behavior of the rate increase should be independent of the past
        history of the flow rate, i.e. it should be independent of the elapsed time since
        the last decrease", so a marked flow climbs back along F from its new rate alone."""
        st = self.state
        p = self.p
        table = p.table
        if table is None:                           # continuous rates
            st.rate = p.fn.dec(st.rate)
        else:
            st.cipd = table.dec[st.cipd]
        if self.source is not None:
            st.cwnd = p.window.dec(st.cwnd)
            self.source.set_window(st.cwnd)
        if p.spec.rpi_reset:                        # seed 003 §6.2: F^r from the new rate
            window = st.rwl == WINDOW and p.spec.rwl
            st.rpi = p.window.rpi(st.cwnd) if window else self._rpi_rate(st)
        self._adjusted(qp)
        qp.hca.count("hp_decreases")
        # the next packet waits for the new, longer gap
        if self.last_sent >= 0:
            qp.reschedule(max(qp.next_allowed, self.last_sent + qp.gap_after(self.last_len)))
            self.rate_release = qp.next_allowed
        self._trace_state(now)

    def _adjusted(self, qp: SenderBase) -> None:
        st = self.state
        st.apsn = (qp.next_psn() - 1) % PSN_MOD
        st.apsn_owner = qp
