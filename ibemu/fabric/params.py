"""The fabric's parameters: links, switches, HCAs and traffic flows, as the nodes are
built from them (by :mod:`ibemu.build`, from a scenario or a Python script).

Times are integer picoseconds (:mod:`ibemu.units`), rates bytes per second.  Defaults
follow seed 003 Table 1: 1 GB/s links (IB 4X SDR), 2048-byte PMTU, input buffers of 4
packets per port, 40 ns header forwarding delay, FIFO output scheduling with bypass
limit 4.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..units import PS_PER_NS, ib_rate
from .vlarb import VLArbiter

__all__ = ["LinkParams", "VLArbTable", "SwitchParams", "HCAParams", "SizeDist", "FlowSpec", "MAX_MESSAGE"]

MAX_MESSAGE = 2**31                         # the largest message: IBA's DMA length is 32 bits (2 GiB here)


@dataclass
class LinkParams:
    rate: int = ib_rate("4x_sdr")          # bytes/s
    propagation: int = 0                    # ps (seed 003: short links, negligible)
    fc_period: int = 262_144 * PS_PER_NS    # periodic flow-control packets: 65,536 symbol times of 4 ns (SDR)
    flow_control: str = "wire"              # "wire": a flow-control packet takes its 6 bytes of link
                                            # time; "ideal": none (seed 003's simulated links)


@dataclass
class VLArbTable:
    """IBA VL arbitration table (seed 004 "VL Arbitration"): High and Low lists of
    (VL, weight) with weights in 64-byte units, and the Limit of High-Priority in
    4096-byte units (255 = unlimited)."""
    high: list[tuple[int, int]] = field(default_factory=list)
    low: list[tuple[int, int]] | None = None    # None: every data VL of the port, weight 255
    limit_of_high_priority: int = 255

    def arbiter(self, data_vls: int) -> VLArbiter:
        """The port's arbiter over *data_vls* data VLs (default Low list: every one, 255)."""
        low = self.low if self.low is not None else [(vl, 255) for vl in range(data_vls)]
        return VLArbiter(self.high, low, self.limit_of_high_priority)


@dataclass
class SwitchParams:
    buffer_packets: int | None = 4          # input buffer per port per VL, in max-size packets ...
    buffer_bytes: int | None = None         # ... or in bytes (takes precedence when set)
    bypass_limit: int = 4
    forwarding_delay: int = 40 * PS_PER_NS
    cut_through: bool = True
    crossbar_speedup: float = 1.0           # crossbar input read rate / its link rate (1: seed 003's crossbar)
    data_vls: int = 1                       # VL0..VLn-1 carry data; VL15 is management
    sl2vl: list[int] | None = None          # SL -> VL for every port pair; None: SL mod data_vls
    vlarb: VLArbTable = field(default_factory=VLArbTable)
    port_buffers: dict[int, int] = field(default_factory=dict)   # port -> buffer bytes override
    # (in port or None, out port) -> 16 VLs (seed 004)
    port_sl2vl: dict[tuple[int | None, int], list[int]] = field(default_factory=dict)
    # out port -> VLArbTable (IBA: one table per port)
    port_vlarb: dict[int, VLArbTable] = field(default_factory=dict)
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
class SizeDist:
    """A distribution of message sizes in bytes (issue 15 Deliver 4), drawn per message by
    :class:`ibemu.fabric.traffic.MessageSizes`: ``kind`` "exponential" (``mean``; a draw is
    rounded to whole bytes and kept within [``low``, ``high``]), "uniform" (integers in
    [``low``, ``high``], both included) or "choice" (one of ``values``, with ``weights``;
    None: equal weights)."""
    kind: str
    mean: float = 0.0
    low: int = 1
    high: int = MAX_MESSAGE
    values: list[int] = field(default_factory=list)
    weights: list[float] | None = None

    def mean_size(self) -> float:
        """The mean message size in bytes (for an exponential, the untruncated mean)."""
        if self.kind == "exponential":
            return self.mean
        if self.kind == "uniform":
            return (self.low + self.high) / 2
        w = self.weights or [1.0] * len(self.values)
        return sum(v * x for v, x in zip(self.values, w)) / sum(w)


@dataclass
class FlowSpec:
    name: str
    src: str
    dst: str
    transport: str = "rc"                   # rc | ud
    op: str = "send"                        # send | write | read
    pattern: str = "greedy"                 # greedy | messages | onoff | poisson
    message_size: int = 2048                # bytes per message (size_dist None)
    size_dist: SizeDist | None = None       # message sizes drawn per message; None: message_size
    count: int | None = None                # messages (pattern "messages")
    start: int = 0                          # ps
    stop: int | None = None                 # ps; None: end of run
    window: int | None = None               # CWND in packets; None: no window
    ipd: int | None = None                  # static inter-packet delay: rate R/(IPD+1)
    rate: float | None = None               # static rate limit, bytes/s (alternative to ipd)
    sl: int = 0
    mean_on: int | None = None              # ps, pattern "onoff" (exponential)
    mean_off: int | None = None
    mean_interarrival: int | None = None    # ps, pattern "poisson" (exponential interarrival times)
    group: str | None = None                # label for aggregate series (e.g. "local")
    pkey: int = 0xFFFF                      # the P_Key its packets carry (default partition, full member)
    path: int | None = None                 # LMC path (LID offset) of its QPs; None: flow index mod 2^LMC
