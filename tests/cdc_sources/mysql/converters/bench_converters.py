"""Per-value cost of the MySQL converters: ``python -m tests.cdc_sources.mysql.converters.bench_converters``.

Converts 1,000,000 typical values per type family, as each path delivers them, and prints
microseconds per value (the loop included: ``[convert(v) for v in values]``).
"""

from __future__ import annotations

import datetime
import random
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_sources.mysql.converters import MySqlConverterSettings, Origin, converter_for
from cdc_sources.mysql.model import ColumnDef

N = 1_000_000


def _column(type_name: str, jdbc: int, **kw: Any) -> ColumnDef:
    return ColumnDef("c", 1, type_name, type_name, jdbc, **kw)


def _cases(rng: random.Random) -> list[tuple[str, ColumnDef, Origin, Callable[[int], Any]]]:
    base = datetime.datetime(2024, 1, 1)
    return [
        ("INT", _column("INT", 4), "binlog", lambda i: rng.randrange(-(2**31), 2**31)),
        ("BIGINT UNSIGNED (long)", _column("BIGINT UNSIGNED", -5), "binlog", lambda i: rng.randrange(2**64)),
        ("VARCHAR(64)", _column("VARCHAR", 12, length=64, charset="utf8mb4"), "binlog", lambda i: f"name-{i}"),
        ("DATETIME (ms)", _column("DATETIME", 93), "binlog",
         lambda i: base + datetime.timedelta(seconds=rng.randrange(10**8))),
        ("DATETIME(6)", _column("DATETIME", 93, length=6), "binlog",
         lambda i: base + datetime.timedelta(microseconds=rng.randrange(10**14))),
        ("DATETIME(6) text", _column("DATETIME", 93, length=6), "snapshot",
         lambda i: str(base + datetime.timedelta(microseconds=rng.randrange(1, 10**14)))),
        ("TIMESTAMP(3)", _column("TIMESTAMP", 2014, length=3), "binlog",
         lambda i: base + datetime.timedelta(microseconds=rng.randrange(10**14) // 1000 * 1000)),
        ("DECIMAL(12,2) precise", _column("DECIMAL", 3, length=12, scale=2), "binlog",
         lambda i: Decimal(rng.randrange(-(10**12), 10**12)).scaleb(-2)),
        ("DECIMAL(12,2) precise text", _column("DECIMAL", 3, length=12, scale=2), "snapshot",
         lambda i: f"{rng.randrange(-(10**10), 10**10)}.{rng.randrange(100):02d}"),
        ("DATE", _column("DATE", 91), "binlog",
         lambda i: datetime.date(2000, 1, 1) + datetime.timedelta(days=i % 9000)),
        ("TIME(6)", _column("TIME", 92, length=6), "binlog",
         lambda i: datetime.timedelta(microseconds=rng.randrange(-(10**11), 10**11))),
    ]


def main() -> None:
    rng = random.Random(7)
    settings = MySqlConverterSettings()
    print(f"{'type':30} {'origin':9} {'identity':8} {'us/value':>9}")
    for name, column, origin, make in _cases(rng):
        converter = converter_for(column, settings, origin=origin)
        assert converter is not None
        values = [make(i) for i in range(N)]
        convert = converter.convert
        started = time.perf_counter()
        _ = [convert(v) for v in values]
        elapsed = time.perf_counter() - started
        print(f"{name:30} {origin:9} {converter.identity!s:8} {elapsed / N * 1e6:9.3f}")


if __name__ == "__main__":
    main()
