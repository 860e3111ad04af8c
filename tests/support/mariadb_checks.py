"""Exactly-once checks of a MariaDB capture's bronze tables against the source database.

`check_exactly_once` returns every problem found; per captured table:

* ``seq`` is 1..N, strictly increasing, no gaps;
* no streamed event is stored twice (binlog file, event position, row, op; a tombstone takes
  its delete's coordinates);
* the snapshot rows come from the completed snapshot only, each key once;
* the streamed events equal, in order, what the binlog oracle (`tests.support.mariadb_oracle`)
  derives from the binlog after the completed snapshot's position;
* replaying bronze (``r``/``c``/``u`` upsert ``after``, ``d`` deletes) gives ``SELECT *``;

for the schema change topic (``<source>``) and the private schema history: ``seq`` as above,
each DDL record once (statement and binlog position) and the snapshot's records from the
completed snapshot only; and the private schema history, replayed into a fresh schema model,
gives every table's current structure as ``information_schema`` reports it (column names,
order, types, nullability, character lengths, primary key).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pymysql
from pymysql.cursors import DictCursor

from bronze.schema import history_path
from bronze.writer import BronzeWriter
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.ddl_events import replay_history
from cdc_sources.mysql.model import TableId
from tests.support.bronze_rows import (
    SNAPSHOT_DUPLICATES,
    SNAPSHOT_LEFTOVERS,
    duplicates,
    event_diff,
    read_offsets,
    read_table,
    read_topic,
    seq_problems,
    state_problems,
)
from tests.support.mariadb_oracle import Event, binlog_events, bronze_events


def snapshot_offset(root: str, source: str) -> dict[str, Any] | None:
    """The offset of the completed snapshot (the first offsets row marked completed), or None."""
    done = [r for r in read_offsets(root, source) if r["snapshot_completed"]]
    return orjson.loads(done[0]["offset"]) if done else None


def check_exactly_once(root: str, args: dict[str, Any], *, source: str, tables: tuple[str, ...]) -> list[str]:
    """Every problem found in bronze against the source database and the binlog (see module doc)."""
    snap = snapshot_offset(root, source)
    if snap is None:
        return ["no offsets row with snapshot_completed: the snapshot never finished"]
    database = str(args["database"])
    expected = binlog_events(args, tables=tables, file=snap["file"], pos=int(snap["pos"]))
    problems: list[str] = []
    conn = pymysql.connect(**args, cursorclass=DictCursor, charset="utf8mb4")
    try:
        with conn.cursor() as cur:
            for t in tables:
                rows = read_topic(root, f"{source}.{database}.{t}")
                cur.execute(f"SELECT * FROM `{t}`")
                current = list(cur.fetchall())
                found = table_problems(rows, current, expected[t], snap)
                problems += [f"{t}: {p}" for p in found]
            problems += [f"schema change topic: {p}" for p in ddl_record_problems(read_topic(root, source), snap)]
            history = read_table(history_path(root, source))
            problems += [f"schema history: {p}" for p in ddl_record_problems(history, snap)]
            problems += history_problems(root, source, database, tables, cur)
    finally:
        conn.close()
    return problems


def torn_transactions(root: str, args: dict[str, Any], *, source: str, tables: tuple[str, ...]) -> list[str]:
    """Transactions whose changes bronze holds only in part (or more than once): per GTID, the
    streamed change events with a value (a delete's tombstone not counted) of every captured
    table, in bronze and in the binlog oracle."""
    snap = snapshot_offset(root, source)
    if snap is None:
        return ["no offsets row with snapshot_completed: the snapshot never finished"]
    expected = binlog_events(args, tables=tables, file=snap["file"], pos=int(snap["pos"]))
    committed: Counter[str] = Counter()
    stored: Counter[str] = Counter()
    for t in tables:
        committed.update(gtid for gtid, _, op, _ in expected[t] if op is not None)
        rows = read_topic(root, f"{source}.{args['database']}.{t}")
        stored.update(gtid for gtid, _, op, _ in bronze_events(rows) if op is not None)
    if not committed:
        return ["the oracle saw no transaction after the snapshot"]
    torn = {g: (stored[g], committed[g]) for g in committed.keys() | stored.keys() if stored[g] != committed[g]}
    return [f"{len(torn)} of {len(committed)} transactions torn or repeated (GTID: bronze events, committed "
            f"events): {dict(sorted(torn.items())[:5])}"] if torn else []


def table_problems(rows: list[dict[str, Any]], current: list[dict[str, Any]], expected: list[Event],
                   snap: dict[str, Any]) -> list[str]:
    """The problems of one bronze table (rows in ``seq`` order); see the module doc."""
    problems = seq_problems(rows)
    actual = bronze_events(rows)
    problems += duplicates("streamed events (gtid, change number, op, key)", actual)
    snapshot = [r for r in rows if r["op"] == "r"]
    keys = Counter(r["key"] for r in snapshot)
    if any(n > 1 for n in keys.values()):
        problems.append(f"{sum(n - 1 for n in keys.values())} {SNAPSHOT_DUPLICATES}: keys read more than once, "
                        f"e.g. {[k for k, n in keys.items() if n > 1][:3]}")
    points = Counter((p["file"], p["pos"]) for p in (orjson.loads(r["position"]) for r in snapshot))
    stale = {k: n for k, n in points.items() if k != (snap["file"], snap["pos"])}
    if stale:
        problems.append(f"{SNAPSHOT_LEFTOVERS} ((file, pos): rows): {stale}; the completed snapshot is at "
                        f"{snap['file']}:{snap['pos']}")
    problems += event_diff(actual, expected)
    problems += state_problems(rows, {r["id"]: r for r in current}, _same_row)
    return problems


def ddl_record_problems(rows: list[dict[str, Any]], snap: dict[str, Any]) -> list[str]:
    """Schema change events or history records (rows in ``seq`` order): ``seq`` 1..N, each
    statement at each binlog position once, the snapshot's at the completed snapshot's position."""
    problems = seq_problems(rows)
    records = []
    for r in rows:
        value = orjson.loads(r["value"])
        where = value.get("position") or value["source"]  # history records: position; events: source
        snapshot = where.get("snapshot") not in (None, False, "false")
        records.append((value["ddl"], where["file"], where["pos"], snapshot))
    problems += duplicates("DDL records (ddl, file, pos, snapshot)", records)
    stale = sorted({(f, p) for _, f, p, snapshot in records if snapshot} - {(snap["file"], snap["pos"])})
    if stale:
        problems.append(f"{SNAPSHOT_LEFTOVERS}: DDL records of snapshots at {stale}; the completed snapshot is "
                        f"at {snap['file']}:{snap['pos']}")
    return problems


def _same_row(bronze: dict[str, Any], source: dict[str, Any]) -> bool:
    """Whether a replayed row equals the source's. A column added after the row's last change is
    absent from its ``after`` and null in the source (``ADD COLUMN`` without a default)."""
    return {c: bronze.get(c) for c in source} == source and not bronze.keys() - source.keys()


def history_problems(root: str, source: str, database: str, tables: tuple[str, ...], cur: Any) -> list[str]:
    """The schema history replayed from scratch must give each table's current structure."""
    writer = BronzeWriter(root, source)
    try:
        history = writer.read_history()
    finally:
        writer.close()
    model = SchemaModel()
    replay_history(model, history, until=None, skip_unparseable=False)
    problems = []
    for t in tables:
        table = model.table(TableId(database, t))
        if table is None:
            problems.append(f"{t}: not in the replayed schema history ({len(history)} records)")
            continue
        replayed = [(c.name, c.type_name, c.optional, c.length if c.type_name in ("VARCHAR", "CHAR") else None)
                    for c in table.columns]
        cur.execute("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_MAXIMUM_LENGTH "
                    "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
                    "ORDER BY ORDINAL_POSITION", (database, t))
        actual = [(c["COLUMN_NAME"], c["DATA_TYPE"].upper() + (" UNSIGNED" if "unsigned" in c["COLUMN_TYPE"] else ""),
                   c["IS_NULLABLE"] == "YES",
                   c["CHARACTER_MAXIMUM_LENGTH"] if c["DATA_TYPE"] in ("varchar", "char") else None)
                  for c in cur.fetchall()]
        if replayed != actual:
            problems.append(f"{t}: replayed schema history {replayed} != information_schema {actual}")
        cur.execute("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION", (database, t))
        key = tuple(r["COLUMN_NAME"] for r in cur.fetchall())
        if table.primary_key != key:
            problems.append(f"{t}: replayed primary key {table.primary_key} != {key}")
    return problems
