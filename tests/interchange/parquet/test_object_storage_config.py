"""The client's configuration errors in the caller's words (issue 36, Must 6), against the
real S3 server: an ``http://`` endpoint without ``AWS_ALLOW_HTTP`` names the variable and
the ``--storage-option`` that allow it (was obstore's text cut mid-word, "builder error
Debug sour"); an option the client does not know names the option (by obstore's
exception class), in one line, on the CLI and in the API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from varied_store import add, new_store, sts

from infrastore_sqlite.cli import PROG, cli
from infrastore_sqlite.errors import InvalidParameterError
from infrastore_sqlite.interchange.parquet.location import locate


@pytest.fixture
def store(tmp_path: Path) -> Path:
    import numpy as np

    s = new_store(tmp_path / "s.h5")
    add(s, sts("load", np.arange(4.0)))
    s.close()
    return tmp_path / "s.h5"


def _export(store: Path, env: dict, *extra: str) -> Any:
    args = ["--store", str(store), "export", "-f", "parquet", "--dir", "s3://infrastore/cfg"]
    return CliRunner().invoke(cli, [*args, *extra], prog_name=PROG, env=env)


def test_plain_http_without_allow_http_names_the_variable_and_the_option(
    s3_server: Any, store: Path
) -> None:
    env = {**s3_server.env, "AWS_ALLOW_HTTP": None}
    result = _export(store, env)
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "AWS_ALLOW_HTTP=true" in lines[0]
    assert "--storage-option aws_allow_http=true" in lines[0]
    assert s3_server.endpoint in lines[0] and "Debug" not in lines[0]
    # Either way out works as the message spells it.
    assert _export(store, env, "--storage-option", "aws_allow_http=true").exit_code == 0
    ok = _export(store, {**env, "AWS_ALLOW_HTTP": "true"}, "--overwrite")
    assert ok.exit_code == 0, ok.stderr


def test_the_api_names_the_keyword(s3_server: Any) -> None:
    opts = {k: v for k, v in s3_server.options.items() if k != "aws_allow_http"}
    with pytest.raises(InvalidParameterError) as e:
        locate("s3://infrastore/cfg", opts)
    assert 'storage_options={"aws_allow_http": "true"}' in str(e.value)


def test_an_unknown_option_is_named(s3_server: Any, store: Path) -> None:
    result = _export(store, s3_server.env, "--storage-option", "aws_bogus_thing=1")
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "aws_bogus_thing" in lines[0], result.stderr
    assert "is not one the client knows" in lines[0] and "Debug" not in lines[0]
