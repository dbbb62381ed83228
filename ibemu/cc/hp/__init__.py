"""The HP congestion-control scheme of seeds 000 and 003 (summarised in 001; issue 5).

- :mod:`.config`: the ``[cc.hp]`` table;
- :mod:`.marking`: switch marking (naive, input-triggered, input-output-triggered, the
  refinements of seed 000 §4 and §6.1);
- notification is in the transport (:mod:`ibemu.fabric.qp`, seed 000 §3);
- :mod:`.functions`: FIMD, LIPD, AIMD and their tables; :mod:`.response`: the hybrid
  rate/window source response with CWND, OUTS, CIPD, RPI, APSN, RWL;
- :mod:`.manager`: the subnet manager that paces non-compliant CAs (seed 000 §6.2).

The studies (seed 003 Figures 4–8, the comparison on Figure 2's scenario) are in
:mod:`ibemu.studies.hp`.
"""
from __future__ import annotations

from ...fabric.credits import blocks_of
from ...fabric.hca import HCA
from ...fabric.network import Fabric
from ...fabric.qp import RCRequester, RCResponder, SenderBase
from ...fabric.switch import Switch
from ...wire import opcodes as OP
from ...wire.fields import get_becn_local, get_opcode, set_becn
from ...wire.layout import MAX_HEADERS, Buf
from ..registry import InstallContext, Scheme
from .config import HPSpec, parse_hp
from .functions import make_function
from .manager import SubnetManager
from .marking import HPMarker
from .response import FlowState, HPResponse, Policy

__all__ = ["HP", "Deaf", "install"]


class Deaf:
    """The notifier of a non-compliant (IBA 1.0) destination (seed 000 §6.2): it echoes
    nothing -- ACKs go out without BECN, CN packets not at all."""

    def on_packet(self, hca: HCA, now: int, frame: Buf, reply: bytearray | None) -> bytearray | None:
        if reply is None or get_opcode(reply) == OP.CNP:
            return None
        if get_becn_local(reply):
            set_becn(reply, 0)
        return reply


def install(fabric: Fabric, spec: HPSpec | None, ctx: InstallContext) -> None:
    """Put markers on the compliant switches and a source response on every flow whose
    source is compliant; start the subnet manager when there are non-compliant CAs."""
    spec = spec or HPSpec()
    nodes = fabric.nodes
    mtu = max((h.mtu for h in fabric.hcas().values()), default=2048)
    max_blocks = blocks_of(mtu + MAX_HEADERS)
    noncompliant = set(spec.noncompliant_switches)
    manager = None
    if spec.noncompliant_cas and spec.manager:
        manager = SubnetManager(fabric, spec)
    if spec.marking != "none":
        for name, sw in nodes.items():
            if not isinstance(sw, Switch) or name in noncompliant:
                continue
            nc_ports = []
            for p in sw.ports:
                peer = fabric.peer_of(sw, p)
                if peer is not None and peer.name in noncompliant:
                    nc_ports.append(p)
            sw.attach_marker(HPMarker(spec, max_blocks, nc_ports,
                                      manager.switch_notifier() if manager else None))
    policy = Policy(spec, make_function(spec.response, spec.levels, spec.m))
    shared: dict[tuple[str, int, int, bool], FlowState] = {}
    nc_cas = set(spec.noncompliant_cas)

    def attach(qp: SenderBase, reliable: bool) -> None:
        key = (qp.hca.name, qp.dlid, qp.sl, reliable)
        resp = HPResponse(qp, policy, shared.get(key) if spec.persistent else None, reliable)
        if spec.persistent:
            shared.setdefault(key, resp.state)
        qp.attach_response(resp)

    deaf = Deaf()
    for snd, rcv in fabric.qps.values():
        if rcv.hca.name in nc_cas:
            rcv.hca.attach_notifier(rcv.qpn, deaf)     # a non-compliant destination echoes nothing
        if snd.hca.name not in nc_cas:
            attach(snd, isinstance(snd, RCRequester))
        if isinstance(rcv, RCResponder) and snd.flow.op == "read" and rcv.hca.name not in nc_cas:
            attach(rcv, False)              # READ responses: rate only (seed 000 §5.2)
    if manager is not None:
        manager.start()


HP = Scheme("hp", "the HP scheme: marking, ECN echo, hybrid rate/window response (seeds 000, 003)",
            install, parse=parse_hp)
