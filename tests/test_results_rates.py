"""sliding_rates (ibemu/results/rates.py): every row at once, bit for bit what the
sliding window of seed 003 §3 computed one series at a time with numpy.interp (the
reference below: cumulative counts interpolated at the window's ends), and interp_rows
bit for bit numpy.interp on every row."""
import numpy as np
import pytest

from ibemu.results.rates import bin_edges, interp_rows, per_capacity, sliding_rate, sliding_rates
from ibemu.units import PS_PER_S


def reference(c, bin_ps, window_ps, duration_ps=None):
    """One series with numpy.interp: the window [centre - w/2, centre + w/2] clipped to the
    run, its counts (cumulative counts interpolated at its ends) over its length."""
    c = np.asarray(c, dtype=np.float64)
    edges = bin_edges(len(c), bin_ps, duration_ps)
    cum = np.concatenate(([0.0], np.cumsum(c)))
    centres = (edges[:-1] + edges[1:]) / 2
    lo = np.clip(centres - window_ps / 2, 0.0, edges[-1])
    hi = np.clip(centres + window_ps / 2, 0.0, edges[-1])
    return (np.interp(hi, edges, cum) - np.interp(lo, edges, cum)) / ((hi - lo) / PS_PER_S)


def same_bits(a, b):
    """Equal floats with the same sign (so 0.0 and -0.0 differ); NaN equal to NaN."""
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_rows_are_the_one_series_computation_bit_for_bit():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n, rows = int(rng.integers(1, 40)), int(rng.integers(1, 8))
        bin_ps, window_ps = int(rng.integers(1, 10**9)), int(rng.integers(1, 10**10))
        dur = None if rng.random() < 0.3 else int(rng.integers((n - 1) * bin_ps + 1, n * bin_ps + 1))
        kind = rng.integers(0, 3)
        if kind == 0:
            c = rng.integers(0, 10**6, (rows, n)).astype(float)
        elif kind == 1:
            c = rng.random((rows, n)) * 10.0 ** rng.integers(-10, 300)
        else:
            c = rng.choice([0.0, -0.0, 7.0, np.inf, -np.inf, np.nan, 1e308], (rows, n))
        got = sliding_rates(c, bin_ps, window_ps, dur)
        assert got.shape == (rows, n)
        for r in range(rows):
            assert same_bits(got[r], reference(c[r], bin_ps, window_ps, dur))
            assert same_bits(sliding_rate(c[r], bin_ps, window_ps, dur), got[r])


def test_rows_in_parts_are_the_same(monkeypatch):
    from ibemu.results import rates
    c = np.random.default_rng(8).integers(0, 5000, (11, 6)).astype(float)
    whole = sliding_rates(c, 1000, 2500)
    monkeypatch.setattr(rates, "ROWS_AT_ONCE", 3)
    assert same_bits(sliding_rates(c, 1000, 2500), whole)
    assert sliding_rates(np.zeros((0, 4)), 1, 1).shape == (0, 4)
    assert sliding_rates(np.zeros((3, 0)), 1, 1).shape == (3, 0)


def test_interp_rows_is_numpy_interp_outside_at_points_and_at_nan():
    rng = np.random.default_rng(9)
    for _ in range(300):
        xp = np.unique(np.cumsum(rng.random(int(rng.integers(2, 12))) + 0.01))
        x = np.concatenate([rng.uniform(xp[0] - 1, xp[-1] + 1, 15), xp, [np.nan]])
        fp = rng.choice([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e300], (3, len(xp)))
        got = interp_rows(x, xp, fp)
        for r in range(3):
            assert same_bits(got[r], np.interp(x, xp, fp[r]))


def test_per_capacity_divides_each_row_and_is_nan_without_a_capacity():
    r = np.array([[10.0, 20.0], [3.0, 0.0], [1.0, 1.0]])
    got = per_capacity(r, [10, None, 0])
    assert got[0].tolist() == [1.0, 2.0]
    assert np.isnan(got[1:]).all()
