"""Old home of the typed scenario objects and unit constants.

shim: removed at merge -- the constants and ib_rate are in :mod:`ibemu.units`, the
fabric's parameters in :mod:`ibemu.fabric.params`, the scenario objects in
:mod:`ibemu.scenario.model`.
"""
from __future__ import annotations

from .fabric.params import *  # noqa: F401,F403
from .fabric.params import FlowSpec, HCAParams, LinkParams, SwitchParams, VLArbTable  # noqa: F401
from .scenario.model import *  # noqa: F401,F403,E402
from .scenario.model import HCASpec, LinkSpec, OutputSpec, Scenario, SwitchSpec  # noqa: F401,E402
from .units import LANE_DATA_BPS, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US, WIDTHS, ib_rate  # noqa: F401
