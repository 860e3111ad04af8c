"""The schema-change corpus (``tests/cdc_sources/oracle/fixtures/logminer_schema_changes.jsonl``)
as a fake database: ``INVENTORY.PRODUCTS`` snapshotted at SCN 1000, then DDL (add ``PRICE``,
rename ``NAME`` to ``TITLE``, drop ``PRICE``, create ``INVENTORY.TAGS``) between DML, with the
dictionary following each DDL. The expected images are written by hand from the corpus."""

from __future__ import annotations

import base64
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from tests.support.bronze_rows import read_topic
from tests.support.oracle_fake import FakeColumn, FakeOracleDatabase, FakeTable, load_contents

CORPUS = Path(__file__).parents[1] / "cdc_sources" / "oracle" / "fixtures" / "logminer_schema_changes.jsonl"
_ID = FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False)
PRODUCTS = FakeTable("INVENTORY", "PRODUCTS", (_ID, FakeColumn("NAME", "VARCHAR2", 50)), ("ID",))
_PRICE = FakeColumn("PRICE", "NUMBER", 22, 10, 2)
DICTIONARY = [
    (1020, ("INVENTORY", "PRODUCTS"), FakeTable("INVENTORY", "PRODUCTS", (*PRODUCTS.columns, _PRICE), ("ID",))),
    (1040, ("INVENTORY", "PRODUCTS"),
     FakeTable("INVENTORY", "PRODUCTS", (_ID, FakeColumn("TITLE", "VARCHAR2", 50), _PRICE), ("ID",))),
    (1060, ("INVENTORY", "PRODUCTS"), FakeTable("INVENTORY", "PRODUCTS", (_ID, FakeColumn("TITLE", "VARCHAR2", 50)),
                                                ("ID",))),
    (1080, ("INVENTORY", "TAGS"), FakeTable("INVENTORY", "TAGS", (_ID, FakeColumn("LABEL", "VARCHAR2", 20)), ("ID",))),
]


FINAL = {"PRODUCTS": [(1, "apple"), (2, "pear!"), (3, "plum"), (4, "fig"), (5, "kiwi"), (6, "lime")],
         "TAGS": [(1, "red")]}
"""The tables after the corpus's last change (SCN 1092 on)."""


def _rows_as_of(owner: str, table: str, scn: int) -> list[tuple[Any, ...]]:
    if scn >= 1092:
        return [(Decimal(i), v) for i, v in FINAL[table]]
    if 1033 <= scn < 1040 and table == "PRODUCTS":  # after the first update, before the rename
        return [(Decimal(1), "apple", Decimal("1.25")), (Decimal(2), "pear", None), (Decimal(3), "plum", None),
                (Decimal(4), "fig", Decimal("2.50"))]
    assert (owner, table, scn) == ("INVENTORY", "PRODUCTS", 1000), (owner, table, scn)
    return [(Decimal(1), "apple"), (Decimal(2), "pear")]


def database(start: int, end: int) -> FakeOracleDatabase:
    """A live database: CURRENT_SCN moves from ``start`` by 5 a call (the snapshot at 1000 when
    ``start`` is 995), up to ``end``; the dictionary follows the corpus's DDL."""
    return FakeOracleDatabase({("INVENTORY", "PRODUCTS"): PRODUCTS}, load_contents(CORPUS), _rows_as_of, start,
                              mining_query(MiningQuerySettings()), final_scn=end, scn_step=5,
                              dictionary_changes=list(DICTIONARY))


def decimal(text: str) -> str:
    """NUMBER(10,2) as Debezium writes it: base64 of the unscaled big-endian two's complement."""
    unscaled = int(Decimal(text).scaleb(2))
    return base64.b64encode(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)).decode()


EXPECTED_PRODUCTS = [
    ("r", {"ID": 1, "NAME": "apple"}), ("r", {"ID": 2, "NAME": "pear"}),
    ("c", {"ID": 3, "NAME": "plum"}),
    ("c", {"ID": 4, "NAME": "fig", "PRICE": decimal("2.50")}),
    ("u", {"ID": 1, "NAME": "apple", "PRICE": decimal("1.25")}),
    ("c", {"ID": 5, "TITLE": "kiwi", "PRICE": decimal("3.00")}),
    ("u", {"ID": 2, "TITLE": "pear!"}),
    ("c", {"ID": 6, "TITLE": "lime"}),
]


def events(root: str, table: str) -> list[tuple[str, dict[str, Any]]]:
    """(op, after) of each bronze row of the table's topic, in order."""
    return [(r["op"], orjson.loads(r["value"])["after"]) for r in read_topic(root, f"ora.INVENTORY.{table}")]
