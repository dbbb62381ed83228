"""``[[job]]`` tables (issue 29 Deliver 1): closed-loop workloads.  A job's ranks run on
its ``hosts`` (:mod:`.job_hosts`) the operations of its ``ops`` (:mod:`.job_ops`)::

    [[job]]
    name = "train"                 # default job<i>; its flows' group
    hosts = {first = 16}           # rank i on the i-th host
    op = "send"                    # the messages' RC operation: "send" (default) or "write"
    sl = 0
    start = "0us"
    shared = false                 # true (on every job concerned): may share hosts with other jobs
    [[job.ops]]
    type = "allreduce"
    algorithm = "ring"
    size = "1MiB"
    iterations = 10
    compute = "50us"

or, instead of ``ops``, an MPI trace the ranks replay (:mod:`.job_trace`, :mod:`.job_replay`)::

    [[job]]
    hosts = {first = 64}           # rank i of the trace on the i-th host (a trace of fewer
                                   # ranks uses the first hosts; more ranks: an error)
    trace = "app.otf2"             # the OTF2 anchor file, relative to the scenario file
    compute_scale = 1.0            # times the compute time between MPI calls
    algorithm = {allreduce = "recursive_doubling"}   # per collective kind (default: the first)

Each ordered pair of ranks that exchange messages gets one RC queue pair: a flow named
``<job>.<src>-<dst>`` in group ``<job>`` whose messages the sending rank posts.
"""
from __future__ import annotations

import os
from typing import Any

from ..fabric.job.program import ALGORITHMS, program
from ..fabric.job.spec import JOB_PATTERN, JobSpec, Step, job_flow_name
from ..fabric.params import FlowSpec
from ..units import parse_time
from ..validate import Checker, boolean, integer, join, name, string, table, tables
from .flows import number
from .job_hosts import job_hosts
from .job_ops import parse_ops
from .job_replay import COLLECTIVES, replay
from .job_trace import TraceError, read_trace
from .model import LinkSpec

__all__ = ["JOB_KEYS", "parse_jobs", "MAX_JOB_MESSAGES"]

JOB_KEYS = ("name", "hosts", "ops", "trace", "compute_scale", "algorithm", "op", "sl", "start", "shared",
            "max_messages")
MAX_JOB_MESSAGES = 10_000_000
"""Default guard on the messages one job's ranks send in all (``max_messages`` raises it)."""


def parse_jobs(ctx: Checker, entries: Any, hcas: list[str], nodes: dict[str, str], links: list[LinkSpec],
               seed: int, flows: list[FlowSpec], source: str | None = None) -> tuple[list[JobSpec], list[FlowSpec]]:
    """The jobs of a scenario and the flows carrying their messages (after *flows*,
    whose names they must not take)."""
    jobs: list[JobSpec] = []
    out: list[FlowSpec] = []
    taken = {f.name for f in flows}
    owner: dict[str, int] = {}              # host -> the first job using it
    comp = _components(nodes, links)
    for i, t in enumerate(tables(ctx, "job", entries)):
        path = join("job", i)

        def p(k: str, path: str = path) -> str:
            return join(path, k)

        table(ctx, path, t, JOB_KEYS, ("hosts",))
        jname = name(ctx, p("name"), t.get("name", "job%d" % i))
        if any(j.name == jname for j in jobs):
            raise ctx.err(p("name"), "duplicate job name %r" % jname)
        hosts = job_hosts(ctx, p("hosts"), t["hosts"], hcas, nodes, seed)
        if len(hosts) < 2:
            raise ctx.err(p("hosts"), "a job needs at least 2 hosts, got %d" % len(hosts))
        for h in hosts:
            if comp.get(h) is None or comp[h] != comp.get(hosts[0]):
                raise ctx.err(p("hosts"), "%r cannot be reached from %r" % (h, hosts[0]))
        programs: list[list[Step]] | None = None
        names: list[str] = []
        if "trace" in t:
            programs, names = _trace(ctx, path, t, len(hosts), source)
            hosts = hosts[:len(programs)]
        else:
            for k in ("compute_scale", "algorithm"):
                if k in t:
                    raise ctx.err(p(k), "only used with trace (the job replays no trace)")
        job = JobSpec(jname, hosts)
        job.shared = boolean(ctx, p("shared"), t.get("shared", False))
        for h in hosts:
            if h in owner:
                other = jobs[owner[h]]
                if not (job.shared and other.shared):
                    raise ctx.err(p("hosts"), "host %r is also a host of job %r (job[%d]); set shared = true on "
                                  "both jobs to let them share hosts" % (h, other.name, owner[h]))
            else:
                owner[h] = i
        job.op = string(ctx, p("op"), t.get("op", "send"), ("send", "write"))
        job.sl = integer(ctx, p("sl"), t.get("sl", 0), 0, 15)
        job.start = ctx.conv(p("start"), parse_time, t.get("start", 0))
        if job.start < 0:
            raise ctx.err(p("start"), "must not be negative")
        limit = integer(ctx, p("max_messages"), t.get("max_messages", MAX_JOB_MESSAGES), 1)
        if programs is not None:
            job.trace, job.programs, job.op_names = t["trace"], programs, names
            total = sum(len(st.sends) for steps in programs for st in steps)
            if total > limit:
                raise ctx.err(p("max_messages"), "the trace sends %d messages, more than max_messages = %d "
                              "(raise it to allow)" % (total, limit))
        else:
            if "ops" not in t:
                raise ctx.err(p("ops"), "missing (the job's operations, or a trace)")
            job.ops = parse_ops(ctx, p("ops"), t["ops"], len(hosts))
            job.op_names = [op.label() for op in job.ops]
            _guard(ctx, p("max_messages"), job, limit)
            try:
                job.programs = program(job.ops, len(hosts))
            except ValueError as e:
                raise ctx.err(p("ops"), str(e)) from None
        for src, dst in job.pairs():
            fname = job_flow_name(jname, hosts[src], hosts[dst])
            if fname in taken:
                raise ctx.err(p("name"), "flow name %r is taken (a [[flow]] or [[traffic]] has it)" % fname)
            taken.add(fname)
            out.append(FlowSpec(fname, hosts[src], hosts[dst], op=job.op, pattern=JOB_PATTERN, sl=job.sl,
                                group=jname))
        jobs.append(job)
    return jobs, out


def _trace(ctx: Checker, path: str, t: dict[str, Any], n: int, source: str | None
           ) -> tuple[list[list[Step]], list[str]]:
    """The steps of the ranks of the job at *path* replaying its ``trace`` on *n* hosts."""
    def p(k: str) -> str:
        return join(path, k)

    if "ops" in t:
        raise ctx.err(p("ops"), "give only one of ops, trace")
    scale = number(ctx, p("compute_scale"), t.get("compute_scale", 1))
    if not 0 <= scale <= 1e6:
        raise ctx.err(p("compute_scale"), "must be between 0 and 1e6, got %g" % scale)
    kinds = sorted({k for k, _ in COLLECTIVES.values()})
    algs = t.get("algorithm", {})
    table(ctx, p("algorithm"), algs, kinds)
    algorithms = {k: string(ctx, join(p("algorithm"), k), v, ALGORITHMS[k]) for k, v in algs.items()}
    f = string(ctx, p("trace"), t["trace"])
    f = os.path.join(os.path.dirname(source), f) if source else f
    try:
        rec = read_trace(f)
        if rec.ranks > n:
            raise TraceError("the trace has %d ranks, more than the job's %d hosts" % (rec.ranks, n))
        if rec.ranks < 2:
            raise TraceError("the trace has %d rank; a job needs at least 2" % rec.ranks)
        return replay(rec, algorithms, scale)
    except TraceError as e:
        raise ctx.err(p("trace"), "%s: %s" % (f, e)) from None


def _guard(ctx: Checker, path: str, job: JobSpec, limit: int) -> None:
    """Refuse, before expanding them, more messages than *limit*."""
    n = len(job.hosts)
    per = {"allreduce": 2 * n, "allgather": n, "reduce_scatter": n, "alltoall": n, "broadcast": 1,
           "barrier": 64, "halo": 6}
    total = 0
    for op in job.ops:
        total += op.iterations * (len(op.messages) if op.kind == "p2p" else n * per[op.kind])
    if total > limit:
        raise ctx.err(path, "the job sends about %d messages, more than max_messages = %d (raise it to allow)"
                      % (total, limit))


def _components(nodes: dict[str, str], links: list[LinkSpec]) -> dict[str, int]:
    """Node -> its connected component (through switches) for every linked node."""
    nbr: dict[str, list[str]] = {}
    for ln in links:
        nbr.setdefault(ln.a, []).append(ln.b)
        nbr.setdefault(ln.b, []).append(ln.a)
    comp: dict[str, int] = {}
    for start in nbr:
        if start in comp:
            continue
        cid, todo = len(comp), [start]
        comp[start] = cid
        while todo:
            x = todo.pop()
            if nodes.get(x) == "hca" and x != start:
                continue                    # an HCA does not forward
            for y in nbr[x]:
                if y not in comp:
                    comp[y] = cid
                    todo.append(y)
    return comp
