"""A job (issue 29 Deliver 1): ranks placed on hosts, and what each rank does, as the
scenario's ``[[job]]`` tables (:mod:`ibemu.scenario.jobs`) or an OTF2 trace make it.

A job's ranks run :class:`Step` lists (:mod:`.program`): post the step's messages (after
its compute time), then wait for the messages it receives; the step after may start
only then.  Times are integer picoseconds, sizes bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["OpSpec", "Step", "JobSpec", "JOB_PATTERN", "job_flow_name"]

JOB_PATTERN = "job"
"""The ``pattern`` of the flows that carry a job's messages (one RC QP per ordered pair
of ranks that exchange any): their generator is fed by the sending rank."""


@dataclass
class OpSpec:
    """One operation of a job: ``kind`` (allreduce, allgather, reduce_scatter, alltoall,
    broadcast, barrier, halo, p2p), its ``algorithm``, message ``size`` (bytes; see each
    algorithm for what it measures), ``iterations`` and the ``compute`` time (ps) before
    every iteration but the first; ``root`` (broadcast), ``grid`` (halo),
    ``messages`` ((src rank, dst rank, bytes), p2p)."""
    kind: str
    algorithm: str = ""
    size: int = 1
    iterations: int = 1
    compute: int = 0
    root: int = 0
    grid: list[int] = field(default_factory=list)
    messages: list[tuple[int, int, int]] = field(default_factory=list)

    def label(self) -> str:
        """``kind`` or ``kind/algorithm`` (the name results give it)."""
        return "%s/%s" % (self.kind, self.algorithm) if self.algorithm else self.kind


class Step:
    """A rank's step: after ``compute`` ps, post ``sends`` ((peer, bytes), in order),
    then wait until one message from each peer of ``recvs`` has been delivered.
    ``op`` and ``iteration`` name the operation it belongs to; ``first`` / ``last``:
    the step starts / ends the rank's part of that iteration."""

    def __init__(self, sends: list[tuple[int, int]], recvs: list[int], op: int = 0, iteration: int = 0,
                 compute: int = 0, first: bool = False, last: bool = False) -> None:
        self.compute = compute
        self.sends = sends
        self.recvs = recvs
        self.op = op
        self.iteration = iteration
        self.first = first
        self.last = last

    def __repr__(self) -> str:
        return "Step(%r, %r, op=%d, iteration=%d, compute=%d%s%s)" % (
            self.sends, self.recvs, self.op, self.iteration, self.compute,
            ", first" if self.first else "", ", last" if self.last else "")


@dataclass
class JobSpec:
    """A job: ``name``, ``hosts`` (rank i runs on ``hosts[i]``), ``ops`` (their labels
    in ``op_names``), the transport ``op`` of its messages (``send`` or ``write``), its
    ``sl``, its ``start`` time, and ``programs``: every rank's steps."""
    name: str
    hosts: list[str]
    ops: list[OpSpec] = field(default_factory=list)
    op: str = "send"
    sl: int = 0
    start: int = 0
    programs: list[list[Step]] = field(default_factory=list)
    op_names: list[str] = field(default_factory=list)
    shared: bool = False
    trace: str | None = None

    def pairs(self) -> list[tuple[int, int]]:
        """The ordered (src rank, dst rank) pairs that exchange messages, sorted."""
        out: set[tuple[int, int]] = set()
        for r, steps in enumerate(self.programs):
            for st in steps:
                for peer, _ in st.sends:
                    out.add((r, peer))
        return sorted(out)


def job_flow_name(job: str, src: str, dst: str) -> str:
    """The name of the flow carrying job *job*'s messages from host *src* to *dst*."""
    return "%s.%s-%s" % (job, src, dst)
