"""The IBA congestion control annex's settings as typed objects (REFERENCE.md "IBA
Congestion Control Annex"; seed 002 §1; seed 004 "Congestion Control in InfiniBand
Architecture"), named as the spec's attributes:

- :class:`SwitchSetting` -- SwitchCongestionSetting (CC attribute 0x14): Threshold,
  Marking_Rate, Packet_Size, Victim_Mask, Control_Map; with per-port
  :class:`PortSetting` -- SwitchPortCongestionSetting (0x15): Threshold, Packet_Size,
  Marking_Rate;
- :class:`SLSetting` -- a CACongestionEntry of CACongestionSetting (0x16), one per SL:
  CCTI_Timer, CCTI_Increase, Trigger_Threshold, CCTI_Min;
- :class:`CASetting` -- a CA port: Port_Control, the 16 SL entries, the
  CongestionControlTable (CCT entries ``(CCT_Shift, CCT_Multiplier)``) and CCTI_Limit.

Defaults (ibemu's choice; the spec leaves them to the Congestion Control Manager):
Threshold 15, Marking_Rate 0, Packet_Size 0, no Victim_Mask bits; CCTI_Increase 1,
CCTI_Timer 150 (× 1.024 µs), CCTI_Min 0, Trigger_Threshold 0 (0: no event), per-QP
CCTI, and :func:`default_cct`.

CCTI_Limit 0 is read as "the last entry of the table" (``len(CCT) - 1``), what OpenSM
programs (it sets CCTI_Limit from the table it loads).  Read literally, 0 would keep
every CCTI at 0 and disable throttling -- yet seed 002's testbed, configured with
"CCTI_Limit: 0", visibly throttled its sources (§4.2, Figures 3-4).
"""
from __future__ import annotations

from dataclasses import dataclass, field

CCT_MAX_ENTRIES = 128               # OpenSM: at most 128 entries (2 blocks of 64)
TIMER_UNIT_PS = 1_024_000           # CCTI_Timer counts 1.024 µs


def default_cct(entries: int = CCT_MAX_ENTRIES) -> list[tuple[int, int]]:
    """ibemu's default CongestionControlTable: entry *i* = (CCT_Shift 2, CCT_Multiplier i),
    an injection delay of i/4 maximum-packet times, so a source throttled to CCTI *i*
    sends max-size packets at 1/(1 + i/4) of the link rate: 80 % at CCTI 1, 50 % at 4,
    20 % at 16, 3 % at 127 -- a range from full rate to about 1/32 in 128 small steps,
    each no more than 20 % of the previous rate."""
    return [(2, i) for i in range(entries)]


def cct_delay(entry: tuple[int, int], max_packet_time: int) -> int:
    """Injection delay of a CCT entry, ps: (max packet time >> CCT_Shift) × CCT_Multiplier
    (REFERENCE.md; Linux hfi1 set_link_ipg)."""
    shift, mult = entry
    return (max_packet_time >> shift) * mult


@dataclass
class PortSetting:
    """SwitchPortCongestionSetting: a port's overrides (None: the switch's value)."""
    Threshold: int | None = None
    Marking_Rate: int | None = None
    Packet_Size: int | None = None


@dataclass
class SwitchSetting:
    Threshold: int = 15             # 0 off, 1 loose .. 15 aggressive (see switch.py)
    Marking_Rate: int = 0           # mean eligible packets between marks; 0: mark every one
    Packet_Size: int = 0            # in credits (64 B): smaller packets are not marked
    Victim_Mask: frozenset[int] = frozenset()    # ports that mark also as victims
    Control_Map: int = 0x1F         # kept for the record; every field is applied
    ports: dict[int, PortSetting] = field(default_factory=dict)

    def port(self, p: int) -> tuple[int, int, int, bool]:
        """Effective (Threshold, Marking_Rate, Packet_Size, victim bit) of port *p*."""
        ps = self.ports.get(p)
        th, mr, pk = self.Threshold, self.Marking_Rate, self.Packet_Size
        if ps is not None:
            th = th if ps.Threshold is None else ps.Threshold
            mr = mr if ps.Marking_Rate is None else ps.Marking_Rate
            pk = pk if ps.Packet_Size is None else ps.Packet_Size
        return th, mr, pk, p in self.Victim_Mask


@dataclass
class SLSetting:
    CCTI_Timer: int = 150           # units of 1.024 µs; 0: CCTI never decreases
    CCTI_Increase: int = 1
    Trigger_Threshold: int = 0      # 0: no event
    CCTI_Min: int = 0


@dataclass
class CASetting:
    Port_Control: str = "qp"        # "qp": a CCTI per QP; "sl": one per SL of the port
    sl: list[SLSetting] = field(default_factory=lambda: [SLSetting() for _ in range(16)])
    CCT: list[tuple[int, int]] = field(default_factory=default_cct)
    CCTI_Limit: int = 0             # 0: len(CCT) - 1 (module docstring)

    def limit(self) -> int:
        last = len(self.CCT) - 1
        return last if self.CCTI_Limit == 0 else min(self.CCTI_Limit, last)


@dataclass
class CCASpec:
    """``[cc.cca]``: what :func:`ibemu.cc.cca.install` applies."""
    enabled: bool = True            # OpenSM's congestion_control
    switch: SwitchSetting = field(default_factory=SwitchSetting)
    switches: dict[str, SwitchSetting] = field(default_factory=dict)   # per-switch settings
    ca: CASetting = field(default_factory=CASetting)
    hcas: dict[str, CASetting] = field(default_factory=dict)           # per-HCA settings
    trace_marks: bool = True        # per-port cumulative FECN marks as a trace
    cc_key: int = 0                 # CC_Key a CC Set MAD must carry (0: none; OpenSM's
                                    # cc_key option is kept for the record only)
    opensm_routing: dict[str, str] = field(default_factory=dict)   # routing_engine, root_guid_file, lmc,
                                                                    # lfts_file (applied to [routing])
    opensm_where: str = ""          # the key (and file) the options came from, for errors
    opensm_dir: str = ""            # where the opensm.conf's relative file names resolve from
    opensm_not_modelled: list[str] = field(default_factory=list)    # other opensm.conf options (issue 18)

    def switch_setting(self, name: str) -> SwitchSetting:
        return self.switches.get(name, self.switch)

    def ca_setting(self, name: str) -> CASetting:
        return self.hcas.get(name, self.ca)
