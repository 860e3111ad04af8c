"""The ``source`` block against Debezium 3.6.3's ``SourceInfo`` and ``SqlServerSourceInfoStructMaker``:
same fields, in the same order, with the same types and values, for streamed and snapshot records."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.source_info import SOURCE_SCHEMA, SnapshotRecord, SqlServerSource
from tests.cdc_sources.sqlserver.dbz_offsets import ask

C, X = "00000027:00000758:0005", "00000027:00000758:0003"
STREAMED = [
    # (commit, change, serial as counted, ts_ms, db/schema/table)
    (C, X, 1, 1559729468470, ("testDB", "dbo", "customers")),
    (C, X, 2, 1559729468470, ("testDB", "dbo", "customers")),
    ("ffffffff:ffffffff:ffff", "00000000:00000000:0001", 1, 0, ("Db-Á", "Sales Schema", "tab.le")),
    (C, "NULL", 1, -1000, ("t", "s", "u")),
]
SNAPSHOT = [(record, C, 1700000000123) for record in SnapshotRecord]


def _requests() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for commit, change, serial, ts, (db, schema, table) in STREAMED:
        steps = [[commit, change, 2, 1]] * serial  # the same position `serial` times: serial counts up
        out.append({"cmd": "source", "prefix": "server1", "commit": commit, "db": db, "schema": schema, "table": table,
                    "tsMs": ts, "steps": steps, "record": None, "snapshot": None, "completed": True})
    for record, commit, ts in SNAPSHOT:
        out.append({"cmd": "source", "prefix": "fulfillment", "commit": commit, "db": "testDB", "schema": "dbo",
                    "table": "orders", "tsMs": ts, "steps": [], "record": record.name, "snapshot": "INITIAL",
                    "completed": False})
    return out


def _ours() -> list[SqlServerSource]:
    out = [SqlServerSource("server1", ts * 10**6, db, schema, table, Lsn.parse(commit), Lsn.parse(change), serial)
           for commit, change, serial, ts, (db, schema, table) in STREAMED]
    out += [SqlServerSource("fulfillment", ts * 10**6, "testDB", "dbo", "orders", Lsn.parse(commit), snapshot=record)
            for record, commit, ts in SNAPSHOT]
    return out


@pytest.fixture(scope="module")
def debezium() -> list[dict[str, Any]]:
    return ask(_requests())


@pytest.mark.conformance
def test_schema_is_debeziums(debezium: list[dict[str, Any]]) -> None:
    for answer in debezium:
        assert answer["source"]["schema"] == SOURCE_SCHEMA
        fields = [f["field"] for f in answer["source"]["schema"]["fields"]]
        assert fields == [f["field"] for f in SOURCE_SCHEMA["fields"]]


@pytest.mark.conformance
def test_payloads_are_debeziums_field_by_field(debezium: list[dict[str, Any]]) -> None:
    ours = _ours()
    assert len(ours) == len(debezium) == 11
    for source, answer in zip(ours, debezium, strict=True):
        assert list(source.payload().items()) == list(answer["source"]["payload"].items())
