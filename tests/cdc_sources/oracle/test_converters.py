"""cdc_sources.oracle.converters against Debezium 3.6.3's OracleValueConverters, value by value.

Each case is a column (ours, and the attributes Debezium's table model holds for it: JDBC type,
type name, length, scale, written out here), a value as LogMiner's SQL_REDO gives it (parsed by
`cdc_sources.oracle.redo`), and the handling modes; Debezium's schema and JsonConverter output
must equal ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from cdc_sources.oracle.converters import (
    OracleColumn,
    OracleConverterSettings,
    OracleType,
    OracleValueError,
    convert,
    field_schema,
)
from cdc_sources.oracle.redo import UNAVAILABLE, RedoTable, RedoValue, parse_redo
from tests.cdc_sources.oracle.java_probe import run_probe

JDBC = {OracleType.NUMBER: 2, OracleType.FLOAT: 6, OracleType.BINARY_FLOAT: 100, OracleType.BINARY_DOUBLE: 101,
        OracleType.CHAR: 1, OracleType.NCHAR: -15, OracleType.VARCHAR2: 12, OracleType.NVARCHAR2: -9,
        OracleType.CLOB: 2005, OracleType.NCLOB: 2011, OracleType.ROWID: -8, OracleType.RAW: -3,
        OracleType.BLOB: 2004, OracleType.DATE: 93, OracleType.TIMESTAMP: 93, OracleType.TIMESTAMP_TZ: -101,
        OracleType.TIMESTAMP_LTZ: -102, OracleType.INTERVAL_YM: -103, OracleType.INTERVAL_DS: -104}


def lit(sql_value: str) -> RedoValue:
    """A value exactly as the SQL_REDO parser returns it for ``sql_value`` in an insert."""
    dml = parse_redo(f'insert into "S"."T"("C") values ({sql_value});', RedoTable.of("C"))
    return dml.after[0]


@dataclass(frozen=True)
class Case:
    column: OracleColumn
    value: RedoValue
    settings: OracleConverterSettings

    def probe(self) -> tuple[str, str, str]:
        s, c = self.settings, self.column
        modes = f"{s.decimal_mode},{s.time_precision_mode},{s.binary_mode},{s.interval_mode}"
        col = f"{JDBC[c.type]}:{c.type.value}:{c.length}:{'' if c.scale is None else c.scale}:{str(c.optional).lower()}"
        value = "N" if self.value is None else "U" if self.value is UNAVAILABLE else "S" + str(self.value)
        return modes, col, value


def col(t: OracleType, length: int = 0, scale: int | None = None, optional: bool = True) -> OracleColumn:
    return OracleColumn("C", t, length, scale, optional)


NUMBERS = ["'0'", "'1'", "'-7'", "'123.45'", "'-0.001'", "'99'", "'1E+3'", "'12345678901234567890.5'", "'100'"]
NUMBER_COLUMNS = [col(OracleType.NUMBER, 2, 0), col(OracleType.NUMBER, 4, 0), col(OracleType.NUMBER, 9, 0),
                  col(OracleType.NUMBER, 18, 0), col(OracleType.NUMBER, 38, 0), col(OracleType.NUMBER, 10, 2),
                  col(OracleType.NUMBER, 30, 5), col(OracleType.NUMBER, 0, None), col(OracleType.FLOAT, 126),
                  col(OracleType.NUMBER, 5, -2)]
TIMES = ["TO_DATE('2020-02-01 10:11:12', 'YYYY-MM-DD HH24:MI:SS')", "TO_TIMESTAMP('2020-02-01 10:11:12.')",
         "TO_TIMESTAMP('1969-12-31 23:59:59.999999')", "TO_TIMESTAMP('2038-01-19 03:14:08.123456789')",
         "TO_TIMESTAMP('0001-01-01 00:00:00.5')"]
ZONED = ["TO_TIMESTAMP_TZ('2020-02-01 10:11:12.123456 +02:00')", "TO_TIMESTAMP_TZ('2020-02-01 10:11:12. -08:30')",
         "TO_TIMESTAMP_TZ('1999-12-31 23:59:59.987654321 +00:00')"]
STRINGS = ["'plain'", "'Bob''s'", "UNISTR('\\0412\\044B') || UNISTR('\\043F\\043E')", "UNISTR('\\D83D\\DE00 ok')",
           "EMPTY_CLOB()", "'line\nbreak'", "''''"]
BINARIES = ["HEXTORAW('0aff00')", "HEXTORAW('')", "EMPTY_BLOB()"]
INTERVALS = [(OracleType.INTERVAL_YM, "TO_YMINTERVAL('+02-03')"), (OracleType.INTERVAL_YM, "TO_YMINTERVAL('-01-11')"),
             (OracleType.INTERVAL_DS, "TO_DSINTERVAL('+02 03:04:05.123456')"),
             (OracleType.INTERVAL_DS, "TO_DSINTERVAL('-00 00:00:01.500000')"),
             (OracleType.INTERVAL_DS, "TO_DSINTERVAL('+10 23:59:59.000001')")]


def cases() -> list[Case]:
    out: list[Case] = []
    for mode in ("precise", "double", "string"):
        s = OracleConverterSettings(decimal_mode=mode)  # type: ignore[arg-type]
        for c in NUMBER_COLUMNS:
            out += [Case(c, lit(v), s) for v in NUMBERS if not (c.scale is not None and c.scale <= 0
                                                                and not v.strip("'").lstrip("-").isdigit()
                                                                and "E" not in v)]
            out.append(Case(c, None, s))
        floats = ("'1.5E+000'", "'-2.25E-003'", "'3.4028235E+038'")
        doubles = ("'1.5E+000'", "'0.1'", "'-1.7976931348623157E+308'")
        out += [Case(col(OracleType.BINARY_FLOAT), lit(v), s) for v in floats]
        out += [Case(col(OracleType.BINARY_DOUBLE), lit(v), s) for v in doubles]
    for mode in ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"):
        s = OracleConverterSettings(time_precision_mode=mode)  # type: ignore[arg-type]
        for c in (col(OracleType.DATE), col(OracleType.TIMESTAMP, 3), col(OracleType.TIMESTAMP, 6),
                  col(OracleType.TIMESTAMP, 9), col(OracleType.TIMESTAMP, 0)):
            out += [Case(c, lit(v), s) for v in TIMES]
        for c in (col(OracleType.TIMESTAMP_TZ, 6), col(OracleType.TIMESTAMP_TZ, 0), col(OracleType.TIMESTAMP_TZ, 9),
                  col(OracleType.TIMESTAMP_LTZ, 3)):
            out += [Case(c, lit(v), s) for v in ZONED]
    for mode in ("bytes", "base64", "base64-url-safe", "hex"):
        s = OracleConverterSettings(binary_mode=mode)  # type: ignore[arg-type]
        for c in (col(OracleType.RAW, 16), col(OracleType.BLOB), col(OracleType.BLOB, optional=False)):
            out += [Case(c, lit(v), s) for v in BINARIES] + [Case(c, UNAVAILABLE, s)]
    s = OracleConverterSettings()
    for t in (OracleType.VARCHAR2, OracleType.NVARCHAR2, OracleType.CHAR, OracleType.NCHAR, OracleType.CLOB,
              OracleType.NCLOB):
        for optional in (True, False):
            out += [Case(col(t, 100, optional=optional), lit(v), s) for v in STRINGS]
        out.append(Case(col(t, 100), UNAVAILABLE, s))
    for mode in ("numeric", "string"):
        s = OracleConverterSettings(interval_mode=mode)  # type: ignore[arg-type]
        out += [Case(col(t, 2, 6 if t is OracleType.INTERVAL_DS else None), lit(v), s) for t, v in INTERVALS]
    return out


@pytest.fixture(scope="module")
def answers() -> list[list[str]]:
    return run_probe("OracleConverterProbe.java", [c.probe() for c in cases()])


def test_every_value_converts_as_debezium_converts_it(answers: list[list[str]]) -> None:
    all_cases = cases()
    assert len(all_cases) >= 300 and len(answers) == len(all_cases)
    differ = []
    errors = 0
    for case, answer in zip(all_cases, answers, strict=True):
        theirs: Any = ("error", None) if len(answer) == 1 else (json.loads(answer[0]), json.loads(answer[1])["c"])
        ours: Any
        try:
            ours = (field_schema(case.column, case.settings), convert(case.column, case.value, case.settings))
        except OracleValueError:
            ours = ("error", None)
        if ours != theirs:
            differ.append(f"{case}\n ours:     {ours}\n debezium: {theirs} {answer[0] if len(answer) == 1 else ''}")
        errors += ours[0] == "error"
    assert not differ, f"{len(differ)} differ:\n" + "\n".join(differ[:6])
    assert errors < 20


def test_values_not_in_logminer_form_are_errors_naming_the_column() -> None:
    s = OracleConverterSettings()
    with pytest.raises(OracleValueError, match=r"column C: expected TO_DATE"):
        convert(col(OracleType.DATE), lit("'2020-01-01'"), s)
    with pytest.raises(OracleValueError, match="column C"):
        convert(col(OracleType.NUMBER, 10, 2), lit("'abc'"), s)
    with pytest.raises(OracleValueError, match="HEXTORAW"):
        convert(col(OracleType.RAW, 4), lit("'0a'"), s)
