"""The tableChanges forms: exact layout (key order, omitted vs null keys), ids, and reading back.

The conformance test compares both forms with Debezium's serializers over the whole corpus;
these tests pin the layout and the inverse.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from cdc_sources.mysql.ddl import (
    ChangeType,
    DdlParseError,
    SchemaModel,
    TableChange,
    format_table_id,
    history_table_change,
    parse_table_id,
    schema_change_table_change,
    table_change_from_history,
)
from cdc_sources.mysql.model import TableId
from tests.cdc_sources.mysql.ddl.corpus import load_corpus

DEBEZIUM_HISTORY_ENTRY = json.loads("""
{"type":"ALTER","id":"\\"inv\\".\\"t2\\"","previousId":"\\"inv\\".\\"t\\"","table":{"defaultCharsetName":"utf8mb4",
"primaryKeyColumnNames":["id"],"columns":[{"name":"id","jdbcType":4,"nativeType":4,"typeName":"INT UNSIGNED",
"typeExpression":"INT UNSIGNED","charsetName":null,"position":1,"optional":false,"autoIncremented":true,
"generated":true,"comment":null,"hasDefaultValue":false,"enumValues":[]},{"name":"e","jdbcType":1,"typeName":"ENUM",
"typeExpression":"ENUM","charsetName":"utf8mb4","length":1,"position":2,"optional":true,"autoIncremented":false,
"generated":false,"comment":"c","hasDefaultValue":true,"defaultValueExpression":"a","enumValues":["'a'","'b,c'"]},
{"name":"v","jdbcType":12,"typeName":"VARCHAR","typeExpression":"VARCHAR","charsetName":null,"length":20,
"position":3,"optional":true,"autoIncremented":false,"generated":false,"comment":null,"hasDefaultValue":true,
"enumValues":[]}],"attributes":[{"name":"k","value":"v"}]},"comment":"tbl"}
""")
"""A history entry as Debezium writes it (layout taken from MySqlDdlProbe's output)."""


def _change(ddl: str) -> TableChange:
    model = SchemaModel(server_charset="utf8mb4", include_comments=True)
    (change,) = model.apply(ddl, database="inv").table_changes
    return change


def test_history_layout() -> None:
    change = _change("CREATE TABLE t (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                     "d DECIMAL(8,2) DEFAULT 1.50 COMMENT 'price') COMMENT='tbl'")
    entry = history_table_change(change)
    assert list(entry) == ["type", "id", "table", "comment"]
    assert (entry["type"], entry["id"], entry["comment"]) == ("CREATE", '"inv"."t"', "tbl")
    assert list(entry["table"]) == ["defaultCharsetName", "primaryKeyColumnNames", "columns", "attributes"]
    id_column, price = entry["table"]["columns"]
    assert list(id_column) == ["name", "jdbcType", "typeName", "typeExpression", "charsetName", "position", "optional",
                               "autoIncremented", "generated", "comment", "hasDefaultValue", "enumValues"]
    assert list(price) == ["name", "jdbcType", "typeName", "typeExpression", "charsetName", "length", "scale",
                           "position", "optional", "autoIncremented", "generated", "comment", "hasDefaultValue",
                           "defaultValueExpression", "enumValues"]
    assert (price["length"], price["scale"], price["defaultValueExpression"]) == (8, 2, "1.50")
    assert price["comment"] == "price"


def test_drop_and_rename_layout() -> None:
    drop = TableChange(ChangeType.DROP, TableId("inv", "t"), None)
    assert history_table_change(drop) == {"type": "DROP", "id": '"inv"."t"'}
    assert schema_change_table_change(drop) == {"type": "DROP", "id": '"inv"."t"', "table": None}
    renamed = TableChange(ChangeType.ALTER, TableId("inv", "b"), _change("CREATE TABLE a (x INT)").table,
                          TableId("inv", "a"))
    assert list(history_table_change(renamed))[:3] == ["type", "id", "previousId"]
    assert "previousId" not in schema_change_table_change(renamed)


def test_connect_layout_has_every_field() -> None:
    value = schema_change_table_change(_change("CREATE TABLE t (e ENUM('x'), n INT)"))
    assert list(value["table"]) == ["defaultCharsetName", "primaryKeyColumnNames", "columns", "comment"]
    enum_column, int_column = value["table"]["columns"]
    assert list(int_column) == ["name", "jdbcType", "nativeType", "typeName", "typeExpression", "charsetName",
                                "length", "scale", "position", "optional", "autoIncremented", "generated", "comment",
                                "defaultValueExpression", "enumValues"]
    assert (int_column["nativeType"], int_column["enumValues"], int_column["length"]) == (None, None, None)
    assert enum_column["enumValues"] == ["'x'"]


@pytest.mark.parametrize(("table_id", "text"), [
    (TableId("inv", "t"), '"inv"."t"'),
    (TableId("in.v", 't"x'), '"in.v"."t""x"'),
    (TableId("db", ""), '"db".""'),
])
def test_ids(table_id: TableId, text: str) -> None:
    assert format_table_id(table_id) == text
    if table_id.table:
        assert parse_table_id(text) == table_id


def test_unquoted_and_bad_ids() -> None:
    assert parse_table_id("inv.t") == TableId("inv", "t")
    for bad in ('"t"', "a.b.c", '"a".'):
        with pytest.raises(ValueError, match="not a MySQL table id"):
            parse_table_id(bad)


def test_reads_debeziums_history_entry() -> None:
    change = table_change_from_history(DEBEZIUM_HISTORY_ENTRY)
    assert (change.type, change.table_id, change.previous_id) == (ChangeType.ALTER, TableId("inv", "t2"),
                                                                   TableId("inv", "t"))
    table = change.table
    assert table is not None
    assert (table.comment, table.attributes, table.primary_key) == ("tbl", (("k", "v"),), ("id",))
    id_column, enum_column, varchar = table.columns
    assert (id_column.native_type, id_column.auto_incremented, id_column.has_default) == (4, True, False)
    assert (enum_column.enum_literals, enum_column.enum_values) == (("'a'", "'b,c'"), ("a", "b,c"))
    assert (enum_column.default_expression, enum_column.comment) == ("a", "c")
    assert varchar.charset == "utf8mb4", "a character column without a charset takes the table's, as in Debezium"
    assert history_table_change(change) == {**DEBEZIUM_HISTORY_ENTRY, "table": {
        **DEBEZIUM_HISTORY_ENTRY["table"],
        "columns": [*DEBEZIUM_HISTORY_ENTRY["table"]["columns"][:2],
                    {**DEBEZIUM_HISTORY_ENTRY["table"]["columns"][2], "charsetName": "utf8mb4"}]}}


def test_malformed_entries() -> None:
    with pytest.raises(ValueError, match="not a tableChanges entry"):
        table_change_from_history({"type": "RENAME", "id": '"a"."b"'})
    broken = json.loads(json.dumps(DEBEZIUM_HISTORY_ENTRY))
    broken["table"]["primaryKeyColumnNames"] = ["nope"]
    with pytest.raises(ValueError, match="primary key"):
        table_change_from_history(broken)


def test_every_corpus_table_survives_the_round_trip() -> None:
    """History -> TableDef -> history is the identity for every table the corpus builds."""
    count = 0
    for case in load_corpus():
        model = SchemaModel(include_comments=case.comments)
        for step in case.steps:
            try:
                model.apply(step.ddl, database=step.db)
            except DdlParseError:
                continue
        for table in model.tables():
            entry = history_table_change(TableChange(ChangeType.CREATE, table.id, table))
            back = table_change_from_history(json.loads(json.dumps(entry)))
            assert back.table is not None
            assert history_table_change(back) == entry
            assert back.table == dataclasses.replace(table, unique_keys=()), "unique keys are not in the history"
            count += 1
    assert count > 80
