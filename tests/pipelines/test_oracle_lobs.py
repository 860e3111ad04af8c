"""``lob.enabled``: LOB operations in the redo (``tests/support/oracle_lob_corpus.py``) captured
through the fake connection into bronze, and built into silver on Sail.

The expected events are written by hand from Debezium 3.6.3's rules (its commit consumer's merge,
compared with the class itself in ``tests/cdc_sources/oracle/test_lob_merge.py``): an insert and the
LOB writes after it are one ``c`` with the whole values; an update of other columns has the
unavailable-value placeholder for the LOBs (before and after; a BLOB's as its bytes); an update of
a LOB alone (a ``SELECT_LOB_LOCATOR``) is a ``u`` whose before image has the placeholder. Without
``lob.enabled`` the mining query leaves the LOB operations out: the LOB values never arrive."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from deltalake import DeltaTable

from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_topic
from tests.support.engines import SAIL_ONLY
from tests.support.oracle_capture import SOURCE, capture_once
from tests.support.oracle_lob_corpus import database

pytestmark = [pytest.mark.integration]

PH = "__debezium_unavailable_value"
PH_BYTES = base64.b64encode(PH.encode()).decode()
IMG = base64.b64encode(bytes.fromhex("0102ff")).decode()
SILVER = ("pipeline: ora_lobs\nlakehouse: {root: ROOT}\n"
          "sources:\n  - {name: ora, connector: oracle, connection: {host: fake, user: u, database: ORCLPDB1}}\n"
          "silver:\n  - {table: docs, source: ora.INVENTORY.DOCS}\n")


def _events(root: str) -> list[tuple[str | None, Any, Any]]:
    out = []
    for r in read_topic(root, "ora.INVENTORY.DOCS"):
        value = orjson.loads(r["value"]) if r["value"] is not None else None
        out.append((r["op"], value and value["before"], value and value["after"]))
    return out


def _doc(i: int, name: str, body: str | None, img: str | None) -> dict[str, Any]:
    return {"ID": i, "NAME": name, "BODY": body, "IMG": img}


def test_lob_writes_become_whole_values_and_unchanged_lobs_the_placeholder(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(), options={"lob.enabled": True})
    assert _events(root) == [
        ("c", None, _doc(1, "first", "hello world", IMG)),
        ("c", None, _doc(2, "second", "short", None)),  # EMPTY_BLOB() of a nullable column: null
        ("u", _doc(1, "first", PH, PH_BYTES), _doc(1, "renamed", PH, PH_BYTES)),
        ("u", _doc(1, "renamed", PH, PH_BYTES), _doc(1, "renamed", "new body", PH_BYTES)),
        ("d", _doc(2, "second", PH, PH_BYTES), None),
        (None, None, None),  # the delete's tombstone
    ]
    source = [orjson.loads(r["value"])["source"] for r in read_topic(root, "ora.INVENTORY.DOCS")[:2]]
    # one transaction: the LOB rows merged away, the changes numbered as handed out
    assert [(s["scn"], s["txSeq"], s["start_scn"], s["row_id"]) for s in source] == [
        ("1011", 1, "1011", "AAAS1AAAEAAAAD3AAA"), ("1017", 2, "1011", "AAAS1AAAEAAAAD3AAB")]


def test_an_assembled_blob_follows_the_binary_handling_mode(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(), options={"lob.enabled": True, "binary.handling.mode": "hex"})
    events = _events(root)
    assert events[0] == ("c", None, _doc(1, "first", "hello world", "0102ff"))
    assert events[2][2] == _doc(1, "renamed", PH, PH.encode().hex())  # the placeholder's bytes, in hex


def test_without_lob_enabled_the_lob_operations_are_not_mined(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    db = database(lob_enabled=False)
    capture_once(root, db)
    assert _events(root) == [
        ("c", None, _doc(1, "first", None, None)),
        ("c", None, _doc(2, "second", None, None)),
        ("u", _doc(2, "second", PH, PH_BYTES), _doc(2, "second", "short", PH_BYTES)),
        ("u", _doc(1, "first", PH, PH_BYTES), _doc(1, "renamed", PH, PH_BYTES)),
        ("d", _doc(2, "second", PH, PH_BYTES), None),
        (None, None, None),
    ]


@SAIL_ONLY
@pytest.mark.spark
def test_sail_silver_keeps_the_lob_values_the_placeholder_stands_for(tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(), options={"lob.enabled": True})
    cfg = parse_pipeline(SILVER.replace("ROOT", root), env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    rows = DeltaTable(f"{root}/silver/docs").to_pyarrow_table().to_pylist()
    assert [(r["ID"], r["NAME"], r["BODY"], r["IMG"]) for r in rows] == [(1, "renamed", "new body", b"\x01\x02\xff")]
