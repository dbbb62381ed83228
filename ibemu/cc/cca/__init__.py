"""The IBA congestion control annex (issue 6; seeds 002 §1 and 004; REFERENCE.md "IBA
Congestion Control Annex"), selected by ``[cc] scheme = "cca"``:

- :mod:`.settings` -- SwitchCongestionSetting, SwitchPortCongestionSetting,
  CACongestionSetting entries and the CCT as typed objects, the default CCT;
- :mod:`.config` -- the scenario's ``[cc.cca]`` table; :mod:`.opensm` -- OpenSM options;
- :mod:`.switch` -- Threshold detection and Marking_Rate FECN marking;
- :mod:`.hca` -- CCTI, CCTI_Timer and the CCT injection delay at the source;
- :mod:`.mad_settings` -- the settings as CC MAD attributes (Get/Set in band).

Seed 002's two-switch, six-host DCMS testbed, its runs and Figures 3 and 4 for
``ibemu reproduce`` are studies: :mod:`ibemu.studies.cca`.

BECN/CNP notification is the transport's (:mod:`ibemu.fabric.qp`).
"""
from __future__ import annotations

from ...errors import UserError
from ...fabric.qp import SenderBase
from ...fabric.hca import HCA
from ...fabric.switch import Switch
from .hca import CCAResponse
from .mad_settings import CACCSettings, SwitchCCSettings
from .settings import CCASpec
from .switch import CCAMarker

__all__ = ["install", "CCAMarker", "CCAResponse", "CCASpec"]


def install(fabric, scn, spec) -> None:
    """Put a :class:`CCAMarker` on every switch and a :class:`CCAResponse` on every
    sending QP of *fabric* (nothing when OpenSM's congestion_control is FALSE)."""
    spec = spec if spec is not None else CCASpec()
    if not spec.enabled:
        return
    seed = getattr(scn, "seed", 1)
    out = getattr(scn, "output", None)
    interval = out.bin if (out is not None and spec.trace_marks) else None
    for name, node in fabric.nodes.items():
        if not isinstance(node, Switch):
            continue
        setting = spec.switch_setting(name)
        for p in setting.ports:
            if p not in node.ports:
                raise UserError("cc.cca.switch.%s.port.%d: switch %r has no link on port %d (linked: %s)"
                                % (name, p, name, p, ", ".join(map(str, sorted(node.ports)))))
        node.marker = CCAMarker(node, setting, seed, node.recorder if spec.trace_marks else None, interval)
        node.cc_settings = SwitchCCSettings(node, setting)      # CC MADs (mad_settings.py)
        node.cc_key = getattr(spec, "cc_key", 0) or 0
    responses = {}
    for snd, rcv in fabric.qps.values():
        for qp in (snd, rcv):
            if isinstance(qp, SenderBase):
                hca = qp.hca
                r = responses.get(hca.name)
                if r is None:
                    r = responses[hca.name] = CCAResponse(hca, spec.ca_setting(hca.name), hca.recorder)
                    hca.cca = r
                qp.cc = r
    for name, node in fabric.nodes.items():
        if isinstance(node, HCA):
            node.cc_settings = CACCSettings(node, spec.ca_setting(name))
            node.cc_key = getattr(spec, "cc_key", 0) or 0
