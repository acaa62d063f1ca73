"""Lesson 00's entry point ``colsum``: equals numpy, rejects bad input with a clear error."""
from __future__ import annotations

import numpy as np
import pytest

from labkit import lesson00 as L


def test_colsum_equals_numpy_on_real_dtypes():
    g = np.random.default_rng(1)
    for a in (g.random((37, 5)), g.integers(-9, 9, (4, 11)), g.random((3, 6)).astype(np.float32),
              np.asfortranarray(g.random((8, 9))), g.random((10, 12))[::2, 1::3], np.zeros((0, 4))):
        np.testing.assert_allclose(L.colsum(a), np.asarray(a, dtype=np.float64).sum(axis=0),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_colsum_rejects_nan_and_inf(bad):
    a = np.ones((6, 4))
    a[3, 2] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        L.colsum(a)


def test_colsum_overflow_of_finite_inputs_is_a_result_not_an_error():
    assert L.colsum(np.full((2, 1), 1e308))[0] == np.inf


@pytest.mark.parametrize("bad, err", [(np.ones(3), ValueError), (np.array([["a"]]), TypeError),
                                      (np.ones((2, 2), dtype=complex), TypeError)])
def test_colsum_bad_shapes_and_dtypes(bad, err):
    with pytest.raises(err, match="2-D|real"):
        L.colsum(bad)
