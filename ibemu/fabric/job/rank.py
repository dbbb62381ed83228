"""A rank of a job (issue 29 Deliver 1): the state machine that posts each step's
messages once the messages that step depends on have been delivered to it, as MPI
does.  Sans-I/O: it runs inside its host's HCA, driven by the HCA's timers (the job's
start, compute times) and by message deliveries (:class:`Inbox`, called by the RC
responder when a message's last packet is taken in order); ``now`` is an argument.

A step: after its compute time, post its messages on the job's queue pairs (their
:class:`~.posted.Posted` generators), then wait until, from every peer it receives
from, as many messages have been delivered as the steps so far expect (messages between
two ranks match in order).  The next step starts at once.  At the end of each
iteration of an operation the rank reports ``job_mark(job, rank, op, iteration, start,
end)`` to the recorder: *start* when the iteration's first messages were posted, *end*
when its last expected message was delivered.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hca import HCA
    from .posted import Posted
    from .spec import Step


def cumulative_needs(steps: list[Step], n: int) -> list[list[tuple[int, int]]]:
    """For each step, the (peer, messages delivered from it) it waits for: the count of
    that peer's messages the steps up to and including it receive."""
    total = [0] * n
    out: list[list[tuple[int, int]]] = []
    for st in steps:
        peers: list[int] = []
        for p in st.recvs:
            total[p] += 1
            if p not in peers:
                peers.append(p)
        out.append([(p, total[p]) for p in peers])
    return out


class Rank:
    """Rank *index* of job *job* on *hca*: its *steps*, the generators of its queue pairs
    by peer rank (*outs*), among *n* ranks."""

    def __init__(self, hca: HCA, job: str, index: int, steps: list[Step], n: int,
                 outs: dict[int, Posted]) -> None:
        self.hca = hca
        self.job = job
        self.index = index
        self.steps = steps
        self.outs = outs
        self.got = [0] * n                  # messages delivered from each rank
        self.need = cumulative_needs(steps, n)
        self.k = 0                          # the current step
        self.posted = False                 # its messages are posted (waiting for its receives)
        self.computed = False               # its compute time has passed
        self.op_start = 0                   # when the current iteration's first messages were posted
        self.done_at = -1                   # when the last step ended (-1: not yet)

    def begin(self, now: int) -> None:
        """The job starts (an HCA timer)."""
        self._advance(now)
        self.hca.kick(now)

    def _computed(self, now: int) -> None:
        self.computed = True
        self._advance(now)
        self.hca.kick(now)

    def delivered(self, src: int, now: int) -> None:
        """A message from rank *src* was delivered whole (within the HCA's receive, which
        tries to send right after: no kick here)."""
        self.got[src] += 1
        if self.posted:
            self._advance(now)

    def _advance(self, now: int) -> None:
        steps = self.steps
        while self.k < len(steps):
            st = steps[self.k]
            if not self.posted:
                if st.compute and not self.computed:
                    self.hca.at(now + st.compute, self._computed)
                    return
                if st.first:
                    self.op_start = now
                outs = self.outs
                for peer, nbytes in st.sends:
                    outs[peer].post(nbytes)
                self.posted = True
            got = self.got
            for peer, count in self.need[self.k]:
                if got[peer] < count:
                    return
            if st.last:
                self.hca.recorder.job_mark(self.job, self.index, st.op, st.iteration, self.op_start, now)
            self.k += 1
            self.posted = False
            self.computed = False
            if self.k == len(steps):
                self.done_at = now


class Inbox:
    """What the RC responder of a job's queue pair calls when a message from rank *src*
    is delivered (a :class:`~ibemu.fabric.hooks.MessageSink`)."""

    def __init__(self, rank: Rank, src: int) -> None:
        self.rank = rank
        self.src = src

    def delivered(self, now: int) -> None:
        self.rank.delivered(self.src, now)
