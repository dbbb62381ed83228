"""The DCMS manager node (seed 002 §3): a host on the fabric that sweeps the switch
ports' counters with PerfMgt MADs every τ and retunes Marking_Rate with Congestion
Control Set MADs — all in band, on VL15, as real frames in the capture.

Per sweep and switch port it asks for PortCounters (PortXmitWait W), PortCountersExtended
(PortXmitData D, 64 bits so it never saturates) and PortXmitConCtrl (PortXmitTimeCong C).
When every answer of a sweep is in, the increments are normalised so one set of
thresholds fits every link speed and any time scale:

- ΔW and ΔC as the fraction of τ the port spent waiting for credits / congested
  (ticks × tick / τ; the tick is 64 bytes at the port's rate, counters.py);
- ΔD as the fraction of the port's capacity used during τ (4·words / (rate·τ)).

and handed to :class:`~ibemu.cc.dcms.algorithm.DCMS`, whose decisions become
SwitchPortCongestionSetting Set MADs (one element: Valid, the port's Threshold and
Packet_Size, the new Marking_Rate) to the switch.  Decisions are logged as recorder
events and the Marking_Rate as a trace; the normalised increments of every watched port
as traces ``DCMS_dW``, ``DCMS_dC``, ``DCMS_dD`` (what seed 002 Figure 5(b) plots).  A
sweep whose answers are not all back when the next one is due is counted
(``DCMS_late_sweeps``) and replaced.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

from ...fabric.hca import HCA
from ...fabric.node import VL15
from ...units import PS_PER_S
from ...wire import mad as M
from ...wire.layout import Buf
from .algorithm import DCMS, Counters, SwitchPort

if TYPE_CHECKING:
    from ...fabric.params import HCAParams
    from ...fabric.recorder import Recorder

Target: TypeAlias = "tuple[str, int, int, int, int, int]"
"""A watched switch port: (switch name, switch LID, port, rate bytes/s, Threshold, Packet_Size)."""

_KINDS = ((M.PORT_COUNTERS, M.PORT_COUNTERS_FIELDS, "W"),
          (M.PORT_COUNTERS_EXT, M.PORT_COUNTERS_EXT_FIELDS, "D"),
          (M.PORT_XMIT_CON_CTRL, M.PORT_XMIT_CON_CTRL_FIELDS, "C"))
_FIELD = {"W": "PortXmitWait", "D": "PortXmitData", "C": "PortXmitTimeCong"}   # kind -> its counter


class _GSI:
    """QP 1 of the manager: hands responses to the manager (a
    :class:`~ibemu.fabric.hooks.PacketHandler`)."""

    def __init__(self, manager: DCMSManager) -> None:
        self.manager = manager

    def on_packet(self, now: int, frame: Buf) -> None:
        self.manager.on_response(now, frame)
        return None


class DCMSManager(HCA):
    """An HCA that runs DCMS; :meth:`configure` gives it its decision object and the
    switch ports to watch (built like any HCA first, configured once the fabric exists)."""

    def __init__(self, name: str, lid: int, params: HCAParams, recorder: Recorder | None = None) -> None:
        super().__init__(name, lid, params, recorder)
        self.dcms: DCMS | None = None               # set by configure
        self.targets: dict[SwitchPort, Target] = {}
        self.attach_qp(M.GSI_QP, _GSI(self))
        self._tid = 0
        self._pending: dict[int, tuple[SwitchPort, str]] = {}   # tid -> (port key, kind)
        self._answers: dict[SwitchPort, dict[str, int]] = {}   # port key -> kind -> counter
        self._sweep_no = 0
        self.sweeps_done = 0

    def configure(self, dcms: DCMS, targets: Iterable[Target], cc_key: int = 0) -> None:
        """*targets*: switch ports to watch, each ``(switch name, switch LID, port, rate
        bytes/s, Threshold, Packet_Size)``; *dcms*'s neighbour map uses (switch, port) keys."""
        self.dcms = dcms
        self.targets = {(t[0], t[2]): t for t in targets}
        self.cc_key = cc_key

    def _configured(self) -> DCMS:
        """The decision object (sweeps run only once :meth:`configure` gave it)."""
        if self.dcms is None:
            raise RuntimeError("DCMS manager %s is not configured" % self.name)
        return self.dcms

    def start(self, now: int) -> None:
        super().start(now)
        if self.dcms is not None:
            self.at(now + self.dcms.params.tau, self._sweep)

    # ---------------------------------------------------------------- sweeping
    def _send(self, now: int, dlid: int, mad: bytes) -> None:
        self.send_control(M.build_mad_packet(dlid, self.lid, mad), VL15)
        self.kick(now)

    def _sweep(self, now: int) -> None:
        if self._pending:
            self.count("DCMS_late_sweeps")
            self._pending.clear()
        self._answers = {key: {} for key in self.targets}
        self._sweep_no += 1
        for key, (_sw, lid, port, _, _, _) in sorted(self.targets.items()):
            for attr_id, layout, kind in _KINDS:
                self._tid += 1
                self._pending[self._tid] = (key, kind)
                self._send(now, lid, M.build_mad(M.CLASS_PERF, M.GET, attr_id,
                                                 bytes(M.pack_fields(layout, {"PortSelect": port})),
                                                 tid=self._tid))
        self.at(now + self._configured().params.tau, self._sweep)

    def on_response(self, now: int, frame: Buf) -> None:
        raw = M.mad_of(frame)
        try:
            mad = M.parse_mad(raw) if raw is not None else None
        except M.MADError:
            mad = None
        if mad is None or mad.method != M.GET_RESP:
            self.count("DCMS_bad_responses")
            return
        if mad.mgmt_class == M.CLASS_CC:
            if mad.status:
                self.count("DCMS_set_rejected")
            return
        want = self._pending.pop(mad.tid, None)
        if want is None:
            self.count("DCMS_stale_responses")
            return
        if mad.status:
            self.count("DCMS_bad_responses")
            return
        key, kind = want
        f = mad.fields()
        self._answers[key][kind] = f[_FIELD[kind]]
        if not self._pending:
            self._decide(now)

    def _decide(self, now: int) -> None:
        dcms = self._configured()
        tau = dcms.params.tau
        norm: dict[SwitchPort, Counters] = {}
        for key, got in self._answers.items():
            sw, lid, port, rate, _, _ = self.targets[key]
            tick = max(1, 64 * PS_PER_S // rate)
            norm[key] = (got["W"] * tick / tau, got["C"] * tick / tau, 4 * got["D"] / (rate * tau / PS_PER_S))
        self.sweeps_done += 1
        if self.sweeps_done > 1:                    # the first sweep only sets the baseline
            rec, last = self.recorder, dcms.last_counters()
            for key, (w, c, d) in norm.items():
                prev = last.get(key)
                if prev is not None:
                    label = "%s:%d" % key
                    rec.trace("DCMS_dW", label, now, round(w - prev[0], 4))
                    rec.trace("DCMS_dC", label, now, round(c - prev[1], 4))
                    rec.trace("DCMS_dD", label, now, round(d - prev[2], 4))
        for dec in dcms.sweep(norm):
            sw, lid, port, _, threshold, packet_size = self.targets[dec.port]
            elements: list[dict[str, int]] = [{} for _ in range(port % M.SWITCH_PORT_ELEMENTS + 1)]
            elements[-1] = {"Valid": 1, "Threshold": threshold, "Packet_Size": packet_size,
                            "Marking_Rate": dec.marking_rate}
            self._tid += 1
            self._send(now, lid, M.build_mad(M.CLASS_CC, M.SET, M.SWITCH_PORT_CONG_SETTING,
                                             bytes(M.pack_switch_port_settings(elements)),
                                             tid=self._tid, attr_mod=port // M.SWITCH_PORT_ELEMENTS,
                                             cc_key=self.cc_key))
            self.recorder.event(now, self.name, "%s:%d Marking_Rate %d (%s)" % (sw, port, dec.marking_rate, dec.reason))
            self.recorder.trace("Marking_Rate", "%s:%d" % (sw, port), now, dec.marking_rate)
