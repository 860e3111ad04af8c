"""How fast the MySQL/MariaDB schema model applies DDL with thousands of tables in it.

Applies ``--tables`` CREATE TABLE statements (a typical table: auto-increment key, unique key,
DECIMAL, TIMESTAMP default, ENUM, TEXT) to one `SchemaModel`, then an ALTER (add a column,
change a column's type and charset, add an index) to every 15th table, then copies the model
(what the session does when a snapshot starts). Prints a markdown table: per-statement median
and 95th percentile, and the copy time; with ``--budget`` it also says whether each one stays
within the connector's budget (CREATE < 10 ms, ALTER median < 5 ms, copy < 50 ms).

    .venv/bin/python -m bench.ddl_model_bench --tables 2000 --budget
"""

from __future__ import annotations

import argparse
import statistics
import time

from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.model import TableId

CREATE = ("CREATE TABLE `t{i}` (id BIGINT NOT NULL AUTO_INCREMENT, name VARCHAR(100) NOT NULL DEFAULT '', "
          "price DECIMAL(10,2) UNSIGNED, created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
          "status ENUM('new','paid','sent') DEFAULT 'new', note TEXT, PRIMARY KEY (id), UNIQUE KEY u (name)) "
          "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
ALTER = ("ALTER TABLE `t{i}` ADD COLUMN extra INT NOT NULL DEFAULT 0 AFTER name, "
         "MODIFY note VARCHAR(200) CHARACTER SET latin1, ADD INDEX ix (created)")
BUDGET_MS = {"CREATE TABLE": 10.0, "ALTER TABLE": 5.0, "model copy": 50.0}
"""The budget of each step (median, milliseconds)."""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(tables: int) -> dict[str, list[float]]:
    """Seconds per statement (and per copy) of each step."""
    model = SchemaModel(server_charset="utf8mb4")
    out: dict[str, list[float]] = {"CREATE TABLE": [], "ALTER TABLE": [], "model copy": []}
    for i in range(tables):
        started = time.perf_counter()
        model.apply(CREATE.format(i=i), database="shop")
        out["CREATE TABLE"].append(time.perf_counter() - started)
    for i in range(0, tables, 15):
        started = time.perf_counter()
        model.apply(ALTER.format(i=i), database="shop")
        out["ALTER TABLE"].append(time.perf_counter() - started)
    table = model.table(TableId("shop", "t0"))
    if table is None or [c.name for c in table.columns][:3] != ["id", "name", "extra"]:
        raise SystemExit("the ALTER was not applied: the measurement is void")
    for _ in range(5):
        started = time.perf_counter()
        copy = model.copy()
        out["model copy"].append(time.perf_counter() - started)
        if len(copy) != tables:
            raise SystemExit("the copy lost tables: the measurement is void")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2000, help="tables in the model (default 2000)")
    parser.add_argument("--budget", action="store_true", help="compare each median with its budget")
    args = parser.parse_args(argv)
    results = measure(args.tables)
    head = "| step | n | median ms | p95 ms |" + (" budget ms | within |" if args.budget else "")
    print(f"Schema model with {args.tables} tables\n")
    print(head)
    print("|" + "|".join("---" for _ in head.split("|")[1:-1]) + "|")
    within = True
    for step, seconds in results.items():
        median, p95 = statistics.median(seconds) * 1000, _percentile(seconds, 0.95) * 1000
        line = f"| {step} | {len(seconds)} | {median:.3f} | {p95:.3f} |"
        if args.budget:
            ok = median < BUDGET_MS[step]
            within &= ok
            line += f" {BUDGET_MS[step]:.0f} | {'yes' if ok else 'NO'} |"
        print(line)
    return 0 if within else 1


if __name__ == "__main__":
    raise SystemExit(main())
