"""Uploads a dead export left: S3 multipart uploads never completed, found and aborted.

An export to object storage completes its uploads only when the whole export commits
(``_object.py``'s publisher), so a process killed before, or a server that died under it, leaves
uploads that no listing shows but the bucket keeps (and bills) until they are aborted.
obstore, which does every other request, cannot list them, so this module asks S3's own
``ListMultipartUploads`` and ``AbortMultipartUpload`` through botocore (the ``cloud``
extra), with the same options the export used: the keys, region, endpoint and profile
named as Polars' ``storage_options`` name them, else the ``AWS_*`` variables and
profile files as the AWS tools read them.

Only uploads of the layout's files are touched: a partition's ``*.parquet`` file (or a
part file under a partition's directory) and the manifest, under the export's prefix.
Google Cloud Storage and Azure have no such listing through this client; a bucket
lifecycle rule (S3 and GCS: ``AbortIncompleteMultipartUpload``; Azure drops uncommitted
blocks after 7 days) is the way there, and what the refusal says.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import io
import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ....errors import InvalidParameterError, MissingDependencyError, StorageError
from ....store.tracing import LOG
from ._aws import aws_profile
from .base import MANIFEST

__all__ = [
    "Completion",
    "HeldFile",
    "IncompleteUpload",
    "PartSender",
    "SentParts",
    "abort_before_export",
    "abort_uploads",
    "incomplete_uploads",
    "worker_client",
]

#: Parts of one upload in flight at once: what an upload holds is at most this many parts
#: and the one filling, however slow the network, while the encoder goes on.
PARTS_IN_FLIGHT = 4
#: The install command that brings botocore beside obstore.
_CLOUD_INSTALL = "pip install 'infrastore-sqlite[cloud]'"


@dataclass(frozen=True)
class IncompleteUpload:
    """One multipart upload never completed: its object key, its id, when it began."""

    key: str
    upload_id: str
    initiated: dt.datetime

    def as_dict(self) -> dict[str, str]:
        """The upload as JSON-ready text (the CLI's ``-f json`` rows)."""
        return {
            "key": self.key,
            "upload_id": self.upload_id,
            "initiated": self.initiated.isoformat(),
        }


def _option(options: Mapping[str, Any], *names: str) -> str | None:
    for name in names:
        value = options.get(name)
        if value not in (None, ""):
            return str(value)
    for name in names:
        value = os.environ.get(name.upper())
        if value:
            return value
    return None


def _client(root: str, options: Mapping[str, Any]) -> Any:
    """A botocore S3 client for the bucket ``root`` (``s3://bucket``) with ``options``."""
    if not root.startswith(("s3://", "s3a://")):
        scheme = root.split("://", 1)[0]
        raise InvalidParameterError(
            f"listing the uploads a failed export left works on s3:// only, not {scheme}://; "
            "set a lifecycle rule on the bucket that aborts incomplete uploads (GCS: "
            "AbortIncompleteMultipartUpload; Azure drops uncommitted blocks after 7 days)"
        )
    try:
        import botocore.config
        import botocore.session
    except ImportError:
        raise MissingDependencyError(
            f"finding the uploads a failed export left needs botocore; run {_CLOUD_INSTALL}"
        ) from None
    options = {str(k).lower(): v for k, v in options.items()}
    options = {**aws_profile(options), **options}
    endpoint = _option(options, "aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint")
    region = _option(options, "aws_region", "region", "aws_default_region") or "us-east-1"
    virtual = str(options.get("aws_virtual_hosted_style_request", "")).lower() == "true"
    session = botocore.session.get_session()
    profile = options.get("aws_profile")
    if profile and not options.get("aws_access_key_id"):
        session.set_config_variable("profile", str(profile))
    config = botocore.config.Config(
        s3={"addressing_style": "virtual" if virtual or endpoint is None else "path"},
        retries={"max_attempts": 3},
    )
    return session.create_client(
        "s3",
        region_name=region,
        endpoint_url=endpoint,
        aws_access_key_id=_option(options, "aws_access_key_id", "access_key_id"),
        aws_secret_access_key=_option(options, "aws_secret_access_key", "secret_access_key"),
        aws_session_token=_option(options, "aws_session_token", "session_token", "token"),
        config=config,
    )


def _bucket_and_prefix(uri: str) -> tuple[str, str, str]:
    scheme, _, rest = uri.partition("://")
    bucket, _, prefix = rest.partition("/")
    return f"{scheme}://{bucket}", bucket, prefix.strip("/")


def _ours(key: str, prefix: str) -> bool:
    """Whether ``key`` under ``prefix`` is a file an export writes there."""
    rel = key[len(prefix) + 1 :] if prefix else key
    return rel == MANIFEST or rel.endswith(".parquet")


def _client_error(uri: str, doing: str, exc: Exception) -> StorageError:
    detail = " ".join(str(exc).split())
    return StorageError(
        f"{doing} {uri} failed: {detail}; check the bucket, the credentials and "
        "--storage-option aws_endpoint_url (the server the export wrote to)"
    )


def incomplete_uploads(
    uri: str, *, storage_options: Mapping[str, Any] | None = None
) -> list[IncompleteUpload]:
    """The multipart uploads under the export prefix ``uri`` never completed, oldest first.

    Parameters
    ----------
    uri
        The export's directory in object storage (``s3://bucket/prefix``).
    storage_options
        The options the export was given (keys, region, endpoint, profile).
    """
    root, bucket, prefix = _bucket_and_prefix(uri)
    client = _shared_client(root, storage_options or {})
    found: list[IncompleteUpload] = []
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": f"{prefix}/" if prefix else ""}
    with _errors(uri, "listing the incomplete uploads under"):
        while True:
            page = client.list_multipart_uploads(**kwargs)
            for upload in page.get("Uploads", []):
                if _ours(upload["Key"], prefix):
                    found.append(
                        IncompleteUpload(upload["Key"], upload["UploadId"], upload["Initiated"])
                    )
            if not page.get("IsTruncated"):
                break
            kwargs["KeyMarker"] = page.get("NextKeyMarker", "")
            kwargs["UploadIdMarker"] = page.get("NextUploadIdMarker", "")
    return sorted(found, key=lambda u: (u.initiated, u.key))


def abort_uploads(
    uri: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    keys: Iterable[str] | None = None,
    dry_run: bool = False,
) -> list[IncompleteUpload]:
    """Abort the uploads a dead export left under ``uri``; return those aborted.

    Parameters
    ----------
    uri
        The export's directory in object storage (``s3://bucket/prefix``).
    storage_options
        The options the export was given.
    keys
        Only uploads of these object keys (an export about to write them); every upload
        of the layout's files under ``uri`` when omitted.
    dry_run
        List what would be aborted, aborting nothing.
    """
    wanted = None if keys is None else set(keys)
    uploads = [
        u
        for u in incomplete_uploads(uri, storage_options=storage_options)
        if wanted is None or u.key in wanted
    ]
    if dry_run or not uploads:
        return uploads
    root, bucket, _ = _bucket_and_prefix(uri)
    client = _shared_client(root, storage_options or {})  # the one the listing built
    for upload in uploads:
        with _errors(f"{root}/{upload.key}", "aborting the upload of"):
            client.abort_multipart_upload(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id)
    return uploads


def abort_before_export(uri: str, options: Mapping[str, Any], keys: Iterable[str]) -> int:
    """Abort the uploads of ``keys`` a dead export left under ``uri`` before an export
    writes them again; return how many. Never fails the export: without botocore, on a
    scheme it cannot list, or without the permission to list uploads, it logs why and
    aborts nothing (the uploads stay invisible; ``abort-uploads`` or a lifecycle rule
    removes them)."""
    if not uri.startswith(("s3://", "s3a://")):
        return 0
    try:
        aborted = abort_uploads(uri, storage_options=options, keys=keys)
    except (InvalidParameterError, MissingDependencyError, StorageError) as exc:
        LOG.info(
            "the uploads a failed export may have left under %s were not looked for: %s", uri, exc
        )
        return 0
    if aborted:
        LOG.warning(
            "aborted %d upload(s) a failed export left under %s: %s",
            len(aborted),
            uri,
            ", ".join(u.key for u in aborted),
        )
    return len(aborted)


# ---------------------------------------------------------------------------------------
# A parallel export's workers: uploads sent by a worker, completed by the parent.
#
# obstore completes a multipart upload when its writer closes and hides the upload's id,
# so a worker that closed its partition's uploads before handing it over made them
# visible: a ``--jobs`` export killed after that left completed partitions without a
# manifest. On ``s3://`` a worker therefore sends its files' parts through botocore and
# hands the parent what completing takes (the upload's id and its parts' ETags; a file
# small enough for one part, its bytes): the parent completes them all at its commit, as
# it does its own. The parts go out while the file is encoded, as obstore's writer sends
# them, so neither the speed nor the memory (a part filling and a few in flight) changes.


def workers_can_hand_over(root: str) -> bool:
    """Whether a parallel export's workers writing to ``root`` can hand their uploads
    over uncompleted (:func:`worker_client` gives them a client): ``s3://`` with botocore
    installed. gs:// and az:// go through obstore alone, which completes an upload when
    its writer closes."""
    if not root.startswith(("s3://", "s3a://")):
        return False
    return importlib.util.find_spec("botocore") is not None


def worker_client(root: str, options: Mapping[str, Any]) -> Any | None:
    """A botocore client for a parallel export's worker writing to ``root``; None where
    workers cannot hand uploads over (:func:`workers_can_hand_over`), where the export
    writes with one writer and its workers' publishers need none."""
    return _shared_client(root, options) if workers_can_hand_over(root) else None


#: The clients this process built, by bucket and options: a botocore client takes tens
#: of milliseconds to make, and every export to ``s3://`` asks for one (the dead export's
#: uploads), as every worker does for its partitions.
_clients: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}


def _shared_client(root: str, options: Mapping[str, Any]) -> Any:
    """The client for ``root`` with ``options``, made once per process (:func:`_client`);
    the ``AWS_*`` variables it read are part of what it was made from."""
    given = {str(k): str(v) for k, v in options.items()}
    given.update((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))
    key = (root, tuple(sorted(given.items())))
    client = _clients.get(key)
    if client is None:
        client = _clients[key] = _client(root, options)
    return client


@dataclass(frozen=True)
class SentParts:
    """A multipart upload a worker sent every part of: the parent completes or aborts it."""

    key: str
    upload_id: str
    #: ``(part number, ETag)`` of each part, in order.
    parts: tuple[tuple[int, str], ...]
    size: int


@dataclass(frozen=True)
class HeldFile:
    """A file small enough for one part: its bytes, for the parent's one create-only PUT."""

    data: bytes
    size: int


class PartSender(io.RawIOBase):
    """A worker's file in object storage: held in memory while it fits in one part, else
    a multipart upload whose parts are sent (a few at once) while the rest is written.
    :meth:`hand_over` sends what is left and returns what the parent completes it with;
    nothing is ever completed here, so nothing this worker writes is visible."""

    def __init__(self, client: Any, uri: str, bucket: str, key: str, part: int) -> None:
        self.client = client
        self.uri = uri
        self.bucket = bucket
        self.key = key
        self.part = part
        self._buf = bytearray()
        self._upload_id: str | None = None
        self._sent: list[Any] = []  # futures of (number, ETag), in part order
        self._pool: ThreadPoolExecutor | None = None
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        self._buf += data
        self.size += n
        while len(self._buf) > self.part:
            self._send(bytes(self._buf[: self.part]))
            del self._buf[: self.part]
        return n

    def _send(self, data: bytes) -> None:
        if self._upload_id is None:
            with _errors(self.uri, "writing"):
                got = self.client.create_multipart_upload(Bucket=self.bucket, Key=self.key)
            self._upload_id = got["UploadId"]
            self._pool = ThreadPoolExecutor(
                PARTS_IN_FLIGHT, thread_name_prefix="infrastore-sqlite-part"
            )
        # At most this many parts in flight: the oldest finishes before another is sent.
        if len(self._sent) >= PARTS_IN_FLIGHT:
            self._sent[-PARTS_IN_FLIGHT].result()
        number = len(self._sent) + 1
        assert self._pool is not None
        self._sent.append(self._pool.submit(self._part, number, data))

    def _part(self, number: int, data: bytes) -> tuple[int, str]:
        with _errors(self.uri, "writing"):
            got = self.client.upload_part(
                Bucket=self.bucket,
                Key=self.key,
                UploadId=self._upload_id,
                PartNumber=number,
                Body=data,
            )
        return number, got["ETag"]

    def hand_over(self) -> SentParts | HeldFile:
        """Send the last part, wait for every part, and return what completes the file."""
        if self._upload_id is None:
            data, self._buf = bytes(self._buf), bytearray()
            return HeldFile(data, self.size)
        if self._buf:
            self._send(bytes(self._buf))
            self._buf = bytearray()
        try:
            parts = tuple(f.result() for f in self._sent)
        finally:
            self._stop()
        return SentParts(self.key, self._upload_id, parts, self.size)

    def _stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def abort(self) -> None:
        """Drop the file: the parts not sent are cancelled, the upload aborted."""
        self._buf = bytearray()
        self._stop()
        if self._upload_id is not None:
            with contextlib.suppress(Exception):
                self.client.abort_multipart_upload(
                    Bucket=self.bucket, Key=self.key, UploadId=self._upload_id
                )
            self._upload_id = None


class Completion:
    """The parent's side of a worker's :class:`SentParts`: completed (``close``) at the
    commit, or aborted."""

    def __init__(self, client: Any, uri: str, bucket: str, sent: SentParts) -> None:
        self.client = client
        self.uri = uri
        self.bucket = bucket
        self.sent = sent
        self.size = sent.size

    def close(self) -> None:
        parts = [{"PartNumber": n, "ETag": etag} for n, etag in self.sent.parts]
        with _errors(self.uri, "writing"):
            self.client.complete_multipart_upload(
                Bucket=self.bucket,
                Key=self.sent.key,
                UploadId=self.sent.upload_id,
                MultipartUpload={"Parts": parts},
            )

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self.client.abort_multipart_upload(
                Bucket=self.bucket, Key=self.sent.key, UploadId=self.sent.upload_id
            )


@contextlib.contextmanager
def _errors(uri: str, doing: str) -> Iterator[None]:
    """botocore's errors as a :class:`StorageError` naming the object."""
    try:
        yield
    except StorageError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        raise _client_error(uri, doing, exc) from exc
