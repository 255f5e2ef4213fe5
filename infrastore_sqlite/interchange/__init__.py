"""The interchange layout: what every container (SQLite tables, Parquet files) shares.

* :mod:`.layout` — partitions, table names and slugs, columns;
* :mod:`.plan` — the export plan (store rows → partitions) and row blocks, with
  :mod:`.plan_types` (what a plan holds) and :mod:`.series_rows` (a partition's series rows);
* :mod:`.pipeline` — the prefetching thread between a batch reader and a writer;
* :mod:`.importing` — the import core: series rows → specs, values groups (numpy
  columns) → checked, hashed store arrays, filing, the report; every import refusal;
* :mod:`.sqlite` — the SQLite container (writer, reader, cells, the file, rehash);
* :mod:`.parquet` — the Parquet container (export; needs pyarrow, loaded only when used).

Layer: imports ``store`` and below; outside a container's package, no container (``tests/test_layers.py``).
"""
