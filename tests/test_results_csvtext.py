"""The CSV cells of flows.csv and links.csv (ibemu/results/csvtext.py): every value is
Python's own ``"%.6g" % x`` (the expected strings below are that, first principles), an
empty cell for NaN and the infinities, -0.0 as "-0"."""
import numpy as np

from ibemu.results.csvtext import fmt, fmt_cells, write_series

EDGES = [0.0, -0.0, 1 / 3, float("nan"), float("inf"), -float("inf"), 1e-7, 123456.5, 1234565.0, 2.5e6,
         1e300, -1e300, 5e-324, 1.7976931348623157e308, 0.1 + 0.2, 999999.5, 9999995.0, -1e-5, 1.0, 100.0]
"""Edge values: signed zeros, non-finite, exponent thresholds of %g (1e-5, 1e6), ties of
the 6th digit, subnormal and the largest float."""


def test_cells_are_python_percent_6g_and_empty_when_not_finite():
    x = np.array(EDGES)
    want = ["" if not np.isfinite(v) else "%.6g" % v for v in EDGES]
    assert fmt_cells(x).tolist() == want
    assert [fmt(v) for v in EDGES] == want
    # spelled out, as "%.6g" gives them
    assert want[:3] == ["0", "-0", "0.333333"] and want[6:10] == ["1e-07", "123456", "1.23456e+06", "2.5e+06"]
    assert want[17] == "-1e-05"


def test_cells_keep_the_shape_and_tell_values_apart_by_their_bits():
    rng = np.random.default_rng(3)
    x = rng.choice(np.array(EDGES), size=(7, 11))
    x[0, :3] = [0.0, -0.0, 0.0]             # equal as floats, "-0" is its own cell
    cells = fmt_cells(x)
    assert cells.shape == (7, 11)
    assert cells.tolist() == [["" if not np.isfinite(v) else "%.6g" % v for v in row] for row in x.tolist()]
    assert cells[0, :3].tolist() == ["0", "-0", "0"]
    assert fmt_cells(np.zeros((0, 4))).shape == (0, 4)


def test_random_values_match_percent_6g():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(20000) * 10.0 ** rng.integers(-12, 12, 20000)
    assert fmt_cells(x).tolist() == ["%.6g" % v for v in x.tolist()]


def test_write_series_rows_are_times_then_a_cell_per_series(tmp_path):
    values = np.array([[0.5, -0.0, np.nan], [1 / 3, 2.0, 1e-7]])
    write_series(tmp_path / "s.csv", np.array([0.05, 0.15, 0.25]), ["a", "b:data"], values)
    assert (tmp_path / "s.csv").read_text() == ("time_ms,a,b:data\n0.05,0.5,0.333333\n0.15,-0,2\n0.25,,1e-07\n")
    write_series(tmp_path / "e.csv", np.array([0.5, 1.5]), [], np.zeros((0, 2)))
    assert (tmp_path / "e.csv").read_text() == "time_ms\n0.5\n1.5\n"


def test_write_series_in_parts_is_the_same_file(tmp_path, monkeypatch):
    from ibemu.results import csvtext
    rng = np.random.default_rng(5)
    values = rng.choice(np.array(EDGES), size=(5, 9))
    times = np.arange(9) * 0.1 + 0.05
    write_series(tmp_path / "one.csv", times, list("abcde"), values)
    monkeypatch.setattr(csvtext, "CELLS_AT_ONCE", 7)      # rows of 5 cells: one row at a time
    write_series(tmp_path / "parts.csv", times, list("abcde"), values)
    text = (tmp_path / "one.csv").read_text()
    assert (tmp_path / "parts.csv").read_text() == text
    rows = [line.split(",") for line in text.splitlines()[1:]]
    assert [r[1:] for r in rows] == [["" if not np.isfinite(v) else "%.6g" % v for v in col]
                                     for col in values.T.tolist()]
