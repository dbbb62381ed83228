"""Response functions FIMD, LIPD, AIMD (ibemu.cc.hp.functions): the formulas of seed 003
§6.2, the design principles of seed 003 §6.1 (congestion avoidance, convergence,
responsiveness) = the rules of seed 000 §5.1.1, for continuous rates and for the
discrete IPD tables, and the recovery times of Figure 6."""
from __future__ import annotations

import math

import pytest

from ibemu.cc.hp.functions import AIMD, FIMD, LIPD, RateTable, WindowTable, ipd_rate, make_function

NAMES = ["fimd", "lipd", "aimd"]
RMIN = 1 / 256


def steps_down(fn, r1, r2):
    """Marks to bring a flow from r1 to r2 or below (continuous)."""
    n = 0
    while r1 > r2 * (1 + 1e-12):
        r1 = fn.dec(r1)
        n += 1
    return n


def steps_up(fn, r2, r1):
    """Unmarked ACKs to bring a flow from r2 to r1 or above (continuous)."""
    n = 0
    while r2 < r1 * (1 - 1e-12):
        r2 = fn.inc(r2)
        n += 1
    return n


def time_up(fn, r2, r1):
    """Time (packet times) for unmarked ACKs, one per 1/r, to bring r2 back to r1."""
    t = 0.0
    while r2 < r1 * (1 - 1e-9):
        t += 1 / r2
        r2 = fn.inc(r2)
    return t


# ---------------------------------------------------------------- formulas (seed 003 §6.2)
@pytest.mark.parametrize("r", [RMIN, 0.01, 0.1, 0.3, 0.77])
def test_increase_and_decrease_formulas(r):
    f, l, a = FIMD(256, 2), LIPD(256), AIMD(256, 2)
    assert f.dec(r) == pytest.approx(max(r / 2, RMIN))
    assert f.inc(r) == pytest.approx(min(r * 2 ** (RMIN / r), 1))
    assert l.dec(r) == pytest.approx(max(1 / (1 / r + 1), RMIN))
    assert l.inc(r) == pytest.approx(min(r / (1 - RMIN), 1))
    assert a.dec(r) == pytest.approx(max(r / 2, RMIN))
    assert a.inc(r) == pytest.approx(min(r + RMIN ** 2 / r, 1))


@pytest.mark.parametrize("name", NAMES)
def test_every_mark_decreases_unless_at_rmin(name):
    fn = make_function(name)
    for r in (1.0, 0.5, 0.1, 2 * RMIN):
        assert fn.dec(r) < r
    assert fn.dec(RMIN) == RMIN


# ---------------------------------------------------------------- principles (003 §6.1 / 000 §5.1.1)
@pytest.mark.parametrize("name", NAMES)
def test_congestion_avoidance_marks_down_not_more_than_unmarked_acks_up(name):
    fn = make_function(name)
    rates = [1.0, 0.7, 0.5, 0.3, 0.1, 0.05, 0.01, 3 * RMIN, RMIN]
    for r1 in rates:
        for r2 in rates:
            if r1 > r2:
                assert steps_down(fn, r1, r2) <= steps_up(fn, r2, r1), (r1, r2)


@pytest.mark.parametrize("name", ["fimd", "lipd"])
def test_convergence_recovery_from_one_mark_takes_constant_time_T(name):
    fn = make_function(name)
    for r in (0.9, 0.5, 0.2, 0.05, 0.02, 2.5 * RMIN):
        assert fn.tau(r) - fn.tau(fn.dec(r)) == pytest.approx(fn.T)
        # ACK by ACK: within one ACK interval (the last ACK may overshoot)
        assert abs(time_up(fn, fn.dec(r), r) - fn.T) <= 1 / fn.dec(r) + 1e-6, r


@pytest.mark.parametrize("name", NAMES)
def test_convergence_lower_rate_recovers_no_later(name):
    fn = make_function(name)
    rates = [2 * RMIN, 0.01, 0.05, 0.1, 0.25, 0.5, 0.9]
    times = [fn.tau(r) - fn.tau(fn.dec(r)) for r in rates]
    for lo, hi in zip(times, times[1:]):
        assert lo <= hi * (1 + 1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_responsiveness_one_unmarked_ack_recovers_from_rmin(name):
    fn = make_function(name)
    r = 1 / (1 / RMIN - 1) if name == "lipd" else 2 * RMIN    # one mark from r lands on Rmin
    assert fn.dec(r) == pytest.approx(RMIN)
    assert fn.inc(RMIN) == pytest.approx(r)


# ---------------------------------------------------------------- discrete tables
def test_lipd_table_is_ipd_plus_minus_one_with_rpi_256_over_ipd_plus_one():
    t = RateTable(LIPD(256))
    for ipd in range(1, 255):
        assert t.dec[ipd] == ipd + 1
        assert t.inc[ipd] == ipd - 1
        assert abs(t.rpi[ipd] - 256 / (ipd + 1)) <= 1
    assert t.dec[255] == 255 and t.rpi[255] == 1             # responsiveness


def test_fimd_table_doubles_the_ipd_plus_one():
    t = RateTable(FIMD(256, 2))
    for ipd in range(0, 127):
        assert t.dec[ipd] == 2 * ipd + 1
    assert t.inc[255] == 127 and t.rpi[255] == 1             # one ACK back from Rmin


@pytest.mark.parametrize("name,acks", [
    ("lipd", 128),     # LIPD: a mark takes IPD 0 to 1 (rate 1/2); F returns in T = 256 packet times (eq. 2)
    ("fimd", 128),     # FIMD m=2: rate 1 -> 1/2; back in T = 256 packet times (eq. 2)
    ("aimd", 16384),   # AIMD m=2: 1 -> 1/2, slope (m-1)Rmin^2: (1/2) / (1/256)^2 = 32768 packet times
])
def test_rpi_at_rmax_is_the_acks_f_takes_back_from_one_mark(name, acks):
    # seed 000 §5.1.3.1: once RPI reaches zero "RPI is assigned a new value that specifies the
    # number of data packets to be acknowledged via unmarked ACK packets before the next
    # increase", a value that "depends on the revised CIPD setting"; at IPD 0 the next increase
    # can only come after a mark, from IPD 1, where ACKs arrive every 2 packet times
    t = RateTable(make_function(name))
    assert t.dec[0] == 1
    assert t.rpi[0] == acks


@pytest.mark.parametrize("name", NAMES)
def test_discrete_principles(name):
    t = RateTable(make_function(name))
    n = 256

    def acks_up(a, b):                                       # ipd a -> ipd b (b < a)
        k = 0
        while a > b:
            k += t.rpi[a]
            a = t.inc[a]
        return k

    def marks_down(b, a):
        k = 0
        while b < a:
            b = t.dec[b]
            k += 1
        return k
    for ipd in range(n - 1):
        assert t.dec[ipd] > ipd and t.inc[ipd + 1] <= ipd and t.rpi[ipd + 1] >= 1
    for b in (0, 1, 3, 10, 40, 100):
        for a in (5, 20, 60, 128, 255):
            if a > b:
                assert marks_down(b, a) <= acks_up(a, b), (b, a)
    # responsiveness: a flow one mark above Rmin is back after one unmarked ACK
    prior = next(i for i in range(n - 1, -1, -1) if t.dec[i] == n - 1 and i < n - 1 and
                 all(t.dec[j] == n - 1 for j in range(i, n - 1)))
    assert t.rpi[n - 1] == 1 and t.inc[n - 1] <= prior


# ---------------------------------------------------------------- Figure 6
@pytest.mark.parametrize("name,ms", [("fimd", 4.2), ("lipd", 133.7), ("aimd", 133.7)])
def test_recovery_time_rmin_to_rmax_matches_figure_6(name, ms):
    fn = make_function(name)
    packet_ms = 2048 / 1e9 * 1e3
    assert fn.recovery_time() * packet_ms == pytest.approx(ms, rel=0.01)
    assert time_up(fn, RMIN, 1.0) * packet_ms == pytest.approx(ms, rel=0.01)
    assert RateTable(fn).recovery_time() * packet_ms == pytest.approx(ms, rel=0.01)


def test_fimd_recovers_32_times_faster_than_lipd_and_aimd_equal_to_lipd():
    f, l, a = (make_function(n).recovery_time() for n in NAMES)
    assert l / f == pytest.approx(255 / 8, rel=1e-6)        # 255 T against log2(256) T
    assert a == pytest.approx(l, rel=1e-9)


def test_window_table_halves_and_adds_one_per_window():
    w = WindowTable(8)
    assert [w.dec(c) for c in (1, 2, 5, 8)] == [1, 1, 2, 4]
    assert [w.inc(c) for c in (1, 7, 8)] == [2, 8, 8]
    assert w.rpi(4) == 4
    # congestion avoidance for windows: marks down <= unmarked ACKs up
    for w1 in range(2, 9):
        for w2 in range(1, w1):
            down, c = 0, w1
            while c > w2:
                c, down = w.dec(c), down + 1
            up, c = 0, w2
            while c < w1:
                up, c = up + w.rpi(c), w.inc(c)
            assert down <= up


def test_levels_set_rmin():
    fn = make_function("lipd", levels=64)
    assert fn.rmin == 1 / 64 and RateTable(fn).dec[62] == 63
    assert math.isclose(ipd_rate(3), 0.25)
