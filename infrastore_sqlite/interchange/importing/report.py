"""What an import reports: :class:`ImportReport` (every partition's entry) and
:class:`PartitionResult` (what one partition's import gathered for it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False, repr=False)
class ImportReport(list[int]):
    """What an import did (or, for a dry run, would do), partition by partition: one type
    whatever the import's flags.

    The report IS the list of the catalog ids the import committed, in read order (what
    the reference's ``import_sqlite`` returns, so a report compares equal to, and reads
    as, that list; a dry run's is empty), and carries the partitions' entries beside it.

    Attributes
    ----------
    path
        The database (or the Parquet path) read.
    table_prefix
        The prefix its partitions were found under (``""`` for Parquet).
    dry_run
        True when nothing was written.
    partitions
        One dict per partition in read order: ``name`` (the base name, without the prefix),
        ``values_table``, ``series_table``, ``arrays_table``, ``time_series_type``,
        ``status`` (``committed``, ``would_add``, ``failed``, or ``skipped`` for a partition
        never reached after a failure), ``series`` (one dict per series row: ``file_id``,
        the id the file recorded and the import drops, then ``owner_id``, ``owner_type``,
        ``owner_category``, ``name``, ``data_hash`` and ``time_axis``, and once filed
        ``outcome`` and the catalog ``id``), ``ids`` (the catalog ids, in the order of
        ``series``), ``added``, ``replaced``, ``unchanged`` and ``skipped`` (how many
        series each ``on_conflict`` outcome took), ``arrays``, ``rows`` and ``error``
        (the message, or None). For Parquet the three ``*_table`` keys hold the files.
    set_aside
        Parquet: the DeterministicSingleTimeSeries partitions of a directory, which no
        import takes, left out (``name``, ``values_table``, ``reason``).
    ignored
        Parquet: the files of a directory that belong to no partition.
    changed
        Parquet: the files whose size is not the one the export's manifest lists but
        whose footer reads: edited (or written again by an engine) since the export.
    """

    path: str
    table_prefix: str
    dry_run: bool
    partitions: list[dict[str, Any]] = field(default_factory=list)
    set_aside: list[dict[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        """The catalog ids of every committed partition's series, in read order: the new
        ones, and under ``on_conflict`` the replaced, unchanged or skipped series' own."""
        return [i for p in self.partitions if p["status"] == "committed" for i in p["ids"]]

    @property
    def ok(self) -> bool:
        return all(p["status"] in ("committed", "would_add") for p in self.partitions)

    def seal(self) -> ImportReport:
        """Make the list the committed ids (:attr:`ids`): called as the import returns
        or stops, so a report carried by an exception lists what was committed."""
        self[:] = self.ids
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "table_prefix": self.table_prefix,
            "dry_run": self.dry_run,
            "ok": self.ok,
            "ids": self.ids,
            "partitions": self.partitions,
            **({"set_aside": self.set_aside} if self.set_aside else {}),
            **({"ignored": self.ignored} if self.ignored else {}),
            **({"changed": self.changed} if self.changed else {}),
        }


@dataclass(slots=True)
class PartitionResult:
    """What one partition's import gathered: the per-series entries and outcomes (only
    when the caller gets them, ``Context.report``), how many series each outcome took,
    and the arrays and rows read."""

    series: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    #: Outcome -> how many series it took (a plain import keeps no list of them: a
    #: partition of millions of series would hold one entry each to the end).
    counts: dict[str, int] = field(default_factory=dict)
    arrays: int = 0
    rows: int = 0

    def count(self, outcomes: list[str], *, listed: bool) -> None:
        """Add ``outcomes`` (one per series, in filing order); kept as a list too when
        ``listed`` (the per-series entries are reported)."""
        counts = self.counts
        for outcome in set(outcomes):
            counts[outcome] = counts.get(outcome, 0) + outcomes.count(outcome)
        if listed:
            self.outcomes.extend(outcomes)
