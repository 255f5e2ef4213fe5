"""``python -m infrastore_sqlite``: the same command line as ``infrastore-sqlite``."""

from .cli import cli

if __name__ == "__main__":
    cli.main(prog_name="python -m infrastore_sqlite")
