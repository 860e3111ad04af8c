"""cdc_sources.sqlserver.converters against Debezium 3.6.3's SqlServerValueConverters, value by value.

SqlServerConverterProbe.java builds Debezium's ``Column`` with the JDBC type Microsoft's JDBC
driver reports for each SQL Server type, hands Debezium's converter the Java object the driver
returns (``TIME`` is read with ``getTimestamp``, as Debezium's ``SqlServerConnection`` does) and
answers the field schema and the JsonConverter JSON of each value. Our converter gets the same
value as pyodbc returns it (and, for 100 ns digits, as SQL Server's text), and both answers must
be equal, under every ``decimal.handling.mode``, ``time.precision.mode`` and
``binary.handling.mode``.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from cdc_sources.common import kschema as ks
from cdc_sources.sqlserver.converters import (
    ConverterSettings,
    SqlServerColumn,
    ValueConversionError,
    column_converter,
)
from tests.cdc_sources.sqlserver.java_probe import run_json

DECIMAL_MODES = ("precise", "double", "string")
TIME_MODES = ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds")
BINARY_MODES = ("bytes", "base64", "base64-url-safe", "hex")


@dataclass(frozen=True)
class Type:
    """A SQL Server column type: its name, the JDBC type and length the driver reports, its scale."""

    name: str
    jdbc: int
    length: int
    scale: int | None = None
    modes: str = ""  # which option shapes it: "decimal", "time", "binary" or ""


Case = tuple[str, str, Sequence[Any]]
"""(Java kind, Java text, the Python values pyodbc may hand us for it)."""


def ints(kind: str, values: Sequence[int]) -> list[Case]:
    return [(kind, str(v), [v]) for v in values]


def decimals(values: Sequence[str]) -> list[Case]:
    return [("BigDecimal", v, [Decimal(v)]) for v in values]


def strings(values: Sequence[str]) -> list[Case]:
    return [("String", v, [v]) for v in values]


def binaries(values: Sequence[bytes]) -> list[Case]:
    return [("Bytes", v.hex(), [v, bytearray(v)]) for v in values]


def timestamps(values: Sequence[str]) -> list[Case]:
    out: list[Case] = []
    for text in values:
        py: list[Any] = [text]
        if len(text.partition(".")[2]) <= 6:
            py.append(dt.datetime.fromisoformat(text))
        out.append(("Timestamp", text, py))
    return out


def times(values: Sequence[str]) -> list[Case]:
    out: list[Case] = []
    for text in values:
        py: list[Any] = [text]
        if len(text.partition(".")[2]) <= 6:
            py.append(dt.time.fromisoformat(text))
        out.append(("Timestamp", f"1900-01-01 {text}", py))
    return out


def offsets(values: Sequence[tuple[str, int]]) -> list[Case]:
    """(local date-time text, offset minutes): the driver hands Debezium the UTC instant and the offset."""
    out: list[Case] = []
    for local, minutes in values:
        head, _, frac = local.partition(".")
        utc = dt.datetime.fromisoformat(head) - dt.timedelta(minutes=minutes)
        java = f"{utc.year:04d}-{utc:%m-%d %H:%M:%S}" + (f".{frac}" if frac else "") + f"|{minutes}"
        sign = "+" if minutes >= 0 else "-"
        text = f"{local} {sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        py: list[Any] = [text]
        if len(frac) <= 6:
            py.append(dt.datetime.fromisoformat(local).replace(tzinfo=dt.timezone(dt.timedelta(minutes=minutes))))
        out.append(("DateTimeOffset", java, py))
    return out


TS = ["1970-01-01 00:00:00", "2018-06-20 15:13:16.9451049", "2018-06-20 15:13:16.945104", "1900-01-01 00:00:00",
      "1753-01-01 00:00:00.003", "9999-12-31 23:59:59.9999999", "1969-12-31 23:59:59.9999999", "2000-02-29 12:00:00.5",
      "0001-01-01 00:00:00"]
TIMES = ["00:00:00", "15:13:16.9451049", "23:59:59.9999999", "12:00:00.5", "01:02:03.123456", "10:00:00.001"]
CASES: list[tuple[Type, list[Case]]] = [
    (Type("bit", -7, 1), [("Boolean", "true", [True, 1]), ("Boolean", "false", [False, 0])]),
    (Type("tinyint", -6, 3), ints("Short", [0, 1, 127, 255])),
    (Type("smallint", 5, 5), ints("Short", [-32768, -1, 0, 32767])),
    (Type("int", 4, 10), ints("Integer", [-2147483648, 0, 42, 2147483647])),
    (Type("bigint", -5, 19), ints("Long", [-9223372036854775808, 0, 9223372036854775807])),
    (Type("real", 7, 24), [("Float", t, [float(t)]) for t in ["0.0", "1.1", "-3.4028235E38", "1.4E-45", "123.456"]]),
    (Type("float", 8, 53), [("Double", t, [float(t)]) for t in ["0.0", "1.1", "-1.7976931348623157E308", "4.9E-324",
                                                                "0.1"]]),
    (Type("decimal", 3, 18, 4, "decimal"), decimals(["0.0000", "1.2500", "-12345678901234.5678", "0.0001"])),
    (Type("decimal", 3, 38, 10, "decimal"), decimals(["1234567890123456789012345678.9012345678", "-0.0000000001"])),
    (Type("decimal", 3, 5, 0, "decimal"), decimals(["0", "99999", "-99999"])),
    (Type("numeric", 2, 10, 2, "decimal"), decimals(["12.50", "-0.01", "99999999.99"])),
    (Type("money", -148, 19, 4, "decimal"), decimals(["12.5000", "-922337203685477.5808", "922337203685477.5807"])),
    (Type("smallmoney", -146, 10, 4, "decimal"), decimals(["-214748.3648", "214748.3647", "0.0000"])),
    (Type("char", 1, 10), strings(["abc       ", "          "])),
    (Type("varchar", 12, 255), strings(["", "hello", "a'b\"c\\d"])),
    (Type("text", -1, 2147483647), strings(["long text"])),
    (Type("nchar", -15, 4), strings(["\u00e9t\u00e9 ", "\u65e5\u672c\u8a9e\u3000"])),
    (Type("nvarchar", -9, 4000), strings(["\u65e5\u672c\u8a9e", "\U0001f600", "line\nbreak"])),
    (Type("ntext", -16, 1073741823), strings(["unicode \u00fc"])),
    (Type("xml", 2009, 0), strings(["<a b=\"1\">x</a>"])),
    (Type("uniqueidentifier", 1, 36),
     [("String", "6F9619FF-8B86-D011-B42D-00C04FC964FF",
       ["6F9619FF-8B86-D011-B42D-00C04FC964FF", uuid.UUID("6f9619ff-8b86-d011-b42d-00c04fc964ff")])]),
    (Type("binary", -2, 4, None, "binary"), binaries([b"\x00\x01\xfe\xff", b"\xfb\xff\xbf\x00"])),
    (Type("varbinary", -3, 8000, None, "binary"), binaries([b"", b"hello", bytes(range(256))])),
    (Type("image", -4, 2147483647, None, "binary"), binaries([b"\x89PNG"])),
    (Type("timestamp", -2, 8, None, "binary"), binaries([b"\x00\x00\x00\x00\x00\x00\x07\xd1"])),
    (Type("hierarchyid", -3, 892, None, "binary"), binaries([b"\x58", b""])),
    (Type("date", 91, 10, 0, "time"),
     [("Date", t, [dt.date.fromisoformat(t), t]) for t in ["1970-01-01", "2018-06-20", "0001-01-01", "9999-12-31",
                                                           "1969-12-31"]]),
    *[(Type("time", 92, 8 + (s + 1 if s else 0), s, "time"), times(TIMES)) for s in (0, 3, 6, 7)],
    (Type("datetime", 93, 23, 3, "time"), timestamps(["2018-06-20 15:13:16.947", "1753-01-01 00:00:00",
                                                      "9999-12-31 23:59:59.997", "1969-12-31 23:59:59.997"])),
    (Type("smalldatetime", 93, 16, 0, "time"), timestamps(["2018-06-20 15:13:00", "1900-01-01 00:00:00"])),
    *[(Type("datetime2", 93, 19 + (s + 1 if s else 0), s, "time"), timestamps(TS)) for s in (0, 3, 6, 7)],
    *[(Type("datetimeoffset", -155, 26 + (s + 1 if s else 0), s, "time"),
       offsets([("2018-06-20 15:13:16.9451049", 120), ("2018-06-20 15:13:16.9451049", 0),
                ("2018-06-20 15:13:16.5", -330), ("1970-01-01 00:00:00", 840), ("2020-01-01 00:30:00", -60),
                ("0001-01-01 12:00:00", 0), ("2018-06-20 15:13:16.123456", 60)]))
      for s in (0, 3, 7)],
    (Type("sql_variant", -150, 8016), []),
    (Type("geometry", -157, 2147483647), []),
    (Type("geography", -158, 2147483647), []),
]


def settings_for(t: Type) -> list[ConverterSettings]:
    if t.modes == "decimal":
        return [ConverterSettings(decimal_mode=m) for m in DECIMAL_MODES]  # type: ignore[arg-type]
    if t.modes == "time":
        return [ConverterSettings(time_precision_mode=m) for m in TIME_MODES]  # type: ignore[arg-type]
    if t.modes == "binary":
        return [ConverterSettings(binary_mode=m) for m in BINARY_MODES]  # type: ignore[arg-type]
    return [ConverterSettings()]


@pytest.fixture(scope="module")
def debezium() -> dict[tuple[Type, ConverterSettings], dict[str, Any]]:
    keys = [(t, s) for t, _ in CASES for s in settings_for(t)]
    requests = [{"jdbcType": t.jdbc, "typeName": t.name, "length": t.length, "scale": t.scale,
                 "decimal": s.decimal_mode, "time": s.time_precision_mode, "binary": s.binary_mode,
                 "values": [[kind, text] for kind, text, _ in dict(CASES)[t]]} for t, s in keys]
    return dict(zip(keys, run_json("SqlServerConverterProbe", requests), strict=True))


def ours(t: Type, settings: ConverterSettings, value: Any) -> Any:
    converter = column_converter(SqlServerColumn("v", t.name, t.length, t.scale), settings)
    assert converter is not None
    try:
        return json.loads(json.dumps(converter.convert(value)))
    except ValueConversionError:
        return "error"


def theirs(value: Any) -> Any:
    return "error" if isinstance(value, str) and value.startswith("ERR:") else value


@pytest.mark.conformance
def test_every_type_and_mode_converts_like_debezium(
        debezium: dict[tuple[Type, ConverterSettings], dict[str, Any]]) -> None:
    differences, compared = [], 0
    for (t, settings), answer in debezium.items():
        converter = column_converter(SqlServerColumn("v", t.name, t.length, t.scale), settings)
        label = f"{t.name}({t.length},{t.scale}) {settings}"
        if answer["schema"] is None or converter is None:
            if (answer["schema"] is None) != (converter is None):
                differences.append(f"{label}: supported by {'us' if converter else 'Debezium'} only")
            continue
        schema = ks.complete(converter.schema, optional=True, field="v")
        if schema != answer["schema"]:
            differences.append(f"{label}: schema ours {schema}, Debezium {answer['schema']}")
        for (kind, text, py_values), expected in zip(dict(CASES)[t], answer["values"], strict=True):
            for py in py_values:
                compared += 1
                got = ours(t, settings, py)
                if got != theirs(expected):
                    differences.append(f"{label} {kind} {text!r} as {py!r}: ours {got!r}, Debezium {expected!r}")
    assert differences == []
    assert compared > 1100


def test_null_stays_null_and_wrong_python_types_name_the_column() -> None:
    converter = column_converter(SqlServerColumn("qty", "int"), ConverterSettings())
    assert converter is not None and converter.convert(None) is None
    with pytest.raises(ValueConversionError, match=r"column qty \(int\): cannot convert a str value"):
        converter.convert("12")
    with pytest.raises(ValueConversionError, match="not known"):
        column_converter(SqlServerColumn("x", "cursor"), ConverterSettings())


@pytest.mark.parametrize("text, reason", [("2018-13-01", "month"), ("noon", "text"), ("", "empty")])
def test_bad_temporal_text_is_an_error(text: str, reason: str) -> None:
    converter = column_converter(SqlServerColumn("at", "datetime2", 27, 7), ConverterSettings())
    assert converter is not None
    convert: Callable[[Any], Any] = converter.convert
    with pytest.raises(ValueConversionError):
        convert(text)
