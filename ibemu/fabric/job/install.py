"""Jobs on a built fabric (issue 29): a :class:`~.rank.Rank` per rank in its host's HCA,
fed by the deliveries of the job's RC responders and sending through the
:class:`~.posted.Posted` generators of the job's requesters (the flows
:func:`~.spec.job_flow_name` names, built like every flow), started at the job's start
time by an HCA timer."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..hca import HCA
from ..qp import RCResponder
from .posted import Posted
from .rank import Inbox, Rank
from .spec import JobSpec, job_flow_name

if TYPE_CHECKING:
    from ..network import Fabric


def install_jobs(fabric: Fabric, jobs: list[JobSpec]) -> dict[str, list[Rank]]:
    """Make and wire every job's ranks; returns job name -> its ranks."""
    out: dict[str, list[Rank]] = {}
    for job in jobs:
        n = len(job.hosts)
        outs: list[dict[int, Posted]] = [{} for _ in range(n)]
        sinks: list[tuple[RCResponder, int, int]] = []
        for src, dst in job.pairs():
            snd, rcv = fabric.qps[job_flow_name(job.name, job.hosts[src], job.hosts[dst])]
            gen = snd.gen
            if not isinstance(gen, Posted) or not isinstance(rcv, RCResponder):
                raise ValueError("job %s: flow %s-%s is not a job's RC queue pair" % (job.name, src, dst))
            outs[src][dst] = gen
            sinks.append((rcv, src, dst))
        ranks: list[Rank] = []
        for r, host in enumerate(job.hosts):
            hca = fabric.nodes[host]
            if not isinstance(hca, HCA):
                raise ValueError("job %s: %s is not an HCA" % (job.name, host))
            ranks.append(Rank(hca, job.name, r, job.programs[r], n, outs[r]))
        for rcv, src, dst in sinks:
            rcv.sink = Inbox(ranks[dst], src)
        for rank in ranks:
            rank.hca.at(job.start, rank.begin)
        out[job.name] = ranks
    return out
