"""A damaged store: reading around the damage, and the diagnosis ``verify`` prints.

Every array a read returns is checked: against the per-slot checksums its segment keeps
beside each pool (``arrays.slot_sums``), and, where those differ or a segment written
before them has none, against its key (the SHA-256 content hash the catalog files it
under: ``data_hash`` of a data array, ``timestamps_hash`` of a time axis). A flipped bit,
a zeroed range or a chunk HDF5 lost track of fails the read of the series concerned
instead of handing back wrong numbers. Why not SHA-256 on every read, nor HDF5's
Fletcher-32: docs/durability.md ("A damaged store").

A read that meets damage is attributed array by array (:func:`read_group`: a slab that
fails is read again one slot at a time), so the arrays of a damaged file that still read
and re-hash are returned, and the error (:class:`ArraysDamaged`, made into a
:class:`~infrastore_sqlite.errors.DamagedStoreError` naming the series by
:func:`damage_error`) names every damaged array the read met.

:func:`diagnose` is ``Store.diagnose``: every segment file checked (missing, shorter
than written, unreadable, a dataset missing, arrays that no longer hash to their key),
every series that lost data, and the catalog's own ``PRAGMA integrity_check``. It never
writes.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np
import orjson

from ..core.elements import parse_element_type
from ..core.hashing import data_hashes, timestamps_hash
from ..core.periods import as_period
from ..core.timeref import MAX_MS, MIN_MS
from ..errors import (
    CatalogDamagedError,
    DamagedStoreError,
    StorageError,
    TimeSeriesError,
    damage_terms,
)
from ..model import OwnerCategory, TimeSeriesType
from .arrays import (
    ATTR_UNREADABLE,
    SUMS_FORMAT,
    SUMS_FORMAT_ATTR,
    describe_os_error,
    matching_sums_format,
)
from .journal import row_mismatches, unknown_transactions
from .prepare import hash_sql
from .rowcheck import mismatched_rows
from .segments import (
    ASIDE_DIR,
    SEALED_SUFFIX,
    ForeignSegmentError,
    SegmentGone,
    Segments,
    WrongSegmentError,
)

if TYPE_CHECKING:
    from .state import StoreState

# What is wrong with an array or a segment file, as the JSON report spells it.
MISSING = "missing"  # the file is not there
TRUNCATED = "truncated"  # the file is shorter than when it was written
UNREADABLE = "unreadable"  # HDF5 cannot open the file or read the array
NO_DATASET = "dataset missing"  # the file has no pool the catalog names
HASH_MISMATCH = "hash mismatch"  # the bytes read no longer hash to the array's key
NOT_HELD = "not in catalog"  # a series names an array the catalog has no row for
BAD_ROW = "catalog row damaged"  # a series row whose fields no longer decode
FOREIGN = "not this store's"  # the file carries another catalog's generation
WRONG_FILE = "wrong file"  # the file holds another segment (swapped, copied, renamed)
# The file's root attribute ``slot_checksum_version`` (``arrays.SUMS_FORMAT_ATTR``):
SUMS_KIND_DAMAGED = "checksum kind damaged"  # unreadable, not a version, or its slots' own
SUMS_KIND_UNKNOWN = "checksum kind unknown"  # a later version whose checksums are unknown

# Slots verified at once when a part read first checks whole arrays (bytes read).
_VERIFY_BYTES = 64 * 1024 * 1024
# Series labels an error message names before "and N more".
_NAMED = 12


class ArraysDamaged(DamagedStoreError):
    """Arrays a read found damaged: ``found`` maps each key ``(hash, kind)`` to
    ``(segment, problem, detail)``. The read path turns it into a message naming the
    series (:func:`damage_error`)."""

    def __init__(self, found: dict[tuple[bytes, str], tuple[str, str, str]]) -> None:
        super().__init__(
            f"{len(found)} stored arrays are damaged", key=sorted({v[0] for v in found.values()})
        )
        self.found = found


def hash_matches(keys: Sequence[tuple[bytes, str]], arrays: Sequence[np.ndarray]) -> list[bool]:
    """Whether each array re-hashes to its key (``data_hash`` for ``data``, the time-axis
    hash for ``timestamps``)."""
    ok = [True] * len(keys)
    data = [i for i, k in enumerate(keys) if k[1] == "data"]
    if data:
        got = data_hashes([arrays[i] for i in data])
        for i, h in zip(data, got, strict=True):
            ok[i] = h == keys[i][0]
    for i, k in enumerate(keys):
        if k[1] != "data":
            try:
                ok[i] = timestamps_hash(np.asarray(arrays[i], dtype=np.int64)) == k[0]
            except (TimeSeriesError, ValueError, TypeError):
                ok[i] = False
    return ok


def pool_shape(text: Any, arrays: Sequence[np.ndarray]) -> list[int]:
    """The shape an ``arrays`` row records (``text``, JSON), or, when that text is damaged
    (a flipped byte in the catalog), the shape of the arrays read, which were checked
    against their keys: copying them never stops at a damaged shape field."""
    try:
        shape = orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        shape = None
    if not isinstance(shape, list) or (arrays and list(np.shape(arrays[0])) != shape):
        shape = list(np.shape(arrays[0])) if arrays else []
    return shape


# The advice a read's refusal ends with: in verify's own report it would only repeat itself.
_RUN_VERIFY = ("; run verify", " (run verify to list the series it holds)")


def _problem_of(exc: StorageError) -> tuple[str, str]:
    text = str(exc)
    for advice in _RUN_VERIFY:
        text = text.removesuffix(advice)
    if isinstance(exc, ForeignSegmentError):
        return FOREIGN, text
    if isinstance(exc, WrongSegmentError):
        return WRONG_FILE, text
    return (NO_DATASET if "has no pool" in text else UNREADABLE), text


def read_group(
    segments: Segments,
    name: str,
    pool: str,
    slots: Sequence[int],
    keys: Sequence[tuple[bytes, str]],
    part: tuple = (),
    *,
    verified: set | None = None,
    gone_is_missing: bool = False,
    thorough: bool = False,
) -> list[np.ndarray]:
    """The arrays at ``slots`` of ``pool`` in segment ``name``, each checked.

    A whole read is checked against the segment's per-slot checksums (``arrays.slot_sums``,
    one vectorized pass per slab); an array that does not match, and every array of a
    segment written before checksums (or with ``thorough``, as ``verify`` and ``repair``
    read), is checked against its key, the content hash. A ``part`` read first checks
    each whole array once (``verified`` remembers the places checked; segments never
    change). Raises
    :class:`ArraysDamaged` naming every array that fails (a failed slab is read again one
    slot at a time), or ``SegmentGone`` for a missing file unless ``gone_is_missing``
    (then the file is damage: the catalog was read again and still names it).
    """
    try:
        if part:
            _verify_whole(segments, name, pool, slots, keys, verified)
            return segments.read(name, pool, slots, part)
        if thorough:
            arrays, suspect = segments.read(name, pool, slots), None
        else:
            arrays, suspect = segments.read_checked(name, pool, slots, keys)
    except SegmentGone:
        if not gone_is_missing:
            raise
        raise ArraysDamaged({k: (name, MISSING, "the file is not there") for k in keys}) from None
    except ArraysDamaged:
        raise
    except StorageError as exc:
        problem, detail = _problem_of(exc)
        if problem in (NO_DATASET, FOREIGN, WRONG_FILE) or "cannot open the array file" in detail:
            raise ArraysDamaged({k: (name, problem, detail) for k in keys}) from None
        return _one_by_one(segments, name, pool, slots, keys)
    if suspect is None:
        ok = hash_matches(keys, arrays)
    elif not suspect:
        return arrays
    else:
        # A checksum that does not match: the content hash decides (the checksum twin
        # itself may be what is damaged; then the array is sound).
        ok = [True] * len(keys)
        doubt = set(suspect)
        at = [i for i, s in enumerate(slots) if s in doubt]
        for i, good in zip(
            at, hash_matches([keys[i] for i in at], [arrays[i] for i in at]), strict=True
        ):
            ok[i] = good
    if all(ok):
        return arrays
    raise ArraysDamaged(
        {
            k: (name, HASH_MISMATCH, f"array {k[0].hex()[:12]} no longer hashes to its key")
            for k, good in zip(keys, ok, strict=True)
            if not good
        }
    )


def _one_by_one(
    segments: Segments, name: str, pool: str, slots: Sequence[int], keys: Sequence[tuple]
) -> list[np.ndarray]:
    """A slab that failed, read again a slot at a time; raises for the ones that fail."""
    found: dict[tuple[bytes, str], tuple[str, str, str]] = {}
    out: list[np.ndarray] = []
    for slot, key in zip(slots, keys, strict=True):
        try:
            (arr,) = segments.read(name, pool, [slot])
        except StorageError as exc:
            found[key] = (name, *_problem_of(exc))
            continue
        if not hash_matches([key], [arr])[0]:
            found[key] = (name, HASH_MISMATCH, f"array {key[0].hex()[:12]} no longer hashes")
        out.append(arr)
    if found:
        raise ArraysDamaged(found)
    return out


def _verify_whole(
    segments: Segments,
    name: str,
    pool: str,
    slots: Sequence[int],
    keys: Sequence[tuple[bytes, str]],
    verified: set | None,
) -> None:
    """Check the whole arrays a part read is about to use, each once per ``verified``."""
    todo = [
        (s, k)
        for s, k in zip(slots, keys, strict=True)
        if verified is None or (name, s) not in verified
    ]
    if not todo:
        return
    row_bytes = max(1, segments.row_bytes(name, pool))
    step = max(1, _VERIFY_BYTES // row_bytes)
    for start in range(0, len(todo), step):
        chunk = todo[start : start + step]
        read_group(segments, name, pool, [s for s, _ in chunk], [k for _, k in chunk])
        if verified is not None:
            verified.update((name, s) for s, _ in chunk)


def damage_error(
    state: StoreState, found: dict[tuple[bytes, str], tuple[str, str, str]]
) -> DamagedStoreError:
    """One line naming the series that ``found``'s arrays belong to and their files, with
    the commands (or methods) to diagnose and repair the store.

    Every array of the damaged files is checked first, so the line names every series
    those files damaged, not only the ones the failed read asked for (an export that
    fails on its first partition names those of the later ones too)."""
    met = {k[0] for k in found}
    found = {**found, **_whole_files(state, {v[0] for v in found.values() if v[0]})}
    # A series row naming an array id the catalog does not hold has no hash to name.
    hashes = sorted({k[0] for k in found if k[0] is not None})
    rows = series_naming(state, hashes)
    # The series whose arrays the read met first (the ones asked for are among them, and
    # a read meets a data array and a time axis in different files at once), then the
    # others of the damaged files; by id within each.
    rows.sort(key=lambda r: bytes(r[6]) not in met and (r[7] is None or bytes(r[7]) not in met))
    labels = [row_label(r) for r in rows]
    files = sorted({str(state.segments.path(v[0])) for v in found.values() if v[0]})
    problems = sorted({v[1] for v in found.values() if v[0]})
    shown = ", ".join(labels[:_NAMED])
    if len(labels) > _NAMED:
        shown += f" and {len(labels) - _NAMED} more"
    reasons = []
    if files:
        whose = "its" if len(labels) == 1 else "their"
        reasons.append(f"{whose} data in {', '.join(files)} is damaged ({', '.join(problems)})")
    if any(not v[0] for v in found.values()):
        reasons.append("the catalog names arrays the store does not hold")
    return DamagedStoreError(
        f"cannot read {shown or 'the series'}: {'; '.join(reasons)}; run {{verify}} to list "
        "every damaged series, then {repair} to set the damage aside",
        series=labels,
        key=files,
        terms=damage_terms(str(state.path)),
    )


def _whole_files(
    state: StoreState, names: Iterable[str]
) -> dict[tuple[bytes, str], tuple[str, str, str]]:
    """Every damaged array of segments ``names`` (a read met damage in them)."""
    out: dict[tuple[bytes, str], tuple[str, str, str]] = {}
    for name in names:
        rows = [r[:2] + r[4:] for r in arrays_in(state.catalog, name)]
        out.update(check_segment(state.segments, name, rows))
    return out


# Text read as bytes and decoded here: a damaged row's text may not be UTF-8, and a
# report about damage must not fail on it.
_SERIES_COLUMNS = (
    "t.id, t.owner_id, CAST(t.owner_type AS BLOB), t.owner_category, t.time_series_type, "
    f"CAST(t.name AS BLOB), {hash_sql('data_hash')}, {hash_sql('timestamps_hash')}"
)


def series_naming(state: StoreState, hashes: Iterable[bytes]) -> list[tuple]:
    """``(id, owner_id, owner_type, owner_category, type code, name, data_hash,
    timestamps_hash)`` of every series whose data or time axis is one of ``hashes``, in
    id order."""
    hs = tuple(hashes)
    if not hs:
        return []
    rows = state.catalog.execute(
        f"SELECT {_SERIES_COLUMNS} FROM time_series_associations t "
        "WHERE t.data_id IN (SELECT id FROM arrays WHERE hash IN carray(?1)) "
        "OR t.timestamps_id IN (SELECT id FROM arrays WHERE hash IN carray(?1)) ORDER BY t.id",
        (apsw.carray(hs),),
    ).fetchall()
    return [(r[0], r[1], _text(r[2]), r[3], r[4], _text(r[5]), r[6], r[7]) for r in rows]


def arrays_in(cat: Any, segment: str) -> list[tuple]:
    """``(hash, kind, dtype, shape, pool, slot)`` of the arrays of ``segment``, in pool and
    slot order. Text is decoded here, replacing what is not UTF-8 (a damaged row then
    names no pool there is, and its array is reported lost instead of the query failing)."""
    rows = cat.execute(
        "SELECT hash, CAST(kind AS BLOB), CAST(dtype AS BLOB), CAST(shape AS BLOB), "
        "CAST(pool AS BLOB), slot FROM arrays WHERE segment = ? ORDER BY pool, slot",
        (segment,),
    ).fetchall()
    return [(bytes(h), _text(k), _text(d), _text(sh), _text(p), sl) for h, k, d, sh, p, sl in rows]


def _text(value: Any) -> str:
    return bytes(value).decode("utf-8", "replace") if value is not None else ""


def row_label(r: tuple) -> str:
    """``'name' (owner N, id I)`` of a :func:`series_naming` row."""
    return f"{r[5]!r} (owner {r[1]}, id {r[0]})"


# ---------------------------------------------------------------------------- diagnose


@dataclass
class SegmentReport:
    """One damaged segment file: what is wrong, and how many of its arrays are lost."""

    file: str
    problem: str
    detail: str
    arrays: int
    arrays_lost: int


@dataclass
class LostSeries:
    """A series that lost data (its values or its time axis)."""

    id: int
    owner_id: int
    owner_type: str
    owner_category: str
    type: str
    name: str
    files: list[str]
    problem: str


@dataclass
class Diagnosis:
    """What ``Store.diagnose`` found: ``ok`` when nothing is wrong.

    ``segments`` lists the damaged segment files, ``series_lost`` every series that lost
    data, ``catalog`` the catalog's own integrity check, ``errors`` one line per problem
    (what ``verify_integrity`` returns), ``checked`` the distinct arrays read and hashed,
    ``series`` the series in the catalog.
    """

    ok: bool = True
    checked: int = 0
    series: int = 0
    segments: list[SegmentReport] = field(default_factory=list)
    series_lost: list[LostSeries] = field(default_factory=list)
    catalog: dict[str, Any] = field(default_factory=lambda: {"file": "", "ok": True, "errors": []})
    errors: list[str] = field(default_factory=list)
    #: ``(hash, kind)`` of every array lost (not part of the report's dict).
    lost_keys: set = field(default_factory=set, repr=False)
    #: The names of the damaged segments (not part of the report's dict).
    damaged_segments: list[str] = field(default_factory=list, repr=False)
    #: Series ids whose catalog rows no longer decode, with why (not part of the dict).
    bad_rows: dict[int, tuple] = field(default_factory=dict, repr=False)
    #: Files (or directories) in ``segments/`` that no catalog row names and no pending
    #: marker claims: never deleted, ``repair`` sets them aside.
    unnamed: list[str] = field(default_factory=list)
    #: What earlier writes set aside in ``segments-aside/`` (not damage: look at them,
    #: delete them when sure they hold nothing you need).
    set_aside: list[str] = field(default_factory=list)
    #: Names in ``segments/`` of pending files of a write that did not commit (only
    #: known to be dead under the write lock; not part of the dict).
    pending: list[str] = field(default_factory=list, repr=False)
    #: Names in ``segments/`` of sealed files not named (a write between its seal and its
    #: commit, or a commit the catalog lost): set aside by the next writer (not in the dict).
    sealed: list[str] = field(default_factory=list, repr=False)
    #: Segments whose arrays the catalog places in them, sound, but which its segments
    #: table does not list (a damaged name in a row): repair lists them again.
    unlisted: list[str] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON types (what ``verify -f json`` prints)."""
        out = asdict(self)
        out.pop("lost_keys")
        out.pop("damaged_segments")
        out.pop("bad_rows")
        out.pop("pending")
        out.pop("sealed")
        out.pop("unlisted")
        return out


def catalog_check(state: StoreState) -> list[str]:
    """SQLite's ``PRAGMA integrity_check`` of the catalog: the problems, none when sound."""
    try:
        rows = [r[0] for r in state.catalog.execute("PRAGMA integrity_check(100)")]
    except (StorageError, OSError) as exc:
        return [str(exc)]
    except Exception as exc:  # apsw errors raised while stepping the pragma's rows
        return [f"{type(exc).__name__}: {exc}"]
    # integrity_check's first row may span lines ("*** in database main ***\n…"): one
    # line per problem, as every report line is.
    return [] if rows == ["ok"] else [" ".join(str(r).split()) for r in rows]


def diagnose(state: StoreState, progress: Callable[[int, int], None] | None = None) -> Diagnosis:
    """``Store.diagnose``: check every segment file, array and the catalog (no writes).

    Catalog damage met halfway (rows SQLite cannot read) ends the check with what was
    found so far and the catalog named damaged, never an error out of it.
    """
    state.check_open()
    report = Diagnosis()
    try:
        return _diagnose(state, progress, report)
    except CatalogDamagedError as exc:
        report.ok = False
        report.catalog["file"] = str(state.catalog.path)
        report.catalog["ok"] = False
        report.catalog["errors"].append(str(exc))
        report.errors.append(str(exc))
        return report


def verify(state: StoreState, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """``Store.verify_integrity``: :func:`diagnose`'s findings in the reference's shape,
    ``{"ok": bool, "errors": [str, ...]}``."""
    found = diagnose(state, progress)
    return {"ok": found.ok, "errors": list(found.errors)}


def _diagnose(
    state: StoreState, progress: Callable[[int, int], None] | None, report: Diagnosis
) -> Diagnosis:
    cat = state.catalog
    segs = state.segments
    cat_file = str(cat.path)
    problems = catalog_check(state)
    stale = unknown_transactions(state)
    if stale:
        problems.append(
            f"stale: the segments record {len(stale)} transaction{'s' * (len(stale) != 1)} the catalog does not know "
            "(an older copy restored, or a lost -wal); repair rebuilds it from them"
        )
    else:
        differ = row_mismatches(state)
        if differ:
            shown = "; ".join(f"id {i}: {why}" for i, why in sorted(differ.items())[:5])
            problems.append(
                f"{len(differ)} series rows differ from the transaction records the segments "
                f"keep ({shown}); repair restores them from the records"
            )
    report.catalog = {"file": cat_file, "ok": not problems, "errors": problems}
    for p in problems:
        report.errors.append(f"the catalog {cat_file} is damaged: {p}")
    try:
        report.series = int(cat.scalar("SELECT count(*) FROM time_series_associations"))
        segment_rows = [
            (_text(n), b)
            for n, b in cat.execute("SELECT CAST(name AS BLOB), bytes FROM segments ORDER BY name")
        ]
        held = {
            (bytes(h), _text(k))
            for h, k in cat.execute("SELECT hash, CAST(kind AS BLOB) FROM arrays")
        }
        # Series rows naming an array id the catalog does not hold (schema step 0004:
        # rows name arrays by id), or one of the other kind: a damaged row.
        dangling = cat.execute(
            "SELECT t.id, t.owner_id, t.owner_type, t.owner_category, t.name "
            "FROM time_series_associations t WHERE NOT EXISTS (SELECT 1 FROM arrays a "
            "WHERE a.id = t.data_id AND a.kind = 'data') OR (t.timestamps_id IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM arrays a WHERE a.id = t.timestamps_id "
            "AND a.kind = 'timestamps'))"
        ).fetchall()
        # Arrays placed in a segment the catalog does not list (a damaged row).
        stray = [
            (h, _text(k), _text(g))
            for h, k, g in cat.execute(
                "SELECT hash, CAST(kind AS BLOB), CAST(segment AS BLOB) FROM arrays "
                "WHERE pool != '' AND segment NOT IN (SELECT name FROM segments)"
            )
        ]
        report.bad_rows = bad_rows(cat)
        for sid, *who in dangling:
            report.bad_rows.setdefault(
                int(sid), ("it names an array the catalog does not hold", *who)
            )
        # Rows whose fields no longer match their checksum: a read refuses them.
        for sid, who in mismatched_rows(cat).items():
            report.bad_rows.setdefault(sid, ("its fields do not match its checksum", *who))
    except Exception as exc:  # a catalog too damaged to list its own rows
        report.ok = False
        if not problems:
            report.catalog = {"file": cat_file, "ok": False, "errors": [str(exc)]}
            report.errors.append(f"the catalog {cat_file} is damaged: {exc}")
        return report
    lost: dict[tuple[bytes, str], tuple[str, str, str]] = {}
    unlisted: dict[str, int] = {}
    for segment in sorted({g for _h, _k, g in stray}):
        # Arrays placed in a segment the segments table does not list (a damaged name in
        # its row): if the file is there, its own and sound, they are not lost; repair
        # lists it again. Otherwise they are lost with it.
        rows = [r[:2] + r[4:] for r in arrays_in(cat, segment)]
        found: dict[tuple[bytes, str], tuple[str, str, str]] = {}
        if segs.path(segment).is_file() and "/" not in segment:
            found = check_segment(segs, segment, rows)
            if len(found) < len(rows):
                unlisted[segment] = len(rows) - len(found)
        else:
            found = {
                (bytes(r[0]), r[1]): (
                    segment,
                    MISSING,
                    "the catalog names a segment it does not list",
                )
                for r in rows
            }
        lost.update(found)
    for h, kind, segment in stray:
        if segment not in unlisted and (bytes(h), kind) not in lost:
            lost[(bytes(h), kind)] = (
                segment,
                MISSING,
                "the catalog names a segment it does not list",
            )
    for segment, n in unlisted.items():
        report.unlisted.append(segment)
        report.errors.append(
            f"the catalog's segments table does not list {segs.path(segment)}, where {n} of its "
            "arrays are (a damaged row); repair lists it again"
        )
    total = len(held)
    checked = 0
    for name, nbytes in segment_rows:
        path = segs.path(name)
        rows = [r[:2] + r[4:] for r in arrays_in(cat, name)]
        seg_problem, seg_detail, seg_lost = "", "", 0
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            seg_problem, seg_detail = MISSING, "the file is not there"
        except OSError as exc:
            seg_problem, seg_detail = UNREADABLE, describe_os_error(exc)
        else:
            if path.is_dir():
                seg_problem, seg_detail = UNREADABLE, f"{path} is a directory, not a file"
            elif nbytes is not None and size < int(nbytes):
                seg_problem = TRUNCATED
                seg_detail = f"{path} holds {size} bytes of the {int(nbytes)} written"
        if seg_problem in (MISSING, UNREADABLE):
            for h, kind, _pool, _slot in rows:
                lost[(bytes(h), kind)] = (name, seg_problem, seg_detail)
            seg_lost = len(rows)
            checked += len(rows)
        else:
            found = check_segment(segs, name, rows)
            checked += len(rows)
            if found:
                lost.update(found)
                seg_lost = len(found)
                wrong = [v for v in found.values() if v[1] == WRONG_FILE]
                if wrong:  # another segment's file: its size says nothing of damage
                    seg_problem, seg_detail = WRONG_FILE, wrong[0][2]
                if not seg_problem:
                    kinds = sorted({v[1] for v in found.values()})
                    seg_problem = kinds[0] if len(kinds) == 1 else UNREADABLE
                    seg_detail = next(iter(found.values()))[2]
            if seg_problem == TRUNCATED and not found:
                seg_lost = 0
            if not seg_problem:
                kind = sums_kind_problem(segs, name, rows)
                if kind is not None:
                    seg_problem, seg_detail = kind
        if progress:
            progress(checked, total)
        if seg_problem:
            report.segments.append(
                SegmentReport(str(path), seg_problem, seg_detail, len(rows), seg_lost)
            )
            report.damaged_segments.append(name)
            if seg_problem in (SUMS_KIND_DAMAGED, SUMS_KIND_UNKNOWN):
                report.errors.append(f"the segment file {path}: {seg_detail}")
            else:
                report.errors.append(
                    f"the segment file {path} is damaged ({seg_problem}): {seg_detail}; "
                    f"{seg_lost} of its {len(rows)} arrays are lost"
                )
    report.checked = checked
    report.lost_keys = set(lost)
    _unnamed_files(state, report, {n for n, _ in segment_rows} | set(unlisted))
    for sid, (detail, owner, otype, category, name) in sorted(report.bad_rows.items()):
        report.series_lost.append(
            LostSeries(
                sid, _int(owner), str(otype), _category(category), "", str(name), [], BAD_ROW
            )
        )
        report.errors.append(f"the catalog row of series id {sid} is damaged: {detail}")
    _unrenderable_instants(cat, report)
    if lost:
        for r in series_naming(state, sorted({k[0] for k in lost})):
            if r[0] in report.bad_rows:
                continue
            keys = [(bytes(r[6]), "data")] + ([(bytes(r[7]), "timestamps")] if r[7] else [])
            keys = [k for k in keys if k in lost]
            where = sorted({str(segs.path(lost[k][0])) for k in keys if lost[k][0]})
            what = sorted({lost[k][1] for k in keys})
            report.series_lost.append(
                LostSeries(
                    id=int(r[0]),
                    owner_id=int(r[1]),
                    owner_type=str(r[2]),
                    owner_category=_category(r[3]),
                    type=TimeSeriesType.from_catalog_code(r[4]).name,
                    name=str(r[5]),
                    files=where,
                    problem=", ".join(what),
                )
            )
            report.errors.append(
                f"{row_label(r)} lost data ({', '.join(what)})"
                + (f" in {', '.join(where)}" if where else "")
            )
    report.ok = not report.errors
    return report


def _unnamed_files(state: StoreState, report: Diagnosis, named: set[str]) -> None:
    """Note what ``segments/`` holds beyond the catalog's segments, and what earlier
    writes set aside.

    Read without the write lock, a file a writer is writing right now is marked pending
    and left out; one committed after the catalog was read here may be named unnamed
    (run ``verify`` again).
    """
    segs = state.segments
    try:
        found = segs.leftovers(named)
    except StorageError as exc:
        report.errors.append(str(exc))
        return
    report.pending = list(found.pending)
    report.sealed = list(found.sealed)
    for name in found.unnamed:
        path = segs.path(name)
        report.unnamed.append(str(path))
        report.errors.append(
            f"{path} is in the segments folder but the catalog does not name it (an older "
            "catalog restored, a lost catalog log, a damaged row, or a file put there); "
            "repair sets it aside, deleting nothing"
        )
    aside = segs.root / ASIDE_DIR
    with contextlib.suppress(OSError):
        kept = set(os.listdir(aside))
        # A sealed file's mark moved with it (Segments.set_aside) is not a file of its own.
        report.set_aside = sorted(
            str(aside / n)
            for n in kept
            if not (n.endswith(SEALED_SUFFIX) and n[: -len(SEALED_SUFFIX)] in kept)
        )


def _unrenderable_instants(cat: Any, report: Diagnosis) -> None:
    """Name each series whose first instant no read can render (outside the years 1 to
    9999: an import before the interchange refused such instants took them). Its values
    are intact and kept; a read of it is refused, so verify says so and what to do."""
    for sid, owner, name, ms in cat.execute(
        "SELECT id, owner_id, name, initial_ms FROM time_series_associations "
        "WHERE typeof(initial_ms) = 'integer' AND (initial_ms < ? OR initial_ms > ?)",
        (MIN_MS, MAX_MS),
    ).fetchall():
        report.ok = False
        report.errors.append(
            f"series {name!r} (owner {owner}, id {sid}): its first instant ({ms} ms) is "
            "outside the years 1 to 9999, so no read can render it (a file imported by an "
            "earlier release); its values are kept: remove the series and add it again "
            "with instants inside those years"
        )


def bad_rows(cat: Any) -> dict[int, tuple]:
    """Series rows whose fields no longer decode (a damaged catalog page that SQLite's
    own check does not see: a bit flipped inside a row): ``id -> (what is wrong,
    owner_id, owner_type, owner_category, name)``."""
    out: dict[int, tuple] = {}
    try:
        for row in cat.execute(f"SELECT {_ROW_FIELDS} FROM time_series_associations"):
            _check_row(row, out)
        _bad_hashes(cat, out)
        return out
    except UnicodeDecodeError:
        pass  # text that is not UTF-8 stops the scan: go again one row at a time
    out = {}
    for (sid,) in cat.execute("SELECT id FROM time_series_associations").fetchall():
        try:
            (row,) = cat.execute(
                f"SELECT {_ROW_FIELDS} FROM time_series_associations WHERE id = ?", (sid,)
            ).fetchall()
        except UnicodeDecodeError as exc:
            out[int(sid)] = (f"text that is not UTF-8 ({exc.reason})", 0, "", "", "")
            continue
        _check_row(row, out)
    _bad_hashes(cat, out)
    return out


# A row's array id that is not an integer: damage no read could follow.
_BAD_HASH = (
    "typeof(data_id) != 'integer' OR (timestamps_id IS NOT NULL "
    "AND typeof(timestamps_id) != 'integer')"
)


def _bad_hashes(cat: Any, out: dict[int, tuple]) -> None:
    """Note in ``out`` the series rows whose hash fields are damaged (not 32 bytes)."""
    for (sid,) in cat.execute(
        f"SELECT id FROM time_series_associations WHERE {_BAD_HASH}"
    ).fetchall():
        if int(sid) in out:
            continue
        try:
            who = cat.execute(
                "SELECT owner_id, owner_type, owner_category, name "
                "FROM time_series_associations WHERE id = ?",
                (sid,),
            ).fetchone()
        except UnicodeDecodeError:
            who = (0, "", "", "")
        out[int(sid)] = ("an array id field is damaged (not an integer)", *who)


# Every column a read decodes (text is decoded as UTF-8 on fetch), the fields checked first.
_ROW_FIELDS = (
    "id, time_series_type, element_type, resolution, horizon, interval, array_shape, "
    "owner_id, owner_type, owner_category, name, initial_timestamp, units, quantity_kind, "
    "unit_system, component_field, application_data, time_reference, percentiles_json, "
    "element_shape"
)


def _check_row(row: tuple, out: dict[int, tuple]) -> None:
    """Note in ``out`` a :data:`_ROW_FIELDS` row whose fields no longer decode."""
    sid, code, et, res, hor, itv, shape, *who = row[:11]
    try:
        # A flipped type bit in a row turns text into bytes (or a number into text).
        texts = [row[i] for i in range(2, len(row)) if i not in (7, 9)]
        if any(not isinstance(v, str | None) for v in texts):
            raise ValueError("a text field holds bytes")
        if any(not isinstance(row[i], int) or isinstance(row[i], bool) for i in (0, 1, 7, 9)):
            raise ValueError("a number field holds something else")
        kind = TimeSeriesType.from_catalog_code(code)
        parse_element_type(et)
        if not kind.is_irregular:
            as_period(res, what="resolution")
        if kind.is_forecast:
            as_period(hor, what="horizon")
            as_period(itv, what="interval")
        if not isinstance(orjson.loads(shape), list):
            raise ValueError(f"array_shape {shape!r} is not a list")
    except (TimeSeriesError, ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
        out[int(sid)] = (str(exc), *who)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _category(code: Any) -> str:
    try:
        return OwnerCategory(int(code)).name
    except (ValueError, TypeError):
        return str(code)


# Catalog rows of a segment whose checksums ``sums_kind_problem`` compares with the kinds
# this release knows: a few are evidence enough (one matching slot decides).
_KIND_SAMPLES = 16


def sums_kind_problem(segs: Segments, name: str, rows: Sequence[tuple]) -> tuple[str, str] | None:
    """``(problem, detail)`` when segment ``name``'s root attribute ``slot_checksum_version``
    is one this release cannot use (``rows``: the catalog's ``(hash, kind, pool, slot)``
    of its arrays), else None.

    Its arrays still read, each checked by its content hash instead (``read_group``);
    the file is named so that the cause is fixed. Which cause is decided on evidence: an
    attribute that cannot be read, is not a whole number above the last known one, or
    sits on slot checksums of a kind this release knows (a flipped bit in the attribute),
    is damage, which ``repair`` handles as it does other damage (the arrays copied into a
    new segment, each checked by its content hash, the file set aside). A later number
    over checksums of no known kind is what a later release would write: upgrading reads
    it with its checksums; ``repair`` copies its arrays too, losing nothing, should no
    later release have written to the store.
    """
    try:
        f = segs.reader(name)
    except StorageError:
        return None  # unreadable: check_segment names it
    if f.sum_rows is not None:
        return None
    n = len(rows)
    found = f.sums_format_found
    what = f"its root attribute {SUMS_FORMAT_ATTR}"
    salvage = (
        f"run repair, which copies its {n} arrays (each checked by its content hash) into a "
        "new segment and sets the file aside"
    )
    if found is ATTR_UNREADABLE:
        return SUMS_KIND_DAMAGED, f"{what} cannot be read (damaged metadata); {salvage}"
    value = found.item() if isinstance(found, np.generic) else found
    shown = repr(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)
    later = isinstance(value, int) and not isinstance(value, bool) and value > SUMS_FORMAT
    known = None
    if later:
        sample: dict[str, list[tuple]] = {}
        for r in itertools.islice((r for r in rows if r[2]), _KIND_SAMPLES):
            sample.setdefault(r[2], []).append(r)
        for pool, group in sample.items():
            known = matching_sums_format(
                f, pool, [int(r[3]) for r in group], [(bytes(r[0]), r[1]) for r in group]
            )
            if known is not None:
                break
    if later and known is None:
        return SUMS_KIND_UNKNOWN, (
            f"{what} is {shown}, a kind of slot checksum this release does not know "
            f"(it knows up to {SUMS_FORMAT}): a later release of infrastore-sqlite wrote it; "
            "its arrays read, each checked by its content hash instead; upgrade "
            "infrastore-sqlite to that release (pip install --upgrade infrastore-sqlite), "
            f"or, if no later release wrote to this store, {salvage}"
        )
    why = (
        f"yet its slot checksums are of kind {known}"
        if known is not None
        else f"not a kind of slot checksum (1 to {SUMS_FORMAT}, or absent)"
    )
    return SUMS_KIND_DAMAGED, (
        f"{what} is {shown}, {why}: the attribute is damaged; its arrays read, each "
        f"checked by its content hash instead; {salvage}"
    )


def check_segment(
    segs: Segments, name: str, rows: Sequence[tuple]
) -> dict[tuple[bytes, str], tuple[str, str, str]]:
    """Read and re-hash every array of segment ``name`` (``(hash, kind, pool, slot)``
    rows); the damaged ones, as :class:`ArraysDamaged` records them."""
    found: dict[tuple[bytes, str], tuple[str, str, str]] = {}
    by_pool: dict[str, list[tuple]] = {}
    for r in rows:
        if r[2]:
            by_pool.setdefault(r[2], []).append(r)
    for pool, group in by_pool.items():
        try:
            row_bytes = max(1, segs.row_bytes(name, pool))
        except StorageError:
            row_bytes = 8  # the file or pool is unreadable: read_group names it below
        step = max(1, _VERIFY_BYTES // row_bytes)
        for start in range(0, len(group), step):
            part = group[start : start + step]
            keys = [(bytes(r[0]), r[1]) for r in part]
            try:
                read_group(
                    segs,
                    name,
                    pool,
                    [r[3] for r in part],
                    keys,
                    gone_is_missing=True,
                    thorough=True,
                )
            except ArraysDamaged as exc:
                found.update(exc.found)
            except StorageError as exc:
                found.update({k: (name, *_problem_of(exc)) for k in keys})
    return found
