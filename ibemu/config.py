"""Typed scenario objects: what a TOML scenario is validated into, and what a Python
script builds directly for scripted experiments.

Times are integer picoseconds (``PS_PER_NS`` etc. below), rates bytes per second.
Defaults follow seed 003 Table 1: 1 GB/s links (IB 4X SDR), 2048-byte PMTU, input
buffers of 4 packets per port, 40 ns header forwarding delay, FIFO output scheduling
with bypass limit 4.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PS_PER_NS = 1_000
PS_PER_US = 1_000_000
PS_PER_MS = 1_000_000_000
PS_PER_S = 1_000_000_000_000

# data rate after encoding, bytes/s, per lane (IBA 5.x and the IBTA roadmap):
# SDR 2.5 Gb/s 8b/10b, DDR 5, QDR 10 (8b/10b); FDR 14.0625 and EDR 25.78125 Gb/s with
# 64b/66b; HDR 53.125 Gb/s PAM4 with 64b/66b framing after FEC (50 Gb/s data per lane).
LANE_DATA_BPS = {
    "sdr": 2.5e9 * 8 / 10,
    "ddr": 5e9 * 8 / 10,
    "qdr": 10e9 * 8 / 10,
    "fdr": 14.0625e9 * 64 / 66,
    "edr": 25.78125e9 * 64 / 66,
    "hdr": 50e9,
}
WIDTHS = {"1x": 1, "4x": 4, "8x": 8, "12x": 12}


def ib_rate(name: str) -> int:
    """Bytes per second of a link named like ``4x_sdr`` / ``4X SDR`` / ``12x-qdr``."""
    key = name.lower().replace(" ", "_").replace("-", "_")
    width, _, speed = key.partition("_")
    if width not in WIDTHS or speed not in LANE_DATA_BPS:
        raise ValueError("unknown link rate %r (expected e.g. 4x_sdr, 1x_qdr, 12x_edr)" % name)
    return int(round(WIDTHS[width] * LANE_DATA_BPS[speed] / 8))


@dataclass
class LinkParams:
    rate: int = ib_rate("4x_sdr")          # bytes/s
    propagation: int = 0                    # ps (seed 003: short links, negligible)
    fc_period: int = 262_144 * PS_PER_NS    # periodic flow-control packets: 65,536 symbol times of 4 ns (SDR)


@dataclass
class VLArbTable:
    """IBA VL arbitration table (seed 004 "VL Arbitration"): High and Low lists of
    (VL, weight) with weights in 64-byte units, and the Limit of High-Priority in
    4096-byte units (255 = unlimited)."""
    high: list[tuple[int, int]] = field(default_factory=list)
    low: list[tuple[int, int]] | None = None    # None: every data VL of the port, weight 255
    limit_of_high_priority: int = 255

    def arbiter(self, data_vls: int):
        from .fabric.vlarb import VLArbiter
        low = self.low if self.low is not None else [(vl, 255) for vl in range(data_vls)]
        return VLArbiter(self.high, low, self.limit_of_high_priority)


@dataclass
class SwitchParams:
    buffer_packets: int | None = 4          # input buffer per port per VL, in max-size packets ...
    buffer_bytes: int | None = None         # ... or in bytes (takes precedence when set)
    bypass_limit: int = 4
    forwarding_delay: int = 40 * PS_PER_NS
    cut_through: bool = True
    data_vls: int = 1                       # VL0..VLn-1 carry data; VL15 is management
    sl2vl: list[int] | None = None          # SL -> VL for every port pair; None: SL mod data_vls
    vlarb: VLArbTable = field(default_factory=VLArbTable)
    port_buffers: dict[int, int] = field(default_factory=dict)   # port -> buffer bytes override
    port_sl2vl: dict = field(default_factory=dict)  # (in port or None, out port) -> 16 VLs (seed 004)
    port_vlarb: dict = field(default_factory=dict)  # out port -> VLArbTable (IBA: one table per port)
    enforce_pkeys: bool = False             # inbound partition enforcement (IBA 10.9)
    pkeys: list[int] | None = None          # P_Key table of every port; None: [0xFFFF]
    port_pkeys: dict[int, list[int]] = field(default_factory=dict)   # port -> its own P_Key table


@dataclass
class HCAParams:
    mtu: int = 2048
    buffer_bytes: int | None = None         # receive buffer per VL; None: 4 max-size packets
    ack_every: int = 1                      # ACK coalescing: one ACK per N packets (1: every packet)
    # RC reliability (IBA 9.7): local ACK timeout 4.096 us * 2^8 (IBA Timeout field 8),
    # about 1 ms of emulated time -- far above any queueing delay of the seed papers'
    # fabrics, so it never fires spuriously; retry count 7 (the 3-bit field's maximum)
    ack_timeout: int = 4_096 * PS_PER_NS * 2 ** 8
    retry_cnt: int = 7
    # send-queue depth: the most packets an RC requester keeps unacknowledged (a real
    # HCA's send queue bounds them; without a window and under loss they would pile up)
    max_outstanding: int = 4096
    pkeys: list[int] | None = None          # the port's P_Key table; None: [0xFFFF] (default partition)
    data_vls: int = 1
    vlarb: VLArbTable = field(default_factory=VLArbTable)


@dataclass
class SwitchSpec:
    name: str
    params: SwitchParams = field(default_factory=SwitchParams)
    ports: int | None = None                # None: as many as links attach
    lft: dict[int, int] | None = None       # DLID -> out port; None: shortest paths


@dataclass
class HCASpec:
    name: str
    lid: int
    params: HCAParams = field(default_factory=HCAParams)


@dataclass
class LinkSpec:
    a: str                                  # node name
    b: str
    a_port: int | None = None               # None: next free port
    b_port: int | None = None
    params: LinkParams = field(default_factory=LinkParams)
    name: str | None = None                 # label used in results; default "a->b"

    def labels(self) -> tuple[str, str]:
        """Labels of the two directions: (name or "a->b", name + ".rev" or "b->a")."""
        if self.name:
            return self.name, self.name + ".rev"
        return "%s->%s" % (self.a, self.b), "%s->%s" % (self.b, self.a)


@dataclass
class FlowSpec:
    name: str
    src: str
    dst: str
    transport: str = "rc"                   # rc | ud
    op: str = "send"                        # send | write | read
    pattern: str = "greedy"                 # greedy | messages | onoff
    message_size: int = 2048                # bytes per message
    count: int | None = None                # messages (pattern "messages")
    start: int = 0                          # ps
    stop: int | None = None                 # ps; None: end of run
    window: int | None = None               # CWND in packets; None: no window
    ipd: int | None = None                  # static inter-packet delay: rate R/(IPD+1)
    rate: float | None = None               # static rate limit, bytes/s (alternative to ipd)
    sl: int = 0
    mean_on: int | None = None              # ps, pattern "onoff" (exponential)
    mean_off: int | None = None
    group: str | None = None                # label for aggregate series (e.g. "local")
    pkey: int = 0xFFFF                      # the P_Key its packets carry (default partition, full member)


@dataclass
class OutputSpec:
    bin: int = 100 * PS_PER_US              # time-series bin
    window: int = 2 * PS_PER_MS             # sliding window for throughput (seed 003: 2 ms)
    plots: bool = True
    plot_links: list[str] = field(default_factory=list)   # link labels to plot; [] = all
    plot_groups: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    name: str
    duration: int                           # ps
    switches: list[SwitchSpec] = field(default_factory=list)
    hcas: list[HCASpec] = field(default_factory=list)
    links: list[LinkSpec] = field(default_factory=list)
    flows: list[FlowSpec] = field(default_factory=list)
    seed: int = 1
    output: OutputSpec = field(default_factory=OutputSpec)
    source: str | None = None               # file it came from
    resolved: dict = field(default_factory=dict)   # the resolved configuration, for results
    cc: object = None                       # ibemu.cc.CCSpec; None: no congestion control
    faults: object = None                   # ibemu.fabric.faults.FaultSpec; None: no link faults
