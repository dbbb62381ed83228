"""The one scheduler of both clocks, and the virtual-time engine built on it
(issue 12 item 3).  Sans-I/O: no trio, socket or time; nodes are known by the
:class:`SimNode` protocol only."""
from __future__ import annotations

from .engine import VirtualEngine
from .scheduler import (DELIVER, DELIVER_FAULTY, INF, WAKE, Capture, Event, FaultyLink,
                        Scheduler, SimNode)

__all__ = ["DELIVER", "DELIVER_FAULTY", "INF", "WAKE", "Capture", "Event", "FaultyLink",
           "Scheduler", "SimNode", "VirtualEngine"]
