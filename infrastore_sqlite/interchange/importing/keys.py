"""A partition's arrays, ``id -> (data_hash, time_axis)``, held as columns
(:class:`ArrayKeys`): what an import holds of each array for the whole partition; and
:class:`IdValues`, a per-array figure held the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np


class SortedIds:
    """Positions in a sorted column of distinct int64 ids (an export numbers its arrays
    1..n: a position is then a subtraction, not a search; this is asked once per array)."""

    __slots__ = ("_base", "_dense", "_ids")

    def __init__(self, ids: np.ndarray) -> None:
        self._ids = ids
        n = len(ids)
        self._base = int(ids[0]) if n else 0
        self._dense = bool(n and int(ids[-1]) - self._base == n - 1)

    def at(self, aid: int) -> int:
        """The position of ``aid``, or -1."""
        if self._dense:
            at = aid - self._base
            return at if 0 <= at < len(self._ids) else -1
        at = int(np.searchsorted(self._ids, aid))
        return at if at < len(self._ids) and int(self._ids[at]) == aid else -1


#: A hash held as its 32 raw bytes (what an export writes as 64 lowercase hex digits).
_WORDS = np.dtype((np.void, 32))
#: Each byte's value as a lowercase hex digit (255: it is none).
_HEX_VALUE = np.full(256, 255, dtype=np.uint8)
_HEX_DIGIT = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_HEX_VALUE[_HEX_DIGIT] = np.arange(16, dtype=np.uint8)
_COMPACT_SLICE = 4096  # hashes converted at a time (~0.5 MB of work buffers)


def compact_hashes(hashes: np.ndarray) -> np.ndarray:
    """``hashes`` (UTF-8 bytes) as 32 raw bytes each when every one is 64 lowercase hex
    digits (half the memory; they sort and compare as their texts do), else as given.
    Converted a slice at a time, so the work buffers stay small."""
    if hashes.dtype != np.dtype("S64") or not len(hashes):
        return hashes
    digits = hashes.view(np.uint8).reshape(-1, 64)
    raw = np.empty((len(hashes), 32), dtype=np.uint8)
    for lo in range(0, len(hashes), _COMPACT_SLICE):
        part = digits[lo : lo + _COMPACT_SLICE]
        value = _HEX_VALUE[part]
        # NUL padding is no hex digit: a shorter text keeps the column as it is.
        if int(value.max()) > 15:
            return hashes
        raw[lo : lo + len(part)] = (value[:, 0::2] << 4) | value[:, 1::2]
    return raw.view(_WORDS).reshape(-1)


def joined_hashes(chunks: list[np.ndarray]) -> np.ndarray:
    """Chunks of hashes (each as :func:`compact_hashes` left it) as one column: raw
    bytes when every chunk is, else every hash as its text (a raw chunk spelled out
    again as 64 lowercase hex digits)."""
    if not chunks:
        return np.array([], dtype=np.bytes_)
    if any(c.dtype != _WORDS for c in chunks):
        chunks = [spelled_hashes(c) for c in chunks]
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def spelled_hashes(hashes: np.ndarray) -> np.ndarray:
    """Hashes as texts (UTF-8 bytes): raw ones (:func:`compact_hashes`) spelled out as
    their 64 lowercase hex digits, others as given."""
    if hashes.dtype != _WORDS:
        return hashes
    octets = hashes.view(np.uint8).reshape(-1, 32)
    digits = np.empty((len(hashes), 64), dtype=np.uint8)
    digits[:, 0::2] = _HEX_DIGIT[octets >> 4]
    digits[:, 1::2] = _HEX_DIGIT[octets & 15]
    return digits.view("S64").reshape(-1)


class ArrayKeys(Mapping[int, tuple[str, str]]):
    """A partition's arrays, ``id -> (data_hash, time_axis)``, held as columns: int64
    ids, the hashes as UTF-8 bytes, each time axis as the number of its distinct text
    (a partition may hold millions of arrays; a dict of tuples costs ~200 bytes each).

    Read like the dict :meth:`SeriesRows.arrays` gives; :meth:`positions` and
    :meth:`key_order` answer for many ids at once.
    """

    def __init__(self, ids: np.ndarray, hashes: np.ndarray, axis: np.ndarray, axes: list[str]):
        #: An id the rows hold twice with different keys: the one whose differing row
        #: comes first in row order (as a row-by-row read meets it), or None.
        self.conflict: int | None = None
        self._axes = axes
        if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
            # Ascending and distinct (an export numbers its arrays 1..n in row order): held
            # as given, no reordered copy nor per-row comparison (at 300,000 arrays those
            # were the import's peak, ~90 MB of temporaries).
            self._ids, self._axis, self._hashes = ids, axis, compact_hashes(hashes)
            self._pos = SortedIds(self._ids)
            return
        order = np.argsort(ids, kind="stable")
        ids, hashes, axis = ids[order], hashes[order], axis[order]
        # An id held twice must have one key (else :attr:`conflict` names it); the
        # first row of each id stands for it.
        first = np.ones(len(ids), dtype=bool)
        first[1:] = ids[1:] != ids[:-1]
        starts = np.flatnonzero(first)
        group = np.cumsum(first) - 1
        differs = (hashes != hashes[starts][group]) | (axis != axis[starts][group])
        if differs.any():
            at = np.flatnonzero(differs)
            self.conflict = int(ids[at[np.argmin(order[at])]])
        self._ids, self._axis = ids[first], axis[first]
        self._hashes = compact_hashes(hashes[first])
        del hashes
        self._pos = SortedIds(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids.tolist())

    def _at(self, aid: object) -> int:
        return self._pos.at(aid) if type(aid) is int else -1

    def __contains__(self, aid: object) -> bool:
        return self._at(aid) >= 0

    def __getitem__(self, aid: int) -> tuple[str, str]:
        at = self._at(aid)
        if at < 0:
            raise KeyError(aid)
        return self._key(at)

    def _key(self, at: int) -> tuple[str, str]:
        h = self._hashes[at]
        text = h.tobytes().hex() if h.dtype == _WORDS else h.decode("utf-8", "surrogatepass")
        return text, self._axes[self._axis[at]]

    def keys_of(self, aids: np.ndarray) -> list[tuple[str, str]]:
        """The key of each of ``aids`` (every one held: KeyError names one that is
        not), as ``self[aid]`` gives it, made for all at once: a raw hash column spelled
        out by one ``hex`` call and cut, the time axes picked from one list (an import
        asks a key per array; a lookup each cost ~1.5 µs in numpy scalars)."""
        at = self.positions(np.asarray(aids, dtype=np.int64))
        if len(at) and int(at.min()) < 0:
            raise KeyError(int(np.asarray(aids)[np.argmin(at)]))
        axes = self._axes
        axis = [axes[a] for a in self._axis[at].tolist()]
        if self._hashes.dtype != _WORDS:
            return [self._key(int(k)) for k in at.tolist()]
        text = self._hashes[at].tobytes().hex()
        return [(text[64 * k : 64 * k + 64], a) for k, a in enumerate(axis)]

    def positions(self, aids: np.ndarray) -> np.ndarray:
        """Where each of ``aids`` is held (-1: not held)."""
        at = np.searchsorted(self._ids, aids)
        inside = at < len(self._ids)
        found = np.zeros(len(aids), dtype=bool)
        found[inside] = self._ids[at[inside]] == aids[inside]
        return np.where(found, at, -1)

    def known(self, aids: Sequence[int]) -> bool:
        """Whether every one of ``aids`` is held."""
        try:
            col = np.fromiter(aids, dtype=np.int64, count=len(aids))
        except OverflowError:
            return False
        return bool((self.positions(col) >= 0).all())

    def key_order(self) -> tuple[list[int], list[int]]:
        """The ids in ``(key, id)`` order, and where each distinct key's ids start in it
        (then their count)."""
        ids, cuts = self.key_columns()
        return ids.tolist(), cuts.tolist()

    def key_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`key_order` as int64 columns (no Python int per array)."""
        rank = np.empty(len(self._axes), dtype=np.int64)
        rank[sorted(range(len(self._axes)), key=self._axes.__getitem__)] = np.arange(
            len(self._axes)
        )
        hashes = self._hashes
        # UTF-8 bytes sort as their texts do, and a hash's raw bytes as its hex text;
        # the ids are already ascending.
        if not len(self._ids):
            order = np.empty(0, dtype=np.int64)
        elif hashes.dtype == _WORDS:
            words = hashes.view(">u8").reshape(-1, 4)
            order = np.lexsort(
                (rank[self._axis], words[:, 3], words[:, 2], words[:, 1], words[:, 0])
            )
        else:
            order = np.lexsort((rank[self._axis], hashes))
        sorted_hashes, axis = hashes[order], self._axis[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (sorted_hashes[1:] != sorted_hashes[:-1]) | (axis[1:] != axis[:-1])
        del sorted_hashes, axis
        cuts = np.append(np.flatnonzero(new), len(order)).astype(np.int64)
        return self._ids[order], cuts


class IdValues(Mapping[int, int]):
    """``array id -> int`` as two int64 columns (sorted by id): a per-array figure a
    reader looks up, held as a few bytes per array."""

    def __init__(self, ids: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(ids, kind="stable")
        self._ids, self._values = ids[order], values[order]

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids.tolist())

    def __getitem__(self, aid: int) -> int:
        at = int(np.searchsorted(self._ids, aid))
        if type(aid) is not int or at >= len(self._ids) or int(self._ids[at]) != aid:
            raise KeyError(aid)
        return int(self._values[at])

    def lookup(self, aids: np.ndarray, default: int = 0) -> np.ndarray:
        """The value of each of ``aids`` (``default`` where none is held)."""
        at = np.minimum(np.searchsorted(self._ids, aids), max(len(self._ids) - 1, 0))
        if not len(self._ids):
            return np.full(len(aids), default, dtype=np.int64)
        return np.where(self._ids[at] == aids, self._values[at], default)
