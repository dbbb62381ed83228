"""Never silently wrong (issue 16 Deliver 5): the wall clock's slip budget, the verdict
on a run, and the paced mode that keeps a run valid at the cost of speed.

A wall-clock run is only as good as its workers' timing (../shared/DESIGN.md §4).  Two
measured figures say how far it strayed from the emulated timeline
(:meth:`ibemu.runtime.loop.NodeLoop.stats`):

- *lag*: how far (emulated ps) a worker's event processing fell behind its clock, the
  largest over the run and the workers (``max_lag_ps``).  A worker behind by L hands
  its frames to the other processes up to L late, and a worker that finishes late sends
  frames its peers, already done, never see (seed 003 Fig 2(a) at dilation 5: the remote
  flow delivers 1 % of its virtual throughput, and no slip is counted).
- *slip*: how far behind its receiver's time a frame from another process arrived, the
  largest one (``max_slip_ps``).

A run is *valid* when both stay within their budget (:class:`Budget`, ``--lag-budget``
and ``--slip-budget``).  The defaults, 1 ms of emulated time each, are about 14 times the
largest lag and slip of a whole seed 003 Fig 2(a) run at the default dilation 200
(70.8 µs and 68.5 µs on our 2-core machine; the typical slip is 1.6 µs), so a correct run
never trips them, while a machine too slow for the dilation trips the lag budget within
a few milliseconds of emulated time.  :func:`verdict` is the one rule: ``ibemu run
--clock wall`` and ``ibemu fidelity`` both use it.  An invalid run still writes its
results (``"valid": false`` with the reason and the measured figures) and exits with
:data:`EXIT_INVALID`, unless the user allowed late results (``--allow-late``).

The paced mode (``--pace together``) keeps the run valid instead: the workers share one
*pause* (wall seconds, :class:`SharedPause`, an 8-byte file the controller creates and
every worker maps), and each worker's emulated clock is ``E = (wall - t0 - pause) /
dilation``.  A worker whose earliest pending event is more than :data:`PACE_BOUND_PS`
behind its clock raises the pause (to the larger of the pause and what would put its
own clock back at that event: a maximum, never a sum), so every worker stops advancing
emulated time until the late one has caught up.  Emulated time stays consistent across
the processes; the run takes longer (the effective dilation grows to what the machine
can keep).  :class:`Pacer` is the hook the loop calls at each step.

This module imports no trio: the pause file is plain ``mmap`` and ``fcntl``.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


LAG_BUDGET_PS = 1_000_000_000
"""Default lag budget: 1 ms of emulated time (see the module text for the measurement)."""
SLIP_BUDGET_PS = 1_000_000_000
"""Default slip budget: 1 ms of emulated time."""
PACE_BOUND_PS = 1_000_000
"""Paced mode: a worker more than 1 µs of emulated time behind raises the shared pause
(about a packet's time at 40 Gb/s; smaller than the links' typical propagation plus
serialization, so frames between processes seldom arrive behind their receiver)."""
EXIT_INVALID = 4
"""Exit status of ``ibemu run --clock wall`` and ``ibemu fidelity`` when the run is
invalid (beyond its slip budget) and late results were not allowed.  0, 1 (a failed run
or output), 2 (bad input) and 130 (interrupted) are taken; 3 is a worker whose
controller is gone."""
PACE_MODES = ("free", "together")
"""``--pace``: free (every worker keeps its own pace; the default) or together."""


def format_time(ps: float) -> str:
    """An emulated time for people: 70.8us, 1.00ms."""
    return "%.2fms" % (ps / 1e9) if ps >= 1e9 else "%.1fus" % (ps / 1e6)


@dataclass(frozen=True)
class Budget:
    """How far (emulated ps) a valid run may stray: worker lag and frame slip."""
    lag_ps: int = LAG_BUDGET_PS
    slip_ps: int = SLIP_BUDGET_PS


def verdict(runtime: dict[str, Any], budget: Budget | None = None, who: str = "worker") -> dict[str, Any]:
    """The verdict on a wall-clock run from its ``runtime`` table
    (:func:`ibemu.runtime.merge.merge_runtime`): ``valid``, the ``reason`` (None when
    valid), the measured ``max_lag_ps`` (and the ``late_workers`` beyond the budget) and
    ``max_slip_ps``, and the budgets applied.  *who*: what the reason calls a worker
    (``"rank"`` under MPI, :mod:`.mpi`, where each rank runs one)."""
    budget = budget or Budget()
    workers = runtime.get("workers", [])
    lags = {w["worker"]: int(w.get("max_lag_ps", 0)) for w in workers}
    max_lag = max(lags.values(), default=0)
    max_slip = int(runtime.get("max_slip_ps", 0))
    late = sorted(i for i, lag in lags.items() if lag > budget.lag_ps)
    reasons = []
    if late:
        reasons.append("%s %s fell %s behind the wall clock (budget %s)" % (
            who, ", ".join(map(str, late)), format_time(max_lag), format_time(budget.lag_ps)))
    if max_slip > budget.slip_ps:
        reasons.append("a frame between processes arrived %s behind its receiver (budget %s)" % (
            format_time(max_slip), format_time(budget.slip_ps)))
    return {"valid": not reasons, "reason": "; ".join(reasons) or None,
            "max_lag_ps": max_lag, "late_workers": late, "max_slip_ps": max_slip,
            "lag_budget_ps": budget.lag_ps, "slip_budget_ps": budget.slip_ps}


def format_verdict(v: dict[str, Any], allowed: bool = False, together: bool = True) -> str:
    """The summary's line on the verdict.  *together*: ``--pace together`` is a remedy
    (one host's workers; not under MPI)."""
    if v["valid"]:
        return "valid: largest lag %s, largest slip %s (budgets %s, %s)" % (
            format_time(v["max_lag_ps"]), format_time(v["max_slip_ps"]),
            format_time(v["lag_budget_ps"]), format_time(v["slip_budget_ps"]))
    tail = ("late results allowed (--allow-late)" if allowed else
            "exit status %d; use a larger --dilation%s or --allow-late to accept them"
            % (EXIT_INVALID, ", --pace together," if together else ""))
    return "INVALID: %s: this machine is too slow for the dilation; %s" % (v["reason"], tail)


# ---------------------------------------------------------------- the paced mode

_HEAD = struct.Struct("<dQ")
"""The pause file's head: the pause (wall seconds) and how many workers took a slot."""
_SLOT = struct.Struct("<d")
"""One worker's slot: the emulated time (ps) of the event it is busy with, inf when idle."""
INF = float("inf")


def create_pause_file(path: str | Path, workers: int) -> Path:
    """The shared state of a paced run (the controller makes it before the workers
    start): the pause, 0.0, and one idle slot per worker."""
    p = Path(path)
    p.write_bytes(_HEAD.pack(0.0, 0) + _SLOT.pack(INF) * workers)
    return p


class SharedPause:
    """The shared state of a paced run, in a file every worker maps: the run's pause
    (wall seconds, a float64) and one slot per worker, where each says which emulated
    time it is busy processing (inf: caught up).  Read without a lock (aligned 8-byte
    loads); the pause is raised, and a slot taken, under an exclusive ``flock``; the
    pause is raised as a maximum, so it never decreases whatever the order of the
    writers."""

    def __init__(self, path: str | Path) -> None:
        self._fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(self._fd).st_size
            if size < _HEAD.size:
                raise ValueError("%s: not a pause file" % path)
            self._map = mmap.mmap(self._fd, size)
        except (OSError, ValueError):
            os.close(self._fd)
            raise
        self.slots = (size - _HEAD.size) // _SLOT.size
        with self._locked():
            pause, taken = _HEAD.unpack_from(self._map, 0)
            _HEAD.pack_into(self._map, 0, pause, taken + 1)
        self.slot = taken if taken < self.slots else None     # None: more workers than slots
        self._others = struct.Struct("<%dd" % self.slots)
        self._busy = INF

    def _locked(self) -> _Flock:
        return _Flock(self._fd)

    def read(self) -> float:
        value: float = _HEAD.unpack_from(self._map, 0)[0]
        return value

    def raise_to(self, value: float) -> float:
        """Make the pause at least *value*; return the pause now."""
        with self._locked():
            cur = self.read()
            if value > cur:
                _HEAD.pack_into(self._map, 0, value, _HEAD.unpack_from(self._map, 0)[1])
                cur = value
        return cur

    def busy(self, t: float) -> None:
        """Say that this worker is busy with the event at emulated *t* (inf: caught up)."""
        if t != self._busy and self.slot is not None:
            self._busy = t
            _SLOT.pack_into(self._map, _HEAD.size + self.slot * _SLOT.size, t)

    def earliest_busy(self) -> float:
        """The earliest time any worker is busy with (inf: every one caught up)."""
        return min(self._others.unpack_from(self._map, _HEAD.size), default=INF)

    def close(self) -> None:
        self.busy(INF)
        self._map.close()
        os.close(self._fd)


class _Flock:
    """An exclusive ``flock`` on a file descriptor, as a context manager."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def read_pause(path: str | Path) -> float:
    """The pause a paced run ended with (wall seconds; 0.0 when the file is missing)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return 0.0
    value: float = _HEAD.unpack_from(data, 0)[0] if len(data) >= _HEAD.size else 0.0
    return value


class PacedLoop(Protocol):
    """What :class:`Pacer` needs of :class:`ibemu.runtime.loop.NodeLoop`."""
    t0: float | None
    ps_per_wall: float

    def emulated_now(self) -> int: ...


class Pacer:
    """The paced mode's hooks on one loop: :meth:`adjust` at the start of every step
    (before the loop reads its clock) and :meth:`idle` at its end.

    :meth:`adjust` moves the loop's emulated zero ``t0`` later by the shared pause, so
    ``E = (wall - t0 - pause) / dilation``; says in the worker's slot which event it is
    about to process when that event is due (at or before ``E``); and raises the pause
    when the earliest event any worker is busy with -- its own or another's, one that is
    in a long step or was preempted in it -- is more than *bound_ps* behind ``E``: this
    worker then waits for it rather than run ahead and receive its frames late.
    :meth:`idle` says the worker caught up.  The loop's timers follow ``t0``, so a
    sleeping worker wakes early after a raise, finds nothing due and sleeps again."""

    def __init__(self, shared: SharedPause, bound_ps: int = PACE_BOUND_PS) -> None:
        self.shared = shared
        self.bound_ps = int(bound_ps)
        self.applied = 0.0          # wall seconds of pause already added to the loop's t0
        self.raises = 0             # how many times this worker raised the pause

    def _apply(self, loop: PacedLoop, pause: float) -> None:
        if pause > self.applied:
            assert loop.t0 is not None
            loop.t0 += pause - self.applied
            self.applied = pause

    def adjust(self, loop: PacedLoop, first: int | None) -> None:
        """Follow the shared pause; raise it when a worker is behind (one step): *first*
        is the emulated time of this loop's earliest pending event (None: nothing)."""
        shared = self.shared
        self._apply(loop, shared.read())
        E = loop.emulated_now()
        shared.busy(first if first is not None else INF)     # busy with it, or idle until it
        lag = E - shared.earliest_busy()
        if lag > self.bound_ps:
            self.raises += 1
            self._apply(loop, shared.raise_to(self.applied + lag / loop.ps_per_wall))

    def idle(self, next_event: int | None = None) -> None:
        """The step is over: every event due is done; *next_event* is the emulated time
        of this loop's earliest pending event (None: nothing pending), which the worker
        says in its slot as a promise: it has nothing to do before then unless a frame
        comes.  A worker that is not given the CPU when that time comes (the machine
        preempted it between steps, so it cannot say it is busy) then shows as behind
        and the others wait for it, rather than run ahead of the frames it will send
        (in the test scenario a remote flow lost 15 % of its throughput that way while
        every slot said "caught up")."""
        self.shared.busy(INF if next_event is None else next_event)

    def close(self) -> None:
        self.shared.close()
