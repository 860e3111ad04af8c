"""The MySQL bench's scenarios: streaming an insert from the binlog, snapshotting a table, memory.

Each scenario uses its own database on the one private MariaDB (and starts a binlog file of its
own) and runs every reader one after the other on the same data:

- streaming: every run of our connector gets its own bronze root whose capture snapshotted the
  still-empty table before the rows were inserted, so each run streams exactly the inserted rows
  from its stored offset; the peers read the binlog range of the insert (the position before and
  after it).
- snapshot: every run of our connector gets a fresh bronze root (``snapshot.mode=initial``).

With ``repeat`` > 1 every reader runs that many times (round-robin) and the fastest run is
reported (`bench.measure.best_of`); all runs are kept in the JSON, and the peak RSS reported is
the largest of all runs.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.measure import (
    SNAPSHOT_STEPS,
    RunContext,
    check_bronze,
    prime_ours,
    profile_ours,
    rate,
    run_ours_round,
    scenario_database,
    scenario_result,
    timed,
)
from bench.mysql_ours import MySqlTarget
from bench.mysql_raw import run_binlog_decode, run_client_read, run_library, run_sscursor
from bench.mysql_workload import (
    BinlogPoint,
    MariaDbBench,
    binlog_bytes,
    binlog_files,
    binlog_point,
    change_rows,
    create_database,
    drop_database,
    insert_rows,
    settle,
    table_bytes,
)
from bench.ours import run_ours, summarize_ours
from pipelines.local_mariadb import LocalMariaDB

SNAPSHOT_LOAD_TX_ROWS = 100_000
"""Rows per transaction when loading the snapshot scenario's table (the load is not measured)."""


@dataclass
class MySqlBenchContext(RunContext):
    """What every scenario needs: the server, the run's settings and unique replica server ids."""

    server: LocalMariaDB = field(kw_only=True)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(5400), init=False, repr=False)

    def server_id(self) -> int:
        """A ``database.server.id`` no other reader of this run uses."""
        return next(self._ids)

    def target(self, db: MariaDbBench, name: str) -> MySqlTarget:
        """A capture pipeline with a fresh bronze root under the scratch directory."""
        return MySqlTarget(db, self.workdir / f"lake_{db.name}_{name}", self.server_id())


@dataclass
class _StreamReaders:
    """Our connector's pipelines of a streaming scenario, each with its own bronze root."""

    ours: list[MySqlTarget]
    source: list[MySqlTarget]
    profile: MySqlTarget | None


def _prepare_streaming(ctx: MySqlBenchContext, db: MariaDbBench, n: int, *, profile: bool,
                       source_only: bool) -> _StreamReaders:
    """Every pipeline snapshots the empty table (stores its offset and schema history)."""
    readers = _StreamReaders([ctx.target(db, f"ours_{i}") for i in range(n)],
                             [ctx.target(db, f"src_{i}") for i in range(n if source_only else 0)],
                             ctx.target(db, "profile") if profile else None)
    prime_ours(ctx, [*readers.ours, *readers.source, *([readers.profile] if readers.profile else [])],
               "stores its offset and schema history")
    return readers


def _stream_runs(ctx: MySqlBenchContext, readers: _StreamReaders, db: MariaDbBench, start: BinlogPoint,
                 end: BinlogPoint, rows: int, n: int, *, library: bool,
                 row_changes: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every reader streams the changes, ``n`` rounds: ours ``rows`` records (tombstones included),
    the peers ``row_changes`` row changes (default: ``rows``)."""
    changes = rows if row_changes is None else row_changes
    say = ctx.say
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "ours_source": [], "library": [], "binlog_local": [],
                                             "binlog_remote": []}
    for i in range(n):
        r = f"run {i + 1}/{n}:"
        say(f"  {r} mariadb-binlog -v --base64-output=decode-rows on the binlog files > /dev/null")
        runs["binlog_local"].append(rate(run_binlog_decode(db, start, end, remote=False), changes))
        say(f"  {r} mariadb-binlog -v --base64-output=decode-rows --read-from-remote-server > /dev/null")
        runs["binlog_remote"].append(rate(run_binlog_decode(db, start, end, remote=True), changes))
        if library:
            say(f"  {r} python-mysql-replication alone (for ev in stream: ev.rows)")
            runs["library"].append(rate(run_library(db, start, changes, ctx.server_id()), changes))
        run_ours_round(ctx, r, runs, readers.ours[i], readers.source[i] if readers.source else None, rows,
                       note=lambda entry: _say_reconnects(entry, say))
    return runs


def streaming(ctx: MySqlBenchContext, key: str, title: str, rows: int, tx_rows: int, *, profile: bool = False,
              repeat: int | None = None, source_only: bool = True, library: bool = True,
              changes: bool = False) -> dict[str, Any]:
    """Insert ``rows`` rows in transactions of ``tx_rows`` (``changes``: then update and delete
    each, `change_rows`); every reader streams them from the binlog. With ``changes`` ours emits
    four records a row (the delete's tombstone too), the peers read three row changes a row."""
    say = ctx.say
    n = ctx.repeat if repeat is None else repeat
    path = ctx.profile_path(key) if profile else None
    with scenario_database(ctx, key, title, functools.partial(create_database, ctx.server), drop_database) as db:
        readers = _prepare_streaming(ctx, db, n, profile=path is not None, source_only=source_only)
        start = binlog_point(db)
        if changes:
            say(f"  setup: inserting, updating, deleting {rows:,} rows in transactions of {tx_rows:,} rows")
            transactions, load_s = timed(lambda: change_rows(db, rows, tx_rows=tx_rows))
        else:
            say(f"  setup: inserting {rows:,} rows in transactions of {tx_rows:,} rows")
            transactions, load_s = timed(lambda: insert_rows(db, rows, tx_rows=tx_rows))
        end = binlog_point(db)
        settle(db)
        records = 4 * rows if changes else rows
        runs = _stream_runs(ctx, readers, db, start, end, records, n, library=library,
                            row_changes=3 * rows if changes else None)
        out = scenario_result(key, title, "streaming", records, runs, transactions=transactions, load_s=load_s,
                              binlog_start=list(start), binlog_end=list(end),
                              binlog_files=binlog_files(db, start, end), binlog_bytes=binlog_bytes(db, start, end))
        if readers.profile is not None and path is not None:
            out["profile"] = profile_ours(ctx, readers.profile, records, path)
        return out


def snapshot(ctx: MySqlBenchContext, key: str, title: str, rows: int) -> dict[str, Any]:
    """A table of ``rows`` rows, read by the mariadb client, pymysql and our snapshot."""
    say = ctx.say
    with scenario_database(ctx, key, title, functools.partial(create_database, ctx.server), drop_database) as db:
        say(f"  setup: loading {rows:,} rows")
        _, load_s = timed(lambda: insert_rows(db, rows, tx_rows=SNAPSHOT_LOAD_TX_ROWS))
        settle(db)
        readers: dict[str, Callable[[int], dict[str, Any]]] = {
            "client": lambda i: rate(run_client_read(db), rows),
            "sscursor": lambda i: rate(run_sscursor(db, conversions="connector"), rows),
            "sscursor_default": lambda i: rate(run_sscursor(db, conversions="default"), rows),
            "ours": lambda i: summarize_ours(run_ours(ctx.target(db, f"ours_{i}"), expected=rows), rows),
            "ours_source": lambda i: summarize_ours(
                run_ours(ctx.target(db, f"src_{i}"), expected=rows, source_only=True), rows),
        }
        steps = {
            "client": "mariadb -N -B -e 'SELECT ...' > /dev/null",
            "sscursor": "pymysql SSCursor, fetchmany(10000), the connector's conversions",
            "sscursor_default": "pymysql SSCursor, fetchmany(10000), pymysql's default conversions",
            "ours": SNAPSHOT_STEPS[0],
            "ours_source": SNAPSHOT_STEPS[1],
        }
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in readers}
        for i in range(ctx.repeat):
            for name, read in readers.items():
                say(f"  run {i + 1}/{ctx.repeat}: {steps[name]}")
                runs[name].append(read(i))
                if name == "ours":
                    check_bronze(runs[name][-1], rows, say)
        out = scenario_result(key, title, "snapshot", rows, runs, load_s=load_s, table_bytes=table_bytes(db))
        path = ctx.profile_path(key)
        if path is not None:
            out["profile"] = profile_ours(ctx, ctx.target(db, "profile"), rows, path)
        return out


def binlog_reconnects(entry: dict[str, Any]) -> int:
    """How often python-mysql-replication silently reconnected during one of our runs (it logs a
    warning each time, and the server then re-sends the binlog from the start position)."""
    return int(entry.get("log_warnings", {}).get("pymysqlreplication", 0))


def _say_reconnects(entry: dict[str, Any], say: Callable[[str], None]) -> None:
    count = binlog_reconnects(entry)
    if count:
        say(f"  note: the binlog stream was reset and re-read {count} times (python-mysql-replication "
            f"reconnects); run_capture returned after {entry['run_capture_s']:.2f}s")
