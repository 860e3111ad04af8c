"""SQL Server connector speed through the CDC emulator, next to the PostgreSQL connector.

One private PostgreSQL (`pipelines.local_postgres.LocalPostgres`) holds two databases with the
same table and the same rows: one emulates SQL Server's CDC objects
(tests/support/sqlserver_emulator), the other is captured by the PostgreSQL connector. For each
connector, in one run: an initial snapshot of ``--rows`` rows, then ``--changes`` streamed
changes (inserts and updates in transactions of ``--tx-rows`` rows), each captured into bronze
by ``run_capture(until_idle=True)`` (a fresh lakehouse per connector). The SQL Server side reads
the change tables through pyodbc and PostgreSQL's ODBC driver; the emulator's capture agent
fills them before the timed capture starts and is not counted. The numbers say how fast this
connector's code is on this machine, not how fast a real SQL Server serves it. Run::

    python -m bench.sqlserver_emulator_bench [--rows 20000] [--changes 20000] [--tx-rows 100]

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.local_postgres import LocalPostgres
from tests.support.pipeline_yaml import pipeline_text
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated
from tests.support.sqlserver_emulator.pipeline import sqlserver_pipeline_text

TABLE = ("CREATE TABLE {schema}.bench_rows (id bigint PRIMARY KEY, customer_id integer, quantity integer, "
         "note varchar(80), amount numeric(12, 2), created_at timestamp(3), active boolean)")
FILL = ("INSERT INTO {schema}.bench_rows SELECT g, g % 1000, g % 7, 'note ' || g, g * 0.25, "
        "timestamp '2024-01-01' + g * interval '1 second', g % 2 = 0 FROM generate_series({low}, {high}) AS g")


def workload(dsn: str, schema: str, rows: int, changes: int, tx_rows: int) -> None:
    """``changes`` changes after the first ``rows`` rows: half inserts, half updates, in transactions."""
    with psycopg.connect(dsn) as conn:
        done, next_id = 0, rows + 1
        while done < changes:
            n = min(tx_rows, changes - done)
            inserts = n // 2
            conn.execute(FILL.format(schema=schema, low=next_id, high=next_id + inserts - 1))
            conn.execute(f"UPDATE {schema}.bench_rows SET quantity = quantity + 1 "
                         f"WHERE id BETWEEN {next_id - (n - inserts)} AND {next_id - 1}")
            conn.commit()
            done, next_id = done + n, next_id + inserts


def timed(config_text: str, *, emulator: bool) -> tuple[float, int, int]:
    config = parse_pipeline(config_text, env={})
    started = time.perf_counter()
    if emulator:
        with emulated():
            result = next(iter(run_capture(config, until_idle=True).values()))
    else:
        result = next(iter(run_capture(config, until_idle=True).values()))
    return time.perf_counter() - started, result.snapshot_rows, result.streamed_records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--tx-rows", type=int, default=100)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sqlserver-bench-"))
    os.chmod(work, 0o755)
    server = LocalPostgres(work / "pg").start()
    results: list[tuple[str, str, int, float]] = []
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE emulated")
            conn.execute("CREATE DATABASE native")
        emu = SqlServerEmulator.install(server.dsn("emulated"))
        emu.execute(TABLE.format(schema="dbo"))
        emu.execute(FILL.format(schema="dbo", low=1, high=args.rows))
        emu.enable_db()
        emu.enable_table("dbo", "bench_rows")
        emu.agent().sync()
        native = server.dsn("native")
        with psycopg.connect(native, autocommit=True) as conn:
            conn.execute(TABLE.format(schema="public"))
            conn.execute(FILL.format(schema="public", low=1, high=args.rows))

        ms_text = sqlserver_pipeline_text(str(work / "lake-ms"), emu.dsn)
        pg_config = pipeline_text(str(work / "lake-pg"), native)
        for name, text, is_emulated, schema, dsn in (("sqlserver (emulator)", ms_text, True, "dbo", emu.dsn),
                                                     ("postgres", pg_config, False, "public", native)):
            seconds, snapshot_rows, _ = timed(text, emulator=is_emulated)
            results.append((name, "snapshot rows", snapshot_rows, seconds))
            workload(dsn, schema, args.rows, args.changes, args.tx_rows)
            if is_emulated:
                emu.agent().sync()
            seconds, _, streamed = timed(text, emulator=is_emulated)
            results.append((name, "streamed events", streamed, seconds))
    finally:
        server.stop("immediate")
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.rows} rows snapshotted, {args.changes} changes streamed "
          f"(transactions of {args.tx_rows}); one run, this machine\n")
    print("| connector | what | count | seconds | per second |\n|---|---|---:|---:|---:|")
    for name, what, count, seconds in results:
        print(f"| {name} | {what} | {count} | {seconds:.2f} | {count / seconds:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
