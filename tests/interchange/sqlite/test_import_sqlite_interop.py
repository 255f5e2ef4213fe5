"""The SQLite interchange against the reference implementation (infrastore 0.15.1).

A database the reference exported imports into this store with every series identical to
what the reference holds, and a database this store exported imports into the reference
the same way. Both directions use the varied store of ``test_roundtrip_sqlite``.
"""

from __future__ import annotations

import shutil

import apsw
import numpy as np
import pytest
from test_roundtrip_sqlite import T0, assert_same_store, build_varied

import infrastore_sqlite as I

ref = pytest.importorskip("infrastore")
pytestmark = pytest.mark.interop


def _ref_store_with_unspecified(path):
    """The varied store in the reference, with one series' reference edited to NULL."""
    store = ref.Store.create(str(path))
    build_varied(ref, store, unspecified=False)
    store.add_time_series(
        9,
        "Generator",
        ref.OwnerCategory.Component,
        ref.SingleTimeSeries(T0, "PT1H", np.arange(3.0), "unspec"),
    )
    store.close()
    conn = apsw.Connection(str(path) + ".sqlite")
    conn.execute("UPDATE time_series_associations SET time_reference = NULL WHERE name = 'unspec'")
    conn.close()
    return ref.Store.open(str(path))


@pytest.fixture(scope="module")
def reference_export(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref_export")
    store = _ref_store_with_unspecified(d / "ref.h5")
    db = d / "ref.db"
    store.export_sqlite(str(db))
    return store, db


def test_reference_export_imports_identically(reference_export, tmp_path):
    ref_store, db = reference_export
    ours = I.Store.create(tmp_path / "ours.h5")
    ids = ours.import_sqlite(db)
    assert len(ids) == len(ref_store.list_metadata())
    assert_same_store(ref_store, ours)
    unspec = [m for m in ours.list_metadata() if m["name"] == "unspec"]
    assert unspec[0]["time_reference"] is None


def test_reference_export_ids_follow_the_reference_read_order(reference_export, tmp_path):
    _, db = reference_export
    ours = I.Store.create(tmp_path / "ours.h5")
    theirs = ref.Store.create(str(tmp_path / "theirs.h5"))
    ours_ids = ours.import_sqlite(db)
    their_ids = theirs.import_sqlite(str(db))
    assert ours_ids == their_ids

    def names(store, ids):
        return [
            (m["owner_id"], m["name"], m["time_series_type"])
            for m in store.list_metadata_by_ids(ids)
        ]

    assert names(ours, ours_ids) == names(theirs, their_ids)


def test_reference_export_edited_in_place(reference_export, tmp_path):
    """Plain-SQL edits of a reference export: refused, waived, then rehashed."""
    from infrastore_sqlite.interchange.sqlite.rehash import rehash_sqlite

    _, db = reference_export
    edited = tmp_path / "edited.db"
    shutil.copy(db, edited)
    conn = apsw.Connection(str(edited))
    conn.execute("UPDATE Deterministic_f64_utc_values SET value = value * 1.1")
    conn.close()
    ours = I.Store.create(tmp_path / "ours.h5")
    with pytest.raises(I.InvalidParameterError, match="does not match its recorded data_hash"):
        ours.import_sqlite(edited)
    theirs = ref.Store.create(str(tmp_path / "theirs.h5"))
    with pytest.raises(ref.InvalidParameterError, match="does not match its recorded data_hash"):
        theirs.import_sqlite(str(edited))
    assert rehash_sqlite(edited) >= 1
    ours.import_sqlite(edited)
    theirs.import_sqlite(str(edited))  # the reference takes the rehashed file too
    assert_same_store(theirs, ours)


def test_our_export_imports_into_the_reference(tmp_path):
    ours = I.Store.create(tmp_path / "ours.h5")
    build_varied(I, ours)
    db = tmp_path / "ours.db"
    ours.export_sqlite(db)
    theirs = ref.Store.create(str(tmp_path / "theirs.h5"))
    ids = theirs.import_sqlite(str(db))
    assert len(ids) == len(ours.list_metadata())
    assert_same_store(ours, theirs)
    # and back: our import of our export agrees with the reference's
    again = I.Store.create(tmp_path / "again.h5")
    assert again.import_sqlite(db) == ids
