"""The IBA congestion control annex (issue 6; seeds 002 §1 and 004; REFERENCE.md "IBA
Congestion Control Annex"), the scheme ``[cc] scheme = "cca"``:

- :mod:`.settings` -- SwitchCongestionSetting, SwitchPortCongestionSetting,
  CACongestionSetting entries and the CCT as typed objects, the default CCT;
- :mod:`.config` -- the scenario's ``[cc.cca]`` table; :mod:`.opensm` -- OpenSM options;
- :mod:`.switch` -- Threshold detection and Marking_Rate FECN marking (a Marker);
- :mod:`.hca` -- CCTI, CCTI_Timer and the CCT injection delay at the source (a
  SourceResponse);
- :mod:`.mad_settings` -- the settings as CC MAD attributes (Get/Set in band).

BECN/CNP notification is the transport's (:mod:`ibemu.fabric.qp`).  The DCMS testbed
and its experiments are studies: :mod:`ibemu.studies.cca`.
"""
from __future__ import annotations

from ...errors import UserError
from ...fabric.network import Fabric
from ...fabric.qp import SenderBase
from ...fabric.switch import Switch
from ..registry import InstallContext, Scheme
from .config import parse_cca
from .hca import CCAResponse
from .mad_settings import CACCSettings, SwitchCCSettings
from .settings import CCASpec
from .switch import CCAMarker

__all__ = ["CCA", "CCAMarker", "CCAResponse", "CCASpec", "install"]


def install(fabric: Fabric, spec: CCASpec | None, ctx: InstallContext) -> None:
    """Put a :class:`CCAMarker` on every switch and a :class:`CCAResponse` on every
    sending QP of *fabric* (nothing when OpenSM's congestion_control is FALSE)."""
    spec = spec if spec is not None else CCASpec()
    if not spec.enabled:
        return
    interval = ctx.bin_ps if spec.trace_marks else None
    for name, node in fabric.nodes.items():
        if not isinstance(node, Switch):
            continue
        setting = spec.switch_setting(name)
        for p in setting.ports:
            if p not in node.ports:
                raise UserError("cc.cca.switch.%s.port.%d: switch %r has no link on port %d (linked: %s)"
                                % (name, p, name, p, ", ".join(map(str, sorted(node.ports)))))
        marker = CCAMarker(node, setting, ctx.seed, node.recorder if spec.trace_marks else None, interval)
        node.attach_marker(marker)
        node.attach_cc_agent(SwitchCCSettings(node, setting), spec.cc_key)     # CC MADs
    responses: dict[str, CCAResponse] = {}
    for snd, rcv in fabric.qps.values():
        for qp in (snd, rcv):
            if isinstance(qp, SenderBase):
                hca = qp.hca
                r = responses.get(hca.name)
                if r is None:
                    r = responses[hca.name] = CCAResponse(hca, spec.ca_setting(hca.name), hca.recorder)
                qp.attach_response(r)
    for name, hca in fabric.hcas().items():
        hca.attach_cc_agent(CACCSettings(hca, spec.ca_setting(name), responses.get(name)), spec.cc_key)


CCA = Scheme("cca", "the IBA congestion control annex (Threshold, Marking_Rate, CCT/CCTI)",
             install, parse=parse_cca)
