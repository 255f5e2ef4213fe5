"""The HDF5 half of the store: arrays packed into pool datasets.

Arrays of one dtype and shape share a pool dataset ``pools/<dtype>__<shape>`` of shape
``(slots, *shape)``, one array per slot. A store of 100,000 small series therefore holds a
handful of datasets, not 100,000, and a batch read of many arrays becomes a few slab reads
of adjacent slots. Where each array lives is recorded in the catalog, which is the
transactional half: a slot the catalog does not point at is free space.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import h5py
import numpy as np

from .elements import NUMPY_DTYPES
from .errors import StorageError

DATA_FORMAT_VERSION = "1"
_CHUNK_TARGET = 256 * 1024  # bytes per chunk: small enough to read one array cheaply
_SLAB_GAP = 4  # read across up to this many unwanted slots rather than issue a new read


def pool_name(dtype: str, shape: Sequence[int]) -> str:
    """The dataset name for arrays of one dtype and shape (``f64__8760``, ``f64__24x2``)."""
    return f"{dtype}__{'x'.join(str(int(d)) for d in shape) or 's'}"


def _chunks(row_shape: tuple[int, ...], itemsize: int, capacity: int) -> tuple[int, ...]:
    row_bytes = max(1, int(np.prod(row_shape, dtype=np.int64)) * itemsize)
    if row_bytes >= _CHUNK_TARGET and row_shape:
        # Split a large array along its first axis so no chunk grows past the target.
        first = max(1, (_CHUNK_TARGET * row_shape[0]) // row_bytes)
        return (1, min(first, row_shape[0]), *row_shape[1:])
    rows = max(1, min(_CHUNK_TARGET // row_bytes, 4096, max(capacity, 1)))
    return (rows, *row_shape)


class ArrayFile:
    """An HDF5 file of pool datasets.

    Parameters
    ----------
    path
        The ``.h5`` file.
    mode
        ``"r"``, ``"r+"`` or ``"x"`` (create).
    compression
        ``"none"`` or ``"deflate"`` (for new pools; the choice is recorded on the root).
    """

    def __init__(
        self,
        path: str | Path,
        mode: str,
        *,
        compression: str = "deflate",
        compression_level: int = 3,
        shuffle: bool = True,
    ) -> None:
        self.path = str(path)
        try:
            self.h5 = h5py.File(self.path, mode, rdcc_nbytes=4 * 1024 * 1024)
        except OSError as exc:
            raise StorageError(f"cannot open the array file {self.path}: {exc}") from exc
        if mode == "x":
            self.h5.attrs["data_format_version"] = DATA_FORMAT_VERSION
            self.h5.attrs["storage_backend"] = "hdf5"
            spelled = (
                "none"
                if compression == "none"
                else f"deflate:{compression_level}:" + ("shuffle" if shuffle else "noshuffle")
            )
            self.h5.attrs["compression"] = spelled
            self.h5.create_group("pools")
        self._pools: dict[str, h5py.Dataset] = {}

    @property
    def compression(self) -> str:
        return str(self.h5.attrs.get("compression", "none"))

    def _filter_args(self) -> dict:
        spec = self.compression
        if spec == "none":
            return {}
        _kind, level, shuffle = spec.split(":")
        return {
            "compression": "gzip",
            "compression_opts": int(level),
            "shuffle": shuffle == "shuffle",
        }

    def _pool(self, name: str, dtype: str | None = None, shape: Sequence[int] | None = None):
        ds = self._pools.get(name)
        if ds is not None:
            return ds
        group = self.h5["pools"]
        if name in group:
            ds = group[name]
        elif dtype is None or shape is None:
            raise StorageError(f"the array file {self.path} has no pool {name}; run verify")
        else:
            row_shape = tuple(int(d) for d in shape)
            np_dtype = NUMPY_DTYPES[dtype]
            ds = group.create_dataset(
                name,
                shape=(0, *row_shape),
                maxshape=(None, *row_shape),
                dtype=np_dtype,
                chunks=_chunks(row_shape, np_dtype.itemsize, 64),
                **self._filter_args(),
            )
        self._pools[name] = ds
        return ds

    def write(
        self,
        name: str,
        dtype: str,
        shape: Sequence[int],
        first_slot: int,
        arrays: Sequence[np.ndarray],
    ) -> None:
        """Write ``arrays`` (each of ``shape``) into consecutive slots from ``first_slot``."""
        ds = self._pool(name, dtype, shape)
        end = first_slot + len(arrays)
        try:
            if ds.shape[0] < end:
                ds.resize(max(end, ds.shape[0] + ds.shape[0] // 2), axis=0)
            block = arrays[0][None, ...] if len(arrays) == 1 else np.stack(arrays)
            ds[first_slot:end] = block
        except (OSError, ValueError, TypeError) as exc:
            raise StorageError(f"writing pool {name} in {self.path} failed: {exc}") from exc

    def read(self, name: str, slots: Sequence[int]) -> list[np.ndarray]:
        """Read the arrays at ``slots`` (any order), each one a fresh array."""
        ds = self._pool(name)
        order = np.argsort(np.asarray(slots, dtype=np.int64), kind="stable")
        out: list[np.ndarray | None] = [None] * len(slots)
        i = 0
        n = len(order)
        # Slots sharing a chunk come in one read: a chunk is then decompressed once per
        # call, not once per array (a batch in hash order scatters over every chunk).
        crow = ds.chunks[0] if ds.chunks else 1
        try:
            while i < n:
                # Grow a run of nearby slots (or of one chunk) and fetch it as one slab.
                j = i
                first = slots[order[i]]
                while j + 1 < n:
                    nxt = slots[order[j + 1]]
                    if nxt // crow == first // crow or (
                        nxt - slots[order[j]] <= _SLAB_GAP and nxt - first < 2 * crow
                    ):
                        j += 1
                    else:
                        break
                lo, hi = slots[order[i]], slots[order[j]] + 1
                slab = ds[lo:hi]
                # Views into the slab keep it alive as long as the batch that holds them:
                # when the slab also spans unwanted slots, copy the wanted ones out instead.
                sparse = hi - lo > j - i + 1
                for k in range(i, j + 1):
                    idx = order[k]
                    row = slab[slots[idx] - lo]
                    out[idx] = row.copy() if sparse else row
                i = j + 1
        except (OSError, ValueError, IndexError) as exc:
            raise StorageError(f"reading pool {name} in {self.path} failed: {exc}") from exc
        return out  # type: ignore[return-value]

    def pools(self) -> Iterable[str]:
        return list(self.h5["pools"].keys())

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self.h5.flush()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.h5.close()
