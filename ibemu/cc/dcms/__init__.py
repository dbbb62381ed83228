"""The DCMS manager of seed 002 (issue 7), an add-on to the IBA CCA scheme: the decision
logic (algorithm.py), the manager node that sweeps counters and sets Marking_Rate in
band (manager.py), and its settings (config.py, ``[cc.dcms]``).  Experiment II on the
testbed with the manager and the comparison of schemes are studies:
:mod:`ibemu.studies.dcms`.  docs/dcms.md."""
from __future__ import annotations

from ...fabric.hca import HCA
from ...fabric.network import Fabric
from ...fabric.switch import Switch
from ..cca.settings import CCASpec
from ..registry import InstallContext, Scheme
from .algorithm import DCMS, DCMSParams, SwitchPort
from .config import DCMSSpec, parse_dcms
from .manager import DCMSManager, Target

__all__ = ["DCMS_SCHEME", "install"]


def install(fabric: Fabric, spec: DCMSSpec, ctx: InstallContext) -> None:
    """Give the manager node its DCMS and the switch ports to watch: every switch port
    with a link, with the Threshold and Packet_Size the CCA configured for it."""
    manager = fabric.nodes[spec.manager]
    assert isinstance(manager, DCMSManager)     # node_class below made it one
    cca = ctx.cc.get("cca", CCASpec)
    neighbour: dict[SwitchPort, tuple[str, int, bool]] = {}
    targets: list[Target] = []
    for a, pa, b, pb in fabric.link_ends.values():
        node = fabric.nodes[a]
        if not isinstance(node, Switch):
            continue
        neighbour[(a, pa)] = (b, pb, not isinstance(fabric.nodes[b], Switch))
        th, _, pk, _ = cca.switch_setting(a).port(pa) if cca is not None else (15, 0, 0, False)
        targets.append((a, node.lid, pa, node.ports[pa].rate, th, pk))
    params = DCMSParams(spec.tau, spec.T_C, spec.T_W, spec.T_D, spec.T_I, spec.low, spec.default)
    manager.configure(DCMS(params, neighbour), sorted(targets), cca.cc_key if cca is not None else 0)


def manager_class(spec: DCMSSpec, name: str) -> type[HCA] | None:
    """The manager runs on the HCA the ``[cc.dcms]`` table names."""
    return DCMSManager if spec.manager == name else None


DCMS_SCHEME = Scheme("dcms", "the DCMS manager retuning the CCA's Marking_Rate (seed 002 §3)",
                     install, parse=parse_dcms, extends="cca",
                     extends_reason='the DCMS manager tunes the IBA CCA: set cc.scheme = "cca"',
                     node_class=manager_class)
