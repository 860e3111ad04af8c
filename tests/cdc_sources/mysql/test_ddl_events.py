"""DDL handling in the stream: history records, schema change events, truncates, bad DDL, replay."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from cdc_sources.common.envelope import VERSION
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.ddl_events import DdlEvents, DdlSettings, UnparseableDdlError, replay_history
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.stream import EventContext
from cdc_sources.spi import HISTORY_TOPIC, HistoryEntry


def handler(*, skip: bool = False, truncates: bool = True, only: str | None = None) -> DdlEvents:
    settings = DdlSettings(
        prefix="my", include_schema_changes=True, skip_unparseable=skip, store_only_captured_tables=False,
        store_only_captured_databases=False, emit_truncates=truncates,
        captures=lambda t: only is None or t.table == only, captures_database=lambda db: db == "shop")
    return DdlEvents(SchemaModel(), settings, SourceInfo("mariadb", "my", VERSION),
                     lambda t: f"my.{t.database}.{t.table}")


def ctx(pos: int) -> EventContext:
    return EventContext(file="mysql-bin.000003", event_pos=pos, ts_ms=1_700_000_000_000, server_id=1,
                        gtid="0-1-9", begin_pos=pos - 40, events_in_tx=0, thread=12, gtids="0-1-8")


def test_each_ddl_event_gives_a_history_record_and_a_schema_change_event():
    h = handler()
    out = h.handle("CREATE TABLE a (id INT PRIMARY KEY); CREATE TABLE b (id INT PRIMARY KEY)", "shop", ctx(100))
    history = [r for r in out if getattr(r, "topic", None) == HISTORY_TOPIC]
    changes = [r for r in out if getattr(r, "topic", None) == "my"]
    assert len(history) == 2 and len(changes) == 2
    record = orjson.loads(history[1].value)
    assert record["ddl"] == "CREATE TABLE b (id INT PRIMARY KEY)" and record["databaseName"] == "shop"
    assert record["position"]["pos"] == 100 and record["position"]["file"] == "mysql-bin.000003"
    event = orjson.loads(changes[0].value)
    assert orjson.loads(changes[0].key) == {"databaseName": "shop"}
    assert event["source"]["table"] == "a" and event["source"]["gtid"] == "0-1-9"
    assert event["tableChanges"][0]["type"] == "CREATE" and event["tableChanges"][0]["id"] == '"shop"."a"'
    assert [r.order_key for r in history] == [(3, 100, 0, 0), (3, 100, 0, 1)]


def test_truncate_is_a_t_event_per_captured_table_and_not_history():
    h = handler(only="a")
    h.handle("CREATE TABLE a (id INT PRIMARY KEY); CREATE TABLE b (id INT PRIMARY KEY)", "shop", ctx(100))
    out = h.handle("TRUNCATE TABLE a", "shop", ctx(200)) + h.handle("TRUNCATE TABLE b", "shop", ctx(300))
    assert [(r.topic, r.op, r.key) for r in out] == [("my.shop.a", "t", None)]
    value = orjson.loads(out[0].value)
    assert value["op"] == "t" and value["before"] is None and value["source"]["table"] == "a"
    quiet = handler(truncates=False)
    quiet.handle("CREATE TABLE a (id INT PRIMARY KEY)", "shop", ctx(100))
    assert quiet.handle("TRUNCATE TABLE a", "shop", ctx(200)) == []


def test_unparseable_ddl_names_the_statement_and_its_binlog_position_or_is_skipped():
    bad = "ALTER TABLE a ADD COLUMN x INT BANANA SPLIT ((("
    h = handler()
    h.handle("CREATE TABLE a (id INT PRIMARY KEY)", "shop", ctx(100))
    with pytest.raises(UnparseableDdlError) as info:
        h.handle(bad, "shop", ctx(200))
    text = str(info.value)
    assert "mysql-bin.000003:200" in text and "shop" in text and "skip.unparseable.ddl" in text
    assert "BANANA" in text
    assert handler(skip=True).handle(bad, "shop", ctx(200)) == []


def test_replay_applies_streamed_ddl_before_the_offset_and_every_snapshot_record():
    h = handler()
    entries = []
    for pos, ddl in [(100, "CREATE TABLE a (id INT PRIMARY KEY)"), (200, "ALTER TABLE a ADD COLUMN x INT"),
                     (300, "ALTER TABLE a ADD COLUMN y INT")]:
        for r in h.handle(ddl, "shop", ctx(pos)):
            if getattr(r, "topic", None) == HISTORY_TOPIC:
                entries.append(HistoryEntry(r.position, r.value))
    model = SchemaModel()
    assert replay_history(model, entries, until=(3, 250), skip_unparseable=False) == 2
    table = model.table(TableId("shop", "a"))
    assert table is not None and [c.name for c in table.columns] == ["id", "x"]
    snapshot_entry = orjson.loads(entries[2].value)
    snapshot_entry["position"]["snapshot"] = "INITIAL"
    entries[2] = HistoryEntry(entries[2].position, orjson.dumps(snapshot_entry).decode())
    model = SchemaModel()
    replay_history(model, entries, until=(3, 250), skip_unparseable=False)
    table = model.table(TableId("shop", "a"))
    assert table is not None and [c.name for c in table.columns] == ["id", "x", "y"]


def test_the_server_charset_statement_of_no_database_is_a_schema_change_event():
    # Debezium's snapshot publishes its first statement, SET character_set_server=..., with
    # databaseName "" (seen from the real connector in tests/conformance).
    out = handler().handle("SET character_set_server=utf8mb4, collation_server=utf8mb4_general_ci", "", ctx(100),
                           snapshot="true")
    changes = [r for r in out if getattr(r, "topic", None) == "my"]
    assert [orjson.loads(r.key) for r in changes] == [{"databaseName": ""}]
    assert orjson.loads(changes[0].value)["ddl"].startswith("SET character_set_server=utf8mb4")


def test_an_unparsed_statement_of_no_database_is_not_published():
    out = handler().handle("GRANT SELECT ON *.* TO 'x'@'%'", "", ctx(100))
    assert [r for r in out if getattr(r, "topic", None) == "my"] == []


def test_schema_change_and_truncate_records_carry_the_context_headers():
    # Debezium's engine puts its context headers on every record, schema changes and truncates too
    headers = {"__debezium.context.connectorName": '"mariadb"'}
    settings = dataclasses.replace(handler().settings, headers=headers)
    h = DdlEvents(SchemaModel(), settings, SourceInfo("mariadb", "my", VERSION), lambda t: f"my.{t.database}.{t.table}")
    out = h.handle("CREATE TABLE a (id INT PRIMARY KEY)", "shop", ctx(100))
    out += h.handle("TRUNCATE TABLE a", "shop", ctx(200))
    published = [r for r in out if getattr(r, "topic", None) in ("my", "my.shop.a")]
    assert [r.topic for r in published] == ["my", "my.shop.a"]
    assert all(r.headers == headers for r in published)


@pytest.mark.parametrize("only_captured", [False, True])
def test_a_table_outside_the_filters_has_schema_change_events_unless_history_keeps_only_captured(only_captured):
    # seen from the real Debezium (tests/conformance): an ALTER of a table excluded by
    # table.exclude.list is published while store.only.captured.tables.ddl is false
    settings = dataclasses.replace(handler(only="a").settings, store_only_captured_tables=only_captured)
    h = DdlEvents(SchemaModel(), settings, SourceInfo("mariadb", "my", VERSION), lambda t: f"my.{t.database}.{t.table}")
    out = h.handle("CREATE TABLE b (id INT PRIMARY KEY)", "shop", ctx(100))
    changes = [r for r in out if getattr(r, "topic", None) == "my"]
    assert len(changes) == (0 if only_captured else 1)
