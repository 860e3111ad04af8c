"""The Debezium harness itself: the real engine snapshots, streams, stops and cleans up."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

import psutil
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.conformance.debezium_runner import (
    CHILD_MODULE,
    DbzRecord,
    DebeziumRunError,
    run_debezium_postgres,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.conformance]

TOPIC = "conf.public.items"


def _conn_args(dsn: str) -> dict[str, Any]:
    info = conninfo_to_dict(dsn)
    return {"host": info["host"], "port": int(str(info["port"])), "dbname": info["dbname"],
            "user": info["user"], "password": info.get("password", "")}


def _decimal(encoded: str, scale: int) -> Decimal:
    """Decode Kafka Connect's Decimal (big-endian two's complement unscaled value, base64)."""
    unscaled = int.from_bytes(base64.b64decode(encoded), "big", signed=True)
    return Decimal(unscaled).scaleb(-scale)


def _harness_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True)
            if CHILD_MODULE in " ".join(p.cmdline())]


def _items_run(pg_db: str) -> list[DbzRecord]:
    """One Debezium run: 3 snapshot rows, then an insert, an update and a delete streamed."""
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2))")
        conn.execute("INSERT INTO items VALUES (1, 'apple', 1.50), (2, 'pear', 2.25), (3, 'fig', NULL)")

    def workload() -> None:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("INSERT INTO items VALUES (4, 'kiwi', 4.00)")
            conn.execute("UPDATE items SET price = 4.75 WHERE id = 4")
            conn.execute("DELETE FROM items WHERE id = 2")

    records = run_debezium_postgres(
        **_conn_args(pg_db), properties={"topic.prefix": "conf"},
        expected_records=3 + 4, idle_timeout_s=15, workload=workload,
    )
    return records


def test_snapshot_then_streamed_changes(pg_db: str) -> None:
    """One engine run (a JVM start costs seconds) checked from several sides."""
    records = _items_run(pg_db)
    _check_ops_and_rows(records)
    _check_envelope_and_schema_texts(records, str(conninfo_to_dict(pg_db)["dbname"]))
    _check_no_child_process_and_no_slot(pg_db)


def _check_ops_and_rows(records: list[DbzRecord]) -> None:
    assert [r.topic for r in records] == [TOPIC] * 7
    values = [r.value_json() for r in records]
    assert [v and v["op"] for v in values] == ["r", "r", "r", "c", "u", "d", None]
    assert [r.key_json() for r in records] == [{"id": i} for i in (1, 2, 3, 4, 4, 2, 2)]
    assert [v["source"]["snapshot"] for v in values[:3]] == ["first", "true", "last"]
    assert all(v["source"]["snapshot"] == "false" for v in values[3:6])
    assert values[0]["before"] is None
    assert values[0]["after"]["name"] == "apple"
    assert _decimal(values[0]["after"]["price"], 2) == Decimal("1.50")
    assert values[2]["after"]["price"] is None
    assert values[3]["after"] == {"id": 4, "name": "kiwi", "price": base64.b64encode(b"\x01\x90").decode()}
    assert _decimal(values[4]["after"]["price"], 2) == Decimal("4.75")
    assert values[4]["before"] is None  # REPLICA IDENTITY DEFAULT: no old row image
    assert values[5]["before"] == {"id": 2, "name": "", "price": None}  # key only; NOT NULL -> ""
    assert values[5]["after"] is None
    assert records[6].value is None and records[6].value_schema is None


def _check_envelope_and_schema_texts(records: list[DbzRecord], dbname: str) -> None:
    first = records[0].value_json()
    assert list(first) == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert first["source"]["connector"] == "postgresql"
    assert first["source"]["name"] == "conf"
    assert first["source"]["db"] == dbname
    assert (first["source"]["schema"], first["source"]["table"]) == ("public", "items")
    assert records[0].key == '{"id":1}'  # compact JsonConverter text, no spaces
    key_schema = json.loads(records[0].key_schema or "null")
    assert key_schema == {"type": "struct", "optional": False, "name": "conf.public.items.Key",
                          "fields": [{"type": "int32", "optional": False, "field": "id"}]}
    value_schema = json.loads(records[0].value_schema or "null")
    assert value_schema["name"] == "conf.public.items.Envelope"
    price = value_schema["fields"][1]["fields"][2]
    assert price["name"] == "org.apache.kafka.connect.data.Decimal"
    assert price["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert records[0].source_offset is not None and "lsn" in records[0].source_offset


def _check_no_child_process_and_no_slot(dsn: str) -> None:
    assert _harness_children() == []
    with psycopg.connect(dsn) as conn:
        slots = conn.execute(
            "SELECT slot_name FROM pg_replication_slots WHERE database = current_database()"
        ).fetchall()
    assert slots == []


def test_engine_failure_is_reported(pg_db: str) -> None:
    with pytest.raises(DebeziumRunError, match="stopped before streaming began") as info:
        run_debezium_postgres(
            **_conn_args(pg_db), properties={"topic.prefix": "conf", "snapshot.mode": "bogus"},
            max_runtime_s=120,
        )
    assert "snapshot.mode" in str(info.value)
    assert _harness_children() == []


def test_unreachable_database_is_reported(pg_db: str) -> None:
    args = _conn_args(pg_db) | {"dbname": "no_such_database"}
    with pytest.raises(DebeziumRunError, match="cannot connect to database 'no_such_database'"):
        run_debezium_postgres(**args, properties={"topic.prefix": "conf"}, max_runtime_s=120)
    assert _harness_children() == []


def test_topic_prefix_is_required() -> None:
    with pytest.raises(DebeziumRunError, match=r"topic\.prefix"):
        run_debezium_postgres(host="127.0.0.1", port=1, dbname="x", user="x", password="", properties={})
