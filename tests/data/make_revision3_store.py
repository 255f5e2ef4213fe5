"""Build ``tests/data/revision3_store``: a store written by the code of schema revision 3.

How it was made (kept so it can be made again, never run by the tests)::

    mkdir /tmp/main3 && git archive 3fb44a6 | tar -x -C /tmp/main3
    PYTHONPATH=/tmp/main3 python tests/data/make_revision3_store.py tests/data/revision3_store

3fb44a6 is main before schema step 0004 (integer array ids): its catalog is at revision
3. The store holds every series type, a few series each, tuples and composite element
types too, a removal and a shared array; ``expected.json`` holds what each series reads
(its metadata and its data's bytes) with that code, which the migration test compares.
"""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

from infrastore_sqlite import (
    Deterministic,
    NonSequentialTimeSeries,
    PersistentTimeSeries,
    Probabilistic,
    Scenarios,
    SingleTimeSeries,
    Store,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def build(path: Path) -> dict[str, object]:
    rng = np.random.default_rng(37)
    with Store.create(path) as s:
        with s.transaction():
            for k in range(3):
                s.add_time_series(
                    k,
                    "Gen",
                    "Component",
                    SingleTimeSeries(T0, "PT1H", rng.random(24 + k), f"load{k}"),
                    features={"k": k},
                )
            # two owners sharing one array: one arrays row, two series rows
            shared = rng.random(12)
            s.add_time_series(
                10, "Bus", "Component", SingleTimeSeries(T0, "PT1H", shared, "shared")
            )
            s.add_time_series(
                11, "Bus", "Component", SingleTimeSeries(T0, "PT1H", shared, "shared")
            )
            s.add_time_series(
                12,
                "Gen",
                "SupplementalAttribute",
                SingleTimeSeries(
                    T0, "PT15M", rng.random((6, 2)), "pair", element_type="tuple(2,f64)"
                ),
            )
            s.add_time_series(
                13,
                "Gen",
                "Component",
                SingleTimeSeries(
                    T0, "PT1H", rng.random((5, 2)), "lin", element_type="linear_function"
                ),
            )
        with s.transaction():
            for k in range(2):
                times = [datetime(2024, 1, 1 + i, tzinfo=UTC) for i in range(0, 9, 1 + k)]
                s.add_time_series(
                    20 + k,
                    "Gen",
                    "Component",
                    NonSequentialTimeSeries(times, rng.integers(0, 100, len(times)), f"events{k}"),
                )
                s.add_time_series(
                    30 + k,
                    "Gen",
                    "Component",
                    Deterministic(T0, "PT1H", "PT4H", "PT2H", 3, rng.random((4, 3)), f"fc{k}"),
                )
                s.add_time_series(
                    40 + k,
                    "Gen",
                    "Component",
                    Probabilistic(
                        T0,
                        "PT1H",
                        "PT3H",
                        "PT1H",
                        2,
                        [10.0, 50.0, 90.0],
                        rng.random((3, 3, 2)),
                        f"prob{k}",
                    ),
                )
                s.add_time_series(
                    50 + k,
                    "Gen",
                    "Component",
                    Scenarios(T0, "PT1H", "PT3H", "PT1H", 2, rng.random((4, 3, 2)), f"scen{k}"),
                )
            s.add_time_series(
                60,
                "Gen",
                "Component",
                Deterministic(
                    T0,
                    "PT1H",
                    "PT2H",
                    "PT1H",
                    2,
                    rng.random((2, 2, 3)),
                    "quad",
                    element_type="quadratic_function",
                ),
            )
        s.add_time_series(
            70, "Load", "Component", SingleTimeSeries(T0, "PT30M", rng.random(48), "base")
        )
        with s.transaction():
            # The seventh type, other element types and the other time references.
            times = [T0, T0 + timedelta(minutes=7), T0 + timedelta(hours=5, milliseconds=500)]
            s.add_time_series(
                80,
                "Gen",
                "Component",
                PersistentTimeSeries(times, np.array([[1, 2], [3, 4], [5, 6]], np.int32), "pers"),
            )
            denver = datetime(2024, 3, 10, tzinfo=ZoneInfo("America/Denver"))
            s.add_time_series(
                81, "Gen", "Component", SingleTimeSeries(denver, "PT1H", rng.random(6), "denver")
            )
            s.add_time_series(
                82,
                "Gen",
                "Component",
                SingleTimeSeries(datetime(2024, 1, 1), "PT1H", np.arange(4.0), "wall"),
            )
            s.add_time_series(
                83, "Gen", "Component", SingleTimeSeries(T0, "PT1H", rng.random(5) > 0.5, "flag")
            )
            s.add_time_series(
                84,
                "Gen",
                "Component",
                SingleTimeSeries(T0, "PT1H", rng.random(5).astype(np.float32), "f32"),
            )
        s.transform_single_time_series("PT6H", "PT3H", resolution="PT30M")
        s.remove_by_ids([2])
        expected = {}
        for m in s.list_metadata():
            data = s.read_by_id(m["id"]).data
            expected[str(m["id"])] = {
                "metadata": json.loads(json.dumps(m, default=str)),
                "data": np.ascontiguousarray(data).tobytes().hex(),
                "dtype": str(np.asarray(data).dtype),
            }
    return expected


if __name__ == "__main__":
    out = Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    expected = build(out / "store.h5")
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True))
    print(f"wrote {out}: {len(expected)} series")
