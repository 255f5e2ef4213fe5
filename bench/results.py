"""The benchmark's results: per-round ratios, the memory summary, targets and tables.

Used by ``bench/run.py`` (and ``bench/scale.py`` for its tables); no process is started here.
"""

from __future__ import annotations

import statistics
from typing import Any

from child import IMPLS

OPS = ("export", "import", "add", "read")
MEMORY_OPS = ("export", "import")

# Targets the results are checked against (medians of the per-round speedups).
TARGETS = {
    "export_speedup": 2.5,  # every scenario
    "import_speedup": 2.0,  # every scenario
    "add_speedup": 1.5,  # every scenario
    "read_speedup": 1.5,  # every scenario
    "floor_ratio": 1.3,  # export and import, ours s / floor s, on sts and small
    "rss_growth_mb": 50.0,  # memory scenario, ours, export and import
}
# The operations with a floor (bench/sqlite_floor.py), and the scenarios its target covers.
FLOOR_OPS = ("export", "import")
FLOOR_TARGET_SCENARIOS = ("sts", "small")


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _speedups(
    runs: dict[str, list[dict[str, Any]]], field: str = "seconds", other: str = "ref"
) -> list[float]:
    """Per round: our rows/s over ``other``'s rows/s (= its seconds / our seconds).

    ``other`` is the reference (``ref``) or, with ``bench/run.py --against``, this package
    at an earlier commit (``base``).

    ``field="cpu_seconds"`` gives the same on CPU time (user + system, every thread).
    The reference is single-threaded; ours overlaps its store reads and HDF5 writes with
    SQLite on a second thread, so its CPU speedup reads lower than its wall speedup by
    about the work that overlap hides.
    """
    out = []
    for o, r in zip(runs["ours"], runs.get(other, []), strict=False):
        if o[field] > 0 and r[field] > 0:
            out.append((o["rows"] / o[field]) / (r["rows"] / r[field]))
    return out


def _floor_ratios(runs: dict[str, list[dict[str, Any]]]) -> list[float]:
    """Per round: our seconds over the floor's (> 1: how far ours is above the floor)."""
    return [
        o["seconds"] / f["seconds"]
        for o, f in zip(runs["ours"], runs.get("floor", []), strict=False)
        if f["seconds"] > 0
    ]


def records_for(scenario: str, size: str, n: int, op: str, m: dict[str, Any]) -> list[dict]:
    runs = m["runs"]
    ratio = _speedups(runs)
    cpu_ratio = _speedups(runs, "cpu_seconds")
    floor = _floor_ratios(runs)
    vs_base = _speedups(runs, other="base")
    recs = []
    for impl in runs:
        rs = runs[impl]
        secs = [x["seconds"] for x in rs]
        rows = rs[0]["rows"] if rs else None
        med = _median(secs)
        db_bytes = rs[0].get("db_bytes") if rs else None
        recs.append(
            {
                "scenario": scenario,
                "size": size,
                "n": n,
                "op": op,
                "impl": impl,
                "module": IMPLS.get(impl, "bench/sqlite_floor.py"),
                "seconds": secs,
                "seconds_median": med,
                "seconds_min": min(secs) if secs else None,
                "seconds_max": max(secs) if secs else None,
                "cpu_seconds": [x["cpu_seconds"] for x in rs],
                "rows": rows,
                "series": rs[0].get("series") if rs else None,
                "rows_per_s": rows / med if rows and med else None,
                "rss_mb": [round(x["peak_rss_mb"], 1) for x in rs],
                "rss_mb_median": _median([x["peak_rss_mb"] for x in rs]),
                "base_rss_mb": _median([x["base_rss_mb"] for x in rs]),
                "db_bytes": db_bytes,
                "db_bytes_per_row": db_bytes / rows if db_bytes and rows else None,
                "ratio": ratio,
                "ratio_median": _median(ratio),
                "cpu_ratio": cpu_ratio,
                "cpu_ratio_median": _median(cpu_ratio),
                "floor_ratio": floor,
                "floor_ratio_median": _median(floor),
                "vs_base": vs_base,
                "vs_base_median": _median(vs_base),
                "error": m["failed"].get(impl),
            }
        )
    return recs


def memory_summary(records: list[dict], sizes: tuple[int, int]) -> list[dict]:
    out = []
    lo, hi = sizes
    impls = [*IMPLS, *({r["impl"] for r in records} & {"base"})]
    for op in MEMORY_OPS:
        for impl in impls:
            by_n = {
                r["n"]: r
                for r in records
                if r["scenario"] == "memory" and r["op"] == op and r["impl"] == impl
            }
            a, b = by_n.get(lo), by_n.get(hi)
            ra = a and a["rss_mb_median"]
            rb = b and b["rss_mb_median"]
            out.append(
                {
                    "op": op,
                    "impl": impl,
                    "n_small": lo,
                    "n_large": hi,
                    "rss_small_mb": ra,
                    "rss_large_mb": rb,
                    "growth_mb": (rb - ra) if ra is not None and rb is not None else None,
                }
            )
    return out


def check_targets(records: list[dict], memory: list[dict]) -> list[dict]:
    out = []
    for r in records:
        if r["impl"] != "ours" or r["scenario"] == "memory":
            continue
        thr = TARGETS[f"{r['op']}_speedup"]
        v = r["ratio_median"]
        out.append(
            {
                "target": f"{r['op']} speedup, {r['scenario']} {r['size']} (n={r['n']})",
                "value": v,
                "threshold": f">= {thr}",
                "met": v is not None and v >= thr,
            }
        )
        if r["op"] in FLOOR_OPS and r["scenario"] in FLOOR_TARGET_SCENARIOS:
            v, thr = r.get("floor_ratio_median"), TARGETS["floor_ratio"]
            out.append(
                {
                    "target": f"{r['op']} ours / floor, {r['scenario']} {r['size']} (n={r['n']})",
                    "value": v,
                    "threshold": f"<= {thr}",
                    "met": v is not None and v <= thr,
                }
            )
    for m in memory:
        if m["impl"] == "ours":
            v = m["growth_mb"]
            thr = TARGETS["rss_growth_mb"]
            out.append(
                {
                    "target": f"{m['op']} peak RSS growth {m['n_small']}->{m['n_large']} series (MB)",
                    "value": v,
                    "threshold": f"<= {thr}",
                    "met": v is not None and v <= thr,
                }
            )
    by_key: dict[tuple, dict[str, dict]] = {}
    for r in records:
        # (The memory scenario's databases are the small builder's: not counted twice.)
        if r["op"] == "export" and r["scenario"] != "memory" and r["db_bytes_per_row"] is not None:
            by_key.setdefault((r["scenario"], r["size"], r["n"]), {})[r["impl"]] = r
    for (scn, size, n), pair in by_key.items():
        if "ours" in pair and "ref" in pair:
            v, thr = pair["ours"]["db_bytes_per_row"], pair["ref"]["db_bytes_per_row"]
            out.append(
                {
                    "target": f"db bytes per value row, {scn} {size} (n={n})",
                    "value": v,
                    "threshold": f"<= {thr:.3f} (reference)",
                    "met": v <= thr,
                }
            )
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def table_rows(records: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = [
        "scenario",
        "size",
        "op",
        "impl",
        "median s",
        "min s",
        "max s",
        "rows",
        "rows/s",
        "peak RSS MB",
        "B/row",
        "speedup per round",
        "speedup median",
        "CPU speedup median",
        "ours / floor",
    ]
    # ``bench/run.py --against``: ours against this package at an earlier commit.
    with_base = any(r.get("vs_base") for r in records)
    if with_base:
        header.append("vs base median")
    body = []
    for r in records:
        ours = r["impl"] == "ours"
        body.append(
            [
                r["scenario"],
                f"{r['size']} ({r['n']})",
                r["op"],
                r["impl"],
                _fmt(r["seconds_median"], ".3f"),
                _fmt(r["seconds_min"], ".3f"),
                _fmt(r["seconds_max"], ".3f"),
                _fmt(r["rows"], ","),
                _fmt(r["rows_per_s"], ",.0f"),
                _fmt(r["rss_mb_median"], ".0f"),
                _fmt(r["db_bytes_per_row"], ".2f"),
                " ".join(f"{x:.2f}" for x in r["ratio"]) if ours else "",
                (_fmt(r["ratio_median"], ".2f") + "x") if ours and r["ratio"] else "",
                (_fmt(r["cpu_ratio_median"], ".2f") + "x") if ours and r["cpu_ratio"] else "",
                (_fmt(r.get("floor_ratio_median"), ".2f") + "x")
                if ours and r.get("floor_ratio")
                else "",
            ]
        )
        if with_base:
            body[-1].append(
                (_fmt(r["vs_base_median"], ".2f") + "x") if ours and r.get("vs_base") else ""
            )
        if r["error"]:
            body[-1][4] = "FAILED"
    return header, body


def render_text(header: list[str], body: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(row[i]) for row in body)) if body else len(h)
        for i, h in enumerate(header)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in body]
    return "\n".join(lines)


def render_markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def report(doc: dict[str, Any], markdown: bool = False) -> str:
    render = render_markdown if markdown else render_text
    # The memory scenario reuses the small scenario's runs where the sizes coincide.
    small = {(r["n"], r["op"]) for r in doc["results"] if r["scenario"] == "small"}
    shown = [
        r for r in doc["results"] if r["scenario"] != "memory" or (r["n"], r["op"]) not in small
    ]
    header, body = table_rows(shown)
    parts = [
        "Speedup = (our rows/s) / (reference rows/s) = reference seconds / our seconds, "
        "per round; > 1 means infrastore_sqlite is faster. CPU speedup: the same on CPU "
        "seconds of every thread (the reference is single-threaded; ours overlaps work on "
        "a second thread, so its CPU speedup is the lower one).",
        "rows: export/import = value rows in the exported tables (distinct arrays); "
        "add/read = value rows over all series (shared arrays counted per series).",
        *(
            [
                f"vs base: (our rows/s) / (rows/s of this package at {against[:12]}), per "
                "round, median; > 1 means the working tree is faster."
            ]
            if (against := doc["meta"].get("against"))
            else []
        ),
        "",
        render(header, body),
    ]
    if doc["memory"]:
        mh = ["op", "impl", "series", "peak RSS MB (small)", "peak RSS MB (large)", "growth MB"]
        mb = [
            [
                m["op"],
                m["impl"],
                f"{m['n_small']} -> {m['n_large']}",
                _fmt(m["rss_small_mb"], ".1f"),
                _fmt(m["rss_large_mb"], ".1f"),
                _fmt(m["growth_mb"], "+.1f"),
            ]
            for m in doc["memory"]
        ]
        parts += [
            "",
            "Memory (peak RSS of the operation's child process, median of rounds):",
            "",
            render(mh, mb),
        ]
    if doc["targets"]:
        th = ["target", "value", "threshold", "met"]
        tb = [
            [t["target"], _fmt(t["value"], ".3f"), t["threshold"], "yes" if t["met"] else "NO"]
            for t in doc["targets"]
        ]
        parts += ["", "Targets:", "", render(th, tb)]
    if doc["failures"]:
        parts += ["", "FAILURES:"]
        for f in doc["failures"]:
            first = f["error"].strip().splitlines()
            parts.append(
                f"  {f['op']} {f['impl']} {f['builder']} n={f['n']}: "
                + (first[-1] if first else "")
            )
    return "\n".join(parts)
