"""Randomized end to end on MariaDB: a seeded workload over (nearly) every MySQL type, captured into
bronze, built into silver in several increments; every silver table equals its source table row
for row, value for value.

How each MySQL type must look in silver (connector defaults, plus
``bigint.unsigned.handling.mode=precise``), and how the expected value is read from the source
(``SELECT`` in a session with ``time_zone = '+00:00'``):

============================  =====================  =============================================
MySQL                         silver                 expected from the source
============================  =====================  =============================================
TINYINT, TINYINT UNSIGNED,    SMALLINT               the integer
SMALLINT
SMALLINT UNSIGNED, MEDIUMINT  INT                    the integer
(UNSIGNED), INT
INT UNSIGNED, BIGINT          BIGINT                 the integer
BIGINT UNSIGNED (precise)     DECIMAL(20,0)          the integer, 0 .. 2^64-1 (a primary key too)
DECIMAL(p,s)                  DECIMAL(p,s)           the exact decimal
FLOAT                         FLOAT                  ``CAST(f AS DOUBLE)`` as a float32 (the exact
                                                     stored value), or that value rounded to the 6
                                                     significant digits MariaDB prints (see below)
DOUBLE                        DOUBLE                 the double
CHAR/VARCHAR/TEXT utf8mb4     STRING                 the text (emoji included; CHAR without the
                                                     trailing spaces MySQL strips)
BINARY(n)/VARBINARY/BLOB      BINARY                 the bytes (BINARY zero-padded to n)
DATE                          DATE                   the date
DATETIME(0..6)                TIMESTAMP              the wall-clock value, read as UTC
TIMESTAMP(0..6)               TIMESTAMP              the instant (UTC)
TIME(0..6)                    STRING                 ``[-]HH:MM:SS.ffffff``, -838:59:59..838:59:59
YEAR                          INT                    the year
ENUM                          STRING                 the member
SET                           ARRAY<STRING>          the members in definition order ([] if none)
BIT(1)                        BOOLEAN                the bit
BIT(n)                        STRING                 n characters ``0``/``1``, most significant first
JSON                          STRING                 the document text as stored (MariaDB keeps it)
BOOLEAN                       SMALLINT               0/1: MariaDB stores TINYINT(1) and the snapshot
                                                     learns the table from SHOW CREATE TABLE (as
                                                     Debezium does); not a BOOLEAN
============================  =====================  =============================================

FLOAT is not exact in silver: a row last written by the snapshot holds the value as MariaDB's text
protocol prints it, rounded to 6 significant digits (``SELECT`` of 313264.84375 gives 313265;
Debezium's JDBC snapshot reads the same text), while a row from the binlog holds the exact
float32. Either is accepted, nothing else.

Not representable exactly, so not generated: zero dates (``0000-00-00``: Debezium sends null
for a nullable column, the epoch otherwise), BIGINT UNSIGNED in the default ``long`` mode
(values from 2^63 wrap to negative numbers, as in Debezium), TIMESTAMP outside 1970..2038 and
DATETIME outside 1000..9999 (MySQL's own ranges).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import struct
from decimal import Decimal
from typing import Any

import pymysql
import pytest
from pymysql.cursors import DictCursor

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.spark]

SEED = 20_261_123
COLUMNS = {
    "id": "INT PRIMARY KEY", "ti": "TINYINT", "tiu": "TINYINT UNSIGNED", "si": "SMALLINT", "siu": "SMALLINT UNSIGNED",
    "mi": "MEDIUMINT", "miu": "MEDIUMINT UNSIGNED", "i": "INT", "iu": "INT UNSIGNED", "bi": "BIGINT",
    "biu": "BIGINT UNSIGNED", "d1": "DECIMAL(12,3)", "d2": "DECIMAL(30,10)", "f": "FLOAT", "d": "DOUBLE",
    "c": "CHAR(5)", "vc": "VARCHAR(50)", "tx": "TEXT", "bn": "BINARY(4)", "vb": "VARBINARY(20)", "bl": "BLOB",
    "dt": "DATE", "dt0": "DATETIME", "dt3": "DATETIME(3)", "dt6": "DATETIME(6)", "ts0": "TIMESTAMP NULL",
    "ts3": "TIMESTAMP(3) NULL", "ts6": "TIMESTAMP(6) NULL", "tm": "TIME", "tm3": "TIME(3)", "tm6": "TIME(6)",
    "yr": "YEAR", "en": "ENUM('a','b','c d')", "st": "SET('x','y','z')", "b1": "BIT(1)", "b10": "BIT(10)",
    "j": "JSON", "flag": "BOOLEAN",
}
EVENT_COLUMNS = {"id": "BIGINT UNSIGNED PRIMARY KEY", "kind": "ENUM('login','buy','sell')", "payload": "BLOB",
                 "at": "DATETIME(6)", "amount": "DECIMAL(10,2)"}
SET_MEMBERS = ("x", "y", "z")
TEXTS = ("a", "héllo", "emoji 🚀🎉", "it's \"quoted\"", "tab\tnew\nline", "日本語", "back\\slash", "")
JSON_DOCS = ('{"a": [1, 2.5, "x"], "b": null}', "[]", '"just a string"', "42", '{"nested": {"k": true, "e": "🚀"}}',
             '{ "spaced" :  1 }')


def _values(rng: random.Random) -> dict[str, Any]:
    """A random value for every column but ``id`` (a tenth of them NULL)."""
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value

    def when(lo: dt.datetime, hi: dt.datetime, digits: int) -> dt.datetime:
        us = rng.randrange(int((hi - lo).total_seconds() * 1_000_000))
        value = lo + dt.timedelta(microseconds=us)
        return value.replace(microsecond=value.microsecond // 10 ** (6 - digits) * 10 ** (6 - digits))

    def duration(digits: int) -> dt.timedelta:
        us = rng.randrange(-838 * 3_600_000_000, 839 * 3_600_000_000)
        us = us // 10 ** (6 - digits) * 10 ** (6 - digits)
        return dt.timedelta(microseconds=max(-(839 * 3600 - 1) * 10**6, min((839 * 3600 - 1) * 10**6, us)))

    lo, hi = dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)
    tlo, thi = dt.datetime(1970, 1, 2), dt.datetime(2038, 1, 18)  # TIMESTAMP's range, in the session's +02:00
    members = [m for m in SET_MEMBERS if rng.random() < 0.5]
    return {k: maybe(v) for k, v in {
        "ti": rng.randint(-128, 127), "tiu": rng.randint(0, 255), "si": rng.randint(-32768, 32767),
        "siu": rng.randint(0, 65535), "mi": rng.randint(-8388608, 8388607), "miu": rng.randint(0, 16777215),
        "i": rng.randint(-2**31, 2**31 - 1), "iu": rng.randint(0, 2**32 - 1), "bi": rng.randint(-2**63, 2**63 - 1),
        "biu": rng.choice([0, 2**63 - 1, 2**63, 2**64 - 1, rng.randint(0, 2**64 - 1)]),
        "d1": Decimal(rng.randint(-10**12 + 1, 10**12 - 1)).scaleb(-3),
        "d2": Decimal(rng.randint(-10**30 + 1, 10**30 - 1)).scaleb(-10),
        "f": rng.choice([rng.uniform(-1e6, 1e6), rng.uniform(-1, 1), 3.4e38, 1.17549435e-38]),
        "d": rng.choice([rng.uniform(-1e9, 1e9), rng.uniform(-1, 1), 1.7976931348623157e308, 5e-324, -0.0]),
        "c": rng.choice(TEXTS)[:5].rstrip(), "vc": rng.choice(TEXTS) + str(rng.randrange(1000)),
        "tx": " ".join(rng.choice(TEXTS) for _ in range(rng.randint(0, 30))),
        "bn": rng.randbytes(rng.randint(0, 4)), "vb": rng.randbytes(rng.randint(0, 20)),
        "bl": rng.randbytes(rng.randint(0, 300)), "dt": when(lo, hi, 0).date(), "dt0": when(lo, hi, 0),
        "dt3": when(lo, hi, 3), "dt6": when(lo, hi, 6), "ts0": when(tlo, thi, 0), "ts3": when(tlo, thi, 3),
        "ts6": when(tlo, thi, 6), "tm": duration(0), "tm3": duration(3), "tm6": duration(6),
        "yr": rng.randint(1901, 2155), "en": rng.choice(["a", "b", "c d"]), "st": ",".join(members),
        "b1": rng.randint(0, 1), "b10": rng.randint(0, 1023), "j": rng.choice(JSON_DOCS), "flag": rng.random() < 0.5,
    }.items()}


def _param(value: Any) -> Any:
    """A column value as a query parameter: decimals and times as exact text."""
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, dt.timedelta):
        return _time_text(value)
    return value


class Workload:
    """Seeded random DML on ``alltypes`` and ``events``, tracking the ids in use."""

    def __init__(self, conn: pymysql.connections.Connection[Any], seed: int) -> None:
        self.conn, self.rng = conn, random.Random(seed)
        self.ids: set[int] = set()
        self.events: set[int] = set()
        self.next_id = 0
        self.extra: list[str] = []

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _exec(self, sql: str, args: Any = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)

    def round(self, n: int) -> None:
        for _ in range(n):
            action = self.rng.random()
            self.conn.begin()
            if action < 0.3 or not self.ids:
                self._insert(self.rng.randint(1, 3))
            elif action < 0.55:
                self._update()
            elif action < 0.65:
                self._delete()
            elif action < 0.72:
                self._rekey()
            elif action < 0.9:
                self._event()
            else:  # several statements in one transaction
                self._insert(1)
                self._update()
                self._event()
            self.conn.commit()

    def _insert(self, n: int) -> None:
        rows = [{"id": self._new_id(), **_values(self.rng)} for _ in range(n)]
        for extra in self.extra:
            for row in rows:
                row[extra] = self.rng.choice(TEXTS) + "!"
        cols = list(rows[0])
        marks = "(" + ", ".join(["%s"] * len(cols)) + ")"
        self._exec(f"INSERT INTO alltypes ({', '.join(cols)}) VALUES {', '.join([marks] * n)}",
                   [_param(row[c]) for row in rows for c in cols])
        self.ids.update(r["id"] for r in rows)

    def _pick(self) -> int:
        return self.rng.choice(sorted(self.ids))

    def _update(self) -> None:
        values = _values(self.rng)
        cols = self.rng.sample([*values, *self.extra], self.rng.randint(1, 6))
        new = {c: values[c] if c in values else self.rng.choice(TEXTS) for c in cols}
        self._exec(f"UPDATE alltypes SET {', '.join(f'{c} = %s' for c in new)} WHERE id = %s",
                   [_param(v) for v in new.values()] + [self._pick()])

    def _delete(self) -> None:
        i = self._pick()
        self._exec("DELETE FROM alltypes WHERE id = %s", (i,))
        self.ids.discard(i)

    def _rekey(self) -> None:
        old, new = self._pick(), self._new_id()
        self._exec("UPDATE alltypes SET id = %s WHERE id = %s", (new, old))
        self.ids.discard(old)
        self.ids.add(new)
        if self.events and self.rng.random() < 0.5:  # a BIGINT UNSIGNED key change
            old_event = self.rng.choice(sorted(self.events))
            new_event = 2**63 + self._new_id()
            self._exec("UPDATE events SET id = %s WHERE id = %s", (new_event, old_event))
            self.events.discard(old_event)
            self.events.add(new_event)

    def _event(self) -> None:
        i = self.rng.choice([self._new_id(), 2**64 - 1 - self._new_id(), 2**63 + self._new_id()])
        at = dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=self.rng.randrange(10**14))
        self._exec("INSERT INTO events VALUES (%s, %s, %s, %s, %s)",
                   (i, self.rng.choice(["login", "buy", "sell", None]), self.rng.randbytes(8), at,
                    _param(Decimal(self.rng.randint(-10**9, 10**9)).scaleb(-2))))
        self.events.add(i)

    def add_column(self) -> None:
        # no DEFAULT: a default backfills existing rows without any change event (no CDC can see it)
        self._exec("ALTER TABLE alltypes ADD COLUMN note VARCHAR(30)")
        self.extra.append("note")

    def truncate_events(self) -> None:
        self._exec("TRUNCATE TABLE events")
        self.events.clear()


def _time_text(value: dt.timedelta) -> str:
    """A TIME as ``[-]HH:MM:SS.ffffff`` (MySQL's form, and silver's)."""
    us = value // dt.timedelta(microseconds=1)
    sign, us = ("-" if us < 0 else ""), abs(us)
    hours, minutes, seconds = us // 3_600_000_000, us // 60_000_000 % 60, us // 1_000_000 % 60
    return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}.{us % 1_000_000:06d}"


UNSIGNED_BIGINTS = {"alltypes": {"biu"}, "events": {"id"}}
"""The BIGINT UNSIGNED columns of each table (DECIMAL(20,0) in silver)."""


def _expected(column: str, value: Any, unsigned_bigint: bool = False) -> Any:
    """What silver must hold for a source value read with ``SELECT`` (see the module doc)."""
    if value is None:
        return None
    if unsigned_bigint:
        return Decimal(value)
    if column == "f":
        return (_float32(value), _float32(float(f"{value:.6g}")))  # binlog or snapshot (see module doc)
    if isinstance(value, dt.timedelta):
        return _time_text(value)
    if column == "st":
        return value.split(",") if value else []
    if column == "b1":
        return value != b"\x00"
    if column == "b10":
        return format(int.from_bytes(value, "big"), "010b")
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _source_rows(args: dict[str, Any], table: str, columns: list[str]) -> list[dict[str, Any]]:
    conn = pymysql.connect(**args, cursorclass=DictCursor, charset="utf8mb4")
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            select = ", ".join("CAST(f AS DOUBLE) AS f" if c == "f" else c for c in columns)
            cur.execute(f"SELECT {select} FROM {table} ORDER BY id")
            wide = UNSIGNED_BIGINTS[table]
            return [{c: _expected(c, row[c], c in wide) for c in columns} for row in cur.fetchall()]
    finally:
        conn.close()


def _same(got: Any, expected: Any) -> bool:
    """Equal (doubles exactly, NaN equal to NaN); bytes whatever buffer type the engine returns;
    a tuple lists the acceptable values."""
    if isinstance(expected, tuple):
        return any(_same(got, e) for e in expected)
    if isinstance(got, float) and isinstance(expected, float):
        return got == expected or (math.isnan(got) and math.isnan(expected))
    if isinstance(got, (bytes, bytearray)):
        return bytes(got) == expected
    return bool(got == expected)


def _pipeline(root: str, args: dict[str, Any]) -> PipelineConfig:
    db = args["database"]
    text = mariadb_pipeline_text(
        root, args, server_id=5901, capture={"commit_max_records": 300},
        silver=[{"table": "alltypes", "source": f"{SOURCE}.{db}.alltypes"},
                {"table": "events", "source": f"{SOURCE}.{db}.events"}],
        **{"skipped.operations": "none", "bigint.unsigned.handling.mode": "precise"})
    return parse_pipeline(text, env={})


def test_randomized_workload_over_every_type_silver_equals_source(mariadb_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    conn = pymysql.connect(**mariadb_db, autocommit=False, charset="utf8mb4")
    cfg = _pipeline(root, mariadb_db)
    passes: list[Any] = []

    def step() -> None:
        run_capture(cfg, until_idle=True)
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={SOURCE: SOURCE}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        quarantined = [t for t in result.tables if t.quarantined]
        assert not quarantined, quarantined
        passes.extend(result.tables)

    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE alltypes ({', '.join(f'{c} {t}' for c, t in COLUMNS.items())})")
            cur.execute(f"CREATE TABLE events ({', '.join(f'{c} {t}' for c, t in EVENT_COLUMNS.items())})")
        work = Workload(conn, SEED)
        work.round(60)  # snapshot material
        step()
        work.round(120)
        step()
        work.add_column()
        work.round(60)
        work.truncate_events()
        work.round(60)
        step()
        work.round(40)
        step()
    finally:
        conn.close()
    sizes = {}
    for table, columns in (("alltypes", [*COLUMNS, "note"]), ("events", list(EVENT_COLUMNS))):
        expected = _source_rows(mariadb_db, table, columns)
        got = [r.asDict() for r in spark.read.format("delta").load(f"{root}/silver/{table}")
               .select(*columns).orderBy("id").collect()]
        assert [r["id"] for r in got] == [r["id"] for r in expected], table
        diffs = [(e["id"], c, g[c], e[c]) for g, e in zip(got, expected, strict=True) for c in columns
                 if not _same(g[c], e[c])]
        assert diffs == [], f"{table}: {len(diffs)} differences, e.g. {diffs[:10]}"
        sizes[table] = len(expected)
    assert sizes["alltypes"] > 50 and sizes["events"] > 5, sizes
    assert sum(t.truncates for t in passes if t.table == "events") == 1
    assert any(t.schema_changes for t in passes if t.table == "alltypes")


def test_expected_values_follow_the_documented_mapping():
    """The conversions of `_expected` (pure), so a wrong expectation cannot hide a silver bug."""
    assert _time_text(dt.timedelta(hours=-838, minutes=-59, seconds=-59)) == "-838:59:59.000000"
    assert _time_text(dt.timedelta(hours=100, microseconds=5)) == "100:00:00.000005"
    assert _expected("st", "x,z") == ["x", "z"] and _expected("st", "") == []
    assert _expected("b10", b"\x02\x01") == "1000000001" and _expected("b1", b"\x01") is True
    assert _expected("biu", 2**64 - 1, unsigned_bigint=True) == Decimal("18446744073709551615")
    assert _expected("id", 7, unsigned_bigint=True) == Decimal(7) and _expected("i", 7) == 7
    assert _expected("f", 313264.84375) == (313264.84375, 313265.0)
    assert _same(313265.0, _expected("f", 313264.84375)) and not _same(313264.0, _expected("f", 313264.84375))
    assert json.loads(JSON_DOCS[0])["a"][1] == 2.5
