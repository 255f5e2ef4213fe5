"""obstore's errors in the caller's words, chosen by their classes (``obstore.exceptions``),
not by their names or messages; the HTTP status only for an error obstore has no class for
(its ``GenericError``). The same words against the real server are checked in
``test_object_storage*.py`` and ``tests/cli``."""

from __future__ import annotations

import pytest
from obstore import exceptions as e

from infrastore_sqlite.errors import StorageError
from infrastore_sqlite.interchange.parquet.location._object import storage_errors

URI = "s3://bucket/prefix/a.values.parquet"
NOT_FOUND = "check the bucket (it must exist) and the path"
CREDENTIALS = "check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
THERE = "remove it first, or pass"
NETWORK = "check the endpoint (AWS_ENDPOINT_URL or"


class _RenamedNotFound(e.NotFoundError):
    """A subclass under another name: what the class is, not what it is called, decides."""


def _raised(exc: Exception) -> StorageError:
    with pytest.raises(StorageError) as err, storage_errors(URI, "reading"):
        raise exc
    assert err.value.table == URI
    assert err.value.__cause__ is exc
    return err.value


@pytest.mark.parametrize(
    ("exc", "hint"),
    [
        (e.NotFoundError("no such key"), NOT_FOUND),
        (_RenamedNotFound("no such key"), NOT_FOUND),
        (e.PermissionDeniedError("denied"), CREDENTIALS),
        (e.UnauthenticatedError("who are you"), CREDENTIALS),
        (e.AlreadyExistsError("it is there"), THERE),
        (e.PreconditionError("it is there"), THERE),
        (e.GenericError("something else"), NETWORK),
        (RuntimeError("not obstore's"), NETWORK),
    ],
)
def test_the_hint_follows_the_class(exc: Exception, hint: str) -> None:
    err = _raised(exc)
    assert str(err).startswith(f"reading {URI} failed (")
    assert hint in str(err)


def test_a_class_wins_over_a_status_in_the_text() -> None:
    err = _raised(e.NotFoundError("status code: 403 Forbidden"))
    assert NOT_FOUND in str(err) and CREDENTIALS not in str(err)


@pytest.mark.parametrize(
    ("status", "hint"),
    [("404 Not Found", NOT_FOUND), ("403 Forbidden", CREDENTIALS), ("409 Conflict", THERE)],
)
def test_a_generic_error_is_told_by_its_status(status: str, hint: str) -> None:
    err = _raised(e.GenericError(f"GET http://127.0.0.1:1/bucket failed, status code: {status}"))
    assert f"(HTTP {status})" in str(err)
    assert hint in str(err)


def test_the_hint_names_the_flag_or_the_keyword() -> None:
    err = _raised(e.AlreadyExistsError("it is there"))
    assert "pass --overwrite" in err.render("cli")
    assert "pass overwrite=True" in err.render("api")
