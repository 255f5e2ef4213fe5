"""An import's keys and entries made a block at a time (``ArrayKeys.keys_of``, the
core's iteration over its entries) are the ones a lookup of each gives."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from infrastore_sqlite.interchange.importing.keys import ArrayKeys


def _hash(i: int) -> str:
    return hashlib.sha256(i.to_bytes(8, "little")).hexdigest()


@pytest.mark.parametrize("spelled", ["hex", "text"])
@pytest.mark.parametrize("ids", [np.arange(1, 41), np.arange(3, 123, 3)])
def test_keys_of_is_each_lookup(spelled: str, ids: np.ndarray) -> None:
    n = len(ids)
    # Hex hashes are held as raw bytes; any other text as it is.
    texts = [_hash(i) if spelled == "hex" else f"h-{i}" for i in range(n)]
    hashes = np.array([t.encode() for t in texts], dtype=np.bytes_)
    axis = np.arange(n, dtype=np.int64) % 3
    keys = ArrayKeys(ids.astype(np.int64), hashes, axis, ["a0", "a1", "a2"])
    asked = ids[::-1][::2].astype(np.int64)  # out of order, a subset
    assert keys.keys_of(asked) == [keys[int(a)] for a in asked]
    assert keys.keys_of(asked)[0] == (texts[n - 1], ["a0", "a1", "a2"][(n - 1) % 3])
    assert keys.keys_of(np.empty(0, np.int64)) == []


def test_keys_of_names_an_id_not_held() -> None:
    keys = ArrayKeys(
        np.arange(1, 4),
        np.array([_hash(i).encode() for i in range(3)]),
        np.zeros(3, np.int64),
        ["t"],
    )
    with pytest.raises(KeyError) as info:
        keys.keys_of(np.array([2, 9], dtype=np.int64))
    assert info.value.args == (9,)


def test_entries_across_block_edges_import_every_series(tmp_path, monkeypatch) -> None:
    """Entries made 3 at a time, arrays shared by several series (a key's series span
    block edges): every series comes back with its own name and values."""
    from datetime import datetime

    import infrastore_sqlite as I
    from infrastore_sqlite.interchange.importing import run as core

    monkeypatch.setattr(core, "_ITER_BLOCK", 3)
    t0 = datetime(2024, 1, 1)
    values = [np.arange(24.0) * k for k in range(5)]
    src = I.Store.create(tmp_path / "src.h5")
    try:
        for j in range(11):  # series j holds array j % 5
            src.add_time_series(
                j + 1, "Gen", "Component", I.SingleTimeSeries(t0, "PT1H", values[j % 5], f"s{j}")
            )
        src.export_sqlite(str(tmp_path / "x.db"))
    finally:
        src.close()
    dst = I.Store.create(tmp_path / "dst.h5")
    try:
        ids = dst.import_sqlite(str(tmp_path / "x.db"))
        got = {s.name: s.data for s in dst.read_by_ids(ids)}
    finally:
        dst.close()
    assert sorted(got) == sorted(f"s{j}" for j in range(11))
    for j in range(11):
        np.testing.assert_array_equal(got[f"s{j}"], values[j % 5])
