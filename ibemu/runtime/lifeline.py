"""Lifelines between the ranks of an MPI run (issue 17 Deliver 3, "a rank that dies ends
the job with a clear message and partial outputs"): one TCP connection from every rank
to rank 0, the ranks' only channel while the emulation runs.

MPI cannot be used once a rank process has died: the MPI standard (MPI 4.1 §9.3, "Error
handling") leaves the job's state undefined, and MPICH ends a process that so much as
probes for a message after a peer died.  So while the emulation runs the ranks make no
MPI call at all; what they have to tell each other goes over these connections, and a
TCP connection is closed by the kernel when its process ends, by any means (SIGKILL
included): rank 0 reads end-of-file on a dead rank's lifeline at once, and a rank reads
it on its lifeline to rank 0 when rank 0 is gone.

Rank 0 listens on its host's address (an ephemeral port, told to the others through
MPI); every other rank connects and says ``hello <rank> <key>`` (the run's secret, so a
stranger's connection is refused).  Then messages ``<kind> <rank> <length>\\n`` and
*length* bytes: ``failed`` (the text: a rank's worker failed), ``stop`` (rank *rank*
died) and ``part`` (a rank's part as JSON, its bytes -- the capture -- in base64, for rank 0
after a death).  :meth:`Lifelines.poll`
reads them, and ``dead`` for a closed connection.

This needs a launcher that lets the other ranks live on when one dies: Slurm's ``srun``
does by default (unless ``--kill-on-bad-exit``), MPICH's ``mpiexec`` (hydra) with
``-disable-auto-cleanup``; by default hydra SIGKILLs the whole job at once and nothing
can be written.
"""
from __future__ import annotations

import base64
import json
import selectors
import socket
import time
from dataclasses import dataclass, field

from ..errors import UserError

__all__ = ["Lifelines", "Event", "ACCEPT_TIMEOUT", "encode_part", "decode_part"]

_BYTES = "__bytes_b64__"


def _default(o: object) -> object:
    if isinstance(o, (bytes, bytearray)):
        return {_BYTES: base64.b64encode(o).decode("ascii")}
    raise TypeError("not JSON: %r" % type(o).__name__)


def _hook(d: dict[str, object]) -> object:
    text = d.get(_BYTES)
    if len(d) == 1 and isinstance(text, str):
        return base64.b64decode(text)
    return d


def encode_part(payload: object) -> bytes:
    """A rank's part for the lifeline: JSON (as the workers' parts are; the project never
    turns received bytes into objects by any other means), bytes values -- the capture -- base64."""
    return json.dumps(payload, default=_default, separators=(",", ":")).encode()


def decode_part(body: bytes) -> object:
    """The part :func:`encode_part` made, or None when *body* is not one."""
    try:
        return json.loads(body, object_hook=_hook)
    except (ValueError, UnicodeDecodeError, TypeError):
        return None

ACCEPT_TIMEOUT = 30.0
"""Seconds rank 0 waits for every other rank's lifeline (the ranks are all up: they have
just met in an MPI collective)."""


KINDS = (b"failed", b"stop", b"part")
MAX_HEAD = 64


@dataclass
class Event:
    """What a lifeline said: ``dead`` (its rank's process is gone: end of file), or a
    message: ``failed`` (*payload*: the text), ``stop`` (rank *rank* died), ``part``
    (*payload*: rank *rank*'s part)."""
    kind: str
    rank: int
    payload: object = None


@dataclass
class Lifelines:
    """This rank's lifelines: rank 0's to every other rank, or a rank's to rank 0."""
    rank: int
    peers: dict[int, socket.socket] = field(default_factory=dict)
    _buf: dict[int, bytes] = field(default_factory=dict)
    _sel: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)

    # ------------------------------------------------------------ set-up
    @staticmethod
    def listen(host: str) -> socket.socket:
        """Rank 0: the listening socket (port: ``getsockname()[1]``)."""
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.bind((host, 0))
        srv.listen(64)
        return srv

    @classmethod
    def accept(cls, srv: socket.socket, size: int, key: bytes, timeout: float = ACCEPT_TIMEOUT) -> Lifelines:
        """Rank 0: every other rank's lifeline, within *timeout* seconds."""
        lines = cls(0)
        deadline = time.monotonic() + timeout
        try:
            while len(lines.peers) < size - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(set(range(1, size)) - set(lines.peers))
                    raise UserError("rank %s did not connect to rank 0 within %g s (TCP, %s:%d)"
                                    % (", ".join(map(str, missing)), timeout, *srv.getsockname()))
                srv.settimeout(left)
                try:
                    conn, _ = srv.accept()
                except TimeoutError:
                    continue
                conn.settimeout(5.0)
                try:
                    hello = conn.makefile("rb").readline(256).split()
                except OSError:
                    hello = []
                if (len(hello) != 3 or hello[0] != b"hello" or not hello[1].isdigit()
                        or hello[2] != key.hex().encode() or not 0 < int(hello[1]) < size):
                    conn.close()                     # not one of ours
                    continue
                lines._add(int(hello[1]), conn)
        finally:
            srv.close()
        return lines

    @classmethod
    def connect(cls, rank: int, host: str, port: int, key: bytes) -> Lifelines:
        """A rank other than 0: its lifeline to rank 0."""
        try:
            conn = socket.create_connection((host, port), timeout=10.0)
            conn.sendall(b"hello %d %s\n" % (rank, key.hex().encode()))
        except OSError as e:
            raise UserError("rank %d: cannot connect to rank 0 at %s:%d (%s)" % (rank, host, port, e)) from None
        lines = cls(rank)
        lines._add(0, conn)
        return lines

    def _add(self, peer: int, conn: socket.socket) -> None:
        conn.setblocking(False)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        self.peers[peer] = conn
        self._buf[peer] = b""
        self._sel.register(conn, selectors.EVENT_READ, peer)

    # ------------------------------------------------------------ the run
    def poll(self, timeout: float = 0.0) -> list[Event]:
        """What the lifelines said since the last call (waits at most *timeout* s)."""
        events: list[Event] = []
        if not self.peers:
            return events
        for key, _ in self._sel.select(timeout):
            peer = int(key.data)
            conn = self.peers[peer]
            try:
                data = conn.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:                                 # its process is gone
                self._drop(peer)
                events.append(Event("dead", peer))
                continue
            self._buf[peer] += data
            events.extend(self._messages(peer))
        return events

    def _messages(self, peer: int) -> list[Event]:
        out = []
        buf = self._buf[peer]
        while b"\n" in buf[:MAX_HEAD]:
            head, _, rest = buf.partition(b"\n")
            words = head.split()
            if len(words) != 3 or words[0] not in KINDS or not words[1].isdigit() or not words[2].isdigit():
                buf = b""                                # not our protocol: drop what came
                break
            n = int(words[2])
            if len(rest) < n:
                break
            body, buf = rest[:n], rest[n:]
            kind = words[0].decode()
            payload: object = body.decode("utf-8", "replace") if kind == "failed" else None
            if kind == "part":
                payload = decode_part(body)              # JSON: data, never code (None when bad)
            out.append(Event(kind, int(words[1]), payload))
        self._buf[peer] = buf
        return out

    def send(self, kind: str, rank: int, payload: object = None, to: list[int] | None = None) -> None:
        """Send a message to the peers *to* (default: every living one): ``failed`` with
        a text, ``stop``, ``part`` with a JSON-able object (bytes allowed).  A peer that cannot be
        reached is dropped (its ``dead`` comes with the next :meth:`poll`... or never:
        it is gone)."""
        if kind == "part":
            body = encode_part(payload)
        else:
            body = str(payload or "").encode()
        msg = b"%s %d %d\n" % (kind.encode(), rank, len(body)) + body
        for peer in (self.alive() if to is None else to):
            conn = self.peers.get(peer)
            if conn is None:
                continue
            try:
                conn.setblocking(True)
                conn.settimeout(10.0)
                conn.sendall(msg)
                conn.setblocking(False)
            except OSError:
                self._drop(peer)

    def alive(self) -> list[int]:
        """The peers whose lifeline is still open."""
        return sorted(self.peers)

    def _drop(self, peer: int) -> None:
        conn = self.peers.pop(peer)
        self._sel.unregister(conn)
        conn.close()

    def close(self) -> None:
        for peer in list(self.peers):
            self._drop(peer)
        self._sel.close()
