"""The machine-readable contracts in schemas/ stay equal to what the code does."""

from __future__ import annotations

import orjson
from repo_root import REPO_ROOT

from infrastore_sqlite.interchange.sqlite.schema import contract

ROOT = REPO_ROOT


def test_interchange_contract_matches_layout() -> None:
    written = orjson.loads((ROOT / "schemas" / "interchange.json").read_bytes())
    assert written == orjson.loads(orjson.dumps(contract())), (
        "schemas/interchange.json is stale; regenerate it with "
        "python -c 'import orjson, infrastore_sqlite.interchange.sqlite.schema as L; "
        'open("schemas/interchange.json","wb").write(orjson.dumps(L.contract(), '
        'option=orjson.OPT_INDENT_2)+b"\\n")\''
    )


def test_contract_lists_every_type_once() -> None:
    types = contract()["types"]
    assert len(types) == 7
    assert types["DeterministicSingleTimeSeries"]["importable"] is False
    assert types["Probabilistic"]["values_columns"][3] == ["percentile", "REAL NOT NULL"]
