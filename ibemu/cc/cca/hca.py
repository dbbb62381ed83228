"""The CA side of the IBA CCA: CCTI, the Congestion Control Table and the CCTI_Timer
(REFERENCE.md "IBA Congestion Control Annex", after Linux hfi1 process_becn; seed 002
§1; seed 004 "Injection Rate Reduction" and "Injection Rate Recovery").

- On a BECN (in an ACK or READ response) or a CNP for a QP, its CCTI rises by the SL's
  CCTI_Increase, at most to CCTI_Limit; the SL's CCTI_Timer starts if it is not running.
- Each CCTI_Timer expiry (CCTI_Timer × 1.024 µs) lowers every CCTI of that SL on the
  port that is above CCTI_Min by one; the timer re-arms while any is still above.
- CCTI per QP (Port_Control "qp") or one per SL of the port shared by its QPs ("sl").
- The injection delay of CCTI *i* is CCT[i]'s (max packet time >> CCT_Shift) ×
  CCT_Multiplier; the max packet time is the time of an MTU-payload SEND packet (LRH,
  BTH, payload, ICRC, VCRC) on the HCA's link.  A packet of transmission time T is
  followed by the next at least T + delay after its start (on top of any static rate).
- A CCTI reaching the SL's Trigger_Threshold (from below) is logged as an event.

Traces: ``CCTI`` and ``injection_rate`` (the max-size-packet rate as a fraction of the
link, Tp / (Tp + delay)) per flow (per QP) or per ``hca:SL<n>`` (per SL), on change.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...fabric.qp import FlowSource
from ...wire.layout import PACKET_OVERHEAD
from .settings import TIMER_UNIT_PS, CASetting, cct_delay

if TYPE_CHECKING:
    from ...fabric.hca import HCA
    from ...fabric.node import Port
    from ...fabric.qp import SenderBase
    from ...fabric.recorder import Recorder


class CCTIState:
    """One CCTI: a QP's or an SL's."""
    __slots__ = ("value", "sl", "key", "delay")

    def __init__(self, sl: int, key: str, delay: int) -> None:
        self.value = 0
        self.sl = sl
        self.key = key
        self.delay = delay


class CCAResponse:
    """``qp.cc`` for every sending QP of one HCA (a :class:`~ibemu.fabric.hooks.SourceResponse`)."""

    def __init__(self, hca: HCA, ca: CASetting, recorder: Recorder | None = None) -> None:
        port = hca.port
        if port is None:
            raise ValueError("HCA %s has no port" % hca.name)
        self.hca = hca
        self.port: Port = port                      # the HCA's link (its QPs' tx_time)
        self.ca = ca
        self.recorder = recorder
        self.max_packet_time = port.tx_time(hca.mtu + PACKET_OVERHEAD)
        self.delays = [cct_delay(e, self.max_packet_time) for e in ca.CCT]
        self.limit = ca.limit()
        self.per_sl = ca.Port_Control == "sl"
        self.states: dict[SenderBase | int, CCTIState] = {}     # QP (or SL) -> CCTIState
        self.timer_on = [False] * 16        # per SL: CCTI_Timer running

    # -- state
    def state(self, qp: SenderBase) -> CCTIState:
        k = qp.sl if self.per_sl else qp
        st = self.states.get(k)
        if st is None:
            if self.per_sl:
                key = "%s:SL%d" % (self.hca.name, qp.sl)
            else:
                key = qp.name if isinstance(qp, FlowSource) else qp.name + ":responses"
            lo = self.ca.sl[qp.sl].CCTI_Min        # a CCTI starts at its floor
            st = self.states[k] = CCTIState(qp.sl, key, self.delays[lo])
            st.value = lo
        return st

    def ccti(self, qp: SenderBase) -> int:
        return self.state(qp).value

    def injection_delay(self, qp: SenderBase) -> int:
        return self.state(qp).delay

    def use_setting(self, ca: CASetting) -> None:
        """Follow *ca* from now on (the CA setting the CC MADs change, mad_settings.py)."""
        self.ca = ca

    def reconfigure(self, now: int) -> None:
        """Bring the running state in step with a changed CA setting (a CC Set MAD):
        Port_Control, the CCT and CCTI_Limit, every CCTI clamped to [CCTI_Min, limit]."""
        ca = self.ca
        if self.per_sl != (ca.Port_Control == "sl"):
            self.per_sl = ca.Port_Control == "sl"
            self.states.clear()                     # CCTIs now kept per SL (or QP): restart at CCTI_Min
        self.delays = [cct_delay(e, self.max_packet_time) for e in ca.CCT]
        self.limit = ca.limit()
        for st in self.states.values():
            v = min(max(st.value, ca.sl[st.sl].CCTI_Min), self.limit)
            if v != st.value:
                self.set_ccti(st, v, now)
            else:
                st.delay = self.delays[v]

    def set_ccti(self, st: CCTIState, value: int, now: int) -> None:
        """Set a CCTI (and its injection delay); traced.  Also what a CC Set MAD does."""
        st.value = value
        st.delay = self.delays[value]
        rec = self.recorder
        if rec is not None:
            rec.trace("CCTI", st.key, now, value)
            tp = self.max_packet_time
            rec.trace("injection_rate", st.key, now, tp / (tp + st.delay))

    # -- hooks
    def on_sent(self, qp: SenderBase, now: int, frame: bytes | bytearray) -> None:
        pass

    def on_ack(self, qp: SenderBase, now: int, psn: int, n: int, becn: int) -> None:
        if becn:
            self.on_becn(qp, now)

    def on_cnp(self, qp: SenderBase, now: int) -> None:
        self.on_becn(qp, now)

    def on_becn(self, qp: SenderBase, now: int) -> None:
        st = self.state(qp)
        entry = self.ca.sl[st.sl]
        self.hca.count("becn_received")
        old = st.value
        new = min(old + entry.CCTI_Increase, self.limit)
        if new != old:
            self.set_ccti(st, new, now)
            tt = entry.Trigger_Threshold
            if tt and old < tt <= new and self.recorder is not None:
                self.recorder.event(now, self.hca.name, "CCTI of %s reached Trigger_Threshold %d"
                                    % (st.key, tt))
        if not self.timer_on[st.sl] and entry.CCTI_Timer and new > entry.CCTI_Min:
            self.timer_on[st.sl] = True
            self.hca.at(now + entry.CCTI_Timer * TIMER_UNIT_PS, self._expire, st.sl)

    def _expire(self, now: int, sl: int) -> None:
        """CCTI_Timer of *sl*: every CCTI of the SL above CCTI_Min drops by one."""
        entry = self.ca.sl[sl]
        above = False
        for st in self.states.values():
            if st.sl == sl and st.value > entry.CCTI_Min:
                self.set_ccti(st, st.value - 1, now)
                above = above or st.value > entry.CCTI_Min
        if above and entry.CCTI_Timer:
            self.hca.at(now + entry.CCTI_Timer * TIMER_UNIT_PS, self._expire, sl)
        else:
            self.timer_on[sl] = False

    def gap(self, qp: SenderBase, nbytes: int, t: int) -> int:
        """Start-to-start gap after a packet of *nbytes*: at least its time plus the
        injection delay of the QP's CCTI."""
        k = qp.sl if self.per_sl else qp
        st = self.states.get(k)
        d = st.delay if st is not None else self.delays[self.ca.sl[qp.sl].CCTI_Min]
        if not d:
            return t
        g = self.port.tx_time(nbytes) + d          # (qp.hca is this response's HCA)
        return g if g > t else t
