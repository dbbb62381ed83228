"""The physics suite's harness: build a scenario in Python, run it on the virtual clock
(:class:`ibemu.sim.engine.VirtualEngine`, as :func:`ibemu.run.run_virtual` does) with a
recorder that keeps every event with its exact time in picoseconds, then drain the
fabric and check that every credit came back (ibemu.testing, as tests/conftest.py does
for run_virtual).

Nothing here computes an expectation: the tests derive theirs from first principles.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ibemu.build import build_fabric
from ibemu.fabric.network import Fabric
from ibemu.fabric.params import FlowSpec, HCAParams, LinkParams, SwitchParams
from ibemu.fabric.recorder import Recorder
from ibemu.scenario.model import HCASpec, LinkSpec, Scenario, SwitchSpec
from ibemu.sim.engine import VirtualEngine
from ibemu.testing import drain
from ibemu.units import PS_PER_NS, PS_PER_S, ib_rate

SDR = ib_rate("4x_sdr")         # 4X SDR: 4 lanes x 2.5 Gb/s x 8/10 = 8 Gb/s of data = 1e9 B/s
DDR = ib_rate("4x_ddr")         # 2e9 B/s
QDR = ib_rate("4x_qdr")         # 4e9 B/s
SDR_1X = ib_rate("1x_sdr")      # 1 lane: 2.5e8 B/s

# wire bytes of a packet (IBA ch. 5/9): LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26, plus the
# extension headers of its opcode (DETH 8 for UD, RETH 16 on a WRITE's first packet and
# a READ request, AETH 4 on an ACK and on a READ response's first/last/only packet)
LRH, BTH, ICRC, VCRC, DETH, RETH, AETH = 8, 12, 4, 2, 8, 16, 4
BASE = LRH + BTH + ICRC + VCRC  # 26
FCP_BYTES = 6                   # a link flow-control packet (IBA 7.9.4)
FORWARDING_DELAY = 40 * PS_PER_NS


def ps(nbytes: int | float, rate: int) -> float:
    """Serialisation time of *nbytes* at *rate* bytes/s, in ps."""
    return nbytes * PS_PER_S / rate


def blocks(nbytes: int) -> int:
    """64-byte credit blocks a packet of *nbytes* holds (IBA 7.9.4)."""
    return -(-nbytes // 64)


class Tap(Recorder):
    """Keeps what the nodes report, exactly: per directed link every frame start
    ``(t, nbytes, data)``; per flow every packet injected ``(t, payload)`` and received
    in order ``(t_tail, payload, message_done)``; traces ``(kind, key) -> [(t, value)]``."""

    def __init__(self) -> None:
        self.links: dict[str, list[tuple[int, int, bool]]] = {}
        self.ftx: dict[str, list[tuple[int, int]]] = {}
        self.frx: dict[str, list[tuple[int, int, bool]]] = {}
        self.traces: dict[tuple[str, str], list[tuple[int, float]]] = {}

    def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
        self.links.setdefault(link, []).append((t, nbytes, data))

    def flow_tx(self, flow: str, t: int, nbytes: int) -> None:
        self.ftx.setdefault(flow, []).append((t, nbytes))

    def flow_rx(self, flow: str, t: int, nbytes: int, wire: int, message_done: bool) -> None:
        self.frx.setdefault(flow, []).append((t, nbytes, message_done))

    def trace(self, kind: str, key: str, t: int, value: float) -> None:
        self.traces.setdefault((kind, key), []).append((t, value))

    # -- views
    def data_frames(self, link: str, t0: int = 0, t1: int | None = None) -> list[tuple[int, int]]:
        """(start, bytes) of the data packets that started on *link* in [t0, t1)."""
        return [(t, n) for t, n, d in self.links.get(link, ()) if d and t >= t0 and (t1 is None or t < t1)]

    def frames(self, link: str, min_bytes: int = BASE) -> list[tuple[int, int]]:
        """(start, bytes) of every IBA packet (data or not; link packets are shorter
        than *min_bytes*) that started on *link*."""
        return [(t, n) for t, n, _ in self.links.get(link, ()) if n >= min_bytes]

    def wire_rate(self, link: str, t0: int, t1: int) -> float:
        """Bytes/s of data packets (their full frame length) started on *link* in [t0, t1)."""
        return sum(n for _, n in self.data_frames(link, t0, t1)) * PS_PER_S / (t1 - t0)

    def rx_bytes(self, flow: str, t0: int, t1: int) -> int:
        """Payload bytes of *flow* whose last byte arrived in [t0, t1)."""
        return sum(n for t, n, _ in self.frx.get(flow, ()) if t0 <= t < t1)


@dataclass
class Run:
    scenario: Scenario
    fabric: Fabric
    engine: VirtualEngine
    tap: Tap


def scenario(links: list[LinkSpec], flows: list[FlowSpec], switches: list[str] | None = None,
             hcas: list[str] | None = None, switch: SwitchParams | None = None,
             hca: HCAParams | None = None, hca_params: dict[str, HCAParams] | None = None,
             duration: int = 1_000_000_000, cc=None) -> Scenario:
    """A Scenario of the named switches and HCAs (LIDs 1.. in the order given; HCAs
    default to every link end that is not a switch)."""
    switches = switches or []
    if hcas is None:
        hcas = []
        for link in links:
            for end in (link.a, link.b):
                if end not in switches and end not in hcas:
                    hcas.append(end)
    hca_params = hca_params or {}
    return Scenario("physics", duration=duration,
                    switches=[SwitchSpec(s, switch or SwitchParams()) for s in switches],
                    hcas=[HCASpec(h, i + 1, hca_params.get(h, hca or HCAParams())) for i, h in enumerate(hcas)],
                    links=links, flows=flows, cc=cc)


def link(a: str, b: str, rate: int = SDR, propagation: int = 0) -> LinkSpec:
    return LinkSpec(a, b, params=LinkParams(rate=rate, propagation=propagation))


def simulate(scn: Scenario, until: int | None = None, capture=None, check_credits: bool = True) -> Run:
    """Build *scn*, run it to *until* (default: its duration) on the virtual clock,
    then (with *check_credits*) stop the traffic, drain and assert no credit is missing."""
    tap = Tap()
    fabric = build_fabric(scn, tap)
    engine = VirtualEngine(fabric.nodes.values(), fabric.wiring, capture)
    engine.start(0)
    engine.run(scn.duration if until is None else until)
    if check_credits:
        engine.capture = None
        problems = drain(engine, fabric)
        assert not problems, "credit leak:\n  " + "\n  ".join(problems)
    return Run(scn, fabric, engine, tap)


@dataclass
class Path:
    """A chain H_src -- S1 -- ... -- Sk -- H_dst with per-hop link rates and propagation."""
    rates: list[int]
    propagation: int = 0
    names: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        k = len(self.rates) - 1
        self.names = ["src"] + ["S%d" % (i + 1) for i in range(k)] + ["dst"]

    @property
    def switches(self) -> list[str]:
        return self.names[1:-1]

    def links(self) -> list[LinkSpec]:
        return [link(a, b, r, self.propagation) for a, b, r in zip(self.names, self.names[1:], self.rates)]

    def label(self, hop: int) -> str:
        """Label of the directed link of hop *hop* (0: the source's link)."""
        return "%s->%s" % (self.names[hop], self.names[hop + 1])

    def back(self, hop: int) -> str:
        return "%s->%s" % (self.names[hop + 1], self.names[hop])
