"""Management of a running wall-clock emulation (issue 7 item 3): ``ibemu perfquery
--live`` and ``ibemu ccconfig`` send their MADs *into the fabric* from one of its HCAs.

Path of a request:

1. the command sends a JSON datagram ``{"id", "via", "dlid", "mad"}`` (MAD as hex) to the
   controller's management socket, a Unix datagram socket at
   ``<output folder>/parts/mgmt.sock`` (it exists while the run does);
2. the controller (:class:`Endpoint`) forwards it, with its own transaction id, to the
   worker that runs HCA ``via`` (default: the HCA with the lowest LID), as a control line
   ``{"cmd": "mad", ...}``;
3. the worker (:class:`WorkerSide`) has that HCA send the MAD at the current emulated
   time (:class:`ibemu.mgmt.ManagementClient`); it travels on VL15 through the emulated
   switches like any packet, and the answer that comes back to the HCA's QP1 goes up to
   the controller (``{"event": "mad", ...}``) and back to the command.

This module's socket handling is the only I/O; what the MADs say is :mod:`ibemu.mgmt`.
"""
from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UserError

if TYPE_CHECKING:
    from ..fabric.network import Fabric
    from ..fabric.node import Node
    from ..mgmt import ManagementClient
    from ..scenario import Scenario
    from .loop import NodeLoop

SOCKET_NAME = "mgmt.sock"
NOT_STARTED = "the emulation has not started yet"


class WorkerChannel(Protocol):
    """What :class:`Endpoint` needs of a worker (:class:`ibemu.runtime.workers.Worker`)."""
    nodes: list[str]

    def send(self, **msg: Any) -> None: ...


def socket_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / "parts" / SOCKET_NAME


class Endpoint:
    """The controller's side: the socket, and which worker runs which HCA."""

    def __init__(self, path: str | Path, fabric: Fabric, workers: Iterable[WorkerChannel]) -> None:
        from ..fabric.hca import HCA
        self.path = str(path)
        self.hcas = {n: x.lid for n, x in fabric.nodes.items() if isinstance(x, HCA)}
        self.default_via = min(self.hcas, key=self.hcas.__getitem__) if self.hcas else None
        self.worker_of = {n: w for w in workers for n in w.nodes}
        self.pending: dict[int, tuple[Any, Any]] = {}    # our tid -> (client address, client id)
        self.started = False                         # set once the workers were told to start
        self._tid = 0
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def on_readable(self) -> None:
        while True:
            try:
                data, addr = self.sock.recvfrom(65536)
            except (BlockingIOError, OSError):
                return
            try:
                req: dict[str, Any] = json.loads(data)
                if not self.started:        # a worker's first control line must be "start"
                    self._reply(addr, {"id": req.get("id"), "error": NOT_STARTED})
                    continue
                via = req.get("via") or self.default_via
                w = self.worker_of.get(via) if isinstance(via, str) else None
                if via not in self.hcas or w is None:
                    raise ValueError("no HCA %r in this run (HCAs: %s)" % (via, ", ".join(sorted(self.hcas))))
                self._tid += 1
                self.pending[self._tid] = (addr, req["id"])
                w.send(cmd="mad", tid=self._tid, via=via, dlid=int(req["dlid"]), mad=req["mad"])
            except (ValueError, KeyError, TypeError) as e:
                self._reply(addr, {"error": str(e)})

    def on_worker_message(self, msg: dict[str, Any]) -> None:
        """A ``{"event": "mad"}`` line from a worker: the answer to one of our requests."""
        tid = msg.get("tid")
        client = self.pending.pop(tid, None) if isinstance(tid, int) else None
        if client is not None:
            if msg.get("error"):
                self._reply(client[0], {"id": client[1], "error": msg["error"]})
            else:
                self._reply(client[0], {"id": client[1], "mad": msg.get("mad")})

    def _reply(self, addr: Any, obj: dict[str, Any]) -> None:
        if addr:
            try:
                self.sock.sendto(json.dumps(obj).encode(), addr)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class WorkerSide:
    """A worker's side: a :class:`~ibemu.mgmt.ManagementClient` on each HCA it is asked
    to send from, fed at the loop's current emulated time."""

    def __init__(self, loop: NodeLoop, nodes: Iterable[Node], send: Callable[..., None]) -> None:
        self.loop = loop
        self.nodes = {n.name: n for n in nodes}
        self.send = send                     # send(**msg) on the control channel
        self.clients: dict[str, ManagementClient] = {}

    def request(self, msg: dict[str, Any]) -> None:
        """A ``{"cmd": "mad"}`` line from the controller: send the MAD from HCA ``via``."""
        from ..mgmt import ManagementClient
        via = msg.get("via")
        node = self.nodes.get(via) if isinstance(via, str) else None
        if node is None:
            return
        loop = self.loop
        if loop.t0 is None or loop.emulated_now() < 0 or loop.done:
            self.send(event="mad", tid=msg.get("tid"),
                      error="the emulation has finished" if loop.done else NOT_STARTED)
            return
        client = self.clients.get(node.name)
        if client is None:
            client = self.clients[node.name] = ManagementClient(node, self._answer)
        self.loop.call_now(node, client.send, int(msg["dlid"]), bytes.fromhex(msg["mad"]), int(msg["tid"]))

    def _answer(self, tid: int, mad: bytes) -> None:
        self.send(event="mad", tid=tid, mad=mad.hex())


def ask(run_dir: str | Path, dlid: int, mad: bytes, via: str | None = None, timeout: float = 10.0) -> bytes:
    """Send *mad* to LID *dlid* of the emulation running into *run_dir*; its answer."""
    path = socket_path(run_dir)
    if not path.exists():
        raise UserError("%s: no running emulation here (no %s; start one with "
                        "`ibemu run SCENARIO --clock wall --out %s`)" % (run_dir, path, run_dir))
    me = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    end = time.monotonic() + timeout
    try:
        me.bind("")                         # Linux autobind: an abstract address to answer to
        rid = os.getpid()
        request = json.dumps({"id": rid, "via": via, "dlid": dlid, "mad": mad.hex()}).encode()
        while True:
            try:
                me.sendto(request, str(path))
            except OSError as e:
                raise UserError("%s: the emulation is not answering (%s)" % (run_dir, e.strerror)) from None
            reply: dict[str, Any] | None = None
            while reply is None or reply.get("id") not in (rid, None):
                me.settimeout(max(0.01, end - time.monotonic()))
                try:
                    reply = json.loads(me.recv(65536))
                except TimeoutError:
                    raise UserError("no answer from LID %d within %.0f s (is the run still going? "
                                    "a wrong LID gets no answer)" % (dlid, timeout)) from None
            if reply.get("error") == NOT_STARTED and time.monotonic() < end:
                time.sleep(0.2)             # the workers are still starting: ask again
                continue
            if "error" in reply:
                raise UserError(reply["error"])
            return bytes.fromhex(str(reply["mad"]))
    finally:
        me.close()


def lids_of_scenario(scn: Scenario) -> dict[str, int]:
    """Node name -> LID as the build assigns them (HCAs and switches' port 0)."""
    from ..build import switch_lids
    lids = {h.name: h.lid for h in scn.hcas}
    lids.update(switch_lids(scn))
    return lids


# ---------------------------------------------------------------- the commands

def _live_fabric(run_dir: str | Path) -> Fabric:
    """The running emulation's fabric as its controller built it, from the scenario it
    handed its workers (``parts/scenario.json``: data only, :mod:`.handover`)."""
    from ..build import build_fabric
    from .handover import SCENARIO_FILE, read_scenario
    path = Path(run_dir) / "parts" / SCENARIO_FILE
    if not socket_path(run_dir).exists() or not path.exists():
        raise UserError("%s: no running emulation here (start one with "
                        "`ibemu run SCENARIO --clock wall --out %s`)" % (run_dir, run_dir))
    return build_fabric(read_scenario(path))


def _resolve(fabric: Fabric, target: str) -> tuple[str, int]:
    """(node name, LID) of *target*: a node name or a LID."""
    from ..run import lids_of
    lids = lids_of(fabric)
    if target.isdigit():
        by_lid = {v: k for k, v in lids.items()}
        if int(target) not in by_lid:
            raise UserError("LID %s is not in this run (LIDs: %s)" % (target, ", ".join(
                "%s=%d" % kv for kv in sorted(lids.items(), key=lambda kv: kv[1]))))
        return by_lid[int(target)], int(target)
    if target not in lids:
        raise UserError("no node %r in this run (nodes: %s)" % (target, ", ".join(sorted(lids))))
    return target, lids[target]


def live_perfquery(run_dir: str | Path, target: str, port: int | None, extended: bool = False,
                   via: str | None = None) -> str:
    """``ibemu perfquery --live``: ask the running emulation with a PerfMgt Get."""
    from ..mgmt import perf_get, perf_text
    fabric = _live_fabric(run_dir)
    name, lid = _resolve(fabric, target)
    ports = sorted(fabric.nodes[name].ports)
    if port is None:
        port = ports[0]
    if port not in ports:
        raise UserError("%s has no port %d (ports: %s)" % (name, port, ", ".join(map(str, ports))))
    return perf_text(ask(run_dir, lid, perf_get(port, extended), via), lid, port, extended)


def live_ccconfig(run_dir: str | Path, op: str, target: str, args: list[str], cc_key: int = 0,
                  via: str | None = None) -> str:
    """``ibemu ccconfig``: an ibccconfig Set sent into the running emulation; the
    attribute the node answers with."""
    from ..mgmt import cc_set, cc_text
    fabric = _live_fabric(run_dir)
    _, lid = _resolve(fabric, target)
    mad = cc_set(op, args, cc_key)
    port = int(args[0], 0) if op in ("SP", "SwitchPortCongestionSetting") else None
    return cc_text(ask(run_dir, lid, mad, via), port)
