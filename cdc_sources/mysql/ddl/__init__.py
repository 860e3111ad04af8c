"""The MySQL/MariaDB DDL parser and the in-memory schema model (Debezium 3.6.3 semantics).

`SchemaModel.apply` takes the text of one QUERY event (binlog, snapshot or schema history),
parses it (sqlglot's MySQL tokenizer and parser, plus targeted readers where sqlglot falls short,
see `parser`), applies it as Debezium's MySQL DDL parser would and returns a `DdlOutcome`. The
`table_changes` functions write the ``tableChanges`` entries of history records and schema change
events, and read them back.

Modules: `lexer` (text -> statement tokens), `types` (column types), `columns` (column and key
definitions), `parser` (statements), `statements` (statement objects), `column_builder` and
`table_editor` (Debezium's column/table editing rules), `applier` (statement semantics),
`schema_state`/`schema_model` (the model), `outcome`, `table_changes`, `charsets`, `errors`.
"""

from __future__ import annotations

from cdc_sources.mysql.ddl.errors import DdlParseError, DdlUnknownObjectError
from cdc_sources.mysql.ddl.outcome import ChangeType, DdlEvent, DdlOutcome, EventKind, TableChange
from cdc_sources.mysql.ddl.schema_model import SchemaModel
from cdc_sources.mysql.ddl.table_changes import (
    CONNECT_SCHEMA,
    format_table_id,
    history_table_change,
    parse_table_id,
    schema_change_table_change,
    table_change_from_history,
)

__all__ = [
    "CONNECT_SCHEMA",
    "ChangeType",
    "DdlEvent",
    "DdlOutcome",
    "DdlParseError",
    "DdlUnknownObjectError",
    "EventKind",
    "SchemaModel",
    "TableChange",
    "format_table_id",
    "history_table_change",
    "parse_table_id",
    "schema_change_table_change",
    "table_change_from_history",
]
