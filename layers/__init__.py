"""Scapy layers for the frames ibemu exchanges: the wire format as a person inspects it.

    >>> from ibemu.layers import *
    >>> pkt = LRH(dlid=5, slid=3)/BTH(opcode="RC_SEND_ONLY", destqp=0x12, psn=100)/Raw(b"hi")
    >>> LRH(bytes(pkt)).summary()
"""
from .ib import (
    AETH,
    BTH,
    DETH,
    EXT_LAYERS,
    GRH,
    IETH,
    LRH,
    RDETH,
    RETH,
    AtomicAckETH,
    AtomicETH,
    ImmDt,
    aeth_syndrome_text,
)
from .link import IBLink
from .mad import (
    MAD,
    CACongestionEntry,
    CACongestionSetting,
    CCMgt,
    CCTEntry,
    CongestionControlTable,
    PerfMgt,
    PortCounters,
    PortCountersExtended,
    SwitchCongestionSetting,
    SwitchPortCongestionElement,
    SwitchPortCongestionSetting,
)
from .shim import IBEmu, IBEmuSync, bind_udp_ports

__all__ = ["LRH", "GRH", "BTH", "RDETH", "DETH", "RETH", "AtomicETH", "AETH",
           "AtomicAckETH", "ImmDt", "IETH", "EXT_LAYERS", "IBLink", "IBEmu",
           "IBEmuSync",
           "bind_udp_ports", "aeth_syndrome_text", "MAD", "PerfMgt", "CCMgt", "PortCounters",
           "PortCountersExtended", "SwitchCongestionSetting", "SwitchPortCongestionElement",
           "SwitchPortCongestionSetting", "CACongestionEntry", "CACongestionSetting", "CCTEntry",
           "CongestionControlTable"]
