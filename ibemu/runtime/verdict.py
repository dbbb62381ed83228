"""The verdict on a wall-clock run (issue 27 Deliver 3 and 4; it replaces issue 16's
budgets and paced mode).

``--sync exact`` (the default): every worker runs its nodes' events in the virtual
clock's order (:mod:`.syncproto`), so the results are the virtual clock's by
construction.  Such a run is *valid* when it completed, no worker ever saw a frame behind
its receiver (a *slip*: it would mean a broken promise, a defect, never a slow machine)
and no datagram was lost.  A machine too slow for the requested dilation runs slower:
the verdict line says the *effective dilation* (wall time over emulated time) and the
wall time each worker spent waiting for its peers; it stays valid.

``--sync free``: every worker paces its own emulated clock and a frame from another
process that arrives behind its receiver runs late.  Its error is judged against the
fabric's own time-scale, not an absolute budget: the run is valid only when no worker
fell behind its clock (*lag*), and no frame arrived behind its receiver (*slip*), by more
than the time the smallest packet takes on a cut link (:func:`time_scale`: LRH, BTH and
CRCs, 26 bytes, 26 ns on a 4X SDR link).  Below that, no packet's place among the events
of its receiver can have moved; above it, one may have, and a result may differ from
the virtual clock's -- which is what free mode is for: live demonstrations, and peers
that do not speak the promises.

An invalid run still writes its results (``"valid": false`` with the reason) and exits
with :data:`EXIT_INVALID` unless the user allowed it (``--allow-late``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..units import PS_PER_S
from ..wire.layout import PACKET_OVERHEAD

EXIT_INVALID = 4
"""Exit status of ``ibemu run --clock wall``, ``ibemu fidelity`` and MPI runs when the
run is invalid and late results were not allowed.  0, 1 (a failed run or output), 2 (bad
input) and 130 (interrupted) are taken; 3 is a worker whose controller is gone."""
SYNC_MODES = ("exact", "free")
"""``--sync``: exact (conservative synchronisation, :mod:`.exact`; the default) or free
(every worker paces its own clock: for live demonstrations and peers that do not speak
the promises)."""


def format_time(ps: float) -> str:
    """An emulated time for people: 26.0ns, 70.8us, 1.00ms."""
    if ps >= 1e9:
        return "%.2fms" % (ps / 1e9)
    return "%.1fus" % (ps / 1e6) if ps >= 1e6 else "%.1fns" % (ps / 1e3)


def time_scale(wiring: Mapping[Any, Any], worker_of: Mapping[str, int]) -> int:
    """The free mode's yardstick (the module text): the least time, in ps, the smallest
    packet takes on a link whose ends are in different workers (0: no such link).
    *wiring*: the fabric's ``(node, port) -> (peer, peer_port, prop)``; *worker_of*:
    node name -> worker."""
    best = 0
    for (node, port), (peer, _pp, _prop) in wiring.items():
        wa, wb = worker_of.get(node.name), worker_of.get(peer.name)
        if wa is None or wb is None or wa == wb:
            continue
        rate = node.ports[port].rate
        t = -(-PACKET_OVERHEAD * PS_PER_S // rate)
        best = t if not best else min(best, t)
    return best


def worker_map(groups: Sequence[Iterable[str]]) -> dict[str, int]:
    """node name -> index of the group (worker) that runs it."""
    return {n: i for i, g in enumerate(groups) for n in g}


def verdict(runtime: dict[str, Any], sync: str, scale_ps: int, who: str = "worker") -> dict[str, Any]:
    """The verdict from a run's ``runtime`` table (:func:`ibemu.runtime.merge.merge_runtime`):
    ``valid``, the ``reason`` (None when valid) and the figures it rests on.  *who*: what
    the reason calls a worker (``"rank"`` under MPI)."""
    workers = runtime.get("workers", [])
    lags = {w["worker"]: int(w.get("max_lag_ps", 0) or 0) for w in workers}
    max_lag = max(lags.values(), default=0)
    max_slip = int(runtime.get("max_slip_ps", 0))
    lost = int(runtime.get("datagrams_lost", 0))
    reasons = []
    if sync == "exact":
        if runtime.get("slips"):
            reasons.append("%d frames arrived behind their receiver (largest %s): a broken promise, "
                           "please report it" % (runtime["slips"], format_time(max_slip)))
        late: list[int] = []
    elif not scale_ps:
        late = []                       # one process, or no link between processes: nothing can slip
    else:
        late = sorted(i for i, lag in lags.items() if lag > scale_ps)
        if late:
            reasons.append("%s %s fell %s behind its clock" % (who, ", ".join(map(str, late)), format_time(max_lag)))
        if max_slip > scale_ps:
            reasons.append("a frame between processes arrived %s behind its receiver" % format_time(max_slip))
        if reasons:
            reasons[-1] += " (more than %s, the smallest packet's time on a cut link)" % format_time(scale_ps)
    if lost:
        reasons.append("%d datagrams lost" % lost)
    return {"valid": not reasons, "reason": "; ".join(reasons) or None, "sync": sync,
            "max_lag_ps": max_lag, "late_workers": late, "max_slip_ps": max_slip,
            "time_scale_ps": scale_ps, "effective_dilation": runtime.get("effective_dilation"),
            "dilation": runtime.get("dilation")}


def format_verdict(v: dict[str, Any], allowed: bool = False) -> str:
    """The summary's line on the verdict."""
    if v.get("sync") == "exact":
        head = ("exact: the virtual clock's results by construction; effective dilation %s (requested %s)"
                % (_dil(v.get("effective_dilation")), _dil(v.get("dilation"))))
        if v["valid"]:
            return head
        return "INVALID (%s): %s" % (head, v["reason"])
    if v["valid"]:
        return ("free-running, valid: largest lag %s, largest slip %s (within %s, the smallest packet's "
                "time on a cut link)" % (format_time(v["max_lag_ps"]), format_time(v["max_slip_ps"]),
                                         format_time(v["time_scale_ps"])))
    tail = ("late results allowed (--allow-late)" if allowed else
            "exit status %d; --sync exact (the default) gives the virtual clock's results at any "
            "dilation, or --allow-late accepts these" % EXIT_INVALID)
    return "INVALID (free-running): %s; %s" % (v["reason"], tail)


def _dil(x: Any) -> str:
    return "-" if x is None else "%.4g" % x
