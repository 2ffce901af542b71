"""The page's array encoding round-trips bit for bit; thumbnails are cell means."""

import numpy as np
import pytest

from attnscope.viewer import data


@pytest.mark.parametrize("shape", [(7,), (2, 3, 5, 4), (1,)])
def test_float32_round_trip_is_bitwise(shape):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)).astype(np.float32)
    a.flat[0] = -0.0
    d = data.encode(a)
    assert d["codec"] == "shuffle4+zlib" and d["dtype"] == "float32" and d["shape"] == list(shape)
    b = data.decode(d)
    assert b.dtype == np.float32 and b.shape == a.shape
    assert b.tobytes() == a.tobytes()


def test_uint8_round_trip():
    a = np.arange(300, dtype=np.int64).astype(np.uint8).reshape(3, 100)
    assert data.decode(data.encode(a)).tobytes() == a.tobytes()


def test_only_float32_and_uint8():
    with pytest.raises(TypeError):
        data.encode(np.zeros(3, dtype=np.float64))


def test_thumbnails_are_cell_means_scaled_to_the_head_max():
    rng = np.random.default_rng(1)
    w = rng.random((2, 10, 10))
    small = data.thumbnails(w, size=64)  # n ≤ size: one cell per weight
    np.testing.assert_array_equal(small, np.rint(255 * w / w.max(axis=(1, 2), keepdims=True)))
    t = data.thumbnails(w, size=4)  # 10 → 4 cells: rows [0,2), [2,5), [5,8), [8,10)
    bounds = [0, 2, 5, 8, 10]
    for h in range(2):
        ref = np.array([[w[h, bounds[i]:bounds[i + 1], bounds[j]:bounds[j + 1]].mean() for j in range(4)] for i in range(4)])
        np.testing.assert_array_equal(t[h], np.rint(255 * ref / ref.max()))
