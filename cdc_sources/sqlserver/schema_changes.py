"""Schema change events of the SQL Server connector (``include.schema.changes``).

SQL Server has no DDL text for the connector to read: what Debezium publishes on the topic named
``<topic.prefix>`` is a table description with ``ddl`` null, keyed ``{"databaseName": <db>}``.
Here it is written for each captured table when the snapshot reads it (``CREATE``, source at
the snapshot's LSN with ``snapshot: true``) and when a table's newer capture instance takes over
while streaming (Debezium's ``ALTER`` at the switch, source at the position of the first event
read from the new instance). The value is ``source``, ``ts_ms`` (processing time),
``databaseName``, ``schemaName``, ``ddl`` and one ``tableChanges`` entry:
``{type, id, table: {defaultCharsetName, primaryKeyColumnNames, columns, comment}}``, the id
``"<db>"."<schema>"."<table>"``, the columns the new instance captures, each described as
JDBC's ``getColumns`` has it (`cdc_sources.sqlserver.columns.jdbc_metadata`): ``jdbcType`` the
``java.sql.Types`` code, ``typeName`` and ``typeExpression`` the type name, ``length``/``scale``,
``position`` the column's place among the described columns (Debezium's table editor numbers
them from 1, whatever their place in the source table), ``optional`` its nullability, and
``autoIncremented``/``generated`` false (Debezium's documented example has ``false`` even for an
identity column), ``defaultValueExpression`` the text of the column's default constraint
(``((0))``, ``(getdate())``; null without one), as Debezium reads it from ``getColumns``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from cdc_sources.sqlserver.columns import JdbcMetadata

__all__ = ["SchemaChangeType", "SchemaColumn", "jdbc_type_code", "schema_change_value", "table_id_text"]

_JDBC_CODES = {"bit": -7, "tinyint": -6, "smallint": 5, "int": 4, "bigint": -5, "real": 7, "float": 8,
               "decimal": 3, "numeric": 2, "money": 3, "smallmoney": 3, "char": 1, "varchar": 12, "text": -1,
               "nchar": -15, "nvarchar": -9, "ntext": -16, "sysname": -9, "xml": 2009, "uniqueidentifier": 1,
               "binary": -2, "varbinary": -3, "image": -4, "timestamp": -2, "rowversion": -2, "date": 91,
               "time": 92, "datetime": 93, "smalldatetime": 93, "datetime2": 93, "datetimeoffset": -155,
               "sql_variant": -150, "geometry": -157, "geography": -158, "hierarchyid": -3}
"""``java.sql.Types`` (and ``microsoft.sql.Types``) codes Microsoft's JDBC driver reports per type."""
_OTHER = 1111


def jdbc_type_code(type_name: str) -> int:
    """The ``DATA_TYPE`` of ``getColumns`` for a SQL Server type name (``OTHER`` when unknown)."""
    return _JDBC_CODES.get(type_name.lower(), _OTHER)


class SchemaChangeType(Enum):
    """``tableChanges[].type``."""

    CREATE = "CREATE"
    ALTER = "ALTER"


@dataclass(frozen=True, slots=True)
class SchemaColumn:
    """A captured column as a schema change event describes it."""

    name: str
    metadata: JdbcMetadata
    optional: bool
    default_expression: str | None = None


def _quote(part: str) -> str:
    """Debezium's ``TableId.quote``: inner quotes doubled and the part wrapped, unless it already
    starts or ends with a quote (then it is left as it is)."""
    if not part:
        return '""'
    if part[0] == '"' or part[-1] == '"':
        return part
    return '"' + part.replace('"', '""') + '"'


def table_id_text(database: str, schema: str, table: str) -> str:
    """Debezium's double-quoted table id (``TableId.toDoubleQuotedString``)."""
    return ".".join(_quote(part) for part in (database, schema, table))


def schema_change_value(kind: SchemaChangeType, source: dict[str, Any], database: str, schema: str, table: str,
                        columns: Sequence[SchemaColumn], key_columns: Sequence[str]) -> dict[str, Any]:
    """The value of a schema change event describing one table."""
    return {
        "source": source,
        "ts_ms": time.time_ns() // 1_000_000,
        "databaseName": database,
        "schemaName": schema,
        "ddl": None,
        "tableChanges": [{
            "type": kind.value,
            "id": table_id_text(database, schema, table),
            "table": {
                "defaultCharsetName": None,
                "primaryKeyColumnNames": list(key_columns),
                "columns": [_column(c, n) for n, c in enumerate(columns, 1)],
                "comment": None,
            },
        }],
    }


def _column(column: SchemaColumn, position: int) -> dict[str, Any]:
    meta = column.metadata
    return {
        "name": column.name,
        "jdbcType": jdbc_type_code(meta.type_name),
        "nativeType": None,
        "typeName": meta.type_name,
        "typeExpression": meta.type_name,
        "charsetName": None,
        "length": meta.length,
        "scale": meta.scale,
        "position": position,
        "optional": column.optional,
        "autoIncremented": False,
        "generated": False,
        "comment": None,
        "defaultValueExpression": column.default_expression,
        "enumValues": None,
    }
