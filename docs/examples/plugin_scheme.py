"""A complete, small congestion-control scheme as a plug-in (the how-to guide
docs/how-to/plugin-scheme.md walks through it).

``backoff``: every switch sets FECN on each data packet whose output port already holds
more than ``depth`` packets (a toy queue-length marker); the destination echoes the mark
as BECN in its ACK (the transport does that for every scheme); each BECN doubles the
source's gap between packets up to ``cap`` times the static one, and every ``recover``
unmarked ACKs halve it again.  It runs seed 003's quick-start fabric with and without the
scheme and prints the packets each flow sent and how many were marked.

Run it from the repository root: ``python docs/examples/plugin_scheme.py``.
"""
from __future__ import annotations

import copy
from typing import Any

import ibemu
from ibemu import cc
from ibemu.cc.registry import InstallContext, Scheme
from ibemu.fabric.network import Fabric
from ibemu.fabric.qp import SenderBase
from ibemu.fabric.switch import Entry, Switch
from ibemu.scenario.builders import QUICKSTART
from ibemu.validate import Checker, integer, table
from ibemu.wire.fields import get_fecn, set_fecn


class Settings:
    """The validated ``[cc.backoff]`` table."""

    def __init__(self, depth: int, cap: int, recover: int) -> None:
        self.depth, self.cap, self.recover = depth, cap, recover


def parse(ctx: Checker, raw: Any, path: str, nodes: dict[str, str]) -> Settings:
    """``[cc.backoff]``: every mistake is one line naming the key (ibemu.validate)."""
    raw = table(ctx, path, raw, ("depth", "cap", "recover"))
    return Settings(integer(ctx, path + ".depth", raw.get("depth", 2), 0, 1000),
                    integer(ctx, path + ".cap", raw.get("cap", 8), 1, 1024),
                    integer(ctx, path + ".recover", raw.get("recover", 16), 1, 10**6))


class QueueMarker:
    """The switch side (a :class:`ibemu.fabric.hooks.Marker`): mark on a long queue."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.queued: dict[tuple[str, int], int] = {}     # (switch, output port) -> packets
        self.marked = 0

    def on_arrival(self, sw: Switch, e: Entry, now: int) -> None:
        key = (sw.name, e.out)
        self.queued[key] = self.queued.get(key, 0) + 1

    def on_transmit(self, sw: Switch, e: Entry, now: int) -> None:
        if e.data and self.queued[(sw.name, e.out)] > self.depth and not get_fecn(e.frame):
            set_fecn(e.frame)
            self.marked += 1

    def on_departure(self, sw: Switch, e: Entry, now: int) -> None:
        self.queued[(sw.name, e.out)] -= 1


class Backoff:
    """The source side (a :class:`ibemu.fabric.hooks.SourceResponse`) of one queue pair."""

    def __init__(self, cap: int, recover: int) -> None:
        self.factor, self.cap, self.recover, self.clean = 1, cap, recover, 0

    def gap(self, qp: SenderBase, nbytes: int, t: int) -> int:
        return t * self.factor

    def on_sent(self, qp: SenderBase, now: int, frame: bytearray) -> None:
        pass

    def on_ack(self, qp: SenderBase, now: int, psn: int, n: int, becn: int) -> None:
        if becn:
            self.factor, self.clean = min(self.factor * 2, self.cap), 0
        else:
            self.clean += n
            if self.clean >= self.recover:
                self.factor, self.clean = max(self.factor // 2, 1), 0

    def on_cnp(self, qp: SenderBase, now: int) -> None:
        self.factor = min(self.factor * 2, self.cap)


MARKERS: list[QueueMarker] = []      # what the last install attached, for printing


def install(fabric: Fabric, settings: Settings, context: InstallContext) -> None:
    """Attach the parts through the nodes' own operations (never replacing a method)."""
    marker = QueueMarker(settings.depth)
    MARKERS.append(marker)
    for node in fabric.nodes.values():
        if isinstance(node, Switch):
            node.attach_marker(marker)
    for sender, _receiver in fabric.qps.values():
        sender.attach_response(Backoff(settings.cap, settings.recover))


BACKOFF = Scheme("backoff", "mark on a long queue, double the gap on BECN", install, parse=parse)


def main() -> dict[str, dict[str, int]]:
    """Quick start without and with the scheme: packets sent per flow, and marks."""
    cc.register(BACKOFF)
    try:
        out: dict[str, dict[str, int]] = {}
        for label, cc_table in (("none", {}), ("backoff", {"scheme": "backoff", "backoff": {"depth": 2}})):
            raw = copy.deepcopy(QUICKSTART)
            raw["cc"] = cc_table
            MARKERS.clear()
            result = ibemu.run_virtual(ibemu.scenario_from_dict(raw, label=label))
            out[label] = {name: f["tx_packets"] for name, f in result.summary["flows"].items()}
            out[label]["marked"] = sum(m.marked for m in MARKERS)
            print(label, out[label])
        return out
    finally:
        cc.unregister("backoff")


if __name__ == "__main__":
    main()
