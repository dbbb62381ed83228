"""From a :class:`~ibemu.scenario.model.Scenario` to wired nodes: ports, buffers, forwarding
tables (the scenario's routing engine, :mod:`ibemu.routing`), queue pairs and generators.

The result is driver-neutral: the virtual-time engine and the trio runtime both take a
:class:`Fabric`.
"""
from __future__ import annotations

from .cc import install, node_class
from .errors import UserError
from .fabric.adaptive import AdaptiveRouting, switch_rng
from .fabric.arn import Marks, Notifier
from .fabric.credits import MAX_CAPACITY_BLOCKS, blocks_of
from .fabric.faults import make_injectors
from .fabric.job.install import install_jobs
from .fabric.job.posted import Posted
from .fabric.job.spec import JOB_PATTERN
from .fabric.lft import ForwardingTable
from .fabric.network import Fabric
from .fabric.node import Node, Port
from .fabric.pkey import PKeyTable
from .fabric.qp import RCRequester, RCResponder, UDReceiver, UDSender
from .fabric.recorder import Recorder
from .fabric.switch import Switch
from .fabric.traffic import make_generator
from .results.phases import Phases
from .routing import Routes, Subnet, check_credit_loops, route
from .routing.groups import Groups, merge_groups, minimal_groups
from .scenario.model import Scenario, node_guids
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
    """LIDs of the switches' management port 0 (IBA 14.2.5): the lowest LIDs no HCA has
    (none of an HCA's 2^LMC LIDs), in the order the switches are listed; MADs to a switch
    are addressed to it."""
    n = 1 << scn.routing.lmc
    taken = {h.lid + i for h in scn.hcas for i in range(n)}
    free = (x for x in range(1, 0xC000) if x not in taken)
    return {s.name: next(free) for s in scn.switches}


def subnet_of(scn: Scenario, sw_lids: dict[str, int] | None = None) -> Subnet:
    """The scenario as the subnet manager sees it (:class:`ibemu.routing.Subnet`): its
    port assignment, node GUIDs (:func:`~ibemu.scenario.model.node_guids`), LIDs, LMC."""
    sw_lids = sw_lids if sw_lids is not None else switch_lids(scn)
    guids = node_guids(scn)
    links = [(link.a, pa, link.b, pb) for link, pa, pb in _assign_ports(scn)]
    switches = {s.name: (guids[s.name], sw_lids[s.name], s.desc or s.name, s.ports or 0) for s in scn.switches}
    cas = {h.name: (guids[h.name], guids[h.name] + 1, h.lid, h.desc or h.name) for h in scn.hcas}
    return Subnet.build(links, switches, cas, scn.routing.lmc)


def _read_lft_file(path: str | None) -> str:
    if path is None:
        raise UserError("routing: engine 'file' needs routing.lft_file")
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(64 * 2**20)
    except OSError as e:
        raise UserError("%s: cannot read the LFT file: %s" % (path, e.strerror or e)) from None
    except UnicodeDecodeError:
        raise UserError("%s: not UTF-8 text (an opensm-lfts.dump or ibroute output?)" % path) from None


def scenario_routes(scn: Scenario, sw_lids: dict[str, int] | None = None, notes: list[str] | None = None,
                    check: bool | None = None, phases: Phases | None = None) -> Routes:
    """The switches' LFTs (:func:`scenario_routing` without the adaptive groups)."""
    return scenario_routing(scn, sw_lids, notes, check, phases)[0]


def adaptive_switches(scn: Scenario) -> dict[str, str]:
    """Switch name -> its adaptive routing policy ("credits" or "random"), for every
    switch that routes adaptively (``[routing] adaptive``, a switch's own ``adaptive`` and
    ``adaptive_policy`` winning; policy "static" is no adaptive routing at all)."""
    rs = scn.routing
    out = {}
    for s in scn.switches:
        on = rs.adaptive if s.adaptive is None else s.adaptive
        policy = s.adaptive_policy or rs.adaptive_policy
        if on and policy != "static":
            out[s.name] = policy
    return out


def scenario_routing(scn: Scenario, sw_lids: dict[str, int] | None = None, notes: list[str] | None = None,
                     check: bool | None = None, phases: Phases | None = None) -> tuple[Routes, Groups]:
    """The switches' LFTs: the scenario's routing engine (``[routing]``, OpenSM's
    names; engine "file" reads ``lft_file``) -- when it fails and the routing came from
    an opensm.conf's engine list, the next engine of ``fallback``, as OpenSM does (a note
    says so) --, then each switch's explicit ``lft`` entries, which win; then, if
    ``check_credit_loops`` (or *check*), the credit-loop check over all CA-to-CA routes
    (:func:`ibemu.routing.check_credit_loops`).  *phases*: time (and show) the routing
    and the check as phases of their own.

    Also the adaptive routing groups (issue 31) of the switches that route adaptively
    (:func:`adaptive_switches`): derived from the topology and the LFTs
    (:func:`ibemu.routing.groups.minimal_groups`), a switch's ``adaptive_groups`` winning;
    the credit-loop check then covers every port of every group."""
    rs = scn.routing
    phases = phases or Phases(False)
    sn = subnet_of(scn, sw_lids)
    nlids = sum(len(sn.lids(n)) for n in sn.nodes)
    chain = [rs.engine, *rs.fallback]
    for i, engine in enumerate(chain):
        try:
            text = _read_lft_file(rs.lft_file) if engine == "file" else None
            with phases.phase("routing", nlids, "LIDs") as tick:
                lfts = route(sn, engine, rs.roots, text, rs.lft_file or "<lfts>", notes, tick)
            break
        except UserError as e:
            if i == len(chain) - 1:
                raise
            if notes is not None:
                notes.append("routing: %s failed (%s); trying %s (opensm.conf routing_engine)"
                             % (engine, e, chain[i + 1]))
    for s in scn.switches:
        lfts.setdefault(s.name, {})
        if s.lft:
            lfts[s.name].update(s.lft)
    on = adaptive_switches(scn)
    groups: Groups = {}
    if on:
        explicit = {s.name: s.adaptive_groups for s in scn.switches if s.adaptive_groups and s.name in on}
        groups = merge_groups(minimal_groups(sn, lfts, set(on)), explicit)
    if rs.check_credit_loops if check is None else check:
        with phases.phase("credit-loop check", sum(len(sn.lids(c.name)) for c in sn.cas()), "LIDs") as tick:
            check_credit_loops(sn, lfts, engine, tick, groups or None)
    return lfts, groups


def routing_notes(scn: Scenario) -> list[str]:
    """What routing *scn* falls back to, as OpenSM would (the notes of
    :func:`scenario_routes`): an engine of an opensm.conf engine list that failed, and
    updn with no root switch found.  Empty, and nothing computed, when no fallback is
    possible (a single engine, or updn with roots given); otherwise the LFTs are computed
    once more here, so that ``ibemu run`` can say so before the run (:func:`build_fabric`
    keeps no notes)."""
    rs = scn.routing
    if not rs.fallback and not (rs.engine == "updn" and not rs.roots):
        return []
    notes: list[str] = []
    scenario_routes(scn, notes=notes, check=False)
    return notes


def _partitions(scn: Scenario, nodes) -> None:
    """P_Key tables of switch ports with inbound enforcement (HCAs build theirs)."""
    for s in scn.switches:
        p = s.params
        if p.enforce_pkeys:
            sw = nodes[s.name]
            for idx in sw.ports:
                sw.pkey_tables[idx] = PKeyTable(p.port_pkeys.get(idx, p.pkeys))


def build_fabric(scn: Scenario, recorder: Recorder | None = None, phases: Phases | None = None) -> Fabric:
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
        nodes[h.name].lmc = scn.routing.lmc
    for index, node in enumerate(nodes.values()):
        node.sched_id = index           # the node field of its events' keys (sim.scheduler.order)

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
        link_capacity[label_ab] = lp.rate
        link_capacity[label_ba] = lp.rate
        link_ends[label_ab] = (link.a, pa, link.b, pb)
        link_ends[label_ba] = (link.b, pb, link.a, pa)

    lfts, groups = scenario_routing(scn, sw_lids, phases=phases)
    for name, table in lfts.items():
        nodes[name].fwd = ForwardingTable(table)
    rs = scn.routing
    for name, policy in adaptive_switches(scn).items():
        sw = nodes[name]
        marks = Marks(rs.arn_hold) if rs.arn else None
        sw.adaptive = AdaptiveRouting(groups.get(name, {}), policy, switch_rng(scn.seed, name), mtu, marks)
        if rs.arn:                  # notifications (.fabric.arn): sent and heeded by the adaptive switches
            sw.arn_marks = marks
            sw.notifier = Notifier(rs.arn_threshold, rs.arn_hold, mtu)

    fabric = Fabric(nodes, wiring, link_capacity, {}, link_ends)
    for index, flow in enumerate(scn.flows):
        src, dst = nodes[flow.src], nodes[flow.dst]
        if not src.ports or not dst.ports:
            raise UserError("flow %s: %s and %s must both be attached by a link" % (flow.name, flow.src, flow.dst))
        fabric.flow_capacity[flow.name] = src.port.rate
        qs, qd = src.new_qpn(), dst.new_qpn()
        vl_s, vl_d = flow.sl % len(src.port.tx), flow.sl % len(dst.port.tx)
        gen = Posted() if flow.pattern == JOB_PATTERN else make_generator(flow, scn.seed)
        off = flow.path if flow.path is not None else index % (1 << scn.routing.lmc)   # LMC path per QP
        if flow.transport == "ud":
            snd = UDSender(src, flow, qs, qd, dst.lid + off, vl_s, gen)
            rcv = UDReceiver(dst, flow, qd, qs, vl_d)
            src.senders.append(snd)
            src.qps[qs] = snd               # for CNPs
            dst.qps[qd] = rcv
        else:
            snd = RCRequester(src, flow, qs, qd, dst.lid + off, vl_s, gen)
            rcv = RCResponder(dst, flow, qd, qs, src.lid + off, vl_d, dst.params.ack_every,
                              scn.routing.reorder_window)
            rcv.slid = dst.lid + off
            src.senders.append(snd)
            src.qps[qs] = snd
            dst.qps[qd] = rcv
            if flow.op == "read":
                dst.senders.append(rcv)
        snd.slid = src.lid + off
        fabric.qps[flow.name] = (snd, rcv)
    if scn.jobs:
        fabric.jobs = install_jobs(fabric, scn.jobs)
    install(fabric, scn.cc, scn.seed, scn.output.bin)
    _partitions(scn, nodes)
    fabric.injectors = make_injectors(fabric, scn.faults, scn.seed)
    return fabric
