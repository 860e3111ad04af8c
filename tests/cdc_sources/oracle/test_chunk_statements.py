"""Oracle chunk statements: the keyset predicate written column by column reads a table with a
compound key in chunks that together hold every row once, in key order (run on PostgreSQL, whose
``FETCH FIRST`` and quoting are Oracle's; the oracle is Python's sort of the rows)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from cdc_sources.oracle.chunk_statements import chunk_select, max_key_select
from tests.support.oracle_live import psycopg_sql

pytestmark = [pytest.mark.integration]


def test_chunks_over_a_compound_key_read_every_row_once_in_key_order(pg_db: str) -> None:
    rows = [(a, b, f"v{a}{b}") for a in range(1, 8) for b in ("x", "y", "z", "zz")]
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute('CREATE SCHEMA "S"')
        conn.execute('CREATE TABLE "S"."T" ("A" integer, "B" varchar(5), "V" text, PRIMARY KEY ("A", "B"))')
        with conn.cursor() as cur:
            cur.executemany('INSERT INTO "S"."T" VALUES (%s, %s, %s)', rows[::-1])
        conn.execute('INSERT INTO "S"."T" VALUES (9, %s, %s)', ("a", "above the largest key at the start"))

        def run(statement: Any, params: list[Any]) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in conn.execute(psycopg_sql(statement.oracle_sql), params).fetchall()]

        top = run(max_key_select("S", "T", ["A", "B"], '"A" < 9'), [])[0]
        assert top == (7, "zz")
        got: list[tuple[Any, ...]] = []
        after: list[Any] | None = None
        while True:
            chunk = run(*chunk_select("S", "T", ["A", "B", "V"], ["A", "B"], after, list(top), None, 5))
            got += chunk
            if len(chunk) < 5:
                break
            after = list(chunk[-1][:2])
        assert got == sorted(rows)
        odd = run(*chunk_select("S", "T", ["A", "B", "V"], ["A", "B"], [3, "y"], None, 'MOD("A", 2) = 1', None))
        assert odd == sorted(r for r in [*rows, (9, "a", "above the largest key at the start")]
                             if r[0] % 2 == 1 and r[:2] > (3, "y"))
