"""``provide.transaction.metadata`` for Oracle: the transactions of the LOB corpus
(``tests/support/oracle_lob_corpus.py``) captured through the fake connection into bronze, with
their BEGIN and END records on ``ora.transaction`` and a ``transaction`` block in each event.

The expectations are written by hand from Debezium 3.6.3's Oracle connector (its sources): the id
is the XID (``source.txId``, what its ``OracleEventMetadataProvider`` reads); BEGIN's ``ts_ms`` is
the first event's ``source.ts_ms`` (its transaction monitor); END's is the time of the transaction's
first row, its ``START`` (the buffered adapter passes the transaction's change time); a data
collection is ``<database>.<OWNER>.<TABLE>``; a tombstone is not counted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.bronze_rows import read_topic
from tests.support.oracle_capture import capture_once
from tests.support.oracle_lob_corpus import database

pytestmark = [pytest.mark.integration]

A, B, C, D = "0a00010001000000", "0b00010001000000", "0c00010001000000", "0d00010001000000"
DOCS = "ORCLPDB1.INVENTORY.DOCS"


def _ms(second: int) -> int:
    """The corpus's row at SCN ``10xx`` has the time 2024-06-01 09:00:(xx mod 60), read as UTC."""
    return int(datetime(2024, 6, 1, 9, 0, second % 60, tzinfo=UTC).timestamp() * 1000)


def _begin(xid: str, ts: int) -> dict[str, Any]:
    return {"status": "BEGIN", "id": xid, "event_count": None, "data_collections": None, "ts_ms": ts}


def _end(xid: str, count: int, ts: int) -> dict[str, Any]:
    return {"status": "END", "id": xid, "event_count": count,
            "data_collections": [{"data_collection": DOCS, "event_count": count}], "ts_ms": ts}


def test_begin_and_end_around_each_transaction_and_a_block_in_each_event(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(), options={"lob.enabled": True, "provide.transaction.metadata": True})
    records = read_topic(root, "ora.transaction")
    assert [orjson.loads(r["key"]) for r in records] == [{"id": x} for x in (A, A, B, B, C, C, D, D)]
    assert [orjson.loads(r["value"]) for r in records] == [
        _begin(A, _ms(1011)), _end(A, 2, _ms(1010)),
        _begin(B, _ms(1021)), _end(B, 1, _ms(1020)),
        _begin(C, _ms(1031)), _end(C, 1, _ms(1030)),  # a locator update: BEGIN at its SELECT_LOB_LOCATOR
        _begin(D, _ms(1041)), _end(D, 1, _ms(1040)),  # the delete's tombstone is not counted
    ]
    events = read_topic(root, "ora.INVENTORY.DOCS")
    blocks = [None if r["value"] is None else orjson.loads(r["value"])["transaction"] for r in events]
    assert blocks == [
        {"id": A, "total_order": 1, "data_collection_order": 1},
        {"id": A, "total_order": 2, "data_collection_order": 2},
        {"id": B, "total_order": 1, "data_collection_order": 1},
        {"id": C, "total_order": 1, "data_collection_order": 1},
        {"id": D, "total_order": 1, "data_collection_order": 1},
        None,
    ]
    assert [orjson.loads(r["value"])["source"]["txId"] for r in events if r["value"] is not None] == [A, A, B, C, D]


def test_without_the_option_there_is_no_transaction_topic_and_the_block_is_null(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(), options={"lob.enabled": True})
    assert read_topic(root, "ora.transaction") == []
    events = read_topic(root, "ora.INVENTORY.DOCS")
    assert {orjson.loads(r["value"])["transaction"] is None for r in events if r["value"] is not None} == {True}
