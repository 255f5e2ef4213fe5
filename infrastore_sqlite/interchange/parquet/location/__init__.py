"""Where the Parquet form lives: :func:`locate` turns a path or an object-storage URI into a
:class:`Location` (``base.py``), implemented by a local directory (``_local.py``) and an
object-storage prefix (``_object.py``, obstore imported only when a URI is named). The
implementations are private: callers use the interface, never the kind of place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from ....errors import InvalidParameterError
from ._local import LocalLocation
from .base import CLOUD_INSTALL, MANIFEST, Location, Publisher

__all__ = [
    "CLOUD_INSTALL",
    "MANIFEST",
    "Location",
    "Publisher",
    "is_uri",
    "locate",
    "parse_storage_options",
]

#: URI schemes of object storage, as obstore and the engines spell them.
_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss"})


def is_uri(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names object storage (``s3://…``, ``gs://…``, ``az://…``, …)."""
    text = os.fspath(path)
    return isinstance(text, str) and text.split("://", 1)[0].lower() in _SCHEMES and ("://" in text)


def parse_storage_options(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` texts (``--storage-option``) as a mapping; refuses one without ``=``."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidParameterError(
                f"--storage-option {pair!r} is not KEY=VALUE; write it as, for example, "
                "--storage-option aws_region=eu-west-1"
            )
        out[key.strip().lower()] = value
    return out


def locate(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Location:
    """The place ``path`` names: a local path (plain or ``file://``) or a prefix (object)
    in object storage.

    Raises
    ------
    InvalidParameterError
        A URI with no bucket or with a ``..`` segment, or an option obstore does not take.
    MissingDependencyError
        A URI named while obstore is not installed.
    """
    text = os.fspath(path)
    if isinstance(text, str) and text.lower().startswith("file://"):
        return LocalLocation(unquote(urlsplit(text).path))
    if not is_uri(text):
        return LocalLocation(text)
    from ._object import open_prefix

    return open_prefix(text, urlsplit(text), storage_options)
