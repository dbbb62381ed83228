"""OTF2 trace replay (issue 29 Deliver 2 and its acceptance): traces written here with the
otf2 package's own writer -- a ring exchange, an all-to-all, a 2-D stencil halo, an
allreduce -- replay with the same completion times as the equivalent ``[[job]]``
operations, and ``compute_scale`` scales the compute time between MPI calls.

Why the times are *equal*, not merely close: the replay turns the trace into the same
rank steps the ``[[job]]`` operation expands to (same messages, same order, same
dependencies, same compute), and a virtual-time run with a fixed seed is deterministic,
so every packet leaves at the same picosecond.  The tests check the steps too, so a
difference in the steps is reported as such rather than as a time.

The fabric is tests/test_job_timing.py's: fat_tree2, radix 8, 2 leaves (8 hosts,
non-blocking), 4X SDR links without propagation delay, ACKs coalesced.
"""
from __future__ import annotations

import pytest

from ibemu.run import run_virtual
from ibemu.scenario.read import scenario_from_dict
from ibemu.units import PS_PER_US
from ibemu.validate import ScenarioError

otf2 = pytest.importorskip("otf2")          # the traces extra; CI's test extra includes it
from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole  # noqa: E402

N = 8
TICKS_PER_S = 10**9                         # the traces' timer: one tick a nanosecond


class RankWriter:
    """Writes one rank's MPI calls; each call takes no time, so the trace's compute time
    is exactly what :meth:`compute` adds."""

    def __init__(self, w, r, world, region, comms):
        self.w, self.r, self.world, self.region, self.comms = w, r, world, region, comms
        self.t = 0
        self.req = 0

    def compute(self, us: float) -> None:
        self.t += round(us * 1000)

    def _call(self, name, role, *events):
        reg = self.region(name, role)
        self.w.enter(self.t, reg)
        for ev, args in events:
            getattr(self.w, ev)(self.t, *args)
        self.w.leave(self.t, reg)

    def exchange(self, sends, recvs):
        """MPI_Irecv for each (peer, bytes) of *recvs*, MPI_Isend for each of *sends*,
        then one MPI_Waitall."""
        reqs = []
        for peer, size in recvs:
            self.req += 1
            reqs.append((self.req, peer, size))
            self._call("MPI_Irecv", RegionRole.POINT2POINT, ("mpi_irecv_request", (self.req,)))
        done = []
        for peer, size in sends:
            self.req += 1
            self._call("MPI_Isend", RegionRole.POINT2POINT,
                       ("mpi_isend", (peer, self.world, 0, size, self.req)))
            done.append(("mpi_isend_complete", (self.req,)))
        done += [("mpi_irecv", (peer, self.world, 0, size, q)) for q, peer, size in reqs]
        self._call("MPI_Waitall", RegionRole.POINT2POINT, *done)

    def sendrecv(self, dst, src, size):
        """MPI_Sendrecv: a blocking send and a blocking receive in one call."""
        self._call("MPI_Sendrecv", RegionRole.POINT2POINT, ("mpi_send", (dst, self.world, 0, size)),
                   ("mpi_recv", (src, self.world, 0, size)))

    def recv(self, src, size):
        self._call("MPI_Recv", RegionRole.POINT2POINT, ("mpi_recv", (src, self.world, 0, size)))

    def collective(self, name, op, sent, received, root=0xFFFFFFFF, comm=None):
        self._call(name, RegionRole.COLL_ALL2ALL, ("mpi_collective_begin", ()),
                   ("mpi_collective_end", (op, self.comms[comm] if comm else self.world, root, sent, received)))


def write_trace(folder, n, body, comms=None):
    """An OTF2 archive in *folder* of *n* MPI ranks, rank r's calls made by body(rank
    writer), with MPI_COMM_WORLD and the communicators *comms* (name -> its ranks);
    returns the anchor file's path."""
    with otf2.writer.open(str(folder), timer_resolution=TICKS_PER_S) as tr:
        d = tr.definitions
        node = d.system_tree_node("node")
        locs = [d.location("main", group=d.location_group("rank %d" % r, system_tree_parent=node))
                for r in range(n)]
        d.group("MPI_COMM_WORLD locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                members=locs)
        world = d.comm("MPI_COMM_WORLD", group=d.group("world", group_type=GroupType.COMM_GROUP,
                                                        paradigm=Paradigm.MPI, members=list(range(n))))
        subs = {name: d.comm(name, group=d.group(name, group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                                                 members=ranks)) for name, ranks in (comms or {}).items()}
        regions = {}

        def region(name, role):
            if name not in regions:
                regions[name] = d.region(name, paradigm=Paradigm.MPI, region_role=role)
            return regions[name]

        for r in range(n):
            body(RankWriter(tr.event_writer_from_location(locs[r]), r, world, region, subs))
    return folder / "traces.otf2"


def scenario(tmp_path, job, hosts=N):
    raw = {"template": {"name": "fat_tree2", "radix": 8, "leaves": 2},
           "scenario": {"name": "replay", "duration": "2ms"},
           "defaults": {"link": {"propagation": "0ns"}, "hca": {"ack_every": 64}},
           "job": [dict({"name": "j", "hosts": {"first": hosts}}, **job)]}
    return scenario_from_dict(raw, label="replay.toml", source=str(tmp_path / "replay.toml"))


def steps(scn):
    return [[repr(s) for s in prog] for prog in scn.jobs[0].programs]


def completion(scn):
    job = run_virtual(scn).summary["jobs"]["j"]
    assert job["completed"]
    return job


def assert_same_run(tmp_path, body, ops, **trace_keys):
    """The trace *body* wrote and the [[job]] *ops* make the same steps and the same
    completion time; returns the replay's job summary."""
    write_trace(tmp_path / "app", N, body)
    replayed = scenario(tmp_path, dict({"trace": "app/traces.otf2"}, **trace_keys))
    equivalent = scenario(tmp_path, {"ops": ops})
    got, want = completion(replayed), completion(equivalent)
    if ops[0]["type"] != "p2p":      # p2p iterations are one op of the trace (no collective between)
        assert steps(replayed) == steps(equivalent)
    assert got["completion_ps"] == want["completion_ps"], (got["completion_ps"], want["completion_ps"])
    return got, want


def test_ring_exchange_replays_as_the_p2p_job(tmp_path):
    # each rank: irecv from r-1, isend 8 KiB to r+1, waitall; 3 times with 10 us of compute
    def body(w):
        for it in range(3):
            if it:
                w.compute(10)
            w.exchange([((w.r + 1) % N, 8192)], [((w.r - 1) % N, 8192)])
    ring = [[r, (r + 1) % N] for r in range(N)]
    got, want = assert_same_run(tmp_path, body, [{"type": "p2p", "messages": ring, "size": 8192, "iterations": 3,
                                                  "compute": "10us"}])
    # 3 messages of 8 KiB (4 packets of 2048 + 26 bytes: >= 8.2 us each) and 20 us of compute
    assert got["completion_ps"] >= 3 * 4 * 2074 * 1000 + 20 * PS_PER_US


def test_alltoall_collective_and_pairwise_sendrecv_replay_as_the_alltoall_job(tmp_path):
    # Score-P records an alltoall of block B as N x B bytes sent (scorep_mpi_coll_bytes_alltoall)
    def coll(w):
        w.collective("MPI_Alltoall", CollectiveOp.ALLTOALL, N * 4096, N * 4096)

    def pairwise(w):
        for k in range(1, N):
            w.sendrecv((w.r + k) % N, (w.r - k) % N, 4096)
    op = [{"type": "alltoall", "size": 4096}]
    assert_same_run(tmp_path, coll, op)
    (tmp_path / "pairwise").mkdir()
    assert_same_run(tmp_path / "pairwise", pairwise, op)


def test_stencil_halo_replays_as_the_halo_job(tmp_path):
    # a periodic 4 x 2 grid (row-major ranks): irecv from and isend to the 4 neighbours
    # (-1, +1 along x, then along y; along y, of extent 2, both are the same rank)
    def peers(r):
        x, y = divmod(r, 2)
        return [((x - 1) % 4) * 2 + y, ((x + 1) % 4) * 2 + y, x * 2 + (y - 1) % 2, x * 2 + (y + 1) % 2]

    def body(w):
        w.exchange([(p, 2048) for p in peers(w.r)], [(p, 2048) for p in peers(w.r)])
    assert_same_run(tmp_path, body, [{"type": "halo", "grid": [4, 2], "size": 2048}])


def test_allreduce_expands_by_the_jobs_algorithm(tmp_path):
    # Score-P records an allreduce of S bytes as N x S sent (scorep_mpi_coll_bytes_allreduce)
    def body(w):
        for it in range(2):
            if it:
                w.compute(5)
            w.collective("MPI_Allreduce", CollectiveOp.ALLREDUCE, N * 16384, N * 16384)
    got, want = assert_same_run(
        tmp_path, body, [{"type": "allreduce", "algorithm": "recursive_doubling", "size": 16384, "iterations": 2,
                          "compute": "5us"}], algorithm={"allreduce": "recursive_doubling"})
    assert [o["op"] for o in got["ops"]] == ["allreduce/recursive_doubling"]
    assert got["ops"][0]["iteration_ps"] == want["ops"][0]["iteration_ps"]


def test_a_collective_on_a_communicator_of_some_ranks_runs_on_those(tmp_path):
    # the even ranks' allreduce of 4 KiB (Score-P: 4 x 4 KiB sent) on their communicator
    # is the allreduce of a job on the even hosts; the odd ranks have no part in it
    def body(w):
        if w.r % 2 == 0:
            w.collective("MPI_Allreduce", CollectiveOp.ALLREDUCE, 4 * 4096, 4 * 4096, comm="even")
    write_trace(tmp_path / "app", N, body, comms={"even": [0, 2, 4, 6]})
    replayed = scenario(tmp_path, {"trace": "app/traces.otf2"})
    raw = {"hosts": ["h0", "h2", "h4", "h6"], "ops": [{"type": "allreduce", "size": 4096}]}
    alone = scenario_from_dict({"template": {"name": "fat_tree2", "radix": 8, "leaves": 2},
                                "scenario": {"name": "replay", "duration": "2ms"},
                                "defaults": {"link": {"propagation": "0ns"}, "hca": {"ack_every": 64}},
                                "job": [dict({"name": "j"}, **raw)]})
    assert steps(replayed)[1] == ["Step([], [], op=0, iteration=0, compute=0, first, last)"]
    assert completion(replayed)["completion_ps"] == completion(alone)["completion_ps"]


def test_compute_scale_scales_the_time_between_mpi_calls(tmp_path):
    # two ring exchanges 10 us of compute apart.  While the ranks compute the fabric is
    # idle (a 2-KiB message and its ACK take ~2.2 us < 5 us), so the run after the compute
    # is the same run shifted: the completion grows by exactly the scaled compute time
    # (allowing one packet's time, 2074 ns, for the phase of the links' flow-control
    # packets, which do not shift).
    def body(w):
        w.exchange([((w.r + 1) % N, 2048)], [((w.r - 1) % N, 2048)])
        w.compute(10)
        w.exchange([((w.r + 1) % N, 2048)], [((w.r - 1) % N, 2048)])
    write_trace(tmp_path / "app", N, body)
    t = {s: completion(scenario(tmp_path, {"trace": "app/traces.otf2", "compute_scale": s}))["completion_ps"]
         for s in (0.5, 1, 2.5)}
    for s in (0.5, 2.5):
        assert abs(t[s] - t[1] - (s - 1) * 10 * PS_PER_US) <= 2074 * 1000, (s, t)
    ring = [[r, (r + 1) % N] for r in range(N)]
    scaled = scenario(tmp_path, {"ops": [{"type": "p2p", "messages": ring, "size": 2048, "iterations": 2,
                                          "compute": "25us"}]})
    assert completion(scaled)["completion_ps"] == t[2.5]


def test_a_trace_of_fewer_ranks_runs_on_the_first_hosts(tmp_path):
    def body(w):
        w.sendrecv((w.r + 1) % 4, (w.r - 1) % 4, 100)
    write_trace(tmp_path / "app", 4, body)
    scn = scenario(tmp_path, {"trace": "app/traces.otf2"})
    assert scn.jobs[0].hosts == ["h0", "h1", "h2", "h3"]
    assert completion(scn)["ranks"] == 4


# Bad input (issue 29 Deliver 5): one line naming the scenario file, the key, the trace
# and the reason.

def bad(tmp_path, job, hosts=N):
    with pytest.raises(ScenarioError) as e:
        scenario(tmp_path, job, hosts)
    line = str(e.value)
    assert "\n" not in line and line.startswith("replay.toml: job[0]."), line
    return line


def ring_of(n):
    def body(w):
        w.sendrecv((w.r + 1) % n, (w.r - 1) % n, 100)
    return body


def test_a_missing_trace_is_one_line(tmp_path):
    line = bad(tmp_path, {"trace": "gone.otf2"})
    assert line == "replay.toml: job[0].trace: %s: no such file" % (tmp_path / "gone.otf2")


@pytest.mark.parametrize("name,content,reason", [
    ("app.otf2", b"[scenario]\nname = 'x'\n", "not an OTF2 trace (no OTF2 anchor-file header)"),
    ("app.otf2", b"", "not an OTF2 trace"),
    ("app.txt", b"\x03BOTF2\x00", "its name must end in .otf2"),
    ("app.otf2", b"\x03BOTF2\x00\x03\x02", "the OTF2 archive is incomplete: app.def and the folder app/"),
])
def test_a_file_that_is_not_otf2_is_one_line(tmp_path, name, content, reason):
    (tmp_path / name).write_bytes(content)
    assert reason in bad(tmp_path, {"trace": name})


def test_a_broken_archive_is_one_line(tmp_path, capfd):
    anchor = write_trace(tmp_path / "app", 2, ring_of(2))
    (anchor.parent / "traces.def").write_bytes(b"garbage")
    capfd.readouterr()
    assert "trace: %s: not a readable OTF2 archive" % anchor in bad(tmp_path, {"trace": "app/traces.otf2"})
    assert capfd.readouterr().err == ""         # the OTF2 library printed none of its own lines


def test_a_trace_of_more_ranks_than_hosts_is_one_line(tmp_path):
    write_trace(tmp_path / "app", 4, ring_of(4))
    line = bad(tmp_path, {"trace": "app/traces.otf2"}, hosts=3)
    assert line.endswith("traces.otf2: the trace has 4 ranks, more than the job's 3 hosts"), line


def test_a_receive_no_send_matches_is_one_line(tmp_path):
    # rank 1 receives twice from rank 0, which sends it one message
    def body(w):
        if w.r == 0:
            w.sendrecv(1, 1, 64)
        else:
            w.compute(1)
            w.sendrecv(0, 0, 64)
            w.recv(0, 64)
    write_trace(tmp_path / "app", 2, body)
    line = bad(tmp_path, {"trace": "app/traces.otf2"})
    assert line.endswith("rank 1's MpiRecv from rank 0 at 1.000 us: no send matches it "
                         "(its receive #2 from rank 0; rank 0 sends it 1)"), line


def test_a_collective_not_every_rank_makes_is_one_line(tmp_path):
    def body(w):
        if w.r:
            w.collective("MPI_Barrier", CollectiveOp.BARRIER, 0, 0)
    write_trace(tmp_path / "app", 3, body)
    assert "rank 0 of MPI_COMM_WORLD never makes this collective" in bad(tmp_path, {"trace": "app/traces.otf2"})


def test_a_collective_ibemu_does_not_expand_is_one_line(tmp_path):
    def body(w):
        w.collective("MPI_Reduce", CollectiveOp.REDUCE, 64, 64 if w.r == 0 else 0, 0)
    write_trace(tmp_path / "app", 2, body)
    assert "REDUCE is not replayed (ibemu expands ALLREDUCE" in bad(tmp_path, {"trace": "app/traces.otf2"})


@pytest.mark.parametrize("job,key,reason", [
    ({"trace": "a.otf2", "ops": [{"type": "barrier"}]}, "ops", "give only one of ops, trace"),
    ({"ops": [{"type": "barrier"}], "compute_scale": 2}, "compute_scale", "only used with trace"),
    ({"trace": "a.otf2", "compute_scale": -1}, "compute_scale", "between 0 and 1e6"),
    ({"trace": "a.otf2", "algorithm": {"allreduce": "tree"}}, "algorithm.allreduce", "ring"),
    ({"trace": "a.otf2", "algorithm": {"halo": "stencil"}}, "algorithm.halo", "unknown key"),
])
def test_bad_trace_keys_are_one_line(tmp_path, job, key, reason):
    line = bad(tmp_path, job)
    assert line.startswith("replay.toml: job[0].%s: " % key) and reason in line, line
