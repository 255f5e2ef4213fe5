"""Rebuilding a store's catalog from its segments (issue 33, Must 3).

Every write transaction leaves a record of what it did to the catalog inside the segment
it wrote (``journal.py``), and every segment records its name, its store's generation
and each slot's array key (``arrays.py``). :func:`rebuild_catalog` makes a new catalog
file from those alone:

1. every ``.h5`` file of the store directory is surveyed (``segments/`` and the folders
   beside it, where repair and the sweep set files aside): its generation, its recorded
   name, its records and its slots' keys. Files of another store are left out;
2. the records are replayed in ``seq`` order (rows added or replaced whole with their ids,
   ids removed, feature maps, store attributes). The first must start the store's history
   (``prev`` 0): a store whose catalog held rows before records were kept cannot be
   rebuilt from them, and is refused;
3. each replayed series' arrays are looked up by key among the segments, read and
   re-hashed (SHA-256); the first intact copy is the one the new catalog names. A series
   with no intact copy of an array is left out and listed as lost;
4. the new catalog is written at ``into`` (a new file, the shipped migrations applied):
   the series rows with their ids, the feature maps, the arrays, the segments, the store
   attributes, and the id counter past every id ever used.

It never changes the store: ``repair.py`` swaps the new file in (the old catalog moved
aside, never deleted) and moves back any file it names that was set aside or renamed.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import orjson

from ..core.elements import NUMPY_DTYPES
from ..errors import IntegrityError, StorageError, TimeSeriesError
from ..model import OwnerCategory, TimeSeriesType
from .arrays import KEY_WIDTH, KEYS_GROUP, KIND_NAMES, ArrayFile, describe_os_error, fsync_path
from .catalog import Catalog
from .damage import hash_matches
from .journal import SEQ_KEY, records_of, replay
from .prepare import DATA_AT, INSERT_COLUMNS, TIMESTAMPS_AT
from .rowcheck import CHECK_COLUMN, CHECKED_COLUMNS, row_check
from .rows import feature_rows
from .segments import NAME_ATTR, SEGMENT_DIR

# The store attributes the catalog is made with, spelled as ``lifecycle.py`` spells them.
GENERATION_KEY = "infrastore_sqlite.catalog_generation"
COMPRESSION_KEY = "infrastore_sqlite.compression"
#: Folders whose files repair set aside as damaged: their records are read, but their
#: files are never moved back into ``segments/``.
DAMAGED_PREFIX = "damaged-"


@dataclass(eq=False)
class SegmentFile:
    """One ``.h5`` file of the store directory, as the survey found it."""

    path: Path
    generation: str | None
    name: str | None  # the name it records (None: a file of before names were kept)
    compression: str | None
    in_segments: bool
    movable: bool  # may be moved (back) into segments/ under its recorded name
    records: list[tuple[int, int, bytes]] = field(default_factory=list)
    keys: dict[str, list] = field(default_factory=dict)  # pool -> each slot's key or None


def survey(root: Path) -> list[SegmentFile]:
    """Every readable ``.h5`` file in ``root/segments`` and one folder level beside it."""
    places: list[tuple[Path, bool, bool]] = []
    seg_dir = root / SEGMENT_DIR
    with contextlib.suppress(OSError):
        places.extend((p, True, True) for p in sorted(seg_dir.iterdir()))
    with contextlib.suppress(OSError):
        for folder in sorted(root.iterdir()):
            if folder == seg_dir or not folder.is_dir() or folder.is_symlink():
                continue
            movable = not folder.name.startswith(DAMAGED_PREFIX)
            with contextlib.suppress(OSError):
                places.extend(
                    (p, False, movable) for p in sorted(folder.iterdir()) if p.suffix == ".h5"
                )
    out = []
    for path, in_segments, movable in places:
        if not path.is_file():
            continue
        try:
            with h5py.File(path, "r", locking=False) as h5:
                attrs = h5.attrs
                generation = _text(attrs.get("catalog_generation"))
                name = _text(attrs.get(NAME_ATTR))
                compression = _text(attrs.get("compression"))
                records = records_of(h5)
                keys: dict[str, list] = {}
                group = h5.get(KEYS_GROUP)
                for pool in list(group) if group is not None else []:
                    with contextlib.suppress(OSError, ValueError, KeyError, RuntimeError):
                        keys[pool] = _slot_keys(group[pool])
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            continue  # not an HDF5 file one can read: nothing to rebuild from
        found = SegmentFile(path, generation, name, compression, in_segments, movable, records)
        found.keys = keys
        out.append(found)
    return out


def _slot_keys(ds: h5py.Dataset) -> list[tuple[bytes, str] | None]:
    """Each slot's recorded key of a ``keys/<pool>`` dataset (None: none recorded)."""
    raw = np.asarray(ds[()], dtype=np.uint8).reshape(-1, KEY_WIDTH)
    out: list[tuple[bytes, str] | None] = []
    for row in raw:
        kind = KIND_NAMES.get(int(row[32]))
        h = row[:32].tobytes()
        out.append(None if kind is None or not any(h) else (h, kind))
    return out


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def rebuild_catalog(
    store_dir: str | Path, *, into: str | Path, generation: str | None = None
) -> dict[str, Any]:
    """A new catalog for the store at ``store_dir``, made from its segments, at ``into``.

    Parameters
    ----------
    store_dir
        The store directory.
    into
        The new catalog file (must not exist).
    generation
        The store's generation when known (from a catalog that still reads); otherwise the
        one its segments' records carry.

    Returns
    -------
    dict
        ``series`` (how many rebuilt), ``ids``, ``series_lost`` (``id``, ``name``,
        ``owner_id``: those with no intact array), ``transactions`` (records replayed),
        ``gaps`` (where the records' chain is broken), ``segments`` (the files the new
        catalog names), ``moves`` (``(from, to)``: files to move into ``segments/``
        before the new catalog is used), ``ignored`` (files of another store).

    Raises
    ------
    IntegrityError
        No record to rebuild from, or a history that does not start with the store's
        first transaction.
    """
    root = Path(store_dir)
    files = survey(root)
    if generation is None:
        votes = Counter(f.generation for f in files if f.records and f.generation)
        if not votes:
            raise IntegrityError(
                f"the catalog of {root} cannot be rebuilt: no segment holds a record of its "
                "transactions (a store written before records were kept); restore "
                "catalog.sqlite from a backup of this store"
            )
        generation = votes.most_common(1)[0][0]
    ours = [f for f in files if f.generation == generation]
    ignored = [str(f.path) for f in files if f.generation != generation]
    records: dict[int, tuple[int, bytes]] = {}
    for f in ours:
        for seq, prev, payload in f.records:
            records.setdefault(seq, (prev, payload))
    if not records:
        raise IntegrityError(
            f"the catalog of {root} cannot be rebuilt: no segment of this store holds a "
            "record of its transactions; restore catalog.sqlite from a backup of this store"
        )
    order = sorted(records)
    if records[order[0]][0] != 0:
        raise IntegrityError(
            f"the catalog of {root} cannot be rebuilt from its segments: their records start "
            "after series written before records were kept; restore catalog.sqlite from a "
            "backup of this store"
        )
    made = replay(records, order)
    rows: dict[int, dict[str, Any]] = made["rows"]
    features: dict[str, str] = made["features"]
    attributes: dict[str, str | None] = made["attributes"]
    gaps: list[str] = made["gaps"]
    top_id = made["top_id"]
    places = _find_arrays(rows, ours, root)
    kept: dict[int, dict[str, Any]] = {}
    lost = []
    for sid, values in sorted(rows.items()):
        keys = [(values["data_hash"], "data")]
        if values.get("timestamps_hash") is not None:
            keys.append((values["timestamps_hash"], "timestamps"))
        if all(k in places for k in keys):
            kept[sid] = values
        else:
            lost.append(_lost_entry(sid, values))
    used_files = {p[3] for p in places.values() if p[3] is not None}
    segment_files = [f for f in ours if (f.in_segments and _own_name(f)) or f in used_files]
    moves = []
    named: dict[str, SegmentFile] = {}
    for f in segment_files:
        name = f.name or f.path.name
        if name in named:  # two copies of one segment: the one in place is named
            continue
        named[name] = f
        target = root / SEGMENT_DIR / name
        if f.path != target:
            moves.append((str(f.path), str(target)))
    compression = next((f.compression for f in ours if f.compression), "auto:3:shuffle")
    _write_catalog(
        Path(into),
        generation=generation,
        compression=compression,
        seq=order[-1],
        rows=kept,
        features=features,
        attributes=attributes,
        places=places,
        segments=named,
        top_id=top_id,
    )
    return {
        "series": len(kept),
        "ids": sorted(kept),
        "series_lost": lost,
        "transactions": made["transactions"],
        "gaps": gaps,
        "segments": sorted(named),
        "moves": moves,
        "ignored": ignored,
    }


def _lost_entry(sid: int, values: dict[str, Any]) -> dict[str, Any]:
    """A series the rebuild could not bring back, as repair's report lists one."""
    try:
        category = OwnerCategory(int(values["owner_category"])).name
    except (ValueError, TypeError):
        category = str(values["owner_category"])
    try:
        kind = TimeSeriesType.from_catalog_code(values["time_series_type"]).name
    except (TimeSeriesError, ValueError, KeyError, TypeError):
        kind = str(values["time_series_type"])
    return {
        "id": sid,
        "owner_id": int(values["owner_id"]),
        "owner_type": str(values["owner_type"]),
        "owner_category": category,
        "type": kind,
        "name": str(values["name"]),
    }


def _own_name(f: SegmentFile) -> bool:
    """A file in ``segments/`` under the name it records (or one of before names)."""
    return f.name is None or f.name == f.path.name


def _find_arrays(
    rows: dict[int, dict[str, Any]], files: list[SegmentFile], root: Path
) -> dict[tuple[bytes, str], tuple[str, str, str, SegmentFile | None, str, int]]:
    """Where each array the rows need has an intact copy: ``key -> (dtype, shape,
    segment name, file, pool, slot)``; an empty array has no file (pool "")."""
    wanted: dict[tuple[bytes, str], dict[str, Any] | None] = {}
    for values in rows.values():
        wanted.setdefault((values["data_hash"], "data"), values)
        if values.get("timestamps_hash") is not None:
            wanted.setdefault((values["timestamps_hash"], "timestamps"), values)
    return _locate(wanted, files, root)


def _locate(
    wanted: dict[tuple[bytes, str], dict[str, Any] | None], files: list[SegmentFile], root: Path
) -> dict[tuple[bytes, str], tuple]:
    """:func:`_find_arrays` of keys (each with the series row an empty array is guessed
    from, or None)."""
    out: dict[tuple[bytes, str], tuple] = {}
    # Empty arrays are stored nowhere: their key is checked against an empty array.
    for key, values in wanted.items():
        if values is None:
            continue
        dtype, shape = _empty_guess(key[1], values)
        if dtype is None or 0 not in shape:
            continue
        arr = np.zeros(shape, dtype=NUMPY_DTYPES[dtype])
        if hash_matches([key], [arr])[0]:
            out[key] = (dtype, orjson.dumps(list(shape)).decode(), "", None, "", -1)
    # Candidates: files in segments/ under their own name first, then the others that
    # may move back; within each, in path order.
    ranked = sorted(
        (f for f in files if f.keys and f.name and (f.movable or f.in_segments)),
        key=lambda f: (not (f.in_segments and _own_name(f)), str(f.path)),
    )
    taken_names: set[str] = set()
    for f in ranked:
        todo = {k for k in wanted if k not in out}
        if not todo:
            break
        if not (f.in_segments and _own_name(f)):
            target = root / SEGMENT_DIR / f.name
            if f.name in taken_names or (target.exists() and target != f.path):
                continue  # its name is another file's: it cannot move back
        by_pool: dict[str, list[tuple[int, tuple[bytes, str]]]] = {}
        for pool, slot_keys in f.keys.items():
            for slot, k in enumerate(slot_keys):
                if k is not None and k in todo:
                    by_pool.setdefault(pool, []).append((slot, k))
                    todo.discard(k)
        if not by_pool:
            continue
        try:
            af = ArrayFile(f.path, "r")
        except StorageError:
            continue
        try:
            for pool, found in by_pool.items():
                dtype, shape = _pool_shape(pool)
                for start in range(0, len(found), 1024):
                    part = found[start : start + 1024]
                    try:
                        arrays = af.read(pool, [s for s, _ in part])
                    except (StorageError, OSError, ValueError):
                        arrays = []
                        for s, _k in part:
                            try:
                                arrays.extend(af.read(pool, [s]))
                            except (StorageError, OSError, ValueError):
                                arrays.append(None)
                    checks = [
                        a is not None and hash_matches([k], [a])[0]
                        for (_s, k), a in zip(part, arrays, strict=True)
                    ]
                    for (s, k), good in zip(part, checks, strict=True):
                        if good:
                            out[k] = (dtype, shape, f.name, f, pool, s)
                            taken_names.add(f.name)
        except (TimeSeriesError, OSError, ValueError, KeyError, RuntimeError):
            pass  # what was checked before the failure stays; the rest is lost
        finally:
            af.close()
    return out


def _pool_shape(pool: str) -> tuple[str, str]:
    """The dtype and shape (JSON) of a pool's arrays, from its name (``f64__6x4``)."""
    dtype, _, dims = pool.partition("__")
    shape = [] if dims == "s" else [int(d) for d in dims.split("x")]
    return dtype, orjson.dumps(shape).decode()


def _empty_guess(kind: str, values: dict[str, Any]) -> tuple[str | None, tuple[int, ...]]:
    """The dtype and shape an empty array of a series would have (checked by its hash)."""
    if kind == "timestamps":
        return "i64", (0,)
    try:
        shape = tuple(int(d) for d in orjson.loads(values["array_shape"]))
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None, ()
    dtype = values.get("element_type")
    return (dtype if dtype in NUMPY_DTYPES else None), shape


def _write_catalog(
    into: Path,
    *,
    generation: str,
    compression: str,
    seq: int,
    rows: dict[int, dict[str, Any]],
    features: dict[str, str],
    attributes: dict[str, str | None],
    places: dict[tuple[bytes, str], tuple],
    segments: dict[str, SegmentFile],
    top_id: int,
) -> None:
    """The rebuilt catalog, written in one transaction into a new file."""
    if into.exists():
        raise StorageError(f"cannot rebuild the catalog into {into}: the file exists")
    cat = Catalog(into, create=True)
    try:
        with cat.transaction():
            cat.executemany(
                "INSERT INTO store_attributes (key, value) VALUES (?, ?)",
                [
                    (GENERATION_KEY, generation),
                    (COMPRESSION_KEY, compression),
                    (SEQ_KEY, str(seq)),
                    *((k, v) for k, v in attributes.items() if v is not None),
                ],
            )
            used = {v["features_hash"] for v in rows.values()}
            for fh_hex, text in features.items():
                fh = bytes.fromhex(fh_hex)
                if fh not in used:
                    continue
                cat.execute(
                    "INSERT INTO feature_maps (features_hash, features_json) VALUES (?, ?)",
                    (fh, text),
                )
                cat.executemany(
                    "INSERT INTO feature_sets VALUES (?, ?, ?, ?, ?, ?, ?)",
                    feature_rows(fh, orjson.loads(text)),
                )
            # The arrays numbered in the order their first series was added (as the
            # adds numbered them), the series rows naming them by these ids.
            array_ids: dict[tuple[bytes, str], int] = {}
            for _sid, v in sorted(rows.items()):
                array_ids.setdefault((v["data_hash"], "data"), len(array_ids) + 1)
                if v.get("timestamps_hash") is not None:
                    array_ids.setdefault((v["timestamps_hash"], "timestamps"), len(array_ids) + 1)
            cat.executemany(
                "INSERT INTO arrays (id, hash, kind, dtype, shape, pool, slot, segment) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (i, k[0], k[1], p[0], p[1], p[4], p[5], p[2])
                    for k, i in array_ids.items()
                    if (p := places.get(k)) is not None
                ],
            )
            # Each row with its checksum (rowcheck.py), as an add inserts it.
            columns = (*CHECKED_COLUMNS, CHECK_COLUMN)
            values = []
            for sid, v in sorted(rows.items()):
                row = [sid, *(v[c] for c in INSERT_COLUMNS)]
                row[1 + DATA_AT] = array_ids[v["data_hash"], "data"]
                if row[1 + TIMESTAMPS_AT] is not None:
                    row[1 + TIMESTAMPS_AT] = array_ids[v["timestamps_hash"], "timestamps"]
                values.append(row)
            cat.executemany(
                f"INSERT INTO time_series_associations ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' * len(columns))})",
                [(*r, row_check(r)) for r in values],
            )
            for name, f in sorted(segments.items()):
                nbytes = os.path.getsize(f.path)
                slots = sum(sum(1 for k in ks if k is not None) for ks in f.keys.values())
                cat.execute(
                    "INSERT INTO segments (name, bytes, slots, pools) VALUES (?, ?, ?, ?)",
                    (name, nbytes, slots, orjson.dumps(sorted(f.keys)).decode()),
                )
            # Past every id ever used, removed ones included: an id is never reused.
            cat.execute(
                "UPDATE sqlite_sequence SET seq = max(seq, ?) "
                "WHERE name = 'time_series_associations'",
                (top_id,),
            )
            if not cat.scalar(
                "SELECT count(*) FROM sqlite_sequence WHERE name = 'time_series_associations'"
            ):
                cat.execute(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('time_series_associations', ?)",
                    (top_id,),
                )
    except OSError as exc:
        raise StorageError(
            f"writing the rebuilt catalog {into} failed: {describe_os_error(exc)}"
        ) from exc
    finally:
        cat.close()


def relocate(
    root: str | Path, generation: str, keys: set[tuple[bytes, str]]
) -> dict[tuple[bytes, str], tuple[str, str, int, SegmentFile]]:
    """Intact copies of ``keys`` (arrays a catalog lost track of: a wrong slot or a
    wrong segment name in its rows) among the store's files that record their own name
    (in ``segments/``, or set aside and free to move back under it): ``key ->
    (segment, pool, slot, file)``, each read and re-hashed."""
    files = [
        f
        for f in survey(Path(root))
        if f.generation == generation and f.name and (f.name == f.path.name or f.movable)
    ]
    places = _locate(dict.fromkeys(keys), files, Path(root))
    return {k: (p[2], p[4], p[5], p[3]) for k, p in places.items()}


def name_moves(root: str | Path, generation: str) -> list[tuple[str, str]]:
    """The moves ``(from, to)`` that would put each file of ``segments/`` recording
    another name than its own back under the name it records (files swapped, or
    renamed), when that name is free or held by another such file: decided only, nothing
    is moved (:func:`move_files` does). A file whose recorded name is held by the right
    file (a copy over a sibling) stays where it is, for repair to set aside."""
    root = Path(root)
    seg_dir = root / SEGMENT_DIR
    wrong = [
        f
        for f in survey(root)
        if f.in_segments and f.generation == generation and f.name and f.name != f.path.name
    ]
    leaving = {f.path for f in wrong}
    claimed: set[Path] = set()
    moves = []
    for f in wrong:
        target = seg_dir / f.name
        if (target.exists() and target not in leaving) or target in claimed:
            continue  # the right file holds that name (this one is a copy), or another claims it
        claimed.add(target)
        moves.append((str(f.path), str(target)))
    return moves


def move_files(root: str | Path, moves: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Make the moves ``(from, to)`` (:func:`name_moves`, or their reverse to undo them):
    each file is parked under a work name beside ``segments/`` first, so swapped names
    exchange; a target taken meanwhile leaves the file where it was. Files are only
    renamed, never deleted; returns the moves made."""
    root = Path(root)
    parked: list[tuple[Path, Path, Path]] = []
    for origin, target in moves:
        work = root / f".{Path(target).name}.moving-{os.getpid()}"
        os.rename(origin, work)
        parked.append((work, Path(target), Path(origin)))
    done = []
    for work, target, origin in parked:
        if not target.exists():
            os.rename(work, target)
            done.append((str(origin), str(target)))
        elif not origin.exists():
            os.rename(work, origin)  # two files claim one name: left as they were
        else:
            continue  # both names taken meanwhile: left beside segments/ (never swept)
    if parked:
        fsync_path(root / SEGMENT_DIR)
        fsync_path(root)
    return done
