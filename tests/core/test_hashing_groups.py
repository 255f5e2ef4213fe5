"""``data_hashes`` groups a batch's arrays by dtype and shape, taking the last array's
group without a lookup when the next one shares its dtype object and shape: the hashes
stay each array's own ``data_hash``, in input order, however the shapes interleave."""

from __future__ import annotations

import numpy as np

from infrastore_sqlite.core.hashing import data_hash, data_hashes


def test_interleaved_shapes_and_dtypes_keep_each_arrays_hash_in_order() -> None:
    rng = np.random.default_rng(7)
    a = [rng.random(5) for _ in range(4)]
    b = [rng.random((2, 3)) for _ in range(3)]
    ints = [rng.integers(0, 9, 5) for _ in range(2)]
    big = rng.random(20_000)  # past the batch size, same dtype object as the rest
    same_values_other_dtype = a[0].astype(np.float32)
    arrays = [a[0], a[1], b[0], a[2], ints[0], b[1], big, a[3], ints[1], b[2]]
    arrays.append(same_values_other_dtype)
    arrays.append(a[0].astype(a[0].dtype.newbyteorder(">")))  # equal dtype, another object
    got = data_hashes(arrays)
    assert got == [data_hash(x) for x in arrays]
    assert got[-1] == got[0]  # byte order is not content
    assert len(set(got[:-1])) == len(arrays) - 1


def test_a_run_of_one_shape_then_a_large_array_of_another() -> None:
    small = [np.full(3, float(i)) for i in range(5)]
    large = np.ones(10_000)  # the same dtype object, another shape, hashed alone
    arrays = [*small, large, *small[:2]]
    assert data_hashes(arrays) == [data_hash(x) for x in arrays]
