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

from ...build import MAX_HEADERS
from ...fabric.credits import blocks_of
from ...fabric.hca import HCA
from ...fabric.qp import RCRequester, RCResponder
from ...fabric.switch import Switch
from .functions import make_function
from .marking import HPMarker
from .response import HPResponse, Policy

__all__ = ["install"]


def install(fabric, scn, spec) -> None:
    """Put markers on the compliant switches and a source response on every flow whose
    source is compliant; start the subnet manager when there are non-compliant CAs."""
    from .config import HPSpec
    spec = spec or HPSpec()
    nodes = fabric.nodes
    mtu = max((n.mtu for n in nodes.values() if isinstance(n, HCA)), default=2048)
    max_blocks = blocks_of(mtu + MAX_HEADERS)
    noncompliant = set(spec.noncompliant_switches)
    manager = None
    if spec.noncompliant_cas and spec.manager:
        from .manager import SubnetManager
        manager = SubnetManager(fabric, spec)
    if spec.marking != "none":
        for name, sw in nodes.items():
            if not isinstance(sw, Switch) or name in noncompliant:
                continue
            nc_ports = [p for p in sw.ports
                        if (sw, p) in fabric.wiring and fabric.wiring[(sw, p)][0].name in noncompliant]
            sw.marker = HPMarker(spec, max_blocks, nc_ports,
                                 manager.switch_notifier() if manager else None)
    policy = Policy(spec, make_function(spec.response, spec.levels, spec.m))
    shared: dict = {}
    nc_cas = set(spec.noncompliant_cas)

    def attach(qp, reliable):
        key = (qp.hca.name, qp.dlid, qp.sl, reliable)
        resp = HPResponse(qp, policy, shared.get(key) if spec.persistent else None, reliable)
        if spec.persistent:
            shared.setdefault(key, resp.state)
        qp.cc = resp

    for flow, (snd, rcv) in fabric.qps.items():
        if rcv.hca.name in nc_cas:
            _deaf(rcv)                      # a non-compliant destination echoes nothing
        if snd.hca.name not in nc_cas:
            attach(snd, isinstance(snd, RCRequester))
        if isinstance(rcv, RCResponder) and snd.flow.op == "read" and rcv.hca.name not in nc_cas:
            attach(rcv, False)              # READ responses: rate only (seed 000 §5.2)
    if manager is not None:
        manager.start()


def _deaf(rcv) -> None:
    """A non-compliant (IBA 1.0) destination: ACKs without BECN, no CN packets."""
    from ...wire import opcodes as OP
    from ...wire.codec import set_becn
    inner = rcv.on_packet

    def on_packet(now, frame):
        reply = inner(now, frame)
        if reply is None or reply[8] == OP.CNP:
            return None
        if reply[12] & 0x40:
            set_becn(reply, 0)
        return reply
    rcv.on_packet = on_packet
