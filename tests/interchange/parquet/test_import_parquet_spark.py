"""Spark's own writer, with its defaults (issue 36, Musts 1 and 2): each file of an export
read by Spark, its values edited, written back with ``df.write.parquet`` as a directory of
``part-*.parquet`` files beside ``_SUCCESS`` and ``.crc`` files; timestamps as Spark writes
them by default (INT96, which pyarrow reads as naive nanoseconds, its footer's own schema
saying ``timestamp``) for an instant and ``timestamp_ntz`` for a zoneless wall clock. The
round trip ends with the edited values in the store. One Spark session (``local[1]``) for
the module: its JVM takes seconds to start.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from varied_store import add, new_store, sts

from infrastore_sqlite import Store
from infrastore_sqlite.cli import cli
from infrastore_sqlite.errors import InvalidParameterError

pyspark = pytest.importorskip("pyspark", reason="pip install 'infrastore-sqlite[test]'")

ORDER = {"values": ["array_id", "timestamp"], "series": ["array_id", "id"], "arrays": ["id"]}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("infrastore-sqlite-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # Not UTC: the instants must come back whatever the session's zone.
        .config("spark.sql.session.timeZone", "America/Denver")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _export(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "src.h5"
    s = new_store(path)
    for k in range(4):
        add(s, sts("load", np.arange(48.0) + 100 * k), owner=k + 1)
        add(s, sts("wall", np.arange(24.0) + 100 * k, time_reference="zoneless"), owner=k + 1)
    s.export_parquet(tmp_path / "out")
    s.close()
    return path, tmp_path / "out"


def _spark_rewrite(spark: Any, out: Path, dst: Path, factor: float) -> None:
    """Every file read by Spark and written back by it, the values times ``factor``,
    each file as a directory of two sorted parts (Spark's write defaults otherwise)."""
    from pyspark.sql import functions as F

    dst.mkdir()
    for f in sorted(out.glob("*.parquet")):
        role = f.name.rsplit(".", 2)[1]
        df = spark.read.parquet(str(f))
        if role == "values":
            df = df.withColumn("value", F.col("value") * factor)
        df.repartition(2).sortWithinPartitions(*ORDER[role]).write.parquet(str(dst / f.name))


def _values(store: Path) -> dict[tuple[int, str], list[float]]:
    with Store.open(store, read_only=True) as s:
        return {
            (m["owner_id"], m["name"]): s.read_by_id(m["id"]).data.tolist()
            for m in s.list_metadata()
        }


def _stamps(store: Path) -> dict[tuple[int, str], Any]:
    with Store.open(store, read_only=True) as s:
        return {
            (m["owner_id"], m["name"]): str(s.read_by_id(m["id"]).initial_timestamp)
            for m in s.list_metadata()
        }


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_sparks_default_write_back_comes_back_edited(spark: Any, tmp_path: Path) -> None:
    store, out = _export(tmp_path)
    before, stamps = _values(store), _stamps(store)
    dst = tmp_path / "spark"
    _spark_rewrite(spark, out, dst, 2.0)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    assert (values / "_SUCCESS").is_file() and list(values.glob(".part-*.crc"))
    part = next(values.glob("part-*.parquet"))
    meta = pq.read_metadata(part)
    assert "int96" in str(meta.schema).lower()  # Spark's default: INT96 instants
    assert pq.read_schema(part).field("timestamp").type.tz is None  # read naive by pyarrow
    r = _run("--store", str(store), "-f", "json", "diff", "--parquet", str(dst))
    assert r.exit_code == 0, r.stderr
    assert {e["change"] for e in json.loads(r.stdout)["items"]} == {"replaced"}
    r = _run("-f", "json", "rehash", "--dir", str(dst))
    assert r.exit_code == 0, r.stderr
    r = _run("--store", str(store), "-f", "json", "add", "--parquet", str(dst), "--replace")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["replaced"] == 8
    assert _values(store) == {k: [2 * v for v in vals] for k, vals in before.items()}
    # The instants and the wall clocks where they were, whatever Spark's session zone.
    assert _stamps(store) == stamps


def test_a_truly_naive_instant_column_is_still_refused(spark: Any, tmp_path: Path) -> None:
    _, out = _export(tmp_path)
    dst = tmp_path / "spark"
    _spark_rewrite(spark, out, dst, 1.0)
    values = dst / "SingleTimeSeries.f64.utc.values.parquet"
    for part in values.glob("part-*.parquet"):
        # The same rows without Spark's schema in the footer: nothing says they are UTC.
        t = pq.read_table(part)
        pq.write_table(t.replace_schema_metadata(None), part)
        (values / f".{part.name}.crc").unlink()
    with pytest.raises(InvalidParameterError, match="`timestamp` is naive"):
        new_store(tmp_path / "dst.h5").import_parquet(dst / "SingleTimeSeries.f64.utc")
