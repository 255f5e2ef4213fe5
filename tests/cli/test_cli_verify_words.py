"""``verify``'s report of a damaged segment does not tell the user to run ``verify``: the
refusal a read prints ends with that advice, the report of verify itself drops it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from infrastore_sqlite.cli import cli


def test_verify_details_do_not_advise_verify(tmp_path: Path) -> None:
    store = tmp_path / "demo-store"
    runner = CliRunner()
    assert runner.invoke(cli, ["demo", str(store)], catch_exceptions=False).exit_code == 0
    for seg in (store / "segments").glob("*.h5"):  # the second half of each zeroed
        data = bytearray(seg.read_bytes())
        data[len(data) // 2 :] = bytes(len(data) - len(data) // 2)
        seg.write_bytes(bytes(data))
    got = runner.invoke(cli, ["--store", str(store), "-f", "json", "verify"])
    assert got.exit_code == 1
    doc = json.loads(got.stdout)
    assert doc["segments"], doc
    for report in doc["segments"]:
        assert str(report["file"]).endswith(".h5") and report["detail"]
        assert "run verify" not in report["detail"], report
    assert not [e for e in doc.get("errors", []) if "run verify" in e]
