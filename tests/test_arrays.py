"""ibemu.arrays: the same results as numpy.unique, by sorting (issue 28)."""
from __future__ import annotations

import numpy as np
import pytest

from ibemu.arrays import runs, unique, unique_inverse


@pytest.mark.parametrize("n", [0, 1, 2, 17, 5000])
@pytest.mark.parametrize("span", [1, 4, 10**12])
def test_as_numpy_unique(n, span):
    x = np.random.default_rng(n + span).integers(-span, span + 1, n)
    assert np.array_equal(unique(x), np.unique(x))
    values, inverse = unique_inverse(x)
    ref_values, ref_inverse = np.unique(x, return_inverse=True)
    assert np.array_equal(values, ref_values) and np.array_equal(inverse, ref_inverse)
    s = np.sort(x)
    got = runs(s)
    ref = np.unique(s, return_index=True, return_counts=True)
    assert all(np.array_equal(a, b) for a, b in zip(got, ref))


def test_unique_of_a_two_dimensional_array_is_flat():
    x = np.array([[3, 1], [1, 2]])
    assert unique(x).tolist() == [1, 2, 3]
