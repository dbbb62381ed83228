"""The DCMS decision logic of seed 002 §3.2 (Algorithms 1-3), without I/O.

Every sweep (interval τ) the manager hands :meth:`DCMS.sweep` the counters it read —
per switch port (s, p): W = PortXmitWait, C = PortXmitCongTime (IBA
PortXmitTimeCong), D = PortXmitData — and gets back the Marking_Rate changes to send.

Algorithm 2 (new congestion, new victims): a port is congested when ΔC > T_C, or when it
faces a host and ΔW > T_W.  Its victim ports are the ports of neighbouring switches
whose link leads into the congested port's switch and whose ΔW > T_W; the first victim
sets the congested port's Marking_Rate to Low (state Low-MR, interval count I = 1).

Algorithm 3 (monitoring): for a port with victims, I grows by one per sweep; while
I ≤ T_I a victim whose ΔD fell by more than T_D since the last sweep is dropped (its
utilisation fell: no victim flow through it).  With no victims left, or when I reaches
T_I, the Marking_Rate returns to Default.

Two readings where the pseudocode cannot be taken literally (documented in
docs/dcms.md): Algorithm 3 skips a port only in the sweep in which Algorithm 2 set it Low
(read literally, "I ≠ 1" would keep I at 1 for ever); and restoring Default clears the
port's victim set and interval count, so that a victim still suffering starts a second
cycle, as the paper's Scenario 2 (Figure 6) shows.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

LOW_MR, DEFAULT_MR = "Low-MR", "Default-MR"

SwitchPort = tuple[str, int]
"""A switch port: (switch name, port number)."""
Counters = tuple[float, float, float]
"""(W, C, D) of a port: PortXmitWait, PortXmitCongTime, PortXmitData, as the manager
scales them (totals, or their change over a sweep)."""


@dataclass
class DCMSParams:
    tau: int                       # sweep interval (ps); used by the manager node
    T_C: float                     # congestion threshold (PortXmitCongTime ticks per sweep)
    T_W: float                     # rate-reduction threshold (PortXmitWait ticks per sweep)
    T_D: float                     # utilisation-change threshold (PortXmitData words per sweep)
    T_I: int                       # Low-MR duration threshold (sweeps)
    low: int = 0                   # Marking_Rate "Low" (seed 002 §4.2: 0)
    default: int = 128             # Marking_Rate "Default" (seed 002 §4.3: 128)


@dataclass
class Decision:
    port: SwitchPort
    marking_rate: int
    reason: str


@dataclass
class _PortState:
    state: str = DEFAULT_MR
    victims: set[SwitchPort] = field(default_factory=set)
    interval: int = 0


class DCMS:
    """*neighbour* maps every switch port (s, p) to (node, port, is_host) at its far end
    (N of seed 002 Table 1); ports without a link are left out."""

    def __init__(self, params: DCMSParams, neighbour: Mapping[SwitchPort, tuple[str, int, bool]]) -> None:
        self.params = params
        self.neighbour = dict(neighbour)
        self.state: dict[SwitchPort, _PortState] = {}
        self._last: dict[SwitchPort, Counters] = {}      # (s, p) -> (W, C, D) of the last sweep
        self._last_dd: dict[SwitchPort, float] = {}      # (s, p) -> ΔD of the last sweep
        # ports (r, q) whose link leads into switch s: the candidates of Algorithm 2 line 3
        self._into: dict[str, list[SwitchPort]] = {}
        for (r, q), (node, _, is_host) in self.neighbour.items():
            if not is_host:
                self._into.setdefault(node, []).append((r, q))

    def last_counters(self) -> Mapping[SwitchPort, Counters]:
        """The normalised counters of the last sweep (the baseline of the next)."""
        return self._last

    def marking_rate(self, port: SwitchPort) -> int:
        st = self.state.get(port)
        return self.params.low if st is not None and st.state == LOW_MR else self.params.default

    def sweep(self, counters: Mapping[SwitchPort, Counters]) -> list[Decision]:
        """Algorithm 1 for one sweep: *counters* maps (s, p) to (W, C, D) totals."""
        delta: dict[SwitchPort, Counters] = {}
        for port, now in counters.items():
            prev = self._last.get(port)
            delta[port] = (now[0] - prev[0], now[1] - prev[1], now[2] - prev[2]) if prev else (0, 0, 0)
        self._last = dict(counters)
        decisions = self._algorithm2(delta)
        decisions += self._algorithm3(delta, {d.port for d in decisions})
        self._last_dd = {port: d[2] for port, d in delta.items()}
        return decisions

    def _algorithm2(self, delta: Mapping[SwitchPort, Counters]) -> list[Decision]:
        p = self.params
        out: list[Decision] = []
        for (s, port), (dw, dc, _) in sorted(delta.items()):
            far = self.neighbour.get((s, port))
            if far is None:
                continue
            if not (dc > p.T_C or (far[2] and dw > p.T_W)):
                continue
            st = self.state.setdefault((s, port), _PortState())
            for rq in sorted(self._into.get(s, ())):
                if rq in st.victims or rq not in delta:
                    continue
                if delta[rq][0] > p.T_W:
                    st.victims.add(rq)
                    if st.state != LOW_MR:
                        st.state, st.interval = LOW_MR, 1
                        out.append(Decision((s, port), p.low, "congested (ΔC=%g, ΔW=%g); victim %s:%s ΔW=%g"
                                            % (dc, dw, rq[0], rq[1], delta[rq][0])))
        return out

    def _algorithm3(self, delta: Mapping[SwitchPort, Counters], just_set: Collection[SwitchPort]) -> list[Decision]:
        p = self.params
        out: list[Decision] = []
        for port, st in sorted(self.state.items()):
            if not st.victims or port in just_set:
                continue
            st.interval += 1
            if st.interval <= p.T_I:
                for rq in sorted(st.victims):
                    before = self._last_dd.get(rq)
                    if before is not None and rq in delta and before - delta[rq][2] > p.T_D:
                        st.victims.discard(rq)
            if not st.victims or st.interval >= p.T_I:
                why = "no victim ports left" if not st.victims else "Low-MR for T_I=%d sweeps" % p.T_I
                st.state, st.victims, st.interval = DEFAULT_MR, set(), 0
                out.append(Decision(port, p.default, why))
        return out
