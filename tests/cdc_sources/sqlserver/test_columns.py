"""Column filters, masks, truncation and source-type propagation of the SQL Server connector.

The JDBC metadata expected below is what Microsoft's JDBC driver's ``getColumns`` reports for
each type (``COLUMN_SIZE`` in characters, ``DECIMAL_DIGITS``), written out by hand; the hashes
are computed here with hashlib over Java's serialization of a string, independently of the
connector's code. The capture goes through the CDC emulator into bronze."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from psycopg.conninfo import conninfo_to_dict

from cdc_sources.sqlserver.columns import JdbcMetadata, jdbc_metadata
from cdc_sources.sqlserver.config import build_sqlserver_config
from cdc_sources.sqlserver.session import SqlServerCaptureSession
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.bronze_rows import read_topic
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text


@pytest.mark.parametrize(("sys_columns", "expected"), [
    (("nvarchar", 80, 0, 0), JdbcMetadata("nvarchar", "NVARCHAR", 40, None)),
    (("varchar", 40, 0, 0), JdbcMetadata("varchar", "VARCHAR", 40, None)),
    (("nvarchar", -1, 0, 0), JdbcMetadata("nvarchar", "NVARCHAR", 1073741823, None)),
    (("varchar", -1, 0, 0), JdbcMetadata("varchar", "VARCHAR", 2147483647, None)),
    (("text", 16, 0, 0), JdbcMetadata("text", "LONGVARCHAR", 2147483647, None)),
    (("ntext", 16, 0, 0), JdbcMetadata("ntext", "LONGNVARCHAR", 1073741823, None)),
    (("nchar", 20, 0, 0), JdbcMetadata("nchar", "NCHAR", 10, None)),
    (("uniqueidentifier", 16, 0, 0), JdbcMetadata("uniqueidentifier", "CHAR", 36, None)),
    (("xml", -1, 0, 0), JdbcMetadata("xml", "SQLXML", 2147483647, None)),
    (("int", 4, 10, 0), JdbcMetadata("int", "OTHER", 10, 0)),
    (("decimal", 9, 9, 2), JdbcMetadata("decimal", "OTHER", 9, 2)),
    (("money", 8, 19, 4), JdbcMetadata("money", "OTHER", 19, 4)),
    (("datetime2", 8, 27, 7), JdbcMetadata("datetime2", "OTHER", 27, 7)),
    (("datetime2", 6, 19, 0), JdbcMetadata("datetime2", "OTHER", 19, 0)),
    (("time", 5, 12, 3), JdbcMetadata("time", "OTHER", 12, 3)),
    (("datetimeoffset", 10, 34, 7), JdbcMetadata("datetimeoffset", "OTHER", 34, 7)),
    (("datetime", 8, 23, 3), JdbcMetadata("datetime", "OTHER", 23, 3)),
    (("varbinary", 16, 0, 0), JdbcMetadata("varbinary", "OTHER", 16, None)),
])
def test_jdbc_metadata(sys_columns: tuple[str, int, int, int], expected: JdbcMetadata) -> None:
    assert jdbc_metadata(*sys_columns) == expected


def _java_v1_sha256(salt: str, value: str) -> str:
    """Debezium's v1 hash: the digest of the salt then of the Java-serialized string (ASCII here)."""
    data = value.encode()
    serialized = b"\xac\xed\x00\x05\x74" + struct.pack(">H", len(data)) + data
    return hashlib.sha256(salt.encode() + serialized).hexdigest()


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.people (id int PRIMARY KEY, name varchar(40), email varchar(30), "
                "note varchar(200), secret varchar(10), score numeric(9, 2))")
    emu.execute("INSERT INTO dbo.people VALUES (1, 'Ann', 'ann@example.com', 'a long note', 's1', 1.5), "
                "(2, NULL, NULL, NULL, 's2', NULL)")
    emu.enable_db()
    emu.enable_table("dbo", "people")
    emu.agent().sync()
    yield emu


def _options(database: str) -> dict[str, str]:
    return {"column.exclude.list": "dbo.people.secret,dbo.people.id",
            "column.mask.with.3.chars": "dbo.people.name",
            "column.truncate.to.4.chars": f"{database}.dbo.people.note",  # the database-qualified form
            "column.mask.hash.SHA-256.with.salt.pepper": "dbo.people.email",
            "column.propagate.source.type": ".+[.]people[.]score",
            "decimal.handling.mode": "string", "skip.messages.without.change": "true"}


def test_filters_masks_truncation_and_source_types_into_bronze(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    database = str(conninfo_to_dict(emulator.dsn)["dbname"])
    config = parse_pipeline(sqlserver_pipeline_text(root, emulator.dsn, **_options(database)), env={})
    with emulated():
        run_capture(config, until_idle=True)
    # a change of an excluded column only, or of a masked one only: the value images are equal
    emulator.execute("UPDATE dbo.people SET secret = 'changed' WHERE id = 1")
    emulator.execute("UPDATE dbo.people SET name = 'Anna' WHERE id = 1")
    emulator.execute("UPDATE dbo.people SET name = 'Bob', email = 'bob@example.com', note = 'xyz' WHERE id = 2")
    emulator.agent().sync()
    with emulated():
        run_capture(config, until_idle=True)

    rows = read_topic(root, f"{SOURCE}.{database}.dbo.people")
    events = [(orjson.loads(r["key"]), orjson.loads(r["value"])) for r in rows]
    assert [(k, v["op"]) for k, v in events] == [({"id": 1}, "r"), ({"id": 2}, "r"), ({"id": 2}, "u")]
    # id stays in the key though left out of the value; the email hash is cut to varchar(30)
    ann = {"name": "***", "email": _java_v1_sha256("pepper", "ann@example.com")[:30], "note": "a lo",
           "score": "1.50"}
    assert events[0][1]["after"] == ann
    assert events[1][1]["after"] == {"name": "***", "email": None, "note": None, "score": None}
    assert events[2][1]["before"] == events[1][1]["after"]
    assert events[2][1]["after"] == {"name": "***", "email": _java_v1_sha256("pepper", "bob@example.com")[:30],
                                     "note": "xyz", "score": None}


def _value_fields(session: SqlServerCaptureSession) -> dict[str, dict[str, Any]]:
    (table,) = session.tables.values()
    envelope = orjson.loads(table.version.value_schema)
    after = next(f for f in envelope["fields"] if f["field"] == "after")
    return {f["field"]: f for f in after["fields"]}


def test_field_schemas_carry_the_rules_parameters(emulator: SqlServerEmulator) -> None:
    database = str(conninfo_to_dict(emulator.dsn)["dbname"])
    config, problems = build_sqlserver_config(name=SOURCE, connection={"user": "u", "database": database},
                                              options=_options(database), path="sources[0]")
    assert config is not None, problems
    session = SqlServerCaptureSession(config, emulator.gateway(), None)
    try:
        fields = _value_fields(session)
        (table,) = session.tables.values()
    finally:
        session.close()
    assert list(fields) == ["name", "email", "note", "score"]
    assert fields["name"]["parameters"] == {"masked": "true"}
    assert fields["email"]["parameters"] == {"masked": "true"}
    assert fields["note"]["parameters"] == {"truncateLength": "4"}
    assert fields["score"] == {"type": "string", "optional": True, "parameters": {
        "__debezium.source.column.type": "DECIMAL", "__debezium.source.column.length": "9",
        "__debezium.source.column.scale": "2", "__debezium.source.column.name": "score"}, "field": "score"}
    key = orjson.loads(table.version.key_schema)
    assert key["fields"] == [{"type": "int32", "optional": False, "field": "id"}]
