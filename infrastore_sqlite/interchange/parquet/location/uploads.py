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

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ....errors import InvalidParameterError, MissingDependencyError, StorageError
from ....store.tracing import LOG
from ._aws import aws_profile
from .base import MANIFEST

__all__ = ["IncompleteUpload", "abort_before_export", "abort_uploads", "incomplete_uploads"]

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
    client = _client(root, storage_options or {})
    found: list[IncompleteUpload] = []
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": f"{prefix}/" if prefix else ""}
    try:
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
    except Exception as exc:  # botocore's ClientError / EndpointConnectionError / …
        raise _client_error(uri, "listing the incomplete uploads under", exc) from None
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
    client = _client(root, storage_options or {})
    for upload in uploads:
        try:
            client.abort_multipart_upload(Bucket=bucket, Key=upload.key, UploadId=upload.upload_id)
        except Exception as exc:
            raise _client_error(f"{root}/{upload.key}", "aborting the upload of", exc) from None
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
