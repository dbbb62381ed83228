"""The ``none`` scheme: no congestion control.  Nothing marks FECN, so the transport's
echo (BECN in ACKs, CNPs) never fires and sources keep their static rates and windows."""
from __future__ import annotations

from typing import Any

from ..fabric.network import Fabric
from .registry import InstallContext, Scheme


def install(fabric: Fabric, settings: Any, ctx: InstallContext) -> None:
    """Nothing to attach."""


NONE = Scheme("none", "no congestion control", install)
