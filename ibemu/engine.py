"""The virtual-time engine now lives in :mod:`ibemu.sim`."""
# shim: removed at merge
from __future__ import annotations

from .sim.engine import VirtualEngine
from .sim.scheduler import INF

__all__ = ["INF", "VirtualEngine"]
