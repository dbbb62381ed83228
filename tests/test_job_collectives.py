"""The collective algorithms of ibemu.fabric.job as pure functions (issue 29 Deliver 1):
who sends what to whom in each round, checked against what each algorithm must achieve
(every rank ends with every contribution; the byte counts of the papers)."""
from __future__ import annotations

import math

import pytest

from ibemu.fabric.job.binomial import binomial_broadcast
from ibemu.fabric.job.dissemination import dissemination_barrier
from ibemu.fabric.job.doubling import recursive_doubling_allreduce
from ibemu.fabric.job.pairwise import pairwise_alltoall
from ibemu.fabric.job.ring import ring_allgather, ring_allreduce, ring_reduce_scatter
from ibemu.fabric.job.rounds import Schedule
from ibemu.fabric.job.stencil import balanced_grid, halo_exchange


def matched(sched: Schedule) -> None:
    """Every message sent is received, pair by pair, as often as it is sent."""
    sent: dict[tuple[int, int], int] = {}
    got: dict[tuple[int, int], int] = {}
    for r, rounds in enumerate(sched):
        for sends, recvs in rounds:
            for p, nbytes in sends:
                assert nbytes >= 1 and p != r
                sent[(r, p)] = sent.get((r, p), 0) + 1
            for p in recvs:
                got[(p, r)] = got.get((p, r), 0) + 1
    assert sent == got


def knowledge(sched: Schedule) -> list[set[int]]:
    """Replay the rounds in dependency order, each message carrying everything its
    sender knew when it posted it; returns what each rank knows at the end (and fails
    on a deadlock)."""
    n = len(sched)
    know = [{r} for r in range(n)]
    k = [0] * n                          # the round each rank is in
    posted = [False] * n
    inbox: dict[tuple[int, int], list[set[int]]] = {}
    progress = True
    while progress:
        progress = False
        for r in range(n):
            while k[r] < len(sched[r]):
                sends, recvs = sched[r][k[r]]
                if not posted[r]:
                    for p, _ in sends:
                        inbox.setdefault((r, p), []).append(set(know[r]))
                    posted[r] = True
                    progress = True
                need: dict[int, int] = {}
                for p in recvs:
                    need[p] = need.get(p, 0) + 1
                if any(len(inbox.get((p, r), [])) < c for p, c in need.items()):
                    break
                for p in recvs:
                    know[r] |= inbox[(p, r)].pop(0)
                k[r] += 1
                posted[r] = False
                progress = True
    assert all(k[r] == len(sched[r]) for r in range(n)), "deadlock"
    return know


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_ring_allreduce_is_2_n_minus_1_rounds_of_s_over_n(n):
    # Patarasuk & Yuan: 2(N-1) steps of S/N bytes to the right neighbour
    s = 4096 * n
    sched = ring_allreduce(n, s)
    matched(sched)
    for r, rounds in enumerate(sched):
        assert len(rounds) == 2 * (n - 1)
        assert all(sends == [((r + 1) % n, s // n)] and recvs == [(r - 1) % n] for sends, recvs in rounds)
    assert all(know == set(range(n)) for know in knowledge(sched))


def test_ring_chunks_split_an_uneven_buffer_whole_bytes():
    sched = ring_reduce_scatter(3, 10)          # chunks 4, 3, 3
    sizes = sorted(b for r in sched for sends, _ in r for _, b in sends)
    assert sizes == [3, 3, 3, 3, 4, 4]          # 3 ranks x 2 rounds, each chunk sent twice
    assert sum(b for sends, _ in ring_allgather(3, 10)[0] for _, b in sends) == 7   # chunks (0+1-0), (0+1-1): 3+4


def test_ring_reduce_scatter_reaches_everyone_only_after_allgather():
    n = 6
    rs = knowledge(ring_reduce_scatter(n, 600))
    assert all(len(k) == n for k in rs)     # each rank's own chunk sum has every contribution
    matched(ring_allgather(n, 600))


@pytest.mark.parametrize("n", [2, 4, 16])
def test_recursive_doubling_exchanges_the_whole_buffer_log2_n_times(n):
    sched = recursive_doubling_allreduce(n, 1000)
    matched(sched)
    for r, rounds in enumerate(sched):
        assert [s for s, _ in rounds] == [[(r ^ (1 << k), 1000)] for k in range(int(math.log2(n)))]
    assert all(know == set(range(n)) for know in knowledge(sched))


def test_recursive_doubling_needs_a_power_of_two():
    with pytest.raises(ValueError, match="power-of-two"):
        recursive_doubling_allreduce(6, 10)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_pairwise_alltoall_sends_each_pair_once_a_permutation_per_round(n):
    sched = pairwise_alltoall(n, 77)
    matched(sched)
    pairs = [(r, p) for r in range(n) for sends, _ in sched[r] for p, _ in sends]
    assert sorted(pairs) == [(a, b) for a in range(n) for b in range(n) if a != b]
    for k in range(n - 1):
        assert sorted(sched[r][k][0][0][0] for r in range(n)) == list(range(n))


@pytest.mark.parametrize("n,root", [(2, 0), (7, 0), (8, 3), (13, 12)])
def test_binomial_broadcast_is_mpichs_tree(n, root):
    sched = binomial_broadcast(n, 100, root)
    matched(sched)
    received = [sum(len(rv) for _, rv in sched[r]) for r in range(n)]
    assert received == [0 if r == root else 1 for r in range(n)]
    assert root in set.intersection(*knowledge(sched))
    # MPICH: relative rank v receives from v minus its lowest set bit, so the hops from
    # the root to v are v's set bits
    parent = {r: sched[r][0][1][0] for r in range(n) if r != root}
    for r in range(n):
        v = (r - root) % n
        assert _depth(parent, r, root) == bin(v).count("1")
        if v:
            assert (parent[r] - root) % n == v - (v & -v)


def _depth(parent: dict[int, int], r: int, root: int) -> int:
    d = 0
    while r != root:
        r, d = parent[r], d + 1
    return d


@pytest.mark.parametrize("n", [2, 3, 6, 9])
def test_dissemination_barrier_everyone_hears_from_everyone(n):
    sched = dissemination_barrier(n)
    matched(sched)
    assert all(len(rounds) == math.ceil(math.log2(n)) for rounds in sched)
    assert all(know == set(range(n)) for know in knowledge(sched))


def test_balanced_grid_is_mpi_dims_create():
    assert balanced_grid(16, 2) == [4, 4]
    assert balanced_grid(12, 2) == [4, 3]
    assert balanced_grid(64, 3) == [4, 4, 4]
    assert balanced_grid(7, 2) == [7, 1]


@pytest.mark.parametrize("grid,degree", [([4, 4], 4), ([2, 2, 2], 6), ([4, 3, 2], 6), ([5, 1], 2)])
def test_halo_exchange_sends_to_the_2d_neighbours(grid, degree):
    sched = halo_exchange(grid, 512)
    matched(sched)
    assert all(len(rounds) == 1 and len(rounds[0][0]) == degree == len(rounds[0][1]) for rounds in sched)
    # row-major neighbours of rank 0 on a 4 x 4 grid: (0,1) = 1, (0,3) = 3, (1,0) = 4, (3,0) = 12
    if grid == [4, 4]:
        assert sorted(p for p, _ in sched[0][0][0]) == [1, 3, 4, 12]
