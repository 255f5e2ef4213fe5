"""Parquet bombs, written byte by byte: files of a few hundred bytes whose pages decode to
10⁸–10⁹ rows (one dictionary entry and one run-length encoded run of its index per
column), as a hostile writer would make them. pyarrow reads them like any file; writing
them with pyarrow would first need the rows in memory.

Only what the Parquet format needs (``parquet.thrift``, compact protocol): REQUIRED
columns (or OPTIONAL ones with every value present), one row group, one dictionary page
and one data page per column, no compression, min/max statistics.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Thrift compact types.
_BOOL_TRUE, _I32, _I64, _BINARY, _LIST, _STRUCT = 1, 5, 6, 8, 9, 12
# Parquet enums.
INT64, DOUBLE, BYTE_ARRAY = 2, 5, 6
_PLAIN, _RLE, _RLE_DICTIONARY = 0, 3, 8
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_REQUIRED, _OPTIONAL = 0, 1


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


class _Thrift:
    """A compact-protocol writer: fields in ascending id order, nested structs."""

    def __init__(self) -> None:
        self.out = bytearray()
        self._last = [0]

    def _field(self, fid: int, ttype: int) -> None:
        delta = fid - self._last[-1]
        if 0 < delta <= 15:
            self.out.append((delta << 4) | ttype)
        else:
            self.out.append(ttype)
            self.out += _varint(_zigzag(fid))
        self._last[-1] = fid

    def i32(self, fid: int, value: int) -> _Thrift:
        self._field(fid, _I32)
        self.out += _varint(_zigzag(value))
        return self

    i64 = i32  # the same varint; the type byte differs

    def i64_(self, fid: int, value: int) -> _Thrift:
        self._field(fid, _I64)
        self.out += _varint(_zigzag(value))
        return self

    def binary(self, fid: int, value: bytes) -> _Thrift:
        self._field(fid, _BINARY)
        self.out += _varint(len(value)) + value
        return self

    def true(self, fid: int) -> _Thrift:
        self._field(fid, _BOOL_TRUE)
        return self

    def begin(self, fid: int | None = None) -> _Thrift:
        """A struct: a field (``fid``) or a list element (None)."""
        if fid is not None:
            self._field(fid, _STRUCT)
        self._last.append(0)
        return self

    def end(self) -> _Thrift:
        self.out.append(0)
        self._last.pop()
        return self

    def list_header(self, fid: int, etype: int, size: int) -> _Thrift:
        self._field(fid, _LIST)
        if size < 15:
            self.out.append((size << 4) | etype)
        else:
            self.out.append(0xF0 | etype)
            self.out += _varint(size)
        return self


@dataclass(frozen=True)
class Column:
    """One column: its name, physical type, the one value every row holds (plain-encoded
    bytes), and its annotation (``"timestamp_ms"``, ``"string"`` or None)."""

    name: str
    physical: int
    value: bytes
    annotation: str | None = None
    optional: bool = False


def int64(name: str, value: int, *, optional: bool = False) -> Column:
    return Column(name, INT64, struct.pack("<q", value), None, optional)


def timestamp_ms(name: str, value: int) -> Column:
    return Column(name, INT64, struct.pack("<q", value), "timestamp_ms")


def double(name: str, value: float) -> Column:
    return Column(name, DOUBLE, struct.pack("<d", value))


def string(name: str, value: str, *, optional: bool = False) -> Column:
    return Column(name, BYTE_ARRAY, value.encode(), "string", optional)


def _page_header(kind: int, size: int, rows: int) -> bytes:
    t = _Thrift().i32(1, kind).i32(2, size).i32(3, size)
    if kind == _DICTIONARY_PAGE:
        t.begin(7).i32(1, 1).i32(2, _PLAIN).end()
    else:
        t.begin(5).i32(1, rows).i32(2, _RLE_DICTIONARY).i32(3, _RLE).i32(4, _RLE).end()
    return bytes(t.end().out)


def _run(rows: int, value: int) -> bytes:
    """An RLE/bit-packed hybrid stream of bit width 1: one run of ``rows`` × ``value``."""
    return _varint(rows << 1) + bytes([value])


def write_bomb(
    path: Path, columns: Sequence[Column], rows: int, metadata: Mapping[bytes, bytes]
) -> int:
    """Write a Parquet file of ``rows`` rows, each holding every column's one value; the
    footer keeps ``metadata`` (a real export's key-value metadata). Returns its size."""
    body = bytearray(b"PAR1")
    chunks = []
    for col in columns:
        plain = (
            col.value
            if col.physical != BYTE_ARRAY
            else struct.pack("<I", len(col.value)) + col.value
        )
        dict_at = len(body)
        body += _page_header(_DICTIONARY_PAGE, len(plain), 1) + plain
        data = bytes([1]) + _run(rows, 0)  # bit width 1, then every index 0
        if col.optional:
            levels = _run(rows, 1)  # every value present
            data = struct.pack("<I", len(levels)) + levels + data
        data_at = len(body)
        body += _page_header(_DATA_PAGE, len(data), rows) + data
        chunks.append((col, dict_at, data_at, len(body) - dict_at))
    t = _Thrift().i32(1, 1)
    t.list_header(2, _STRUCT, len(columns) + 1)
    t.begin().binary(4, b"schema").i32(5, len(columns)).end()
    for col in columns:
        t.begin().i32(1, col.physical).i32(3, _OPTIONAL if col.optional else _REQUIRED)
        t.binary(4, col.name.encode())
        if col.annotation == "timestamp_ms":
            t.i32(6, 9)  # TIMESTAMP_MILLIS
            t.begin(10).begin(8).true(1).begin(2).begin(1).end().end().end().end()
        elif col.annotation == "string":
            t.i32(6, 0)  # UTF8
            t.begin(10).begin(1).end().end()
        t.end()
    t.i64_(3, rows)
    t.list_header(4, _STRUCT, 1).begin()
    t.list_header(1, _STRUCT, len(columns))
    for col, dict_at, data_at, size in chunks:
        t.begin().i64_(2, dict_at).begin(3)
        t.i32(1, col.physical)
        t.list_header(2, _I32, 3)
        for enc in (_PLAIN, _RLE, _RLE_DICTIONARY):
            t.out += _varint(_zigzag(enc))
        t.list_header(3, _BINARY, 1)
        t.out += _varint(len(col.name.encode())) + col.name.encode()
        t.i32(4, 0).i64_(5, rows).i64_(6, size).i64_(7, size).i64_(9, data_at).i64_(11, dict_at)
        if col.physical != BYTE_ARRAY:  # a text's statistics would repeat it twice
            t.begin(12).binary(5, col.value).binary(6, col.value).end()
        t.end().end()
    t.i64_(2, sum(c[3] for c in chunks)).i64_(3, rows).end()
    t.list_header(5, _STRUCT, len(metadata))
    for key, value in metadata.items():
        t.begin().binary(1, key).binary(2, value).end()
    t.binary(6, b"parquet-cpp-arrow version 17.0.0")  # a writer whose statistics are read
    # Each column's values ordered by their type: what makes min_value/max_value valid.
    t.list_header(7, _STRUCT, len(columns))
    for _ in columns:
        t.begin().begin(1).end().end()
    footer = bytes(t.end().out)
    body += footer + struct.pack("<I", len(footer)) + b"PAR1"
    path.write_bytes(bytes(body))
    return len(body)
