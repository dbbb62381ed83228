"""Message latency and flow completion time (issue 13, deliverable 2): the statistics
of a set of samples, and the join of a flow's message starts and completions.

A message's latency is the time from its first byte sent (the first byte of its first
packet on the source's link; for an RDMA READ, of the READ request) to its last byte
delivered (the tail of its last packet at the receiver; for a READ, of the last READ
response at the requester).  A finite flow's completion time (pattern ``messages``) runs
from the first byte of its first message to the last byte of its last one.  Messages
still in flight at the end of the run, and lost UD datagrams, have no latency; they are
the difference between ``started`` and ``count``.

Percentiles are nearest-rank (numpy ``method="inverted_cdf"``): the p-th percentile is
the smallest sample such that at least p % of the samples are at or below it, so every
reported figure is a latency some message actually had (in integer ps).
"""
from __future__ import annotations

import math
from array import array
from typing import Any, TypeAlias

import numpy as np

Times: TypeAlias = "array[int]"             # array("q"): emulated ps

PERCENTILES = (50, 99)


def latency_stats(samples: np.ndarray) -> dict[str, Any] | None:
    """``count``, ``p50_ps``, ``p99_ps``, ``max_ps`` and ``mean_ps`` of *samples* (ps);
    None when there are none.  Percentiles nearest-rank (see the module)."""
    x = np.asarray(samples, dtype=np.int64)
    if x.size == 0:
        return None
    s = np.sort(x)
    n = int(x.size)
    p50, p99 = (int(s[nearest_rank(n, p)]) for p in PERCENTILES)
    return {"count": n, "p50_ps": p50, "p99_ps": p99, "max_ps": int(s[-1]), "mean_ps": float(x.mean())}


def nearest_rank(n: int, p: float) -> int:
    """The index, among *n* sorted samples, of the nearest-rank *p*-th percentile: the
    smallest k with at least p % of the samples at or below sample k, computed as numpy's
    ``inverted_cdf`` does (issue 28: :func:`numpy.percentile` cost 0.2 ms a call, at
    11,664 flows 2 s): ``i = n * (p / 100) - 1`` in floats, k = i when whole, else the
    next integer up, and at least 0."""
    i = n * (p / 100) - 1
    k = math.floor(i)
    return max(0, k if i == k else k + 1)


def join(starts: Times, done_seq: Times, done_t: Times) -> tuple[np.ndarray, np.ndarray]:
    """(latency, completion time) of every completed message, in ps, in completion order.

    *starts*: start time of message k at index k (-1: not recorded); *done_seq*,
    *done_t*: the number and time of each completed message.  A completion whose start
    was not recorded (e.g. a worker that died) is left out."""
    st = np.frombuffer(starts, dtype=np.int64) if len(starts) else np.zeros(0, dtype=np.int64)
    seq = np.frombuffer(done_seq, dtype=np.int64) if len(done_seq) else np.zeros(0, dtype=np.int64)
    t = np.frombuffer(done_t, dtype=np.int64) if len(done_t) else np.zeros(0, dtype=np.int64)
    ok = (seq >= 0) & (seq < st.size)
    seq, t = seq[ok], t[ok]
    t0 = st[seq]
    ok = t0 >= 0
    lat: np.ndarray = t[ok] - t0[ok]
    done: np.ndarray = t[ok]
    return lat, done


def completion_time(starts: Times, done_seq: Times, done_t: Times, count: int) -> int | None:
    """A finite flow's completion time (ps): from its first message's first byte to the
    last byte of the last of its *count* messages; None until all *count* are delivered."""
    if count <= 0 or len(starts) == 0 or starts[0] < 0:
        return None
    seq = np.frombuffer(done_seq, dtype=np.int64) if len(done_seq) else np.zeros(0, dtype=np.int64)
    mine = seq < count
    if np.unique(seq[mine]).size < count:
        return None
    t = np.frombuffer(done_t, dtype=np.int64)
    return int(t[mine].max()) - int(starts[0])
