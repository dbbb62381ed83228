"""The subnet manager that paces non-compliant CAs (seed 000 §2, §6.2), in band.

Seed 000 §6.2: the subnet manager tells switches and compliant CAs the LIDs of the
non-compliant CAs; a switch that marks a data packet destined to one (not already
marked) sends a CN packet to the manager; a destination CA that receives a marked data
packet from a non-compliant source sends a CN packet to the manager; on CNs for a flow
the manager raises that flow's static IPD at its source CA.

ibemu's wire form (a choice; the seed leaves it open): management datagrams are UD
SEND_ONLY packets on VL15 to a dedicated QP (0xFF, beside the GSI on QP1, whose MADs
keep their agent), with a DETH and an 8-byte payload:

- CN to the manager: ``b"CN" + SLID + DLID`` (the marked packet's addresses, 2 bytes each)
  + 2 pad bytes;
- IPD set, manager to the source CA: ``b"IP" + DLID + IPD`` + 2 pad bytes.

The manager's policy (the seed gives none): each CN raises the flow's static IPD by one
(at most once per ``manager_period``/20, so a burst of marks counts once), and every
``manager_period`` a flow that drew no CN has it lowered by one, so a source that
stops congesting gets its rate back.  Sources apply the IPD to every QP towards DLID.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from ...fabric.hca import HCA
from ...fabric.node import VL15
from ...fabric.switch import Switch
from ...wire import opcodes as OP
from ...wire.codec import build
from ...wire.fields import get_dlid, get_fecn_local, get_opcode, get_slid, get_ud_payload
from ...wire.layout import Buf
from .marking import Notify

if TYPE_CHECKING:
    from ...fabric.network import Fabric
    from .config import HPSpec

Flow: TypeAlias = "tuple[int, int]"
"""A paced flow as the manager knows it: (source LID, destination LID)."""

HP_QPN = 0xFF                 # below the data QPNs (0x101 up); QP0/QP1 stay the SMI/GSI
Q_KEY = 0x80010000
MSG_LEN = 8                   # the payload of every HP management datagram


def _mad(dlid: int, slid: int, payload: bytes) -> bytearray:
    return build(dlid=dlid, slid=slid, opcode=OP.UD_SEND_ONLY, destqp=HP_QPN, vl=VL15,
                 payload=payload, ext={"DETH": {"q_key": Q_KEY, "src_qp": HP_QPN}})


def _payload(frame: Buf) -> bytes:
    return get_ud_payload(frame, MSG_LEN)


def _cn(frame: Buf) -> bytes:
    """The CN message for marked *frame*: ``b"CN" + SLID + DLID + 2 pad bytes``."""
    return b"CN" + get_slid(frame).to_bytes(2, "big") + get_dlid(frame).to_bytes(2, "big") + b"\0\0"


class Agent:
    """The HP management QP of a CA: takes IPD settings (sources) or CNs (the manager)
    (a :class:`~ibemu.fabric.hooks.PacketHandler`)."""

    def __init__(self, hca: HCA, manager: SubnetManager | None = None) -> None:
        self.hca = hca
        self.name = "hp-mgmt"
        self.manager = manager

    def on_packet(self, now: int, frame: Buf) -> None:
        msg = _payload(frame)
        kind = msg[:2]
        if kind == b"CN" and self.manager is not None:
            self.manager.on_cn(now, int.from_bytes(msg[2:4], "big"), int.from_bytes(msg[4:6], "big"))
        elif kind == b"IP":
            dlid, ipd = int.from_bytes(msg[2:4], "big"), msg[4]
            for qp in self.hca.senders:
                if qp.dlid == dlid:
                    qp.set_ipd(ipd)
            self.hca.count("hp_ipd_set")
        return None


class ReportToManager:
    """The notifier of a compliant destination of a non-compliant source (seed 000
    §6.2): a marked data packet from such a source is reported to the subnet manager
    with a CN; the transport's own echo goes out as usual."""

    def __init__(self, manager: SubnetManager) -> None:
        self.manager = manager

    def on_packet(self, hca: HCA, now: int, frame: Buf, reply: bytearray | None) -> bytearray | None:
        if get_fecn_local(frame) and OP.is_data(get_opcode(frame)) and get_slid(frame) in self.manager.nc_lids:
            hca.count("hp_cn_to_manager")
            hca.send_control(_mad(self.manager.lid, hca.lid, _cn(frame)), VL15)
        return reply


class SubnetManager:
    """Runs on the HCA named by ``manager``; see the module docstring."""

    def __init__(self, fabric: Fabric, spec: HPSpec) -> None:
        if spec.manager is None:
            raise ValueError("the HP scheme has no subnet manager (cc.hp.manager)")
        self.spec = spec
        hca = fabric.nodes[spec.manager]
        if not isinstance(hca, HCA):
            raise TypeError("the subnet manager %r is not an HCA" % spec.manager)
        self.hca = hca
        self.lid = self.hca.lid
        hcas = {n: x for n, x in fabric.nodes.items() if isinstance(x, HCA)}
        self.nc_lids = {hcas[n].lid for n in spec.noncompliant_cas}
        self.by_lid = {x.lid: x for x in hcas.values()}
        self.ipd: dict[Flow, int] = {}      # (slid, dlid) -> static IPD set
        self.last_cn: dict[Flow, int] = {}  # (slid, dlid) -> time of the last CN
        self.last_raise: dict[Flow, int] = {}   # (slid, dlid) -> time the IPD was last raised
        self.period = spec.manager_period
        self.holdoff = max(1, spec.manager_period // 20)
        self.agent = Agent(self.hca, self)
        for x in hcas.values():
            x.attach_qp(HP_QPN, self.agent if x is self.hca else Agent(x))
        self.fabric = fabric
        # destination CAs: a marked data packet from a non-compliant source -> CN
        reporter = ReportToManager(self)
        for _flow, (snd, rcv) in fabric.qps.items():
            if snd.hca.lid in self.nc_lids and rcv.hca.name not in spec.noncompliant_cas:
                rcv.hca.attach_notifier(rcv.qpn, reporter)

    def switch_notifier(self) -> Notify:
        """The marker's ``notify``: a switch marked *frame*; CN if its DLID is
        non-compliant (the marker calls it only for packets not marked before)."""
        nc, lid = self.nc_lids, self.lid

        def notify(sw: Switch, frame: bytearray, now: int) -> None:
            dlid = get_dlid(frame)
            if dlid in nc:
                sw.count("hp_cn_to_manager")
                sw.inject(_mad(lid, 0, _cn(frame)), now)
        return notify

    def start(self) -> None:
        self.hca.at(self.period, self._tick)

    # ------------------------------------------------------------------ policy
    def on_cn(self, now: int, slid: int, dlid: int) -> None:
        key = (slid, dlid)
        self.hca.count("hp_cn_received")
        self.last_cn[key] = now
        if now - self.last_raise.get(key, -self.holdoff) < self.holdoff:
            return
        self.last_raise[key] = now
        ipd = min(self.ipd.get(key, 0) + 1, self.spec.levels - 1)
        self._set(now, key, ipd)

    def _tick(self, now: int) -> None:
        for key, ipd in list(self.ipd.items()):
            if ipd and now - self.last_cn.get(key, -self.period) >= self.period:
                self._set(now, key, ipd - 1)
        self.hca.at(now + self.period, self._tick)

    def _set(self, now: int, key: Flow, ipd: int) -> None:
        slid, dlid = key
        self.ipd[key] = ipd
        self.hca.recorder.trace("SIPD", "%d->%d" % key, now, ipd)
        self.hca.recorder.event(now, self.hca.name, "static IPD of LID %d -> %d set to %d" % (slid, dlid, ipd))
        frame = _mad(slid, self.lid, b"IP" + dlid.to_bytes(2, "big") + bytes([ipd]) + b"\0\0\0")
        if slid == self.lid:
            self.agent.on_packet(now, frame)
        else:
            self.hca.send_control(frame, VL15)
            self.hca.kick(now)
