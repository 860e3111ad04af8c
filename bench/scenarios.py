"""The benchmark scenarios: streaming an insert, snapshotting a table, memory under a huge transaction.

Each scenario uses its own database on the one private server and runs the readers one after
the other on the same data: every reader run has its own replication slot created before the
changes were made, so each decodes exactly the same WAL. With ``repeat`` > 1 every reader runs
that many times (round-robin, each time on its own slot) and the fastest run is reported; all
runs are kept in the JSON, and the peak RSS reported is the largest of all runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.debezium import DebeziumTarget, prime_streaming, run_debezium, summarize_debezium
from bench.measure import (
    SNAPSHOT_STEPS,
    RunContext,
    prime_ours,
    profile_ours,
    rate,
    run_ours_round,
    scenario_database,
    scenario_result,
    timed,
)
from bench.ours import OursTarget
from bench.raw import recvlogical_create_slot, run_copy_psql, run_copy_psycopg, run_recvlogical
from bench.workload import (
    BenchDb,
    change_rows,
    create_database,
    current_lsn,
    drop_database,
    insert_rows,
    settle,
    table_bytes,
    wal_bytes,
)
from pipelines.local_postgres import LocalPostgres


@dataclass
class BenchContext(RunContext):
    """What every scenario needs: the server, a scratch directory and the run's settings."""

    server: LocalPostgres = field(kw_only=True)
    debezium: bool = field(default=True, kw_only=True)
    debezium_consumer: str = field(default="lean", kw_only=True)


@dataclass
class _StreamReaders:
    """Every reader of a streaming scenario, each with its own slot."""

    ours: list[OursTarget]
    source: list[OursTarget]
    debezium: list[DebeziumTarget]
    profile: OursTarget | None


def _prepare_streaming(ctx: BenchContext, key: str, db: BenchDb, n: int, *, debezium: bool, profile: bool,
                       source_only: bool) -> _StreamReaders:
    """Create every reader's slot (and stored offset) while the table is still empty."""
    ours = [OursTarget(db, ctx.workdir / f"lake_{key}_{i}", f"bench_ours_{i}") for i in range(n)]
    source = [OursTarget(db, ctx.workdir / f"lake_{key}_src_{i}", f"bench_src_{i}")
              for i in range(n if source_only else 0)]
    prof = OursTarget(db, ctx.workdir / f"lake_{key}_profile", "bench_profile") if profile else None
    prime_ours(ctx, [*ours, *source, *([prof] if prof else [])], "creates its slot, stores its offset")
    dbz = [DebeziumTarget(db, ctx.workdir / f"debezium_{key}_{i}", f"bench_debezium_{i}")
           for i in range(n if debezium else 0)]
    if dbz:
        ctx.say(f"  setup: Debezium snapshots the empty table and stores a streaming offset (heartbeat) x{n}")
    for d in dbz:
        prime_streaming(d)
    for i in range(n):
        recvlogical_create_slot(db, f"bench_recvlogical_{i}")
    return _StreamReaders(ours, source, dbz, prof)


def _stream_runs(ctx: BenchContext, readers: _StreamReaders, db: BenchDb, end_lsn: str, rows: int,
                 n: int, changes: int) -> dict[str, list[dict[str, Any]]]:
    """Every reader streams the changes from its own slot, ``n`` rounds: ``rows`` records (what
    Debezium and we emit, tombstones included), ``changes`` row changes (what pgoutput sends)."""
    say = ctx.say
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "ours_source": [], "debezium": [],
                                             "pg_recvlogical": []}
    for i in range(n):
        say(f"  run {i + 1}/{n}: pg_recvlogical (pgoutput, to a pipe that discards)")
        runs["pg_recvlogical"].append(rate(run_recvlogical(db, f"bench_recvlogical_{i}", end_lsn), changes))
        run_ours_round(ctx, f"run {i + 1}/{n}:", runs, readers.ours[i],
                       readers.source[i] if readers.source else None, rows)
        if readers.debezium:
            say(f"  run {i + 1}/{n}: Debezium embedded ({ctx.debezium_consumer} count-only consumer)")
            raw = run_debezium(readers.debezium[i], expected=rows, snapshot_mode="initial",
                               consumer=ctx.debezium_consumer)
            runs["debezium"].append(summarize_debezium(raw, rows))
    return runs


Workload = Callable[[BenchDb, int, int], tuple[int, int, int]]
"""Makes a streaming scenario's changes: ``(db, rows, tx_rows)`` -> (transactions, records our
connector and Debezium emit, row changes pgoutput sends)."""


def inserts(db: BenchDb, rows: int, tx_rows: int) -> tuple[int, int, int]:
    """``rows`` inserts: one record each."""
    return insert_rows(db, rows, tx_rows=tx_rows), rows, rows


def changes(db: BenchDb, rows: int, tx_rows: int) -> tuple[int, int, int]:
    """``rows`` inserts, updates and deletes: four records a row (the delete's tombstone too)."""
    return change_rows(db, rows, tx_rows=tx_rows), 4 * rows, 3 * rows


def streaming(ctx: BenchContext, key: str, title: str, rows: int, tx_rows: int, *,
              debezium: bool, profile: bool = False, repeat: int | None = None,
              source_only: bool = True, workload: Workload = inserts) -> dict[str, Any]:
    """Make ``rows`` rows' changes (``workload``) in transactions of ``tx_rows``; every reader
    streams them from its slot."""
    say = ctx.say
    n = ctx.repeat if repeat is None else repeat
    path = ctx.profile_path(key) if profile else None
    with scenario_database(ctx, key, title, functools.partial(create_database, ctx.server), drop_database) as db:
        readers = _prepare_streaming(ctx, key, db, n, debezium=debezium, profile=path is not None,
                                     source_only=source_only)
        start_lsn = current_lsn(db)
        say(f"  setup: {workload.__doc__} for {rows:,} rows, in transactions of {tx_rows:,} rows")
        (transactions, records, row_changes), load_s = timed(lambda: workload(db, rows, tx_rows))
        end_lsn = current_lsn(db)
        settle(db)
        runs = _stream_runs(ctx, readers, db, end_lsn, records, n, row_changes)
        out = scenario_result(key, title, "streaming", records, runs, transactions=transactions, load_s=load_s,
                              wal_bytes=wal_bytes(db, start_lsn, end_lsn))
        if readers.profile is not None and path is not None:
            out["profile"] = profile_ours(ctx, readers.profile, records, path)
        return out


def snapshot(ctx: BenchContext, key: str, title: str, rows: int, *, debezium: bool) -> dict[str, Any]:
    """A table of ``rows`` rows, read by COPY (psql, psycopg), our snapshot and Debezium's."""
    say = ctx.say
    with scenario_database(ctx, key, title, functools.partial(create_database, ctx.server), drop_database) as db:
        say(f"  setup: loading {rows:,} rows")
        _, load_s = timed(lambda: insert_rows(db, rows, tx_rows=rows))
        settle(db)
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "ours_source": [], "debezium": [], "copy_psql": [],
                                                 "copy_psycopg": []}
        for i in range(ctx.repeat):
            n = f"run {i + 1}/{ctx.repeat}:"
            say(f"  {n} COPY (SELECT ...) TO STDOUT via psql > /dev/null")
            runs["copy_psql"].append(rate(run_copy_psql(db), rows))
            say(f"  {n} COPY (SELECT ...) TO STDOUT via psycopg, rows iterated in Python")
            runs["copy_psycopg"].append(rate(run_copy_psycopg(db), rows))
            run_ours_round(ctx, n, runs, OursTarget(db, ctx.workdir / f"lake_{key}_{i}", f"bench_ours_{i}"),
                           OursTarget(db, ctx.workdir / f"lake_{key}_src_{i}", f"bench_src_{i}"), rows,
                           steps=SNAPSHOT_STEPS)
            if debezium:
                say(f"  {n} Debezium embedded, snapshot.mode=initial ({ctx.debezium_consumer} count-only consumer)")
                dbz = DebeziumTarget(db, ctx.workdir / f"debezium_{key}_{i}", f"bench_debezium_{i}")
                raw = run_debezium(dbz, expected=rows, snapshot_mode="initial", consumer=ctx.debezium_consumer)
                runs["debezium"].append(summarize_debezium(raw, rows))
        out = scenario_result(key, title, "snapshot", rows, runs, load_s=load_s, table_bytes=table_bytes(db))
        path = ctx.profile_path(key)
        if path is not None:
            out["profile"] = profile_ours(ctx, OursTarget(db, ctx.workdir / f"lake_{key}_profile", "bench_profile"),
                                          rows, path)
        return out

