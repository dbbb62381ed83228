"""Reading an OTF2 trace for ``[[job]] trace = "app.otf2"`` (issue 29 Deliver 2): the MPI
records of every rank, in its order, as the items :mod:`.job_replay` turns into the
job's steps.  It reads the file and nothing else; the ``otf2`` package (Score-P's
bindings, the optional extra ``ibemu[traces]``) is imported only when a trace is read.

- **Ranks:** the locations of the MPI ``COMM_LOCATIONS`` group, rank i its i-th member
  (as Score-P writes MPI_COMM_WORLD); other locations (threads) are not replayed.
- **Messages:** ``MpiSend`` / ``MpiIsend`` post a message (``MpiIsendComplete`` needs
  nothing: a send never blocks the replay, as an eager send); ``MpiRecv`` and ``MpiIrecv``
  (written where the receive completed: in the receive, or in the ``MPI_Wait*`` /
  ``MPI_Test*`` that completed its request) wait for the message.  ``MpiIrecvRequest``
  needs nothing: a message that arrives before its receive is kept (MPI's unexpected
  messages).  Peers are ranks of the event's communicator, mapped to global ranks.
- **Collectives:** ``MpiCollectiveEnd`` gives the operation, communicator, root and the
  bytes sent and received (the Score-P convention; :mod:`.job_replay` sizes the steps).
- **Compute:** the time outside MPI: from leaving one MPI region (``Enter``/``Leave`` of a
  region of paradigm MPI, or named ``MPI_...``) to entering the next; records outside any
  MPI region count as a call of their own (``MpiCollectiveBegin`` enters, ``...End``
  leaves).  Before a rank's first MPI call: from the trace's first record (the ranks
  start together, as after ``mpirun``).  Timer ticks become
  picoseconds by the trace's ``timer_resolution`` (ticks per second).
"""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field
from typing import Any

from ..units import PS_PER_S, PS_PER_US

__all__ = ["TraceError", "TraceRecords", "read_trace", "ANCHOR_MAGIC"]

ANCHOR_MAGIC = b"OTF2\x00"
"""The format name an OTF2 anchor file carries after its 2-byte chunk header."""

Item = tuple[Any, ...]
"""("compute", ps) | ("send", peer, bytes) | ("recv", peer, where) |
("coll", comm, op name, root, bytes sent, bytes received, where) -- peers global ranks."""


class TraceError(ValueError):
    """A trace that cannot be replayed; the message says why, in one line."""


@dataclass
class TraceRecords:
    """What a trace says: ``ranks``, per rank its ``items`` in order, and the
    communicators (ref -> (name, global ranks by communicator rank))."""
    ranks: int
    items: list[list[Item]] = field(default_factory=list)
    comms: dict[int, tuple[str, list[int]]] = field(default_factory=dict)


def read_trace(path: str) -> TraceRecords:
    """The MPI records of the OTF2 archive whose anchor file is *path*."""
    _check_anchor(path)
    try:
        import _otf2 as lib  # noqa: PLC0415  (the bindings' C library: its error type, its error callback)
        import otf2  # noqa: PLC0415  (the optional extra, imported when a trace is read: 70 ms)
    except ImportError:
        raise TraceError("reading OTF2 traces needs the otf2 package: pip install 'ibemu[traces]'") from None
    quiet = _Quiet(lib)
    try:
        with otf2.reader.open(path) as reader:
            return _Reading(otf2, reader).run()
    except (lib.Error, otf2.error.Error) as e:
        raise TraceError("not a readable OTF2 archive (%s)" % str(e).strip().splitlines()[0]) from None
    finally:
        quiet.restore()


class _Quiet:
    """The OTF2 library prints each error it meets to stderr (lines of its own before the
    one line the user gets); its error callback (``OTF2_Error_RegisterCallback``)
    replaced by one that only returns the code keeps it quiet while a trace is read."""

    def __init__(self, lib: Any) -> None:
        self.fn: Any = None
        try:
            handle = lib.Config.conf.lib
            kind = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64,
                                    ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
            self.register = handle.OTF2_Error_RegisterCallback
            self.register.restype = ctypes.c_void_p
            self.register.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            self.fn = kind(lambda _data, _file, _line, _func, code, _fmt, _va: code)
            self.before = self.register(ctypes.cast(self.fn, ctypes.c_void_p), None)
        except (AttributeError, OSError, TypeError):
            self.fn = None                  # another build of the bindings: its messages stay

    def restore(self) -> None:
        if self.fn is not None:
            self.register(self.before, None)


def _check_anchor(path: str) -> None:
    """Refuse what the OTF2 library would refuse noisily: a missing file, a directory,
    a file that is not an anchor file, an archive without its definitions."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        raise TraceError("no such file") from None
    except IsADirectoryError:
        raise TraceError("is a directory (name the archive's anchor file, e.g. traces.otf2)") from None
    except OSError as e:
        raise TraceError("cannot read: %s" % (e.strerror or e)) from None
    if not path.endswith(".otf2"):
        raise TraceError("not an OTF2 anchor file (its name must end in .otf2)")
    if head[2:7] != ANCHOR_MAGIC:
        raise TraceError("not an OTF2 trace (no OTF2 anchor-file header)")
    stem = path[:-len(".otf2")]
    if not os.path.isfile(stem + ".def") or not os.path.isdir(stem):
        raise TraceError("the OTF2 archive is incomplete: %s.def and the folder %s/ must sit beside it"
                         % (os.path.basename(stem), os.path.basename(stem)))


class _Reading:
    """One pass over a trace's events (see the module for what each record means)."""

    def __init__(self, otf2: Any, reader: Any) -> None:
        self.otf2 = otf2
        self.ev = otf2.events
        defs = reader.definitions
        self.events = reader.events
        self.res = int(reader.timer_resolution) or 1
        self.rank_of = self._ranks(defs)
        n = len(set(self.rank_of.values()))
        self.out = TraceRecords(n, [[] for _ in range(n)])
        self.comm_ids: dict[Any, int] = {}     # communicator definition -> its number here
        self.comm_ranks: dict[int, list[int]] = {}
        for c in defs.comms:
            grp = getattr(c, "group", None)
            if grp is None:
                continue                        # an inter-communicator: its messages are not replayed
            members = [self.rank_of.get(m, -1) for m in grp.members]
            cid = self.comm_ids[c] = len(self.comm_ids)
            self.comm_ranks[cid] = members
            self.out.comms[cid] = (str(c.name), members)
        self.t0: int | None = None
        self.last_leave: list[int | None] = [None] * n
        self.depth = [0] * n

    def _ranks(self, defs: Any) -> dict[Any, int]:
        gt, mpi = self.otf2.GroupType, self.otf2.Paradigm.MPI
        groups = [g for g in defs.groups if g.group_type == gt.COMM_LOCATIONS]
        groups = [g for g in groups if g.paradigm == mpi] or groups
        if not groups:
            raise TraceError("no MPI ranks: the trace defines no COMM_LOCATIONS group (not an MPI trace)")
        members = list(groups[0].members)
        if not members:
            raise TraceError("no MPI ranks: its COMM_LOCATIONS group is empty")
        return {loc: i for i, loc in enumerate(members)}

    def us(self, ticks: int) -> str:
        return "%.3f us" % ((ticks - (self.t0 or 0)) * PS_PER_S / self.res / PS_PER_US)

    def run(self) -> TraceRecords:
        ev = self.ev
        for loc, e in self.events:
            r = self.rank_of.get(loc)
            if r is None:
                continue
            t = int(e.time)
            if self.t0 is None:
                self.t0 = t
            if isinstance(e, ev.Enter) or isinstance(e, ev.Leave):
                if self._is_mpi(e.region):
                    if isinstance(e, ev.Enter):
                        if self.depth[r] == 0:
                            self._enter(r, t)
                        self.depth[r] += 1
                    elif self.depth[r] > 0:
                        self.depth[r] -= 1
                        if self.depth[r] == 0:
                            self.last_leave[r] = t
                continue
            kind = type(e).__name__
            if kind in ("MpiSend", "MpiIsend"):
                self._call(r, t)
                self.out.items[r].append(("send", self._peer(r, e, e.receiver, kind, t), int(e.msg_length)))
            elif kind in ("MpiRecv", "MpiIrecv"):
                self._call(r, t)
                where = "rank %d's %s from rank %%d at %s" % (r, kind, self.us(t))
                peer = self._peer(r, e, e.sender, kind, t)
                self.out.items[r].append(("recv", peer, where % peer))
            elif kind == "MpiCollectiveBegin":
                if self.depth[r] == 0:
                    self._enter(r, t)
            elif kind == "MpiCollectiveEnd":
                if self.depth[r] == 0:
                    self.last_leave[r] = t
                comm = self._comm(r, e, kind, t)
                if comm is not None and self.comm_ranks[comm]:
                    op = str(e.collective_op).rsplit(".", 1)[-1]
                    where = "rank %d's MpiCollectiveEnd (%s on %s) at %s" % (r, op, self.out.comms[comm][0],
                                                                          self.us(t))
                    self.out.items[r].append(("coll", comm, op, int(e.root), int(e.size_sent),
                                              int(e.size_received), where))
        return self.out

    def _is_mpi(self, region: Any) -> bool:
        return bool(region.paradigm == self.otf2.Paradigm.MPI or str(region.name).upper().startswith("MPI_"))

    def _enter(self, r: int, t: int) -> None:
        """Rank *r* enters MPI at tick *t*: the time since it left MPI was compute."""
        since = self.last_leave[r]
        if since is None:
            since = self.t0 if self.t0 is not None else t
        if t > since:
            self.out.items[r].append(("compute", (t - since) * PS_PER_S // self.res))

    def _call(self, r: int, t: int) -> None:
        """A message record: outside an MPI region it is a call of its own."""
        if self.depth[r] == 0:
            self._enter(r, t)
            self.last_leave[r] = t

    def _comm(self, r: int, e: Any, kind: str, t: int) -> int | None:
        c = e.communicator
        cid = self.comm_ids.get(c) if c is not None else None
        if cid is None:
            return None                         # an inter-communicator or no communicator
        if self.comm_ranks[cid] and r not in self.comm_ranks[cid]:
            raise TraceError("rank %d's %s at %s is on %s, which does not hold rank %d"
                             % (r, kind, self.us(t), c.name, r))
        return cid

    def _peer(self, r: int, e: Any, peer: int, kind: str, t: int) -> int:
        comm = self._comm(r, e, kind, t)
        if comm is None:
            raise TraceError("rank %d's %s at %s has no intra-communicator (not replayed)" % (r, kind, self.us(t)))
        members = self.comm_ranks[comm]
        if not members:
            return r                            # MPI_COMM_SELF (a COMM_SELF group has no members)
        if not 0 <= peer < len(members) or members[peer] < 0:
            raise TraceError("rank %d's %s at %s names rank %d of %s, which has %d ranks"
                             % (r, kind, self.us(t), peer, self.out.comms[comm][0], len(members)))
        return members[peer]
