"""Write the demo CSVs in this directory (run once; the output is committed as data).

    python infrastore_sqlite/demo/data/generate.py

Every number comes from closed-form daily shapes plus noise from a fixed seed, so a
re-run writes the same bytes. The store does not depend on this script: ``demo.py``
only reads the CSVs it wrote. The week is 2024-07-01 00:00 UTC to 2024-07-08 00:00 UTC,
hourly (168 steps).
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
START = datetime(2024, 7, 1, tzinfo=UTC)
HOURS = 168
DENVER_SUMMER = timezone(timedelta(hours=-6))  # America/Denver in July (MDT)
MINUS_SEVEN = timezone(timedelta(hours=-7))


def _iso(dt: datetime) -> str:
    text = dt.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _write(out: Path, name: str, header: list[str], rows: list[list[object]]) -> None:
    with open(out / name, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)


def _r(x: float, digits: int = 3) -> float:
    value = round(float(x), digits)
    return 0.0 if value == 0 else value  # never write -0.0


def main(out: Path = HERE) -> None:
    """Write every demo CSV into ``out`` (this directory by default)."""
    out = Path(out)
    rng = np.random.default_rng(20240701)
    hours = np.arange(HOURS)
    hod = hours % 24  # hour of day, UTC
    stamps = [START + timedelta(hours=int(h)) for h in hours]

    # Loads (MW): a residential evening peak and a commercial office-hours plateau. The
    # shapes are in US Mountain local time (UTC-6 in July), so the peaks land late in UTC.
    local = (hod - 6) % 24
    residential = (
        60
        + 25 * np.exp(-(((local - 19) / 3.0) ** 2))
        + 10 * np.exp(-(((local - 8) / 2.0) ** 2))
        + rng.normal(0, 1.5, HOURS)
    )
    commercial = 40 + 35 / (1 + np.exp(-(local - 7.5) * 1.5)) / (1 + np.exp((local - 18) * 1.5))
    commercial = commercial * np.where((hours // 24) % 7 >= 5, 0.7, 1.0) + rng.normal(0, 1, HOURS)

    # Wind capacity factor: a slow weather swing plus hourly noise, clipped to [0, 1].
    swing = 0.45 + 0.3 * np.sin(2 * np.pi * hours / 70.0 + 0.8)
    wind = np.clip(swing + rng.normal(0, 0.05, HOURS), 0, 1)

    # Solar capacity factor in Denver: a clear-sky bell between 06:00 and 20:00 local time.
    bell = np.clip(np.sin(np.pi * (local - 6) / 14.0), 0, None) ** 1.5
    cloud = np.clip(1 - np.abs(rng.normal(0, 0.15, HOURS)), 0.3, 1)
    solar = np.where((local >= 6) & (local <= 20), bell * cloud * 0.85, 0.0)

    _write(out, "load_residential.csv", ["timestamp", "value"],
           [[_iso(t), _r(v)] for t, v in zip(stamps, residential, strict=True)])  # fmt: skip
    _write(out, "load_commercial.csv", ["timestamp", "value"],
           [[_iso(t), _r(v)] for t, v in zip(stamps, commercial, strict=True)])  # fmt: skip
    _write(out, "wind.csv", ["timestamp", "value"],
           [[_iso(t), _r(v, 4)] for t, v in zip(stamps, wind, strict=True)])  # fmt: skip
    _write(out, "solar_denver.csv", ["timestamp", "value"],
           [[t.astimezone(DENVER_SUMMER).isoformat(), _r(v, 4)]
            for t, v in zip(stamps, solar, strict=True)])  # fmt: skip

    # Operating reserve requirement (MW), [up, down] per hour, on a zoneless market clock.
    up = 0.05 * (residential + commercial) + 3
    down = 0.5 * up
    _write(out, "reserve_requirement.csv", ["timestamp", "value[0]", "value[1]"],
           [[t.replace(tzinfo=None).isoformat(), _r(a, 2), _r(b, 2)]
            for t, a, b in zip(stamps, up, down, strict=True)])  # fmt: skip

    # Forced-outage derates (MW) at irregular instants.
    events = [(5, 30.0), (6, 0.0), (51, 55.0), (55, 0.0), (130, 20.0), (134, 0.0)]
    _write(out, "outage_derate.csv", ["timestamp", "value"],
           [[_iso(START + timedelta(hours=h, minutes=15)), mw] for h, mw in events])  # fmt: skip

    # Reservoir level limits (fraction), changed by operator notices: a step function on a
    # zoneless clock.
    notices = [(0, 0.95), (40, 0.9), (100, 0.85), (150, 0.9)]
    _write(out, "storage_limit.csv", ["timestamp", "value"],
           [[(START + timedelta(hours=h)).replace(tzinfo=None).isoformat(), v]
            for h, v in notices])  # fmt: skip

    # Thermal unit cost curve (piecewise linear: MW → $/h), revised twice during the week.
    # Rows are packed as [n, x1, y1, …, xn, yn] and zero-padded to the widest curve.
    curves = [
        (0, [(50.0, 1200.0), (100.0, 2600.0), (150.0, 4300.0)]),
        (72, [(50.0, 1250.0), (150.0, 4500.0)]),
        (120, [(40.0, 1000.0), (90.0, 2300.0), (150.0, 4400.0)]),
    ]
    width = 1 + 2 * max(len(points) for _, points in curves)
    cost_rows = []
    for h, points in curves:
        packed = [float(len(points))] + [c for xy in points for c in xy]
        cost_rows.append(
            [_iso(START + timedelta(hours=h))] + packed + [0.0] * (width - len(packed))
        )
    _write(out, "thermal_cost_curve.csv",
           ["timestamp", "n", "x1", "y1", "x2", "y2", "x3", "y3"], cost_rows)  # fmt: skip

    # Day-ahead wind forecast: issued every 6 hours, 12 hours ahead (27 windows). The error
    # grows with lead time.
    fc_rows = []
    for j in range(27):
        issue = START + timedelta(hours=6 * j)
        for h in range(12):
            k = 6 * j + h
            err = rng.normal(0, 0.02 + 0.01 * h)
            fc_rows.append([_iso(issue), _iso(issue + timedelta(hours=h)),
                            _r(np.clip(wind[k] + err, 0, 1), 4)])  # fmt: skip
    _write(out, "wind_forecast.csv", ["issue_time", "target_time", "value"], fc_rows)

    # Probabilistic load forecast: one day-ahead window per day, three percentiles.
    prob_rows = []
    for j in range(7):
        issue = START + timedelta(days=j)
        for h in range(24):
            k = 24 * j + h
            mid = residential[k] + rng.normal(0, 2)
            spread = 4 + 0.2 * h
            prob_rows.append([_iso(issue), _iso(issue + timedelta(hours=h)),
                              _r(mid - 1.28 * spread), _r(mid), _r(mid + 1.28 * spread)])  # fmt: skip
    _write(out, "load_forecast_probabilistic.csv",
           ["issue_time", "target_time", "value[p0.1]", "value[p0.5]", "value[p0.9]"],
           prob_rows)  # fmt: skip

    # Hydro inflow scenarios (m³/s): three scenarios per day-ahead window, on a fixed
    # UTC-7 clock (the reservoir operator's standard time all year).
    scen_rows = []
    base = 120 + 15 * np.sin(2 * np.pi * hours / 24.0)
    for j in range(7):
        issue = START + timedelta(days=j)
        for h in range(24):
            k = 24 * j + h
            lanes = [base[k] * f + rng.normal(0, 3) for f in (0.8, 1.0, 1.25)]
            scen_rows.append([issue.astimezone(MINUS_SEVEN).isoformat(),
                              (issue + timedelta(hours=h)).astimezone(MINUS_SEVEN).isoformat(),
                              *(_r(v, 2) for v in lanes)])  # fmt: skip
    _write(out, "hydro_inflow_scenarios.csv",
           ["issue_time", "target_time", "value[s0]", "value[s1]", "value[s2]"],
           scen_rows)  # fmt: skip


if __name__ == "__main__":
    main()
