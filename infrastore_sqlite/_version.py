"""The package's version: the one place it is written (pyproject.toml reads it from here).

Below every layer (it imports nothing), so any module may name it: the Parquet footer's
``infrastore:writer`` does, without asking the installed distribution's metadata (a scan
of ``sys.path`` and a parse of its METADATA file at every first export).
"""

__version__ = "0.1.0"
