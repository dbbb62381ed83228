"""From a :class:`~ibemu.scenario.model.Scenario` to wired nodes: ports, buffers, forwarding
tables (shortest paths, lowest port first on ties), queue pairs and generators.

The result is driver-neutral: the virtual-time engine and the trio runtime both take a
:class:`Fabric`.
"""
from __future__ import annotations

from collections import deque

from .cc import install, node_class
from .errors import UserError
from .fabric.credits import MAX_CAPACITY_BLOCKS, blocks_of
from .fabric.faults import make_injectors
from .fabric.network import Fabric
from .fabric.node import Node, Port
from .fabric.pkey import PKeyTable
from .fabric.qp import RCRequester, RCResponder, UDReceiver, UDSender
from .fabric.recorder import Recorder
from .fabric.switch import Switch
from .fabric.traffic import make_generator
from .scenario.model import Scenario
from .wire.layout import MAX_HEADERS  # LRH, BTH, RETH, ICRC, VCRC


def _assign_ports(scn: Scenario):
    used: dict[str, set] = {}
    out = []
    for link in scn.links:
        ends = []
        for name, want in ((link.a, link.a_port), (link.b, link.b_port)):
            taken = used.setdefault(name, set())
            p = want
            if p is None:
                p = 1
                while p in taken:
                    p += 1
            if p in taken:
                raise UserError("port %s:%d is used by two links" % (name, p))
            taken.add(p)
            ends.append(p)
        out.append((link, ends[0], ends[1]))
    return out


def switch_lids(scn: Scenario) -> dict[str, int]:
    """LIDs of the switches' management port 0 (IBA 14.2.5): the lowest LIDs no HCA has,
    in the order the switches are listed; MADs to a switch are addressed to it."""
    taken = {h.lid for h in scn.hcas}
    free = (n for n in range(1, 0xC000) if n not in taken)
    return {s.name: next(free) for s in scn.switches}


def _lfts(scn: Scenario, adj, sw_lids: dict[str, int]) -> dict[str, dict[int, int]]:
    """Linear forwarding tables by breadth-first search from every HCA and switch."""
    switches = {s.name for s in scn.switches}
    lft = {s: {} for s in switches}
    targets = [(h.name, h.lid) for h in scn.hcas] + sorted(sw_lids.items(), key=lambda kv: kv[1])
    for name, lid in targets:
        dist = {name: 0}
        todo = deque([name])
        while todo:
            u = todo.popleft()
            for _, v, _ in adj.get(u, ()):
                if v not in dist:
                    dist[v] = dist[u] + 1
                    if v in switches:
                        todo.append(v)
        for s in switches:
            if s not in dist or s == name:
                continue
            best = min(((dist[v], p) for p, v, _ in adj[s] if v in dist and dist[v] < dist[s]),
                       default=None)
            if best is not None:
                lft[s][lid] = best[1]
    for s in scn.switches:
        if s.lft:
            lft[s.name].update(s.lft)
    return lft


def _partitions(scn: Scenario, nodes) -> None:
    """P_Key tables of switch ports with inbound enforcement (HCAs build theirs)."""
    for s in scn.switches:
        p = s.params
        if p.enforce_pkeys:
            sw = nodes[s.name]
            for idx in sw.ports:
                sw.pkey_tables[idx] = PKeyTable(p.port_pkeys.get(idx, p.pkeys))


def build_fabric(scn: Scenario, recorder: Recorder | None = None) -> Fabric:
    recorder = recorder or Recorder()
    mtu = max((h.params.mtu for h in scn.hcas), default=2048)
    max_frame = mtu + MAX_HEADERS
    nodes: dict[str, Node] = {}
    sw_specs = {s.name: s for s in scn.switches}
    hca_specs = {h.name: h for h in scn.hcas}
    sw_lids = switch_lids(scn)
    for s in scn.switches:
        nodes[s.name] = Switch(s.name, s.params, {}, recorder)
        nodes[s.name].lid = sw_lids[s.name]
    for h in scn.hcas:
        nodes[h.name] = node_class(scn.cc, h.name)(h.name, h.lid, h.params, recorder)

    def vls_of(name):
        spec = sw_specs.get(name)
        return (spec or hca_specs[name]).params.data_vls

    def capacity(name, port):
        spec = sw_specs.get(name)
        if spec:
            p = spec.params
            if port in p.port_buffers:
                nbytes = p.port_buffers[port]
            elif p.buffer_bytes:
                nbytes = p.buffer_bytes
            else:
                nbytes = (p.buffer_packets or 4) * blocks_of(max_frame) * 64
        else:
            h = hca_specs[name]
            nbytes = h.params.buffer_bytes or 4 * blocks_of(max_frame) * 64
        blocks = nbytes // 64
        if not 0 < blocks <= MAX_CAPACITY_BLOCKS:
            raise UserError("%s port %d: a VL buffer must hold 64 B .. %d B, got %d B"
                            % (name, port, MAX_CAPACITY_BLOCKS * 64, nbytes))
        return blocks

    wiring = {}
    adj: dict[str, list] = {}
    link_capacity = {}
    link_ends = {}
    for link, pa, pb in _assign_ports(scn):
        lp = link.params
        nvl = min(vls_of(link.a), vls_of(link.b))
        label_ab, label_ba = link.labels()
        for name, p, label in ((link.a, pa, label_ab), (link.b, pb, label_ba)):
            port = Port(p, lp.rate, lp.propagation, nvl, capacity(name, p), label, lp.fc_period,
                        lp.flow_control == "wire")
            nodes[name].add_port(port)
        a, b = nodes[link.a], nodes[link.b]
        wiring[(a, pa)] = (b, pb, lp.propagation)
        wiring[(b, pb)] = (a, pa, lp.propagation)
        for (x, px), (y, py) in (((a, pa), (b, pb)), ((b, pb), (a, pa))):   # issue 14: FCCL limits
            for vl, tx in enumerate(x.ports[px].tx):
                tx.limit = y.ports[py].rx[vl].capacity
        adj.setdefault(link.a, []).append((pa, link.b, lp))
        adj.setdefault(link.b, []).append((pb, link.a, lp))
        link_capacity[label_ab] = lp.rate
        link_capacity[label_ba] = lp.rate
        link_ends[label_ab] = (link.a, pa, link.b, pb)
        link_ends[label_ba] = (link.b, pb, link.a, pa)

    for name, table in _lfts(scn, adj, sw_lids).items():
        nodes[name].lft = table

    fabric = Fabric(nodes, wiring, link_capacity, {}, link_ends)
    for flow in scn.flows:
        src, dst = nodes[flow.src], nodes[flow.dst]
        if src.port is None or dst.port is None:
            raise UserError("flow %s: %s and %s must both be attached by a link" % (flow.name, flow.src, flow.dst))
        fabric.flow_capacity[flow.name] = src.port.rate
        qs, qd = src.new_qpn(), dst.new_qpn()
        vl_s, vl_d = flow.sl % len(src.port.tx), flow.sl % len(dst.port.tx)
        gen = make_generator(flow, scn.seed)
        if flow.transport == "ud":
            snd = UDSender(src, flow, qs, qd, dst.lid, vl_s, gen)
            rcv = UDReceiver(dst, flow, qd, qs, vl_d)
            src.senders.append(snd)
            src.qps[qs] = snd               # for CNPs
            dst.qps[qd] = rcv
        else:
            snd = RCRequester(src, flow, qs, qd, dst.lid, vl_s, gen)
            rcv = RCResponder(dst, flow, qd, qs, src.lid, vl_d, dst.params.ack_every)
            src.senders.append(snd)
            src.qps[qs] = snd
            dst.qps[qd] = rcv
            if flow.op == "read":
                dst.senders.append(rcv)
        fabric.qps[flow.name] = (snd, rcv)
    install(fabric, scn.cc, scn.seed, scn.output.bin)
    _partitions(scn, nodes)
    fabric.injectors = make_injectors(fabric, scn.faults, scn.seed)
    return fabric
