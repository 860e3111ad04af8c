"""Checks of bronze captured from the fake Oracle database against the PostgreSQL source.

The oracle is PostgreSQL itself (its tables, and its own logical decoding of the transactions),
never the connector's code: the expected events and values are derived here independently.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from tests.support.bronze_rows import read_offsets, read_topic
from tests.support.oracle_capture import SOURCE
from tests.support.oracle_fake import FakeOracleDatabase
from tests.support.oracle_workload import TABLES, OracleWorkload, Transaction

QUERY = mining_query(MiningQuerySettings())


def database(workload: OracleWorkload, *, start: int, end: int, windows: int = 6) -> FakeOracleDatabase:
    """The fake database over every decoded transaction; a live one whose current SCN moves from
    ``start`` to ``end`` in ``windows`` steps, one per ``SELECT CURRENT_SCN``."""
    rows = workload.logminer_rows()
    return FakeOracleDatabase({(t.owner, t.name): t for t in TABLES.values()}, rows, workload.rows_as_of, start,
                              QUERY, final_scn=end, scn_step=max(1, (end - start) // windows + 1),
                              dictionary_changes=workload.dictionary_changes())


def plain(v: Any) -> Any:
    """A source value as Debezium writes it (TIMESTAMP(6): microseconds; NUMBER(10,2): base64 of
    the unscaled two's complement), written here independently of the connector."""
    if isinstance(v, datetime):
        delta = v.replace(tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(v, Decimal):
        unscaled = int(v.scaleb(2))
        return base64.b64encode(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)).decode()
    return v


def bronze_state(root: str, table: str) -> list[tuple[Any, ...]]:
    """The table rebuilt from its bronze topic (events applied in ``seq`` order)."""
    state: dict[Any, dict[str, Any]] = {}
    for row in read_topic(root, f"ora.INVENTORY.{table}"):
        if row["value"] is None:
            continue
        value = orjson.loads(row["value"])
        if value["before"] is not None:
            state.pop(value["before"]["ID"], None)
        if value["after"] is not None:
            state[value["after"]["ID"]] = value["after"]
    return [tuple(state[k][c.name] for c in TABLES[table].columns) for k in sorted(state)]


def expected_events(transactions: Sequence[Transaction], after_scn: int, table: str) -> list[tuple[str | None, int]]:
    """(op, key) of every event Debezium emits for the changes committed above ``after_scn``, in
    commit order, from PostgreSQL's decoding (tombstones after deletes; a key change as d,
    tombstone, c)."""
    out: list[tuple[str | None, int]] = []
    for tx in sorted(transactions, key=lambda t: t.commit_lsn):
        if tx.commit_lsn <= after_scn:
            continue
        for c in tx.changes:
            if c.table != table:
                continue
            old = c.before["ID"] if c.before else None
            new = c.after["ID"] if c.after else None
            if c.op == "c":
                out.append(("c", new))
            elif c.op == "d":
                out += [("d", old), (None, old)]
            elif old == new:
                out.append(("u", new))
            else:
                out += [("d", old), (None, old), ("c", new)]
    return out


def bronze_events(root: str, table: str) -> list[tuple[str | None, int]]:
    return [(r["op"], orjson.loads(r["key"])["ID"]) for r in read_topic(root, f"ora.INVENTORY.{table}")
            if r["op"] != "r"]


def snapshot_scn(root: str) -> int:
    done = [r for r in read_offsets(root, SOURCE) if r["snapshot_completed"]]
    assert done, "the snapshot never completed"
    return int(orjson.loads(done[0]["offset"])["snapshot_scn"])
