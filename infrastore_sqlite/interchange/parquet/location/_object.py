"""An object-storage prefix (or object) as a :class:`~.base.Location`, and its publisher.

Holds the object-storage client (obstore, an optional extra: ``pip install
'infrastore-sqlite[cloud]'``), the ranged reader and the uploads the container's Parquet
files go through, :class:`ObjectPublisher`, and the wrapping of obstore's errors (by their
classes, ``obstore.exceptions``) as :class:`StorageError`. obstore is imported only when a
URI is named.

Why obstore (not pyarrow's S3 file system): its multipart upload is aborted when the
writer leaves with an error, so a failed export leaves no object behind; pyarrow's S3
output stream, closed after an error, completes the upload and publishes a partial file
(apache/arrow#40502, reproduced against the test server), and its fixed 10 MiB parts cap
one object near 100 GB (apache/arrow#41506). obstore also has a create-only put, which
the manifest and every file small enough for one part use (:class:`Upload`), and takes
the option names Polars' ``storage_options`` take.

:class:`ObjectPublisher` writes each file to its final key as an upload that no listing
shows until it is published (a multipart upload completed, or a file small enough for one
part put whole, create-only unless ``overwrite``); a partition's files are published
together once its three files are encoded (values last) only when the whole export
commits, as Hadoop's S3A committers do, and a manifest (``_infrastore_manifest.json``: the
partitions, files, sizes, keys) is put last; a process killed before leaves uploads never
completed, which no listing shows. On a failure it removes what it published and aborts
what it had not.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import os
import posixpath
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any
from urllib.parse import SplitResult

import orjson

from ...._version import __version__
from ....errors import (
    OVERWRITE,
    STORAGE_OPTION,
    InvalidParameterError,
    MissingDependencyError,
    StorageError,
    Term,
)
from ...plan import ExportPlan, PartitionPlan
from ..layout import file_names
from ._aws import aws_profile
from .base import CLOUD_INSTALL, MANIFEST, PUBLISH_ORDER, Location, Publisher, refuse_collisions
from .uploads import (
    PARTS_IN_FLIGHT,
    Completion,
    HeldFile,
    PartSender,
    abort_before_export,
    worker_client,
    workers_can_hand_over,
)

__all__ = [
    "ObjectLocation",
    "ObjectPublisher",
    "open_prefix",
    "storage_errors",
]

#: Options that configure obstore's HTTP client rather than the store (Polars takes both
#: in one ``storage_options`` mapping; obstore wants them apart).
_CLIENT_OPTIONS = frozenset(
    {"allow_http", "allow_invalid_certificates", "timeout", "connect_timeout", "proxy_url"}
)
#: An object is read by ranged requests whose responses are streamed: pyarrow reads a
#: file front to back (a row group's column chunks lie end to end, and the next row
#: group's after them), so one response serves many reads, and while one part of it is
#: decoded the server sends the next into the socket (the kernel's buffer, not this
#: process's memory: read-ahead without threads or held blocks). A read where no
#: response is open asks for this many bytes at least (or what it reads, if more)...
_FIRST_WINDOW = 256 << 10
#: ...and each request that continues the one before asks for twice as many, up to
#: this: requests cost the server more than bytes (SeaweedFS on this machine, 30 MB
#: read: 0.28 s of its CPU in 256 KiB requests, 0.06 s in 4 MiB ones), while a read
#: that jumps elsewhere (a scan of one column) stays one short request.
_MAX_WINDOW = 16 << 20
#: A response is handed over in pieces of at least this many bytes (obstore gathers the
#: network's smaller ones): at most one is held per open object.
_CHUNK = 256 << 10
#: Bytes buffered before a multipart upload sends a part, at least: S3's smallest part.
#: Small parts start the upload early, so it runs beside the encoding and what is left
#: to send when the file is encoded is one part (sts 2,000's 30 MB values file: 16 MiB
#: parts left 14 MB to the end). :meth:`ObjectLocation.upload` takes larger ones for files
#: that would need more than :data:`_MAX_PARTS` of these.
PART_BYTES = 5 << 20
#: Parts one upload is planned to fit in (S3 allows 10,000).
_MAX_PARTS = 5000
#: Uploads completed at once at the commit (each sends what is left of its file, a part
#: at most, then completes).
_COMPLETING = 4


def part_size(expected: int) -> int:
    """The part size of an upload of about ``expected`` bytes: :data:`PART_BYTES`, or
    larger so that it fits in :data:`_MAX_PARTS` parts."""
    return max(PART_BYTES, -(-expected // _MAX_PARTS))


def require_obstore() -> ModuleType:
    """The ``obstore`` module, or an error naming the install command."""
    try:
        import obstore
    except ImportError:
        raise MissingDependencyError(
            f"object storage needs obstore, which is not installed; run {CLOUD_INSTALL}"
        ) from None
    return obstore


def open_prefix(
    text: str, split: SplitResult, storage_options: Mapping[str, Any] | None
) -> ObjectLocation:
    """The prefix (or object) the URI ``text`` (split as ``split``) names, in its bucket
    opened with ``storage_options``.

    Raises
    ------
    InvalidParameterError
        No bucket named, a ``..`` segment, or an option obstore does not take.
    MissingDependencyError
        obstore is not installed.
    """
    if not split.netloc:
        raise InvalidParameterError(
            f"{text} names no bucket; write it as {split.scheme}://BUCKET/PREFIX"
        )
    key = split.path.strip("/")
    if ".." in key.split("/"):
        raise InvalidParameterError(
            f"{text} holds a '..' segment; object storage keeps it as part of the key, so it "
            "names no parent prefix: write the prefix without it",
            table=text,
        )
    bucket = Bucket(f"{split.scheme}://{split.netloc}", dict(storage_options or {}))
    return ObjectLocation(bucket, key)


#: Options that configure obstore's retries (a request that fails is tried again, with
#: backoff, up to ``max_retries`` times within ``retry_timeout`` seconds; obstore's
#: defaults are 10 and 180).
_RETRY_OPTIONS = frozenset({"max_retries", "retry_timeout"})


def _retry_value(root: str, name: str, value: Any) -> Any:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if number < 0:
        raise InvalidParameterError(
            f"the storage option {name}={value!r} for {root} is not a number of "
            f"{'retries' if name == 'max_retries' else 'seconds'} (0 or more)"
        )
    if name == "max_retries":
        return int(number)
    return dt.timedelta(seconds=number)


#: Option names (after the ``aws_`` prefix is taken off, as obstore does) of the S3
#: endpoint, and the variables obstore reads them from when no option names them.
_ENDPOINT_NAMES = ("endpoint_url", "endpoint")
_ENDPOINT_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT")
_TRUE = frozenset({"true", "1", "yes", "on"})


def _check_plain_http(root: str, config: Mapping[str, Any], client: Mapping[str, Any]) -> None:
    """Refuse an ``http://`` S3 endpoint without ``allow_http``, naming what allows it:
    obstore's HTTP client refuses each request then, with the words "builder error" and
    no hint of the setting."""
    if not root.startswith(("s3://", "s3a://")):
        return
    endpoint = next(
        (
            str(v)
            for k, v in config.items()
            if k.lower().removeprefix("aws_") in _ENDPOINT_NAMES and v
        ),
        next((os.environ[v] for v in _ENDPOINT_VARS if os.environ.get(v)), ""),
    )
    if not endpoint.lower().startswith("http://"):
        return
    allowed = client.get("allow_http", os.environ.get("AWS_ALLOW_HTTP", ""))
    if str(allowed).strip().lower() in _TRUE:
        return
    raise InvalidParameterError(
        f"the endpoint {endpoint} for {root} is plain http://, which the client refuses "
        "unless told to allow it: set AWS_ALLOW_HTTP=true, or pass {allow_http} (for a "
        "local server such as MinIO or SeaweedFS; use https:// anywhere else)",
        table=root,
        terms={
            "allow_http": Term(
                "--storage-option aws_allow_http=true", 'storage_options={"aws_allow_http": "true"}'
            )
        },
    )


def _configuration_error(root: str, options: Mapping[str, Any], exc: BaseException) -> Exception:
    """obstore's refusal to build a client, in the caller's words: by its class where
    it has one (an unknown option), else its first line."""
    from obstore.exceptions import UnknownConfigurationKeyError

    kind = type(exc).__name__
    if isinstance(exc, UnknownConfigurationKeyError):
        # (The class carries no field naming the key: its message does.)
        found = re.search(r"key: '([^']+)'", str(exc))
        key = found.group(1) if found else "one of them"
        return InvalidParameterError(
            f"cannot open {root}: the storage option {key} is not one the client knows; "
            "name options as Polars' storage_options does (aws_access_key_id, aws_region, "
            "aws_endpoint_url, aws_allow_http, …) and pass them with {storage_option}",
            table=root,
            terms={"storage_option": STORAGE_OPTION},
        )
    first = str(exc).split("Debug source", 1)[0].strip().splitlines()
    said = first[0] if first else kind
    return InvalidParameterError(
        f"cannot open {root} with the storage options {sorted(options)} ({said}); name "
        "options as Polars' storage_options does (aws_access_key_id, aws_region, "
        "aws_endpoint_url, …) and pass them with {storage_option}",
        table=root,
        terms={"storage_option": STORAGE_OPTION},
    )


class Bucket:
    """One bucket (or container) opened with its options: obstore's store, and the
    listings made through it (a directory is listed once per import)."""

    def __init__(self, root: str, options: dict[str, Any]) -> None:
        self.obstore = require_obstore()
        from obstore.store import from_url

        self.root = root
        self.options = options
        if root.startswith(("s3://", "s3a://")):
            options = {**aws_profile(options), **options}
            options.pop("aws_profile", None)
        config: dict[str, Any] = {}
        client: dict[str, Any] = {}
        retry: dict[str, Any] = {}
        for key, value in options.items():
            name = str(key).lower()
            if name in _RETRY_OPTIONS:
                retry[name] = _retry_value(root, name, value)
                continue
            bare = name.removeprefix("aws_").removeprefix("google_").removeprefix("azure_")
            if bare in _CLIENT_OPTIONS:
                client[bare] = value
            else:
                config[name] = value
        url = root.replace("s3a://", "s3://", 1)
        _check_plain_http(root, config, client)
        try:
            self.store = from_url(
                url,
                config=config or None,
                client_options=client or None,
                retry_config=retry or None,  # type: ignore[arg-type]
            )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # obstore panics (a BaseException) on some bad keys
            raise _configuration_error(root, options, exc) from None
        self._listed: dict[str, tuple[dict[str, int], list[str]]] = {}

    def listing(self, prefix: str) -> tuple[dict[str, int], list[str]]:
        """``({object name: size}, [sub-prefix names])`` directly under ``prefix``."""
        got = self._listed.get(prefix)
        if got is None:
            uri = f"{self.root}/{prefix}"
            with storage_errors(uri, "listing"):
                raw = self.obstore.list_with_delimiter(self.store, f"{prefix}/" if prefix else None)
            # A store may list the prefix itself as an empty "directory" object (SeaweedFS
            # does, once something under it was removed): it is no file of the layout.
            objects = {
                posixpath.basename(m["path"]): int(m["size"])
                for m in raw["objects"]
                if m["path"].rstrip("/") != prefix
            }
            prefixes = [posixpath.basename(p.rstrip("/")) for p in raw["common_prefixes"]]
            got = self._listed[prefix] = (objects, prefixes)
        return got

    def forget(self, prefix: str) -> None:
        """Drop the listing of ``prefix`` (after writing there)."""
        self._listed.pop(prefix, None)

    def __reduce__(self) -> tuple[Any, ...]:
        # Opened again from its root and options where it is unpickled (a worker of a
        # parallel export: with that process's environment, as it was made here).
        return (Bucket, (self.root, self.options))


class ObjectLocation(Location):
    """An object (or a prefix) in a bucket; ``str`` is its URI."""

    __slots__ = ("bucket", "key")

    def __init__(self, bucket: Bucket, key: str) -> None:
        self.bucket = bucket
        self.key = key

    def __str__(self) -> str:
        return f"{self.bucket.root}/{self.key}" if self.key else self.bucket.root

    def __truediv__(self, name: str) -> ObjectLocation:
        return ObjectLocation(self.bucket, f"{self.key}/{name}" if self.key else name)

    @property
    def name(self) -> str:
        return posixpath.basename(self.key)

    @property
    def parent(self) -> ObjectLocation:
        return ObjectLocation(self.bucket, posixpath.dirname(self.key))

    @property
    def uri(self) -> str:
        # DuckDB's httpfs knows s3://, not Hadoop's s3a:// spelling of it.
        return str(self).replace("s3a://", "s3://", 1)

    def client_options(self) -> Mapping[str, Any] | None:
        return self.bucket.options

    def children(self) -> tuple[list[str], list[str]]:
        objects, prefixes = self.bucket.listing(self.key)
        return list(objects), list(prefixes)

    def listdir(self) -> list[str]:
        objects, prefixes = self.bucket.listing(self.key)
        return [*objects, *prefixes]

    def size(self) -> int | None:
        """The object's size from its parent's listing; None when there is none."""
        return self.bucket.listing(self.parent.key)[0].get(self.name)

    def is_file(self) -> bool:
        return self.size() is not None

    def is_dir(self) -> bool:
        objects, prefixes = self.bucket.listing(self.key)
        return bool(objects or prefixes)

    def read_bytes(self) -> bytes:
        with storage_errors(str(self), "reading"):
            return bytes(self.bucket.obstore.get(self.bucket.store, self.key).bytes())

    def open_input(self) -> Any:
        """The object for pyarrow as a seekable file read with ranged requests (the
        footer, then what each read asks for), never downloaded whole."""
        import pyarrow

        size = self.size()
        if size is None:  # not in its directory's listing: ask the object (or refuse)
            with storage_errors(str(self), "reading"):
                size = int(self.bucket.obstore.head(self.bucket.store, self.key)["size"])
        return pyarrow.PythonFile(_Ranged(self, size), mode="r")

    def upload(self, expected: int = 0, *, overwrite: bool = True) -> Upload:
        """A writable file that publishes this key whole on :meth:`Upload.close` (nothing
        is visible before): one create-only PUT (``overwrite=False``) for a file that fits
        in one part, else a multipart upload in parts large enough that ``expected`` bytes
        fit in :data:`_MAX_PARTS` of them."""
        return Upload(self, part_size(expected), overwrite=overwrite)

    def put(self, data: Any, *, overwrite: bool = False) -> None:
        """Write ``data`` to this key in one PUT, only if no object is there unless
        ``overwrite`` (a create-only put)."""
        mode = "overwrite" if overwrite else "create"
        with storage_errors(str(self), "writing"):
            self.bucket.obstore.put(self.bucket.store, self.key, data, mode=mode)

    def delete(self) -> None:
        with storage_errors(str(self), "removing"):
            self.bucket.obstore.delete(self.bucket.store, self.key)

    def replace_with(self, data: bytes) -> None:
        """One PUT over the object (a PUT is atomic: a reader sees either whole)."""
        self.put(data, overwrite=True)
        self.bucket.forget(self.parent.key)

    def rewrite(self, writes: list[tuple[str, Callable[[Any], None]]]) -> dict[str, int]:
        """One PUT each, in order (each file encoded into memory first)."""
        import pyarrow

        token = uuid.uuid4().hex[:8]
        sizes: dict[str, int] = {}
        try:
            for name, write in writes:
                final = self / name
                sink = pyarrow.BufferOutputStream()
                write(sink)
                data = sink.getvalue()
                if not final.is_file() and final.is_dir():
                    final.set_aside_parts(token)
                final.put(data.to_pybytes(), overwrite=True)
                sizes[name] = data.size
        finally:
            self.bucket.forget(self.key)
        return sizes

    def set_aside_parts(self, token: str) -> None:
        """Every object under this prefix moved to ``.<name>.<token>.parts/`` beside it."""
        aside = self.parent / f".{self.name}.{token}.parts"
        b = self.bucket
        with storage_errors(str(self), "setting aside the parts of"):
            for page in b.obstore.list(b.store, f"{self.key}/"):
                for meta in page:
                    rel = meta["path"][len(self.key) + 1 :]
                    # (a fresh token: nothing is there to overwrite; S3 has no copy-if-absent)
                    b.obstore.rename(b.store, meta["path"], f"{aside.key}/{rel}")
        b.forget(self.key)

    def publisher(
        self, plan: ExportPlan, *, overwrite: bool, token: str | None = None, worker: bool = False
    ) -> ObjectPublisher:
        return ObjectPublisher(self, plan, overwrite=overwrite, token=token, worker=worker)


class _Ranged(io.RawIOBase):
    """An object as the seekable file pyarrow wraps, read by ranged requests whose
    responses are streamed (never the whole object, unless it is read whole: at most one
    piece of :data:`_CHUNK` bytes is held, and the read being put together)."""

    def __init__(self, where: ObjectLocation, size: int) -> None:
        self._where = where
        self._uri = str(where)
        self._size = size
        self._pos = 0
        #: The open response's pieces still to come, and where its range ends.
        self._stream: Iterator[Any] | None = None
        self._end = 0
        #: The last piece taken from it, and its offset in the object.
        self._piece = memoryview(b"")
        self._at = 0
        #: How many bytes the next request that continues the open one asks for.
        self._window = _FIRST_WINDOW

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _request(self, start: int, end: int) -> Iterator[Any]:
        """The pieces of bytes ``start:end`` of the object, streamed (one request)."""
        b = self._where.bucket
        with storage_errors(self._uri, "reading"):
            got = b.obstore.get(b.store, self._where.key, options={"range": (start, end)})
            return iter(got.stream(min_chunk_size=_CHUNK))

    def _next_piece(self, wanted: int) -> bool:
        """Make the piece the one holding ``self._pos``: the open response's next one if
        it continues there, else the first of a new request (for at least ``wanted``
        bytes). False at the end of the object (or where it was cut short)."""
        pos = self._pos
        continues = self._stream is not None and pos == self._at + self._piece.nbytes
        if not continues or pos >= self._end:
            # A response read to its end, and the read goes on: ask for more next time;
            # a jump elsewhere: reading front to back starts over.
            over = continues
            self._window = min(2 * self._window, _MAX_WINDOW) if over else _FIRST_WINDOW
            self._drop()
            self._end = min(self._size, pos + max(wanted, self._window))
            if pos >= self._end:
                return False
            self._stream = self._request(pos, self._end)
        assert self._stream is not None
        try:
            piece = next(self._stream, None)
        except Exception:
            # A response cut off midway (obstore retries a request, not a broken stream):
            # ask once more for the rest from here; a second failure is the reader's.
            self._drop()
            stream = self._request(pos, self._end)
            with storage_errors(self._uri, "reading"):
                piece = next(stream, None)
            self._stream = stream
        if piece is None:  # the object is shorter than its listing said
            self._drop()
            return False
        self._piece, self._at = memoryview(piece), pos
        return True

    def _drop(self) -> None:
        """Close the open response (whatever of it is still to come is not read)."""
        self._stream = None
        self._piece = memoryview(b"")

    def read(self, n: int = -1) -> Any:
        if n is None or n < 0:
            n = self._size - self._pos
        end = min(self._pos + n, self._size)
        at = self._pos - self._at
        if at >= 0 and end - self._at <= self._piece.nbytes:
            # A read within one piece is a view of it (pyarrow takes any buffer), not a copy.
            view = self._piece[at : end - self._at]
            self._pos = end
            return view
        # Else the read is put together as the pieces come, each dropped once copied, in
        # a buffer of pyarrow's memory pool, which pyarrow reuses as it does a local
        # file's reads (a bytes object per read would come from the C allocator, whose
        # freed blocks stay in the process).
        import pyarrow

        buf = pyarrow.allocate_buffer(end - self._pos)
        out = memoryview(buf).cast("B")
        filled = 0
        while self._pos < end:
            at = self._pos - self._at
            if not 0 <= at < self._piece.nbytes:
                if not self._next_piece(end - self._pos):
                    break
                at = 0
            piece = self._piece[at : at + end - self._pos]
            out[filled : filled + piece.nbytes] = piece
            filled += piece.nbytes
            self._pos += piece.nbytes
        # Short when the object ended early (shorter than its listing said).
        return buf if filled == buf.size else buf.slice(0, filled)

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._drop()
        super().close()


class Upload(io.RawIOBase):
    """An object written as a file, published whole by :meth:`close` or dropped by
    :meth:`abort` (nothing appears).

    The bytes are held in memory while they fit in one part, and a file that stays that
    small (a partition's series and arrays files, the manifest) is published by one PUT,
    create-only unless ``overwrite``: an object someone put there since the export
    checked the prefix is refused, not replaced, and a multipart upload would cost three
    requests (create, part, complete) where this costs one. A file that outgrows the part
    (a values file) goes on as a multipart upload, whose parts are sent while the rest is
    written; S3's multipart completion has no create-only form in obstore, so that file
    relies on the export's check of the prefix.
    """

    def __init__(self, where: ObjectLocation, part: int, *, overwrite: bool = True) -> None:
        self.where = where
        self.uri = str(where)
        self.part = part
        self.overwrite = overwrite
        #: What is written while it fits in one part (None once a multipart upload took it).
        self._held: bytearray | None = bytearray()
        self._w: Any = None
        self._done = False
        #: Bytes written so far (the manifest records each file's size).
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        held = self._held
        if held is not None and len(held) + n <= self.part:
            held += data
        else:
            with storage_errors(self.uri, "writing"):
                if held is not None:
                    b = self.where.bucket
                    self._w = b.obstore.open_writer(
                        b.store,
                        self.where.key,
                        buffer_size=self.part,
                        max_concurrency=PARTS_IN_FLIGHT,
                    )
                    self._held = None
                    self._w.write(held)
                self._w.write(data)
        self.size += n
        return n

    def close(self) -> None:
        if not self._done:
            self._done = True
            if self._held is not None:
                self._put(self._held)
            else:
                with storage_errors(self.uri, "writing"):
                    self._w.close()
        super().close()

    def _put(self, data: bytearray) -> None:
        """The one PUT of a file held whole; an object already there is refused in the
        caller's words unless ``overwrite``."""
        self._held = None
        try:
            self.where.put(data, overwrite=self.overwrite)
        except StorageError as exc:
            from obstore.exceptions import AlreadyExistsError

            if not isinstance(exc.__cause__, AlreadyExistsError):
                raise
            raise InvalidParameterError(
                f"{self.uri} appeared while the export ran (another writer put it); it "
                "was not replaced and nothing of the export was kept. Export to another "
                "prefix, or pass {overwrite} to replace it",
                table=self.uri,
                terms={"overwrite": OVERWRITE},
            ) from None

    def abort(self) -> None:
        """Leave the file unpublished: what is held is dropped, and obstore aborts a
        multipart upload whose writer is left with an error."""
        if not self._done:
            self._done = True
            self._held = None
            if self._w is not None:
                with contextlib.suppress(Exception):
                    self._w.__exit__(RuntimeError, RuntimeError("export failed"), None)
        super().close()


@contextlib.contextmanager
def storage_errors(uri: str, doing: str) -> Iterator[None]:
    """obstore's errors as a :class:`StorageError` naming the URI, what the server said
    (its HTTP status, when it sent one) and what to check, in the caller's words."""
    try:
        yield
    except StorageError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        raise _storage_error(exc, uri, doing) from exc


#: The endpoint obstore's message names ("… GET http://host:port/bucket?… in 2.1s …").
_HOST = re.compile(r"\b(?:GET|PUT|POST|HEAD|DELETE) (https?://[^/\s?]+)")
#: An HTTP status in obstore's message ("… status code: 404 Not Found: <?xml …").
_STATUS = re.compile(r"status code: (\d{3})(?: ([A-Za-z][A-Za-z ]*[A-Za-z]))?")


#: What to check, by obstore's class of the error (``obstore.exceptions``).
_NOT_FOUND = "check the bucket (it must exist) and the path"
_CREDENTIALS = (
    "check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
    "AWS_PROFILE), or {storage_option}"
)
_THERE = "remove it first, or pass {overwrite}"
_NETWORK = "check the endpoint (AWS_ENDPOINT_URL or {storage_option}) and the network"
#: The same, by the HTTP status of an error obstore has no class for (its
#: ``GenericError``, whose status is only in its message).
_BY_STATUS = {404: _NOT_FOUND, 401: _CREDENTIALS, 403: _CREDENTIALS, 409: _THERE, 412: _THERE}


def _hint(exc: Exception, code: int | None) -> str:
    """What to check for ``exc``: by its class, else by the HTTP status it carries."""
    from obstore import exceptions as e

    if isinstance(exc, e.NotFoundError):
        return _NOT_FOUND
    if isinstance(exc, e.PermissionDeniedError | e.UnauthenticatedError):
        return _CREDENTIALS
    if isinstance(exc, e.AlreadyExistsError | e.PreconditionError):
        return _THERE
    return _BY_STATUS.get(code, _NETWORK) if code is not None else _NETWORK


def _storage_error(exc: Exception, uri: str, doing: str) -> StorageError:
    """One line for ``exc``: obstore's own text carries the request, its timing and the
    server's XML; it is kept whole only with ``INFRASTORE_SQLITE_DEBUG=1``."""
    kind = type(exc).__name__
    text = " ".join(str(exc).split())
    found = _STATUS.search(text)
    code = int(found.group(1)) if found else None
    hint = _hint(exc, code)
    host = _HOST.search(text)
    at = host.group(1) if host else "the endpoint"
    lowered = text.lower()
    if os.environ.get("INFRASTORE_SQLITE_DEBUG") == "1" or not text:
        said = text or kind
    elif found:
        said = f"HTTP {code}" + (f" {found.group(2)}" if found.group(2) else "")
    elif "connection refused" in lowered or "connectionrefused" in lowered:
        said = f"nothing answers at {at}: connection refused"
    elif "dns error" in lowered or "failed to lookup address" in lowered:
        said = f"cannot resolve {at}"
    elif "timed out" in lowered or "timedout" in lowered:
        said = f"no answer from {at}: timed out"
    else:
        # obstore's own text, without its debug dump and the server's XML, cut at a word.
        said = text.split("Debug source", 1)[0].split(": <", 1)[0].strip()
        if len(said) > 200:
            said = said[:200].rsplit(" ", 1)[0] + " …"
    return StorageError(
        f"{doing} {uri} failed ({said}); {hint}",
        table=uri,
        terms={"overwrite": OVERWRITE, "storage_option": STORAGE_OPTION},
    )


class ObjectPublisher(Publisher):
    """A prefix in object storage: multipart uploads completed at the commit, the
    manifest last."""

    def __init__(
        self,
        target: ObjectLocation,
        plan: ExportPlan,
        *,
        overwrite: bool,
        token: str | None = None,
        worker: bool = False,
    ) -> None:
        self.target = target
        self.plan = plan
        self.overwrite = overwrite
        #: (An upload is invisible until completed: no temporary names to share.)
        self.token = token or uuid.uuid4().hex[:8]
        self.open: dict[tuple[int, str], Upload] = {}
        self.published: list[ObjectLocation] = []
        self.files: list[dict[str, Any]] = []
        #: Uploads a dead export had left at this export's keys, aborted by :meth:`begin`.
        self.aborted = 0
        #: The finished partitions' uploads, open (their parts sent, the uploads not
        #: completed) until the commit.
        self._pending: list[tuple[PartitionPlan, list[tuple[str, Any]]]] = []
        #: A parallel export's worker on ``s3://`` sends its parts through this botocore
        #: client and hands the uploads over uncompleted (``uploads.py``); None elsewhere.
        self._client: Any = None
        if worker:
            self._client = worker_client(target.bucket.root, target.bucket.options)

    def check(self) -> None:
        """Refuse files the export would create that are there already, and a manifest
        of an earlier export (unless ``overwrite``); a missing bucket or wrong
        credentials fail here, before anything is written."""
        if self.overwrite:
            return
        existing = self.target.listdir()
        if MANIFEST in existing:
            raise InvalidParameterError(
                f"{self.target} already holds an export (its {MANIFEST}); nothing was "
                "written. Export to another prefix, or pass {overwrite} to replace its files",
                table=str(self.target / MANIFEST),
                terms={"overwrite": OVERWRITE},
            )
        refuse_collisions(str(self.target), existing, self.plan)

    def begin(self) -> None:
        # Uploads a dead export left at the keys this one writes are aborted first: they
        # are invisible, but the bucket keeps them (and bills them) until aborted.
        keys = [
            (self.target / name).key
            for pp in self.plan.partitions
            for name in file_names(pp.partition).values()
        ]
        self.aborted = abort_before_export(
            str(self.target), self.target.bucket.options, [*keys, (self.target / MANIFEST).key]
        )
        if self.overwrite and MANIFEST in self.target.listdir():
            # The old manifest goes first: it no longer describes what is there.
            (self.target / MANIFEST).delete()

    def sink(self, pp: PartitionPlan, role: str) -> Upload:
        # Parts sized for the values file's rows at a generous 64 bytes each.
        expected = 64 * int(pp.rows) if role == "values" else 0
        key = self.target / file_names(pp.partition)[role]
        upload: Any
        if self._client is not None:
            part = part_size(expected)
            upload = PartSender(self._client, str(key), self._bucket_name, key.key, part)
        else:
            upload = key.upload(expected, overwrite=self.overwrite)
        self.open[id(pp), role] = upload
        return upload

    def finished(self, pp: PartitionPlan, role: str) -> None:
        """After the partition's last file is encoded, keep its uploads open: nothing of
        the export is completed (so nothing a listing shows) until :meth:`settle`, at the
        commit, as Hadoop's S3A committers do. A process killed before then leaves only
        uploads that were never completed, which no listing shows."""
        if role != "arrays":
            return
        self._pending.append((pp, [(r, self.open.pop((id(pp), r))) for r in PUBLISH_ORDER]))

    def settle(self) -> None:
        """Complete every finished partition's uploads: the series and arrays files of
        all of them, then their values files (each partition's values file last, so "the
        partition exists" means "its values file exists"), a few at a time; the first
        failure is raised after all of them stopped, the rest aborted (a rollback then
        removes what completed)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        batches = [
            [(pp, r, up) for pp, uploads in pending for r, up in uploads if r != "values"],
            [(pp, r, up) for pp, uploads in pending for r, up in uploads if r == "values"],
        ]
        error: BaseException | None = None
        with ThreadPoolExecutor(_COMPLETING, thread_name_prefix="infrastore-sqlite-upload") as pool:
            for batch in batches:
                if error is not None:
                    for _, _, up in batch:
                        up.abort()
                    continue
                futures = [(pp, r, up, pool.submit(up.close)) for pp, r, up in batch]
                for pp, r, up, fut in futures:
                    try:
                        fut.result()
                    except BaseException as exc:
                        error = error or exc
                        continue
                    self._published(pp, r, up)
        if error is not None:
            raise error

    def _published(self, pp: PartitionPlan, r: str, upload: Upload) -> None:
        names = file_names(pp.partition)
        key = self.target / names[r]
        self.published.append(key)
        self.files.append(
            {
                "partition": pp.partition.file_stem,
                "role": r,
                "name": names[r],
                "key": key.key,
                "size": upload.size,
            }
        )

    @property
    def _bucket_name(self) -> str:
        return self.target.bucket.root.split("://", 1)[1]

    def entries(self) -> list[dict[str, Any]]:
        return list(self.files)

    def workers_defer(self) -> bool:
        return workers_can_hand_over(self.target.bucket.root)

    def hand_over(self) -> tuple[str, Any]:
        """A worker's finished partitions for the parent: on ``s3://``, their uploads
        uncompleted (``("pending", [(partition, [(role, what completes it)])])``), so
        that nothing is visible before the parent's commit; elsewhere (obstore alone
        cannot hand an upload over) completed, as manifest entries (``("published",
        …)``)."""
        if self._client is None:
            self.settle()
            return "published", self.entries()
        handed = [
            (pp.partition.file_stem, [(r, up.hand_over()) for r, up in uploads])
            for pp, uploads in self._pending
        ]
        self._pending = []
        return "pending", handed

    def adopt(self, handed: tuple[str, Any]) -> None:
        kind, items = handed
        if kind == "pending":
            self._take_pending(items)
            return
        for entry in items:
            self.published.append(self.target / entry["name"])
            self.files.append(entry)
        # Listed in partition order whatever order the writers finished in.
        at = {pp.partition.file_stem: k for k, pp in enumerate(self.plan.partitions)}
        self.files.sort(key=lambda e: at[e["partition"]])

    def _take_pending(self, items: list[tuple[str, list[tuple[str, Any]]]]) -> None:
        """A worker's uploads, completed at this one's commit with its own."""

        by_stem = {pp.partition.file_stem: pp for pp in self.plan.partitions}
        for stem, files in items:
            pp = by_stem[stem]
            names = file_names(pp.partition)
            uploads: list[tuple[str, Any]] = []
            for role, got in files:
                key = self.target / names[role]
                if isinstance(got, HeldFile):
                    # One create-only PUT at the commit, as this process's small files.
                    up = Upload(key, max(PART_BYTES, got.size), overwrite=self.overwrite)
                    up.write(got.data)
                    uploads.append((role, up))
                else:
                    if self._completer is None:
                        self._completer = worker_client(
                            self.target.bucket.root, self.target.bucket.options
                        )
                    uploads.append(
                        (role, Completion(self._completer, str(key), self._bucket_name, got))
                    )
            self._pending.append((pp, uploads))

    #: The botocore client completing the workers' uploads (made at the first).
    _completer: Any = None

    def commit(self) -> None:
        self.settle()
        # In partition order whatever order the uploads completed in.
        at = {pp.partition.file_stem: k for k, pp in enumerate(self.plan.partitions)}
        rank = {r: k for k, r in enumerate(PUBLISH_ORDER)}
        self.files.sort(key=lambda e: (at.get(e["partition"], -1), rank.get(e["role"], 0)))
        manifest = {
            "format": "infrastore-sqlite export manifest",
            "writer": f"infrastore-sqlite {__version__}",
            "written": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "partitions": sorted({f["partition"] for f in self.files}),
            "files": self.files,
        }
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2)
        with (self.target / MANIFEST).upload(overwrite=self.overwrite) as up:
            up.write(data)
        self.target.bucket.forget(self.target.key)

    def rollback(self) -> None:
        for _, uploads in self._pending:
            for _, upload in uploads:
                upload.abort()
        self._pending.clear()
        for upload in self.open.values():
            upload.abort()
        self.open.clear()
        for key in self.published:
            with contextlib.suppress(Exception):
                key.delete()
        self.target.bucket.forget(self.target.key)
