"""The DDL reader against Debezium 3.6.3's own Oracle DDL parser (``OracleDdlParser``, through
``OracleDdlProbe.java``): the same statements applied in order leave the same tables, column by
column (name, type, length, scale, nullability) with the same primary key.

Debezium's column model and this connector's differ only where the value encoding does not
depend on it, normalised here: Debezium keeps length -1 for ``DATE``/``BINARY_*`` (here 0),
length 38 for a bare ``NUMBER`` (here 0: no precision), and the leading precision of intervals
(here not kept). ``NUMBER(*,S)`` differs on purpose: Debezium's parser gives it scale 0, the
dictionary (and this connector) scale S. Debezium's parser files a table under its current
schema (the DDL row's ``SEG_OWNER``) even when the statement names another owner; the session
passes ``SEG_OWNER`` as the default owner, which LogMiner sets to the table's owner."""

from __future__ import annotations

import functools

from cdc_sources.oracle.converters import OracleType
from cdc_sources.oracle.ddl import apply_ddl, ddl_target
from cdc_sources.oracle.envelope import OracleTable
from tests.cdc_sources.oracle.java_probe import run_probe

CREATE = ('CREATE TABLE "APP"."T" ("ID" NUMBER(10) NOT NULL, "Mixed" varchar2(20 byte) default \'a,(b)\', '
          "AMOUNT NUMBER(12,2), N NUMBER, I INTEGER, SI SMALLINT, F FLOAT(63), F2 FLOAT, "
          "TS TIMESTAMP(3) WITH TIME ZONE, L TIMESTAMP WITH LOCAL TIME ZONE, T TIMESTAMP, T9 TIMESTAMP(9), "
          "D DATE DEFAULT SYSDATE NOT NULL, R RAW(16), C CHAR(3), C1 CHAR, NC NCHAR(2), NV NVARCHAR2(10), "
          "DS INTERVAL DAY(3) TO SECOND(2), YM INTERVAL YEAR TO MONTH, BF BINARY_FLOAT, BD BINARY_DOUBLE, "
          "NEG NUMBER(5,-2), CONSTRAINT T_PK PRIMARY KEY (ID)) TABLESPACE USERS")
CASES: list[list[str]] = [
    [CREATE],
    [CREATE, 'ALTER TABLE "APP"."T" ADD "EMAIL" VARCHAR2(100)'],
    [CREATE, "alter table app.t add (email varchar2(100) default 'x' not null, score number(5,2), z timestamp(6))"],
    [CREATE, 'ALTER TABLE T MODIFY ("Mixed" VARCHAR2(400) NOT NULL)'],
    [CREATE, "ALTER TABLE T MODIFY N NOT NULL"],
    [CREATE, "ALTER TABLE T MODIFY (AMOUNT NUMBER(14,4), C NULL)"],
    [CREATE, "ALTER TABLE T MODIFY D NULL"],
    [CREATE, 'ALTER TABLE T RENAME COLUMN C TO "Cc"'],
    [CREATE, "ALTER TABLE T DROP COLUMN D"],
    [CREATE, "ALTER TABLE T DROP (F, R, NV)"],
    [CREATE, "ALTER TABLE T SET UNUSED COLUMN BD"],
    [CREATE, "ALTER TABLE T ADD CONSTRAINT CK CHECK (AMOUNT > 0)"],
    [CREATE, "DROP TABLE APP.T PURGE"],
    [CREATE, "CREATE INDEX T_I ON APP.T (AMOUNT)"],
    [CREATE, "ALTER TABLE APP.T ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS"],
    [CREATE, "ALTER TABLE T DROP SUPPLEMENTAL LOG DATA (ALL) COLUMNS"],
    [CREATE, "ALTER TABLE T DROP CONSTRAINT T_PK"],
    [CREATE, "ALTER TABLE T DROP PARTITION P1"],
    [CREATE, "ALTER TABLE T ADD PARTITION P2 VALUES LESS THAN (100)"],
    ["CREATE TABLE R (A REAL, B DOUBLE PRECISION, C DECIMAL(7,3), D NUMERIC, E DECIMAL)"],
    ["create table t3 (id number(5) primary key, v nvarchar2(10))"],
    ["CREATE TABLE K (A NUMBER(3) NOT NULL, B VARCHAR2(5) NOT NULL, V CHAR(1), PRIMARY KEY (A, B))"],
    ["CREATE TABLE K (A NUMBER(3), B VARCHAR2(5))", "ALTER TABLE K ADD CONSTRAINT K_PK PRIMARY KEY (B)"],
    ["CREATE TABLE K (A NUMBER(3), B VARCHAR2(5))", "ALTER TABLE K ADD (C DATE, D NUMBER)",
     "ALTER TABLE K RENAME COLUMN C TO CC", "ALTER TABLE K MODIFY (D NUMBER(8,3) NOT NULL)", "ALTER TABLE K DROP (A)"],
    ["CREATE TABLE X (A NUMBER(3))", "ALTER TABLE X ADD B VARCHAR2(3)", "ALTER TABLE X ADD (C NUMBER(5,-2))"],
]
STAR = "CREATE TABLE S (A NUMBER(*,2))"


@functools.cache
def _answers() -> list[list[str]]:
    """Debezium's tables for every case, then for `STAR` (one JVM for the module)."""
    answers = run_probe("OracleDdlProbe.java", [["ORCLPDB1", "APP", *case] for case in [*CASES, [STAR]]])
    assert len(answers) == len(CASES) + 1
    return answers


_NO_LENGTH = {OracleType.DATE, OracleType.BINARY_FLOAT, OracleType.BINARY_DOUBLE}


def _ours(statements: list[str]) -> list[str]:
    tables: dict[tuple[str, str], OracleTable] = {}
    for sql in statements:
        target = ddl_target(sql, "APP")
        if target is None:
            continue
        out = apply_ddl(sql, "APP", tables.get((target[1], target[2])))
        if out.table is not None:
            tables[(out.owner, out.name)] = out.table
        elif out.kind.value == "DROP":
            tables.pop((out.owner, out.name), None)
    return [_describe(t) for _, t in sorted(tables.items())]


def _describe(t: OracleTable) -> str:
    lines = [f"{t.schema}.{t.name}", ",".join(t.key)]
    for c in t.columns:
        length = c.length
        if c.type in _NO_LENGTH:
            length = -1
        elif c.type is OracleType.NUMBER and c.scale is None:
            length = 38
        lines.append(f"{c.name}|{c.type.value}|{length}|{'null' if c.scale is None else c.scale}|"
                     f"{str(c.optional).lower()}")
    return "\n".join(lines)


def _debezium_normalised(answer: list[str]) -> list[str]:
    out = []
    for field in answer:
        if not field:
            continue
        lines = field.split("\n")
        for i, line in enumerate(lines[2:], start=2):
            name, kind, length, scale, optional = line.split("|")
            if kind.startswith("INTERVAL"):
                length = "0"
            lines[i] = "|".join((name, kind, length, scale, optional))
        out.append("\n".join(lines))
    return out


def test_the_same_tables_as_debeziums_parser() -> None:
    for case, answer in zip(CASES, _answers()[:-1], strict=True):
        assert not answer[0].startswith("ERR:"), (case, answer)
        assert _ours(case) == _debezium_normalised(answer), case[-1]


def test_number_star_scale_is_the_one_deliberate_difference() -> None:
    assert _answers()[-1] == ["APP.S\n\nA|NUMBER|38|0|true"]  # Debezium: scale 0
    table = apply_ddl(STAR, "APP", None).table
    assert table is not None and (table.columns[0].length, table.columns[0].scale) == (0, 2)
