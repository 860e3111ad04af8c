"""diff_records: strict field-by-field comparison of our records with Debezium's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance.compare import DEFAULT_IGNORE, diff_records
from tests.conformance.debezium_runner import DbzRecord

pytestmark = pytest.mark.conformance

T = "srv.public.items"


def _value(**over: Any) -> str:
    env: dict[str, Any] = {
        "before": None,
        "after": {"id": 1, "price": "AJY=", "ok": True},
        "source": {"version": "3.6.3.Final", "connector": "postgresql", "lsn": 100},
        "transaction": None,
        "op": "c",
        "ts_ms": 1,
        "ts_us": 1000,
        "ts_ns": 1000000,
    }
    env.update(over)
    return json.dumps(env, separators=(",", ":"))


def _dbz(value: str | None, key: str | None = '{"id":1}', topic: str = T,
         headers: dict[str, str] | None = None) -> DbzRecord:
    return DbzRecord(topic, key, value, headers or {}, None, None)


def test_identical_records_have_no_differences() -> None:
    assert diff_records([(T, '{"id":1}', _value())], [_dbz(_value())]) == []


def test_processing_time_fields_and_version_are_ignored_by_default() -> None:
    theirs = _value(ts_ms=9, ts_us=9000, ts_ns=9000000,
                    source={"version": "9.9", "connector": "postgresql", "lsn": 100})
    assert diff_records([(T, '{"id":1}', _value())], [_dbz(theirs)]) == []


def test_a_differing_field_is_reported_with_its_path() -> None:
    theirs = _value(after={"id": 1, "price": "AOE=", "ok": True})
    assert diff_records([(T, '{"id":1}', _value())], [_dbz(theirs)]) == [
        f'{T}[0] value.after.price: ours "AJY=" != Debezium "AOE="'
    ]


@pytest.mark.parametrize(
    ("ours", "theirs", "shown"),
    [
        ("1", "1.0", "ours 1 != Debezium 1.0"),
        ("true", "1", "ours true != Debezium 1"),
        ("10000000000.0", "1.0E10", "ours 10000000000.0 != Debezium 1.0E10"),
        ('"1"', "1", 'ours "1" != Debezium 1'),
    ],
)
def test_types_and_number_text_must_match_exactly(ours: str, theirs: str, shown: str) -> None:
    assert diff_records([(T, None, f'{{"x":{ours}}}')], [_dbz(f'{{"x":{theirs}}}', key=None)]) == [
        f"{T}[0] value.x: {shown}"
    ]


def test_field_order_is_checked_unless_disabled() -> None:
    ours = [(T, None, '{"a":1,"b":2}')]
    theirs = [_dbz('{"b":2,"a":1}', key=None)]
    assert diff_records(ours, theirs) == [
        f"{T}[0] value: field order differs: ours ['a', 'b'], Debezium ['b', 'a']"
    ]
    assert diff_records(ours, theirs, check_order=False) == []


def test_missing_and_extra_fields_are_reported() -> None:
    assert diff_records([(T, None, '{"a":1,"c":3}')], [_dbz('{"a":1,"b":2}', key=None)]) == [
        f"{T}[0] value.b: missing in ours (Debezium 2)",
        f"{T}[0] value.c: not in Debezium's (ours 3)",
    ]


def test_null_key_and_tombstone_are_compared() -> None:
    assert diff_records([(T, None, None)], [_dbz(None)]) == [
        f'{T}[0] key: ours null != Debezium "{{\\"id\\":1}}"'
    ]
    assert diff_records([(T, '{"id":1}', _value())], [_dbz(None)])[0].startswith(
        f"{T}[0] value: ours "
    )


def test_records_pair_per_topic_and_surplus_is_listed() -> None:
    other = "srv.public.other"
    ours = [(other, None, '{"op":"c"}'), (T, '{"id":1}', _value()), (T, '{"id":2}', _value(op="u"))]
    theirs = [_dbz(_value()), _dbz('{"op":"c"}', key=None, topic=other)]
    assert diff_records(ours, theirs) == [
        f"{T}: ours has 2 records, Debezium 1",
        f'{T}[1]: only in ours: op=u key={{"id":2}}',
    ]
    assert diff_records([], [_dbz(None)]) == [
        f"{T}: ours has 0 records, Debezium 1",
        f'{T}[0]: only in Debezium\'s: op=tombstone key={{"id":1}}',
    ]


def test_headers_are_compared_when_ours_carry_them() -> None:
    theirs = _dbz(None, headers={"__debezium.oldkey": '{"id":1}', "__debezium.context.runId": '"x"'})
    assert diff_records([(T, '{"id":1}', None, {"__debezium.oldkey": '{"id":1}'})], [theirs]) == []
    assert diff_records([(T, '{"id":1}', None, {"__debezium.oldkey": '{"id":2}'})], [theirs]) == [
        f"{T}[0] headers.__debezium.oldkey.id: ours 2 != Debezium 1"
    ]
    assert diff_records([(T, '{"id":1}', None, {})], [theirs]) == [
        f"{T}[0] headers.__debezium.oldkey: missing in ours headers"
    ]


def test_caller_ignores_exact_paths_subtrees_and_globs() -> None:
    theirs = _value(source={"version": "x", "connector": "pg", "lsn": 7}, after={"id": 2})
    ours = [(T, '{"id":1}', _value())]
    assert diff_records(ours, [_dbz(theirs)], ignore=DEFAULT_IGNORE | {"value.source", "value.after.*"}) == []
    assert diff_records(ours, [_dbz(theirs)], ignore=DEFAULT_IGNORE | {"value.source.lsn"}) == [
        f"{T}[0] value.after.id: ours 1 != Debezium 2",
        f"{T}[0] value.after.price: not in Debezium's (ours \"AJY=\")",
        f"{T}[0] value.after.ok: not in Debezium's (ours true)",
        f'{T}[0] value.source.connector: ours "postgresql" != Debezium "pg"',
    ]


def test_invalid_json_is_reported() -> None:
    out = diff_records([(T, None, "{not json")], [_dbz("{}", key=None)])
    assert len(out) == 1
    assert out[0].startswith(f"{T}[0] value: ours is not valid JSON")
