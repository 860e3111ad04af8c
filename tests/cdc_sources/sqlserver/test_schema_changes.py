"""The ``tableChanges`` entry of SQL Server schema change events, compared with what Debezium
3.6.3's ``ConnectTableChangeSerializer`` writes for a table built as Debezium's SQL Server
connector builds it (SqlServerTableChangeProbe.java), field by field and in order."""

from __future__ import annotations

from typing import Any

from cdc_sources.sqlserver.columns import jdbc_metadata
from cdc_sources.sqlserver.schema_changes import (
    SchemaChangeType,
    SchemaColumn,
    jdbc_type_code,
    schema_change_value,
    table_id_text,
)
from tests.cdc_sources.sqlserver.java_probe import run_json

COLUMNS = [
    SchemaColumn("id", jdbc_metadata("int", 4, 10, 0), False),
    SchemaColumn("first name", jdbc_metadata("nvarchar", 510, 0, 0), True, "(N'it''s')"),
    SchemaColumn("price", jdbc_metadata("decimal", 9, 12, 3), True, "((1.5))"),
    SchemaColumn("at", jdbc_metadata("datetime2", 8, 27, 7), True, "(getdate())"),
    SchemaColumn("doc", jdbc_metadata("xml", -1, 0, 0), True),
    SchemaColumn("guid", jdbc_metadata("uniqueidentifier", 16, 0, 0), False),
]

SOURCE_POSITIONS = [1, 2, 3, 5, 6, 7]
"""The columns' places in the source table (the fourth is not captured): Debezium's table editor
numbers the described columns 1..6 anyway."""


def _request(kind: SchemaChangeType, table: str) -> dict[str, Any]:
    return {"type": kind.value, "db": "testDB", "schema": "dbo", "table": table, "pk": ["id", "guid"],
            "columns": [{"name": c.name, "jdbcType": jdbc_type_code(c.metadata.type_name),
                         "typeName": c.metadata.type_name, "length": c.metadata.length, "scale": c.metadata.scale,
                         "position": p, "optional": c.optional, "default": c.default_expression}
                        for p, c in zip(SOURCE_POSITIONS, COLUMNS, strict=True)]}


TABLES = ["customers", 'odd "name', 'odd "name"', ""]
"""Table names: plain, a quote inside (doubled), one at the end (Debezium then leaves the name
as it is), and empty."""


def test_table_changes_are_debeziums() -> None:
    requests = [(kind, table) for kind in SchemaChangeType for table in TABLES]
    answers = run_json("SqlServerTableChangeProbe", [_request(kind, table) for kind, table in requests])
    for (kind, table), answer in zip(requests, answers, strict=True):
        value = schema_change_value(kind, {}, "testDB", "dbo", table, COLUMNS, ["id", "guid"])
        (ours,) = value["tableChanges"]
        assert list(ours.items()) == list(answer["change"].items()), (kind, table)  # keys, order and values
        assert ours["id"] == table_id_text("testDB", "dbo", table)
    assert table_id_text("testDB", "dbo", 'odd "name') == '"testDB"."dbo"."odd ""name"'
    assert list(value) == ["source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"]
