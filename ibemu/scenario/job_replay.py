"""A read OTF2 trace (:mod:`.job_trace`) as every rank's steps (issue 29 Deliver 2): the
same :class:`~ibemu.fabric.job.spec.Step` lists a ``[[job]]``'s operations make, so the
ranks run a trace as they run collectives.

- **Point to point:** a rank's records in order.  A step posts the messages sent since
  its last wait, then waits for the receives that complete before its next send; the
  compute time between MPI calls (times ``compute_scale``) goes before the next step
  (a step's messages go out after its compute).  Messages between two ranks match in
  order (:mod:`ibemu.fabric.job.rounds`); a receive the sender never sends is refused.
  Messages a rank sends itself do not cross the fabric and are dropped.
- **Collectives** expand by the job's ``algorithm`` for their kind (the default: the
  first of :data:`~ibemu.fabric.job.program.ALGORITHMS`) over the communicator's ranks.
  The size comes from the bytes Score-P records (its ``scorep_mpi_coll_bytes_*``):
  an allreduce sends N x its buffer and an alltoall N x its block (N the communicator's
  ranks), an allgather receives the whole gathered buffer, a reduce-scatter sends it, a
  broadcast receives the message; the largest over the ranks is taken.  The k-th
  collective on a communicator is the same call on all its ranks (MPI's rule).
- **Operations for the metrics:** each collective over all the job's ranks is an
  iteration of the operation named by its label (``allreduce/ring``); the point-to-point
  records between two of them (and the collectives on fewer ranks) are an iteration of
  ``p2p`` (none where no rank has any).
"""
from __future__ import annotations

from ..fabric.job.program import ALGORITHMS, expand, steps_of
from ..fabric.job.rounds import Round, at_least_one
from ..fabric.job.spec import OpSpec, Step
from .job_trace import Item, TraceError, TraceRecords

__all__ = ["COLLECTIVES", "replay"]

COLLECTIVES: dict[str, tuple[str, str]] = {
    "ALLREDUCE": ("allreduce", "sent/N"), "ALLTOALL": ("alltoall", "sent/N"), "ALLTOALLV": ("alltoall", "sent/N"),
    "ALLGATHER": ("allgather", "received"), "ALLGATHERV": ("allgather", "received"),
    "REDUCE_SCATTER": ("reduce_scatter", "sent"), "REDUCE_SCATTER_BLOCK": ("reduce_scatter", "sent"),
    "BCAST": ("broadcast", "received"), "BARRIER": ("barrier", "1")}
"""OTF2 collective operation -> (the job operation it runs as, its size from the bytes
recorded)."""

Key = tuple[int, int]                       # (communicator, its k-th collective)


def replay(rec: TraceRecords, algorithms: dict[str, str], scale: float = 1.0) -> tuple[list[list[Step]], list[str]]:
    """Every rank's steps and the operations' labels for the records *rec*; *algorithms*:
    operation kind -> algorithm (the defaults for the others); compute times x *scale*."""
    n = rec.ranks
    _match(rec)
    calls = _collectives(rec)
    rounds: dict[Key, dict[int, list[Round]]] = {}
    labels: dict[Key, str] = {}
    for key, by_rank in calls.items():
        rounds[key], labels[key] = _expand(rec, key, by_rank, algorithms)
    everyone = list(range(n))
    whole = {key for key in calls if sorted(rec.comms[key[0]][1]) == everyone}
    order = _whole_job_order(rec, whole)
    segments = [_segments(items, whole) for items in rec.items]
    names: list[str] = []
    count: dict[str, int] = {}
    marks: list[tuple[int, int] | None] = []            # per segment: (op, iteration), None: no p2p there
    for j in range(2 * len(order) + 1):
        if j % 2 == 0 and not any(it[0] != "compute" for seg in segments for it in seg[j]):
            marks.append(None)
            continue
        label = "p2p" if j % 2 == 0 else labels[order[j // 2]]
        if label not in names:
            names.append(label)
        marks.append((names.index(label), count.get(label, 0)))
        count[label] = count.get(label, 0) + 1
    programs: list[list[Step]] = []
    for r in range(n):
        steps: list[Step] = []
        carry = 0
        for j, seg in enumerate(segments[r]):
            mark = marks[j]
            if mark is None:
                carry += sum(_scaled(it[1], scale) for it in seg)
                continue
            op, it = mark
            if j % 2:
                steps += steps_of(rounds[order[j // 2]][r], op, it, carry)
                carry = 0
            else:
                part, carry = _p2p_steps(r, seg, carry, scale, rounds)
                if not part:
                    part = [Step([], [])]
                for st in part:
                    st.op, st.iteration = op, it
                part[0].first = True
                part[-1].last = True
                steps += part
        programs.append(steps)
    return programs, names


def _scaled(ps: int, scale: float) -> int:
    return round(ps * scale)


def _match(rec: TraceRecords) -> None:
    """Refuse a receive that no send matches (messages between two ranks match in order)."""
    sent: dict[tuple[int, int], int] = {}
    for r, items in enumerate(rec.items):
        for it in items:
            if it[0] == "send" and it[1] != r:
                sent[(r, it[1])] = sent.get((r, it[1]), 0) + 1
    for r, items in enumerate(rec.items):
        got: dict[int, int] = {}
        for it in items:
            if it[0] == "recv" and it[1] != r:
                k = got[it[1]] = got.get(it[1], 0) + 1
                have = sent.get((it[1], r), 0)
                if k > have:
                    raise TraceError("%s: no send matches it (its receive #%d from rank %d; rank %d sends it %d)"
                                     % (it[2], k, it[1], it[1], have))


def _collectives(rec: TraceRecords) -> dict[Key, dict[int, Item]]:
    """Each communicator's k-th collective: the record of every rank making it."""
    calls: dict[Key, dict[int, Item]] = {}
    for r, items in enumerate(rec.items):
        seen: dict[int, int] = {}
        for it in items:
            if it[0] == "coll":
                k = seen[it[1]] = seen.get(it[1], 0) + 1
                calls.setdefault((it[1], k), {})[r] = it
    for (comm, k), by_rank in calls.items():
        name, members = rec.comms[comm]
        for m in members:
            if m < 0:
                raise TraceError("communicator %s holds a location that is not an MPI rank" % name)
            if m not in by_rank:
                first = next(iter(by_rank.values()))
                raise TraceError("%s: rank %d of %s never makes this collective (its collective #%d there)"
                                 % (first[6], m, name, k))
    return calls


def _expand(rec: TraceRecords, key: Key, by_rank: dict[int, Item],
            algorithms: dict[str, str]) -> tuple[dict[int, list[Round]], str]:
    """One collective's rounds per global rank, and its label."""
    members = rec.comms[key[0]][1]
    first = by_rank[members[0]]
    for it in by_rank.values():
        if it[2] != first[2]:
            raise TraceError("%s: is not %s, which rank %d makes as the same collective" % (it[6], first[2],
                                                                                          members[0]))
    if first[2] not in COLLECTIVES:
        raise TraceError("%s: %s is not replayed (ibemu expands %s)" % (first[6], first[2],
                                                                         ", ".join(COLLECTIVES)))
    kind, rule = COLLECTIVES[first[2]]
    m = len(members)
    size = max(_size(rule, it[4], it[5], m) for it in by_rank.values())
    op = OpSpec(kind, algorithm=algorithms.get(kind, ALGORITHMS[kind][0]), size=at_least_one(size))
    if kind == "broadcast":
        if not 0 <= first[3] < m:
            raise TraceError("%s: root %d is not a rank of its %d" % (first[6], first[3], m))
        op.root = first[3]
    if m < 2:
        return {members[0]: []} if members else {}, op.label()
    try:
        sched = expand(op, m)
    except ValueError as e:
        raise TraceError("%s: %s %s" % (first[6], op.label(), e)) from None
    out = {members[i]: [([(members[p], b) for p, b in sends], [members[p] for p in recvs]) for sends, recvs in rs]
           for i, rs in enumerate(sched)}
    return out, op.label()


def _size(rule: str, sent: int, received: int, m: int) -> int:
    if rule == "sent/N":
        return sent // m
    return {"sent": sent, "received": received}.get(rule, 1)


def _whole_job_order(rec: TraceRecords, whole: set[Key]) -> list[Key]:
    """The collectives over all ranks, in the order every rank makes them."""
    orders = []
    for items in rec.items:
        seen: dict[int, int] = {}
        mine = []
        for it in items:
            if it[0] == "coll":
                k = seen[it[1]] = seen.get(it[1], 0) + 1
                if (it[1], k) in whole:
                    mine.append((it[1], k))
        orders.append(mine)
    for r, o in enumerate(orders):
        if o != orders[0]:
            raise TraceError("ranks 0 and %d make their collectives over all ranks in different orders "
                             "(on communicators %s)" % (r, ", ".join(sorted({rec.comms[c][0] for c, _ in o}))))
    return orders[0]


def _segments(items: list[Item], whole: set[Key]) -> list[list[Item]]:
    """A rank's items split at the collectives over all ranks: p2p, collective, p2p, ...
    (a collective's segment holds its record)."""
    segs: list[list[Item]] = [[]]
    seen: dict[int, int] = {}
    for it in items:
        if it[0] == "coll":
            k = seen[it[1]] = seen.get(it[1], 0) + 1
            it = ("coll", it[1], k) + it[2:]
            if (it[1], k) in whole:
                segs += [[it], []]
                continue
        segs[-1].append(it)
    return segs


def _p2p_steps(r: int, items: list[Item], carry: int, scale: float,
               rounds: dict[Key, dict[int, list[Round]]]) -> tuple[list[Step], int]:
    """Rank *r*'s steps for a point-to-point segment, and the compute time after its
    last message (it goes before the next segment)."""
    steps: list[Step] = []
    cur = Step([], [], compute=carry)
    for it in items:
        kind = it[0]
        if kind == "compute":
            ps = _scaled(it[1], scale)
            if cur.sends or cur.recvs:
                steps.append(cur)
                cur = Step([], [], compute=ps)
            else:
                cur.compute += ps
        elif kind == "send":
            if it[1] == r:
                continue
            if cur.recvs:
                steps.append(cur)
                cur = Step([], [])
            cur.sends.append((it[1], at_least_one(it[2])))
        elif kind == "recv":
            if it[1] != r:
                cur.recvs.append(it[1])
        else:                               # a collective on a part of the ranks
            if cur.sends or cur.recvs:
                steps.append(cur)
                cur = Step([], [])
            sub = [Step(list(s), list(v)) for s, v in rounds[(it[1], it[2])][r]]
            if sub:
                sub[0].compute += cur.compute
                steps += sub
                cur = Step([], [])
    if cur.sends or cur.recvs:
        steps.append(cur)
        return steps, 0
    return steps, cur.compute
