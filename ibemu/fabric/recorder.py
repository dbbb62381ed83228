"""What the nodes report while they run: the contract between the fabric core and the
metrics (:mod:`ibemu.results`).  Sans-I/O: plain method calls with emulated times (ps).

The core calls these methods; :class:`ibemu.results.Metrics` implements them with
binned time series.  This base class ignores everything (for unit tests of nodes).
"""
from __future__ import annotations


class Recorder:
    def link_tx(self, link: str, t: int, nbytes: int, data: bool) -> None:
        """A frame of *nbytes* started on directed link *link* at time *t*;
        *data* is False for ACKs, CNPs and link packets."""

    def flow_tx(self, flow: str, t: int, nbytes: int) -> None:
        """The source of *flow* injected a data packet with *nbytes* of payload."""

    def flow_rx(self, flow: str, t: int, nbytes: int, message_done: bool) -> None:
        """The destination of *flow* received a data packet in order (its tail at *t*)."""

    def counter(self, node: str, name: str, value: int = 1) -> None:
        """Add *value* to a named per-node counter (e.g. dropped_malformed)."""

    def trace(self, kind: str, key: str, t: int, value: float) -> None:
        """State of a congestion-control variable changed: *kind* names it (CCTI, CIPD,
        CWND, Marking_Rate, ...), *key* its owner (a flow, ``switch:port``)."""

    def event(self, t: int, source: str, text: str) -> None:
        """A discrete decision worth logging with its time (a manager's action, a
        Trigger_Threshold crossing)."""
