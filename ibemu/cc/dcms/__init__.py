"""The DCMS manager of seed 002 (issue 7): the decision logic (algorithm.py), the manager
node that sweeps counters and sets Marking_Rate in band (manager.py), and its settings
(config.py).  Experiment II on the testbed with the manager and the comparison of
schemes are studies: :mod:`ibemu.studies.dcms`.  docs/dcms.md."""
from __future__ import annotations


def install(fabric, scn, spec) -> None:
    """Give the manager node its DCMS and the switch ports to watch: every switch port
    with a link, with the Threshold and Packet_Size the CCA configured for it."""
    from ...fabric.switch import Switch
    from .algorithm import DCMS, DCMSParams
    manager = fabric.nodes[spec.manager]
    cca = scn.cc.cca
    neighbour, targets = {}, []
    for a, pa, b, pb in fabric.link_ends.values():
        node = fabric.nodes[a]
        if not isinstance(node, Switch):
            continue
        neighbour[(a, pa)] = (b, pb, not isinstance(fabric.nodes[b], Switch))
        th, _, pk, _ = cca.switch_setting(a).port(pa) if cca is not None else (15, 0, 0, False)
        targets.append((a, node.lid, pa, node.ports[pa].rate, th, pk))
    params = DCMSParams(spec.tau, spec.T_C, spec.T_W, spec.T_D, spec.T_I, spec.low, spec.default)
    manager.configure(DCMS(params, neighbour), sorted(targets), getattr(cca, "cc_key", 0) if cca else 0)
