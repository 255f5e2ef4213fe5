"""The record each write transaction leaves in its segment: what it did to the catalog.

The catalog is the store's one point of truth, and one file: lost, emptied, restored from
an older copy, or damaged beyond its indexes, it would take every series with it although
the arrays are intact in ``segments/``. So every write transaction that changes series
rows or store attributes writes, inside the segment it seals before its catalog commit,
a record of that change (``journal/<seq>``, a zlib-compressed JSON document):

- ``seq``: the transaction's sequence number, ``prev``: the one before it in this catalog
  (0 for a store's first; -1 when the catalog held rows from before records were kept, so
  the history is incomplete and a rebuild cannot stand on it alone);
- ``rows``: every series row the transaction added or changed, whole, with its id
  (``columns`` names the fields, hashes in hex);
- ``removed``: the ids it removed; ``features``: the feature maps its rows name;
- ``attributes``: the store attributes it set (None: removed).

Which rows changed is collected by temporary triggers on the writer's connection (they
live in its ``temp`` schema, not in the catalog file, so no catalog migration and no
other connection sees them), so every path that writes rows — adds, replacements,
removals, transforms, owner changes, repair — is recorded alike. A transaction that
writes no arrays but changes rows (a removal) still seals a segment: a small one holding
only its record. Merges and compaction copy the records of the segments they rewrite into
the new one (:func:`carry`), so a record lives as long as the store.

``rebuild.py`` replays them in ``seq`` order to make a new catalog. ``seq`` is the larger
of the previous one plus one and the time in microseconds, so a transaction written on a
stale catalog (an older copy restored) still sorts after the ones it did not see.
"""

from __future__ import annotations

import array
import contextlib
import itertools
import operator
import struct
import tempfile
import time
import weakref
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import h5py
import numpy as np
import orjson

from ..errors import StorageError, TimeSeriesError
from .arrays import ArrayFile, describe_os_error, write_attribute
from .prepare import DATA_AT, INSERT_COLUMNS, TIMESTAMPS_AT, hash_sql
from .rowcheck import CHECK_COLUMN, mismatched_rows, row_check
from .segments import PENDING_SUFFIX, SEALED_SUFFIX, SEGMENT_DIR

if TYPE_CHECKING:
    from .state import StoreState

#: The group of a segment holding the records, one dataset per transaction.
JOURNAL_GROUP = "journal"
#: The store attribute holding the sequence number of the last recorded transaction.
SEQ_KEY = "infrastore_sqlite.journal_seq"
RECORD_VERSION = 1
#: Marker files beside a segment whose transaction is not known to have committed
#: (``<name>.pending``: being written; ``<name>.sealed``: complete, its commit not
#: confirmed). Its records are no sign of a stale catalog: they may never have committed.
UNCOMMITTED_MARKERS = (PENDING_SUFFIX, SEALED_SUFFIX)
#: The root attribute a segment gets once its record and arrays are all written.
COMPLETE_ATTR = "record_complete"
#: Columns whose values are bytes (written in hex).
_BYTES = frozenset({"timestamps_hash", "data_hash", "features_hash"})
_COLUMNS = ("id", *INSERT_COLUMNS)
_WIDTH = len(_COLUMNS)
# Two queries, each on the primary key: an OR of the two would scan the whole table.
# Each row's fields as the record keeps them (arrays by hash), then the ids the catalog
# holds in their place and the stored checksum: the record sets the right one
# (rowcheck.py), which covers the ids.
_SELECTED = (
    f"SELECT t.id, {', '.join(hash_sql(c) for c in INSERT_COLUMNS)}, t.data_id, "
    f"t.timestamps_id, t.{CHECK_COLUMN} FROM main.time_series_associations t "
)
_SELECT_ADDED = _SELECTED + "WHERE t.id > ?"
_SELECT_TOUCHED = _SELECTED + "WHERE t.id IN carray(?)"

# Temporary (per connection) tables and triggers: the ids and attribute keys this
# transaction changed or removed, and the highest id before it (every row it adds has a
# higher one: AUTOINCREMENT), so an add's rows cost no trigger each. Rolled back with the
# transaction, like any table.
_SETUP = (
    "CREATE TEMP TABLE IF NOT EXISTS journal_ids (id INTEGER PRIMARY KEY)",
    "CREATE TEMP TABLE IF NOT EXISTS journal_attrs (key TEXT PRIMARY KEY)",
    "CREATE TEMP TABLE IF NOT EXISTS journal_mark (id INTEGER NOT NULL)",
    "CREATE TEMP TRIGGER IF NOT EXISTS journal_upd AFTER UPDATE ON "
    "main.time_series_associations BEGIN INSERT OR IGNORE INTO journal_ids VALUES (OLD.id); "
    "INSERT OR IGNORE INTO journal_ids VALUES (NEW.id); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS journal_del AFTER DELETE ON "
    "main.time_series_associations BEGIN INSERT OR IGNORE INTO journal_ids VALUES (OLD.id); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS journal_attr_ins AFTER INSERT ON main.store_attributes "
    "WHEN NEW.key NOT LIKE 'infrastore\\_sqlite.%' ESCAPE '\\' "
    "BEGIN INSERT OR IGNORE INTO journal_attrs VALUES (NEW.key); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS journal_attr_upd AFTER UPDATE ON main.store_attributes "
    "WHEN NEW.key NOT LIKE 'infrastore\\_sqlite.%' ESCAPE '\\' "
    "BEGIN INSERT OR IGNORE INTO journal_attrs VALUES (NEW.key); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS journal_attr_del AFTER DELETE ON main.store_attributes "
    "WHEN OLD.key NOT LIKE 'infrastore\\_sqlite.%' ESCAPE '\\' "
    "BEGIN INSERT OR IGNORE INTO journal_attrs VALUES (OLD.key); END",
)


#: What the adds of the running transaction filed, by catalog, already encoded (a few
#: dozen bytes a series, not the rows): ``parts`` (encoded parts, see :func:`_part`, in
#: a :class:`Parts`), ``ranges`` (``(first id, count)`` of each) and ``features`` (their
#: feature hashes).
_NOTED: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
#: Rows read back per part when an add's rows were not noted (memory bounded by it).
_PART_ROWS = 4096
#: Bytes of encoded parts a record holds in memory; beyond them its parts go to an
#: unnamed temporary file (a bulk add of 300,000 distinct arrays notes ~10 MB: the raw
#: data hashes, which do not compress).
HELD_PART_BYTES = 1 << 20
#: Bytes written to the record's dataset at a time once its parts are in a file.
_COPY_BYTES = 4 << 20


class Parts:
    """The encoded parts of the record being assembled, in order: in memory up to
    :data:`HELD_PART_BYTES`, then all in an unnamed temporary file (gone with the
    process, visible nowhere), so a transaction of any size holds a bounded amount.

    Parameters
    ----------
    held_bytes
        Bytes held in memory before the parts move to the file (default
        :data:`HELD_PART_BYTES`).
    """

    def __init__(self, *, held_bytes: int | None = None) -> None:
        self._held_bytes = HELD_PART_BYTES if held_bytes is None else held_bytes
        self._held: list[bytes] = []
        self._file: Any = None
        self.count = 0
        self.nbytes = 0

    def append(self, part: bytes) -> None:
        """One more encoded part (:func:`_part`)."""
        try:
            if self._file is None and self.nbytes + len(part) > self._held_bytes:
                self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
                for held in self._held:
                    self._file.write(held)
                self._held = []
            if self._file is not None:
                self._file.write(part)
            else:
                self._held.append(part)
        except OSError as exc:
            self.close()
            raise StorageError(
                f"setting aside the transaction record's rows in {tempfile.gettempdir()} "
                f"failed: {describe_os_error(exc)}; free space there (or name another "
                "directory in TMPDIR) and run the transaction again"
            ) from exc
        self.count += 1
        self.nbytes += len(part)

    @property
    def in_memory(self) -> bool:
        """Whether every part is still held in memory."""
        return self._file is None

    def joined(self) -> bytes:
        """Every part, concatenated (only while :attr:`in_memory`)."""
        if self._file is not None:
            raise ValueError("the parts are in a file: read them with pieces()")
        return b"".join(self._held)

    def pieces(self, size: int = _COPY_BYTES) -> Iterator[bytes]:
        """Every part's bytes in order, at most ``size`` bytes a piece."""
        if self._file is None:
            yield from self._held
            return
        try:
            self._file.flush()
            self._file.seek(0)
            while piece := self._file.read(size):
                yield piece
        except OSError as exc:
            raise StorageError(
                f"reading back the transaction record's rows from {tempfile.gettempdir()} "
                f"failed: {describe_os_error(exc)}; run the transaction again"
            ) from exc

    def close(self) -> None:
        """Let the parts go (the file with them)."""
        self._held = []
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


def _drop_noted(cat: Any) -> dict[str, Any] | None:
    noted = _NOTED.pop(cat, None)
    if noted is not None:
        noted["parts"].close()
    return noted


def begin(state: StoreState) -> None:
    """Make sure the writer's connection notes what the coming transaction touches."""
    cat = state.catalog
    if cat.read_only:
        return
    _drop_noted(cat)
    try:
        for sql in _SETUP:
            cat.execute(sql)
        cat.execute("DELETE FROM temp.journal_mark")
        cat.execute(
            "INSERT INTO temp.journal_mark SELECT COALESCE(MAX(id), 0) "
            "FROM main.time_series_associations"
        )
    except StorageError:
        # A damaged catalog: the transaction (a repair) meets the damage again and says
        # so, before any record is due (a record then fails the transaction).
        return


def note_added(state: StoreState, ids: Sequence[int], rows: Sequence[tuple]) -> None:
    """The rows an add just inserted (``INSERT_COLUMNS`` order) with their consecutive
    ids, encoded now into a part of the record (the rows are not kept: an import's
    memory does not grow by them); the record uses the parts when the catalog's new rows
    are exactly these, and reads the rows back otherwise."""
    if not ids:
        return
    noted = _NOTED.get(state.catalog)
    if noted is None:
        noted = {"parts": Parts(), "ranges": [], "features": set()}
        _NOTED[state.catalog] = noted
    noted["parts"].append(_part(rows, first=ids[0]))
    noted["ranges"].append((ids[0], len(ids)))
    noted["features"].update(_column(rows, _FEATURES_AT))


def _part(rows: Sequence[tuple], *, first: int | None = None, ids: Sequence[int] = ()) -> bytes:
    """Rows encoded as one part of a record: ``<QQ`` (sizes), the zlib'd JSON of the
    columns (:func:`_encode_columns`; ids as ``first`` of a consecutive run, or listed),
    then the raw bytes of its hash columns."""
    blob = bytearray()
    doc: dict[str, Any] = {"n": len(rows), "values": _encode_columns(rows, blob)}
    # The raw hash columns after the JSON have no zlib check of their own: a flipped bit
    # there must fail the record, never restore a row with a wrong hash.
    doc["blob_crc"] = zlib.crc32(blob)
    if first is not None:
        doc["first"] = first
    else:
        doc["ids"] = list(ids)
    text = zlib.compress(orjson.dumps(doc), 1)
    return struct.pack("<QQ", len(text), len(blob)) + text + bytes(blob)


def record(state: StoreState) -> None:
    """Write the running transaction's record into its segment, before the seal.

    Nothing when it touched no series row and no store attribute (a merge, a compaction).
    """
    cat = state.catalog
    if cat.read_only:
        return
    noted = _NOTED.pop(cat, None) or {"parts": Parts(), "ranges": [], "features": set()}
    try:
        _record(state, noted)
    finally:
        noted["parts"].close()


def _record(state: StoreState, noted: dict[str, Any]) -> None:
    """:func:`record`'s work, with what the adds noted (its parts closed by the caller)."""
    cat = state.catalog
    mark = cat.scalar("SELECT id FROM temp.journal_mark")
    touched = [r[0] for r in cat.execute("SELECT id FROM temp.journal_ids ORDER BY id")]
    keys = [r[0] for r in cat.execute("SELECT key FROM temp.journal_attrs ORDER BY key")]
    count, low, high = cat.execute(
        "SELECT count(*), COALESCE(min(id), 0), COALESCE(max(id), 0) "
        "FROM main.time_series_associations WHERE id > ?",
        (mark,),
    ).fetchone()
    if not touched and not keys and not count:
        return
    # The adds' parts as noted, when the catalog's new rows are exactly those (a rolled
    # back savepoint, or an insert by another path, makes them differ: read back then).
    # Rows changed afterwards are read back below; a record replays its parts in order.
    ranges = noted["ranges"]
    ids_noted = sum(n for _f, n in ranges)
    fhs: set[bytes] = set()
    if (
        count
        and ranges
        and ids_noted == count
        and min(f for f, _ in ranges) == low
        and (max(f + n - 1 for f, n in ranges) == high)
    ):
        parts = noted["parts"]
        fhs.update(noted["features"])
    else:
        noted["parts"].close()
        parts = noted["parts"] = Parts()
        after = mark
        while count:
            got = cat.execute(
                _SELECT_ADDED + " ORDER BY t.id LIMIT ?", (after, _PART_ROWS)
            ).fetchall()
            if not got:
                break
            _set_checks(state, got)
            rows = [r[1:_WIDTH] for r in got]
            parts.append(_part(rows, ids=[r[0] for r in got]))
            fhs.update(_column(rows, _FEATURES_AT))
            after = got[-1][0]
    present: set[int] = set()
    for start in range(0, len(touched), _PART_ROWS):
        chunk = touched[start : start + _PART_ROWS]
        got = cat.execute(_SELECT_TOUCHED, (apsw.carray(array.array("q", chunk)),)).fetchall()
        if got:
            _set_checks(state, got)
            rows = [r[1:_WIDTH] for r in got]
            parts.append(_part(rows, ids=[r[0] for r in got]))
            fhs.update(_column(rows, _FEATURES_AT))
            present.update(r[0] for r in got)
    removed = [i for i in touched if i not in present]
    features: dict[str, Any] = {}
    ordered = sorted(fhs)
    for start in range(0, len(ordered), 500):
        chunk = tuple(ordered[start : start + 500])
        for fh, text in cat.execute(
            "SELECT features_hash, features_json FROM feature_maps "
            "WHERE features_hash IN carray(?)",
            (apsw.carray(chunk),),
        ):
            features[bytes(fh).hex()] = text
    attributes = {}
    for key in keys:
        attributes[key] = cat.scalar("SELECT value FROM store_attributes WHERE key = ?", (key,))
    prev = _previous(state, mark)
    seq = max(prev + 1, time.time_ns() // 1000)
    cat.execute(
        "INSERT OR REPLACE INTO store_attributes (key, value) VALUES (?, ?)", (SEQ_KEY, str(seq))
    )
    doc = {
        "version": RECORD_VERSION,
        "seq": seq,
        "prev": prev,
        "columns": list(INSERT_COLUMNS),
        "parts": parts.count,
        "removed": removed,
        "features": features,
        "attributes": attributes,
    }
    text = zlib.compress(orjson.dumps(doc), 1)
    head = struct.pack("<Q", len(text)) + text
    writer = state.segments.writer_for_record()
    if parts.in_memory:
        write_record(writer, seq, prev, head + parts.joined())
    else:
        # Written a piece at a time from the file: the payload is never whole in memory.
        write_record_pieces(
            writer, seq, prev, len(head) + parts.nbytes, itertools.chain([head], parts.pieces())
        )
    # Last before the seal (every array is in: ``h5`` waits for the queued writes): a
    # file killed while it was written lacks it, and its records never count as known
    # to a catalog (see :func:`unknown_transactions`).
    state.segments.mark_uncommitted()
    write_attribute(writer.h5, COMPLETE_ATTR, 1)
    cat.execute("DELETE FROM temp.journal_ids")
    cat.execute("DELETE FROM temp.journal_attrs")


_FEATURES_AT = INSERT_COLUMNS.index("features_hash")


def _set_checks(state: StoreState, got: Sequence[tuple]) -> None:
    """Give each row of ``got`` (``_SELECTED``'s columns) that was inserted or changed by
    any path but an add's (which inserts it with its checksum) the checksum of its fields
    as they now are, its arrays by id (:mod:`.rowcheck`): the one place every such path
    passes, after its last change to the row."""
    fixes = [(check, r[0]) for r in got if (check := row_check(_stored(r))) != r[-1]]
    if fixes:
        state.catalog.executemany(
            f"UPDATE main.time_series_associations SET {CHECK_COLUMN} = ? WHERE id = ?", fixes
        )


def _stored(r: Sequence[Any]) -> list[Any]:
    """The checked columns of a ``_SELECTED`` row: its id and fields, the arrays' ids in
    the hashes' places."""
    out = list(r[:_WIDTH])
    out[1 + DATA_AT] = r[_WIDTH]
    out[1 + TIMESTAMPS_AT] = r[_WIDTH + 1]
    return out


def _column(rows: Sequence[tuple], at: int) -> list[Any]:
    return list(map(operator.itemgetter(at), rows))


def _encode_columns(rows: Sequence[tuple], blob: bytearray) -> list[Any]:
    """Each :data:`INSERT_COLUMNS` column of ``rows``, compactly: ``{"c": value}`` when
    every row has one value (most columns of a bulk add), ``{"b": offset}`` for a hash
    column of 32-byte values (appended raw to ``blob``: hex would double them and not
    compress), else the list of values (hashes in hex)."""
    out: list[Any] = []
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in INSERT_COLUMNS]
    for name, col in zip(INSERT_COLUMNS, cols, strict=True):
        first = col[0] if col else None
        if col and col.count(first) == len(col):
            out.append({"c": bytes(first).hex() if name in _BYTES and first is not None else first})
        elif name in _BYTES and None not in col and set(map(len, col)) == {32}:
            out.append({"b": len(blob)})
            blob += b"".join(col)
        elif name in _BYTES:
            out.append([None if v is None else bytes(v).hex() for v in col])
        else:
            out.append(list(col))
    return out


def record_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's rows (:func:`decode`'s document), each as ``column -> value`` with its
    ``id`` (hashes as bytes), in the order its parts replay them."""
    columns = doc["columns"]
    out: list[dict[str, Any]] = []
    for part, blob in doc["part_docs"]:
        n = int(part["n"])
        ids = (
            list(range(int(part["first"]), int(part["first"]) + n))
            if "first" in part
            else [int(i) for i in part["ids"]]
        )
        cols: list[list[Any]] = [ids]
        for name, col in zip(columns, part["values"], strict=True):
            if isinstance(col, dict) and "c" in col:
                value = col["c"]
                if name in _BYTES and value is not None:
                    value = bytes.fromhex(value)
                col = [value] * n
            elif isinstance(col, dict):
                at = int(col["b"])
                raw = blob[at : at + 32 * n]
                col = [raw[i : i + 32] for i in range(0, 32 * n, 32)]
            elif name in _BYTES:
                col = [None if v is None else bytes.fromhex(v) for v in col]
            if len(col) != n:
                raise ValueError("the record's columns differ in length")
            cols.append(col)
        keys = ["id", *columns]
        out.extend(dict(zip(keys, values, strict=True)) for values in zip(*cols, strict=True))
    return out


def _previous(state: StoreState, mark: int) -> int:
    """The sequence number this transaction follows: the catalog's last; else 0 when the
    catalog held no row before it (a new store: its history starts here), -1 otherwise
    (rows from before records were kept: the history is incomplete)."""
    cat = state.catalog
    text = cat.scalar("SELECT value FROM store_attributes WHERE key = ?", (SEQ_KEY,))
    if text is not None:
        try:
            return int(text)
        except ValueError:
            return -1
    return 0 if not mark else -1


def write_record(writer: ArrayFile, seq: int, prev: int, payload: bytes) -> None:
    """One record into a segment being written (``journal/<seq>``; a copy already there
    is kept): :func:`write_records` of one."""
    write_records(writer, [(seq, prev, payload)])


def write_records(writer: ArrayFile, records: Iterable[tuple[int, int, bytes]]) -> None:
    """Records ``(seq, prev, payload)`` into a segment being written, each a dataset of
    the payload's bytes with ``seq`` and ``prev`` as attributes (``journal/<seq>``; a
    copy already there is kept), made as h5py's ``create_dataset`` and ``attrs`` make
    them, through HDF5's own calls: h5py's cost a few hundred microseconds a record, on
    every write transaction and for every record a merge carries."""
    try:
        gid, plist = _journal_group(writer)
        for seq, prev, payload in records:
            _write_one(gid, plist, seq, prev, len(payload), [payload])
    except (OSError, ValueError, TypeError, RuntimeError, KeyError) as exc:
        raise StorageError(
            f"writing the transaction record into {writer.path} failed: {describe_os_error(exc)}"
        ) from exc


def write_record_pieces(
    writer: ArrayFile, seq: int, prev: int, size: int, pieces: Iterable[bytes]
) -> None:
    """One record into a segment being written, as :func:`write_record` writes it, its
    payload of ``size`` bytes given as ``pieces`` in order (never joined in memory)."""
    try:
        gid, plist = _journal_group(writer)
        _write_one(gid, plist, seq, prev, size, pieces)
    except (OSError, ValueError, TypeError, RuntimeError, KeyError) as exc:
        raise StorageError(
            f"writing the transaction record into {writer.path} failed: {describe_os_error(exc)}"
        ) from exc


def _write_one(
    gid: Any, plist: Any, seq: int, prev: int, size: int, pieces: Iterable[bytes]
) -> None:
    """Record ``seq`` (``journal/<seq>``, kept if already there) of ``size`` bytes given
    as ``pieces`` in order, each written where it falls (never joined), then its heads."""
    name = f"{seq:020d}".encode()
    if gid.links.exists(name):
        return
    dsid = h5py.h5d.create(gid, name, _U8, h5py.h5s.create_simple((size,)), dcpl=plist)
    at = 0
    for piece in pieces:
        if not piece:
            continue
        data = np.frombuffer(piece, dtype=np.uint8)
        if at + data.size > size:
            raise ValueError("the record's pieces are longer than its size")
        if data.size == size:  # the whole payload: no selection to make
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
        else:
            target = dsid.get_space()
            target.select_hyperslab((at,), (data.size,))
            dsid.write(h5py.h5s.create_simple(data.shape), target, data)
        at += data.size
    if at != size:
        raise ValueError("the record's pieces are shorter than its size")
    _set_heads(dsid, seq, prev)


def _journal_group(writer: ArrayFile) -> tuple[Any, Any]:
    """The journal group of a segment being written (made if missing) and the dataset
    creation properties of its records."""
    try:
        gid = h5py.h5g.open(writer.h5.id, JOURNAL_GROUP.encode())
    except (KeyError, ValueError):  # none yet (HDF5 2 says ValueError)
        gid = writer.h5.create_group(JOURNAL_GROUP).id
    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_obj_track_times(False)
    return gid, plist


def _set_heads(dsid: Any, seq: int, prev: int) -> None:
    """A record's ``seq`` and ``prev`` attributes."""
    for key, value in ((b"seq", seq), (b"prev", prev)):
        held = np.array(value, dtype=np.int64)
        attr = h5py.h5a.create(dsid, key, _I64, h5py.h5s.create(h5py.h5s.SCALAR))
        attr.write(held)


_U8 = h5py.h5t.py_create(np.dtype(np.uint8), logical=True)
_I64 = h5py.h5t.py_create(np.dtype(np.int64), logical=True)


def records_of(h5: h5py.File) -> list[tuple[int, int, bytes]]:
    """``(seq, prev, payload)`` of every record in an open segment, in ``seq`` order.

    A record that does not read is skipped (the caller's report names the file)."""
    out = []
    for seq, prev, dsid in _records(h5):
        try:
            payload = np.empty(dsid.get_space().shape, dtype=np.uint8)
            dsid.read(h5py.h5s.ALL, h5py.h5s.ALL, payload)
            out.append((seq, prev, payload.tobytes()))
        except (OSError, ValueError, RuntimeError, TypeError, KeyError):
            continue
    return out


def heads_of(h5: h5py.File) -> list[tuple[int, int]]:
    """``(seq, prev)`` of every record in an open segment, without their payloads."""
    return [(seq, prev) for seq, prev, _ds in _records(h5)]


def _records(h5: h5py.File) -> list[tuple[int, int, Any]]:
    """``(seq, prev, dataset handle)`` of every record whose header reads, in ``seq``
    order (a payload that then does not read is skipped too). Through HDF5's own calls:
    a merge reads every record of the segments it folds, and h5py's dataset and
    attribute objects cost tens of microseconds each."""
    group = h5.get(JOURNAL_GROUP)
    if group is None:
        return []
    gid = group.id
    out = []
    for name in sorted(group):
        try:
            dsid = h5py.h5d.open(gid, name.encode())
            seq = _int_attr(dsid, b"seq")
            if name != f"{seq:020d}":
                continue  # a damaged header: the record is not taken for another
            out.append((seq, _int_attr(dsid, b"prev"), dsid))
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            continue
    return out


def _int_attr(dsid: Any, name: bytes) -> int:
    """A scalar integer attribute of a dataset (HDF5 converts what is stored; one that
    is not a number, or not one value, fails: the record is skipped)."""
    attr = h5py.h5a.open(dsid, name)
    if attr.get_space().shape != ():
        raise ValueError("not one value")
    held = np.zeros((), dtype=np.int64)
    attr.read(held)
    return int(held)


def decode(payload: bytes) -> dict[str, Any]:
    """A record's document (ValueError when it does not decode): the JSON head, with
    its parts as ``part_docs`` (``(part, raw bytes)`` each)."""
    try:
        (size,) = struct.unpack_from("<Q", payload)
        doc = orjson.loads(zlib.decompress(payload[8 : 8 + size]))
        if not isinstance(doc, dict) or doc.get("version") != RECORD_VERSION:
            raise ValueError("the record is of an unknown version")
        at = 8 + size
        parts = []
        for _ in range(int(doc["parts"])):
            text_len, blob_len = struct.unpack_from("<QQ", payload, at)
            at += 16
            part = orjson.loads(zlib.decompress(payload[at : at + text_len]))
            at += text_len
            raw = payload[at : at + blob_len]
            if "blob_crc" in part and zlib.crc32(raw) != part["blob_crc"]:
                raise ValueError("its hash columns are damaged (their CRC differs)")
            parts.append((part, raw))
            at += blob_len
    except (struct.error, zlib.error, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"the record does not decode: {exc}") from exc
    doc["part_docs"] = parts
    return doc


def carry(state: StoreState, names: Iterable[str]) -> None:
    """Copy the records of segments ``names`` (being rewritten) into this transaction's
    segment, so they outlive the files. A record that does not read is left behind."""
    found: list[tuple[int, int, bytes]] = []
    for name in names:
        try:
            found.extend(records_of(state.segments.reader(name).h5))
        except (TimeSeriesError, OSError, KeyError, ValueError, RuntimeError):
            continue
    if found:
        writer = state.segments.writer_for_record()
        write_records(writer, found)
        state.segments.mark_uncommitted()
        writer.h5.attrs[COMPLETE_ATTR] = 1


def newer_unnamed(state: StoreState, named: set[str]) -> list[int]:
    """Records newer than the catalog's last transaction in the store's files the catalog
    does not name (``segments/`` and the folders beside it): transactions it does not
    know, a stale catalog (an older copy restored, a lost ``-wal``). Cheap enough for
    every write: only unnamed files are opened. A write on such a catalog would reuse the
    ids those transactions gave, so it is refused until ``repair`` rebuilds the catalog.
    Empty for a catalog that records no history."""
    try:
        text = state.catalog.scalar("SELECT value FROM store_attributes WHERE key = ?", (SEQ_KEY,))
        last = int(text) if text is not None else None
    except (TimeSeriesError, ValueError, apsw.Error):
        return []
    if last is None:
        return []
    out: list[int] = []
    for path in _store_files(Path(state.path)):
        if path.parent.name == SEGMENT_DIR and path.name in named:
            continue
        if any(path.with_name(path.name + m).exists() for m in UNCOMMITTED_MARKERS):
            continue  # not known to have committed
        try:
            with h5py.File(path, "r", locking=False) as h5:
                if _generation(h5) != state.segments.generation or not h5.attrs.get(
                    COMPLETE_ATTR, 0
                ):
                    continue
                out.extend(seq for seq, _prev in heads_of(h5) if seq > last)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            continue
    return sorted(out)


def store_heads(root: Path, generation: str) -> dict[int, int]:
    """``seq -> prev`` of every record in the store directory's ``.h5`` files of
    ``generation`` (``segments/`` and one folder level beside it)."""
    out: dict[int, int] = {}
    paths: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                with contextlib.suppress(OSError):
                    paths.extend(p for p in sorted(entry.iterdir()) if p.suffix == ".h5")
    for path in paths:
        if any(path.with_name(path.name + m).exists() for m in UNCOMMITTED_MARKERS):
            continue  # a transaction not known to have committed: not the catalog's to know
        try:
            with h5py.File(path, "r", locking=False) as h5:
                found = h5.attrs.get("catalog_generation")
                if isinstance(found, bytes):
                    found = found.decode("utf-8", "replace")
                if found != generation or not h5.attrs.get(COMPLETE_ATTR, 0):
                    continue
                for seq, prev in heads_of(h5):
                    out.setdefault(seq, prev)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            continue
    return out


def unknown_transactions(state: StoreState) -> list[int]:
    """The recorded transactions the catalog does not know: records in the store's files
    that are not on the chain of the catalog's last one (a catalog restored from an older
    copy, a lost ``-wal``; or a transaction killed between its seal and its commit).

    Empty for a catalog that records no history (a store of before records were kept).
    """
    cat = state.catalog
    try:
        text = cat.scalar("SELECT value FROM store_attributes WHERE key = ?", (SEQ_KEY,))
        last = int(text) if text is not None else None
    except (TimeSeriesError, ValueError, apsw.Error):
        return []
    heads = store_heads(Path(state.path), state.segments.generation)
    if not heads:
        return []
    chain: set[int] = set()
    at = last if last is not None else 0
    while at in heads and at not in chain:
        chain.add(at)
        at = heads[at]
    complete = at == 0
    # Off the chain and newer than the catalog's last, or anywhere off a chain that
    # reaches the store's first transaction.
    return sorted(
        seq for seq in heads if seq not in chain and (complete or last is None or seq > last)
    )


def store_records(root: Path, generation: str) -> dict[int, tuple[int, bytes]]:
    """``seq -> (prev, payload)`` of every record in the store directory's complete
    ``.h5`` files of ``generation`` (as :func:`store_heads` finds them)."""
    out: dict[int, tuple[int, bytes]] = {}
    for path in _store_files(root):
        if any(path.with_name(path.name + m).exists() for m in UNCOMMITTED_MARKERS):
            continue
        try:
            with h5py.File(path, "r", locking=False) as h5:
                if _generation(h5) != generation or not h5.attrs.get(COMPLETE_ATTR, 0):
                    continue
                for seq, prev, payload in records_of(h5):
                    out.setdefault(seq, (prev, payload))
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            continue
    return out


def _store_files(root: Path) -> list[Path]:
    paths: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                with contextlib.suppress(OSError):
                    paths.extend(p for p in sorted(entry.iterdir()) if p.suffix == ".h5")
    return paths


def _generation(h5: h5py.File) -> str | None:
    found = h5.attrs.get("catalog_generation")
    if isinstance(found, bytes):
        found = found.decode("utf-8", "replace")
    return None if found is None else str(found)


def replay(records: dict[int, tuple[int, bytes]], seqs: Iterable[int]) -> dict[str, Any]:
    """The catalog the records ``seqs`` make, replayed in order: ``rows`` (id -> column
    -> value), ``features``, ``attributes``, ``top_id`` (the highest id ever used),
    ``gaps`` (where a record does not follow the one before, or does not decode) and
    ``transactions`` (how many replayed)."""
    rows: dict[int, dict[str, Any]] = {}
    features: dict[str, str] = {}
    attributes: dict[str, str | None] = {}
    gaps: list[str] = []
    top_id = last = done = 0
    for seq in seqs:
        prev, payload = records[seq]
        if prev != last:
            gaps.append(f"transaction {seq} follows {prev}, the records' last was {last}")
        last = seq
        try:
            doc = decode(payload)
            if doc.get("seq") != seq or doc.get("prev") != prev:
                raise ValueError("its sequence numbers differ from its dataset's")
            for values in record_rows(doc):
                sid = int(values.pop("id"))
                rows[sid] = values
                top_id = max(top_id, sid)
            for sid in doc["removed"]:
                rows.pop(int(sid), None)
                top_id = max(top_id, int(sid))
            features.update(doc["features"])
            attributes.update(doc["attributes"])
            done += 1
        except (ValueError, KeyError, TypeError) as exc:
            gaps.append(f"transaction {seq} does not decode ({exc})")
    return {
        "rows": rows,
        "features": features,
        "attributes": attributes,
        "top_id": top_id,
        "gaps": gaps,
        "transactions": done,
    }


_INTS = frozenset(
    {"owner_id", "owner_category", "time_series_type", "initial_ms", "length", "count"}
)
# The catalog's row columns as stored (text cast to bytes, so a damaged one never fails).
_RAW_SELECT = (
    "SELECT t.id, "
    + ", ".join(
        hash_sql(c) if c in _BYTES or c in _INTS else f"CAST(t.{c} AS BLOB)" for c in INSERT_COLUMNS
    )
    + " FROM main.time_series_associations t"
)


def row_mismatches(state: StoreState) -> dict[int, str]:
    """Catalog rows that differ from what the transaction records say they are: ``id ->
    what differs``, a series row missing or one no record made included. Empty when the
    records cannot judge (a store of before records were kept, or a chain with a gap).

    A flipped byte in a name, a hash or any other field of a row is told apart from the
    truth this way, and ``repair`` restores the rows from the records."""
    cat = state.catalog
    try:
        text = cat.scalar("SELECT value FROM store_attributes WHERE key = ?", (SEQ_KEY,))
        last = int(text) if text is not None else None
    except (TimeSeriesError, ValueError, apsw.Error):
        return {}
    if last is None:
        return {}
    records = store_records(Path(state.path), state.segments.generation)
    chain = []
    at = last
    while at in records and at not in chain:
        chain.append(at)
        at = records[at][0]
    if at != 0:
        return {}  # the history does not reach the store's first transaction
    made = replay(records, reversed(chain))
    if made["gaps"]:
        return {}
    out: dict[int, str] = {}
    seen = set()
    try:
        got = cat.execute(_RAW_SELECT).fetchall()
    except (TimeSeriesError, apsw.Error):
        return {}
    for row in got:
        sid = row[0]
        seen.add(sid)
        want = made["rows"].get(sid)
        if want is None:
            out[sid] = "a row no transaction record made"
            continue
        for name, value in zip(INSERT_COLUMNS, row[1:], strict=True):
            expected = want.get(name)
            if isinstance(expected, str):
                expected = expected.encode()
            if isinstance(value, memoryview | bytearray):
                value = bytes(value)
            if value != expected:
                out[sid] = f"its {name} differs from the transaction record"
                break
    for sid in made["rows"]:
        if sid not in seen:
            out[sid] = "its row is missing from the catalog"
    # A row equal to its record whose checksum was damaged: the rebuild writes it again.
    for sid in mismatched_rows(cat):
        out.setdefault(sid, "its fields do not match its checksum")
    return out
