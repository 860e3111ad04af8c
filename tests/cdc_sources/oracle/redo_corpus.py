# ruff: noqa: E501  (SQL_REDO statements are kept whole, one per line, as LogMiner writes them)
"""A corpus of LogMiner SQL_REDO statements: hand-written edge cases plus generated ones.

Each case names its table's columns with their Oracle types (and the JDBC type codes Debezium's
table model uses for them, written out here independently of the code under test), and one
statement in the shape LogMiner writes under the connector's session NLS formats.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Oracle type name -> java.sql / oracle.jdbc.OracleTypes code (as in Debezium's table model).
JDBC_TYPES = {
    "NUMBER": 2, "VARCHAR2": 12, "NVARCHAR2": -9, "CHAR": 1, "NCHAR": -15, "DATE": 93,
    "TIMESTAMP": 93, "TIMESTAMP WITH TIME ZONE": -101, "TIMESTAMP WITH LOCAL TIME ZONE": -102,
    "RAW": -3, "CLOB": 2005, "NCLOB": 2011, "BLOB": 2004, "XMLTYPE": 2009,
    "BINARY_FLOAT": 100, "BINARY_DOUBLE": 101, "INTERVAL YEAR TO MONTH": -103,
    "INTERVAL DAY TO SECOND": -104, "ROWID": -8,
}


@dataclass(frozen=True)
class Col:
    name: str
    type: str
    length: int = 0


@dataclass(frozen=True)
class RedoCase:
    columns: tuple[Col, ...]
    sql: str


def _cols(*specs: str) -> tuple[Col, ...]:
    out = []
    for spec in specs:
        name, _, rest = spec.partition(":")
        kind, _, length = rest.partition("/")
        out.append(Col(name, kind or "VARCHAR2", int(length or 0)))
    return tuple(out)


T3 = _cols("ID:NUMBER", "NAME:VARCHAR2/100", "DOC:CLOB")
TALL = _cols("ID:NUMBER", "D:DATE", "TS:TIMESTAMP", "TZ:TIMESTAMP WITH TIME ZONE", "N:NVARCHAR2/50",
             "R:RAW/16", "C:CLOB", "B:BLOB", "X:XMLTYPE", "BF:BINARY_FLOAT", "BIG:VARCHAR2/32767",
             "YM:INTERVAL YEAR TO MONTH", "DS:INTERVAL DAY TO SECOND")
OBJ = _cols("COL 1:NUMBER", "COL 2:VARCHAR2/20", "COL 3:RAW/8")

HAND: list[RedoCase] = [
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('1','Acme');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME","DOC") values ('1','Bob''s dog',EMPTY_CLOB());"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME","DOC") values ('2',NULL,NULL);"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('3','''');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('4','''''''');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('5','a,b),(c');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('6',' where "ID" = ''1'' and ');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('7','line1
line2');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('8','Ünïcödé ✓ 中文');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('9',Unsupported Type);"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("NAME","ID") values ('reordered','10');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('11','x || y');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('-1.5E+30','IS NULL');"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME","ORA_ARCHIVE_STATE") values ('12','arch','0');"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'new' where "ID" = '1' and "NAME" = 'old';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = NULL where "ID" = '1' and "NAME" = 'old';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'x' where "ID" = '1' and "NAME" IS NULL;"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'Bob''s' where "ID" = '1' and "NAME" = 'it''s';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'a, "ID" = ''9''' where "ID" = '1' and "NAME" = ' where ';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'v', "ID" = '2' where "ID" = '1' and "NAME" = 'u';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "DOC" = EMPTY_CLOB() where "ID" = '1' and "NAME" = 'u';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "DOC" = 'text' where "ID" = '1' and "NAME" = 'u';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = Unsupported Type where "ID" = '1' and "NAME" = 'u';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'z' where "ID" = '1' and "NAME" = Unsupported Type;"""),
    RedoCase(T3, """update "DEBEZIUM"."T" a set a."NAME" = 'alias' where a."ID" = '1' and a."NAME" = 'b';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'no where';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'q' where "ID" = '1' or "NAME" = 'q0';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'arch' where "ID" = '1' and "ORA_ARCHIVE_STATE" = '0';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1' and "NAME" = 'Acme';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1' and "NAME" IS NULL;"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1' and "NAME" = 'it''s, and "ID" = ''2''';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" a where a."ID" = '1' and a."NAME" = 'alias';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1' and "NAME" = 'x' and "DOC" = 'small';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T";"""),
    RedoCase(TALL, """insert into "DEBEZIUM"."ALL"("ID","D","TS","TZ","N","R","C","B","X","BF","BIG","YM","DS") values """
             """('1',TO_DATE('2020-02-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS'),TO_TIMESTAMP('2020-02-01 00:00:00.'),"""
             """TO_TIMESTAMP_TZ('2020-02-01 10:20:30.123456 +02:00'),UNISTR('\\0412\\044B') || UNISTR('\\043F\\043E'),"""
             """HEXTORAW('0a0bff'),EMPTY_CLOB(),EMPTY_BLOB(),Unsupported Type,'1.5E+000','big',"""
             """TO_YMINTERVAL('+02-03'),TO_DSINTERVAL('+02 03:04:05.123456'));"""),
    RedoCase(TALL, """update "DEBEZIUM"."ALL" set "N" = UNISTR('\\0061\\0062') || UNISTR('\\0063'), "D" = TO_DATE('2021-12-31 23:59:59', 'YYYY-MM-DD HH24:MI:SS') """
             """where "ID" = '1' and "D" = TO_DATE('2020-02-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS') and "TS" = TO_TIMESTAMP('2020-02-01 00:00:00.') """
             """and "TZ" = TO_TIMESTAMP_TZ('2020-02-01 10:20:30.123456 +02:00') and "N" = UNISTR('\\0412') || UNISTR('\\044B') and "R" = HEXTORAW('0a0bff') """
             """and "BF" = '1.5E+000' and "YM" = TO_YMINTERVAL('+02-03') and "DS" = TO_DSINTERVAL('+02 03:04:05.123456');"""),
    RedoCase(TALL, """update "DEBEZIUM"."ALL" set "B" = HEXTORAW('ff00'), "C" = 'clob text' where "ID" = '1' and "D" IS NULL and "TS" IS NULL;"""),
    RedoCase(TALL, """update "DEBEZIUM"."ALL" set "TS" = TO_TIMESTAMP('2020-02-01 00:00:00.999999999'), "TZ" = NULL where "ID" = '2' and "TS" IS NULL and "TZ" = TO_TIMESTAMP_TZ('2020-02-01 10:20:30. -08:00');"""),
    RedoCase(TALL, """delete from "DEBEZIUM"."ALL" where "ID" = '1' and "D" = TO_DATE('2020-02-01 00:00:00', 'YYYY-MM-DD HH24:MI:SS') and "N" = UNISTR('\\0041') || UNISTR('\\0042') || UNISTR('\\0043') and "R" = HEXTORAW('00');"""),
    RedoCase(TALL, """delete from "DEBEZIUM"."ALL" where "ID" = '3' and "X" = Unsupported Type and "R" IS NULL;"""),
    RedoCase(OBJ, """insert into "UNKNOWN"."OBJ# 74858"("COL 1","COL 2","COL 3") values (HEXTORAW('c102'),HEXTORAW('414243'),HEXTORAW('0001'));"""),
    RedoCase(OBJ, """update "UNKNOWN"."OBJ# 74858" set "COL 2" = HEXTORAW('44') where "COL 1" = HEXTORAW('c102') and "COL 2" = HEXTORAW('414243') and "COL 3" IS NULL;"""),
    RedoCase(OBJ, """delete from "UNKNOWN"."OBJ# 74858" where "COL 1" = HEXTORAW('c102') and "COL 2" = HEXTORAW('44');"""),
    RedoCase(_cols("id:NUMBER", "Name:VARCHAR2/10"), """insert into "debezium"."lower"("id","Name") values ('1','mixed case');"""),
    RedoCase(_cols("ID:NUMBER", "NAME:VARCHAR2/10"), """update "DEBEZIUM"."T" set "name" = 'case-insensitive' where "ID" = '1';"""),
    RedoCase(_cols("ID:NUMBER", "V:VARCHAR2/10"), """insert into "DEBEZIUM"."T"("ID","V") values ('1','(((');"""),
    RedoCase(_cols("ID:NUMBER", "V:VARCHAR2/10"), """update "DEBEZIUM"."T" set "V" = ')))' where "ID" = '1' and "V" = '(((';"""),
    RedoCase(_cols("ID:NUMBER", "V:VARCHAR2/10"), """update "DEBEZIUM"."T" set "V" = ';' where "ID" = '1' and "V" = ';';"""),
    RedoCase(_cols("ID:NUMBER", "V:NVARCHAR2/4000"), """update "DEBEZIUM"."T" set "ID" = '2' where "ID" = '1';"""),
    RedoCase(_cols("ID:NUMBER", "V:VARCHAR2/10"), """update "DEBEZIUM"."T" set "V" = TO_CHAR(TRUNC(SYSDATE)) where "ID" = '1';"""),
]

# Statements that are not LogMiner DML of the table: both parsers must reject them.
REJECTED: list[RedoCase] = [
    RedoCase(T3, """select * from "DEBEZIUM"."T";"""),
    RedoCase(T3, ""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","MISSING") values ('1','x');"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "MISSING" = '1' where "ID" = '1';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "MISSING" = '1';"""),
    RedoCase(T3, """update "DEBEZIUM"."T" where "ID" = '1';"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID") values ('1','2');"""),
]

# Malformed statements Debezium's parser accepts (it skips what it does not expect, and may put
# a value in the wrong column) and ours rejects: a LogMiner statement never looks like these.
REJECTED_HERE_ONLY: list[RedoCase] = [
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('1','unterminated);"""),
    RedoCase(T3, """insert into "DEBEZIUM"."T"("ID","NAME") values ('1');"""),
    RedoCase(T3, """update "DEBEZIUM"."T" set "NAME" = 'a' and "ID" = '2' where "ID" = '1';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1' "NAME" = 'x';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1', "NAME" = 'x';"""),
    RedoCase(T3, """delete from "DEBEZIUM"."T" where "ID" = '1' and "NAME" = 'x' trailing;"""),
]

_TYPES = ["NUMBER", "NUMBER", "VARCHAR2", "VARCHAR2", "VARCHAR2", "NVARCHAR2", "CHAR", "DATE", "TIMESTAMP",
          "TIMESTAMP WITH TIME ZONE", "RAW", "CLOB", "NCLOB", "BLOB", "BINARY_DOUBLE",
          "INTERVAL DAY TO SECOND", "INTERVAL YEAR TO MONTH", "XMLTYPE"]
_TEXT_PIECES = ["a", "Z", " ", "'", "''", ",", "(", ")", ";", "\"", "|", "||", " and ", " or ", " where ",
                " set ", "IS NULL", "NULL", "é", "中", "\n", "\\", "=", " = ", "TO_DATE(", "0", "9"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXT_PIECES) for _ in range(rng.randint(1, 12)))


def _literal(rng: random.Random, col: Col) -> str:
    """One non-null value of ``col`` as LogMiner writes it."""
    t = col.type
    if t == "NUMBER":
        return "'" + rng.choice(["0", "1", "-7", "123.45", "-0.001", "99999999999999999999", "1E+30"]) + "'"
    if t in ("VARCHAR2", "CHAR", "CLOB"):
        return "'" + _text(rng).replace("'", "''") + "'"
    if t in ("NVARCHAR2", "NCLOB"):
        parts = ["UNISTR('" + "".join(f"\\{rng.randint(0x20, 0x4ff):04X}" for _ in range(rng.randint(1, 4))) + "')"
                 for _ in range(rng.randint(1, 3))]
        return " || ".join(parts)
    if t == "DATE":
        return f"TO_DATE('{rng.randint(1, 9999):04d}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 1{rng.randint(0, 9)}:0{rng.randint(0, 9)}:5{rng.randint(0, 9)}', 'YYYY-MM-DD HH24:MI:SS')"
    if t == "TIMESTAMP":
        return f"TO_TIMESTAMP('20{rng.randint(10, 39)}-1{rng.randint(0, 2)}-2{rng.randint(0, 8)} 0{rng.randint(0, 9)}:3{rng.randint(0, 9)}:4{rng.randint(0, 9)}.{rng.randint(0, 999999)}')"
    if t == "TIMESTAMP WITH TIME ZONE":
        return f"TO_TIMESTAMP_TZ('2020-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 12:34:56.{rng.randint(0, 999)} {rng.choice(['+', '-'])}0{rng.randint(0, 9)}:{rng.choice(['00', '30', '45'])}')"
    if t in ("RAW", "BLOB"):
        return "HEXTORAW('" + "".join(f"{rng.randint(0, 255):02x}" for _ in range(rng.randint(0, 8))) + "')"
    if t == "BINARY_DOUBLE":
        return "'" + rng.choice(["1.5E+000", "-2.25E-003", "Nan", "Inf", "-Inf", "0"]) + "'"
    if t == "INTERVAL DAY TO SECOND":
        return f"TO_DSINTERVAL('{rng.choice(['+', '-'])}0{rng.randint(0, 9)} 0{rng.randint(0, 9)}:1{rng.randint(0, 9)}:2{rng.randint(0, 9)}.{rng.randint(0, 999999):06d}')"
    if t == "INTERVAL YEAR TO MONTH":
        return f"TO_YMINTERVAL('{rng.choice(['+', '-'])}{rng.randint(0, 99):02d}-{rng.randint(0, 11):02d}')"
    return "Unsupported Type"


def _table(rng: random.Random, n: int) -> tuple[Col, ...]:
    cols = [Col("ID", "NUMBER")]
    for i in range(1, n):
        t = rng.choice(_TYPES)
        length = {"VARCHAR2": rng.choice([10, 4000, 32767]), "NVARCHAR2": rng.choice([10, 2000, 16383]),
                  "CHAR": 5, "RAW": 16}.get(t, 0)
        cols.append(Col(f"C{i}" if rng.random() < 0.8 else f"Col {i}", t, length))
    return tuple(cols)


def _lob(col: Col) -> bool:
    return col.type in ("CLOB", "NCLOB", "BLOB", "XMLTYPE")


def _maybe(rng: random.Random, col: Col) -> str | None:
    """A value or None (a SQL NULL); LOB columns sometimes get EMPTY_CLOB()/EMPTY_BLOB()."""
    if col.name != "ID" and rng.random() < 0.2:
        return None
    if col.type in ("CLOB", "NCLOB") and rng.random() < 0.3:
        return "EMPTY_CLOB()"
    if col.type == "BLOB" and rng.random() < 0.3:
        return "EMPTY_BLOB()"
    return _literal(rng, col)


def _where(cols: tuple[Col, ...], values: list[str | None]) -> str:
    terms = []
    for col, value in zip(cols, values, strict=True):
        if _lob(col) and col.type != "XMLTYPE":
            continue  # LogMiner leaves LOBs out of the where clause
        terms.append(f'"{col.name}" IS NULL' if value is None else f'"{col.name}" = {value}')
    return " and ".join(terms)


def generated(count: int, seed: int = 20261127) -> list[RedoCase]:
    rng = random.Random(seed)
    out: list[RedoCase] = []
    while len(out) < count:
        cols = _table(rng, rng.randint(2, 12))
        name = f'"DEBEZIUM"."T{rng.randint(1, 99)}"'
        row = [_maybe(rng, c) for c in cols]
        kind = rng.random()
        if kind < 0.4:
            picked = [(c, v) for c, v in zip(cols, row, strict=True) if v is not None or rng.random() < 0.5]
            if rng.random() < 0.3:
                rng.shuffle(picked)
            names = ",".join(f'"{c.name}"' for c, _ in picked)
            values = ",".join("NULL" if v is None else v for _, v in picked)
            out.append(RedoCase(cols, f"insert into {name}({names}) values ({values});"))
        elif kind < 0.8:
            changed = rng.sample(range(len(cols)), rng.randint(1, len(cols)))
            sets = ", ".join(f'"{cols[i].name}" = {_maybe(rng, cols[i]) or "NULL"}' for i in changed)
            out.append(RedoCase(cols, f"update {name} set {sets} where {_where(cols, row)};"))
        else:
            out.append(RedoCase(cols, f"delete from {name} where {_where(cols, row)};"))
    return out


def corpus() -> list[RedoCase]:
    """The hand-written cases and 400 generated ones."""
    return HAND + generated(400)
