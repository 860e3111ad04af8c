"""Property tests: every vectorised MySQL rendering equals the per-value converter, value by value.

For each column kind the columnar snapshot vectorises, many texts (random ones with a fixed seed,
the edge values MySQL prints, and texts it never prints, which the encoders must hand back to
the converter) are rendered with `render_column` and the encoder `column_render.encoder_for`
picks, and compared with ``orjson.dumps(convert(value))`` where ``value`` is what pymysql would
deliver (``dumps(fallback)`` for NULL), under several converter settings.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pytest
from pymysql.constants import FIELD_TYPE

from cdc_sources.common.column_render import render_column
from cdc_sources.mysql.column_render import encoder_for
from cdc_sources.mysql.converters import MySqlConverterSettings, converter_for
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.model import ColumnDef, TableId
from cdc_sources.mysql.raw_values import BINARY_CHARSET, ResultColumn, decoding

RNG_SEED = 20261205
UTF8MB4 = 45
EPOCH = dt.datetime(1970, 1, 1)

DDL = """CREATE TABLE t (
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, si SMALLINT, ti TINYINT, mi MEDIUMINT, iz INT(6) ZEROFILL,
  yr YEAR, vc VARCHAR(40), tx TEXT, en ENUM('a','b,c'), st SET('x','y'), js JSON,
  d2 DECIMAL(12,2), d0 DECIMAL(10,0), d6 DECIMAL(18,6), dn DECIMAL(8,3) NOT NULL DEFAULT 1.5,
  dt DATE, dtn DATE NOT NULL DEFAULT '2000-01-01', dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  dtmn DATETIME(3) NOT NULL DEFAULT '2000-01-01 00:00:00', ts TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL,
  ts6 TIMESTAMP(6) NULL, tsn TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00'
)"""

RESULT_TYPES = {
    "i": FIELD_TYPE.LONG, "iu": FIELD_TYPE.LONG, "bi": FIELD_TYPE.LONGLONG, "biu": FIELD_TYPE.LONGLONG,
    "si": FIELD_TYPE.SHORT, "ti": FIELD_TYPE.TINY, "mi": FIELD_TYPE.INT24, "iz": FIELD_TYPE.LONG,
    "yr": FIELD_TYPE.YEAR, "vc": FIELD_TYPE.VAR_STRING, "tx": FIELD_TYPE.BLOB, "en": FIELD_TYPE.STRING,
    "st": FIELD_TYPE.STRING, "js": FIELD_TYPE.BLOB, "d2": FIELD_TYPE.NEWDECIMAL, "d0": FIELD_TYPE.NEWDECIMAL,
    "d6": FIELD_TYPE.NEWDECIMAL, "dn": FIELD_TYPE.NEWDECIMAL, "dt": FIELD_TYPE.DATE, "dtn": FIELD_TYPE.DATE,
    "dtm": FIELD_TYPE.DATETIME, "dtm3": FIELD_TYPE.DATETIME, "dtm6": FIELD_TYPE.DATETIME,
    "dtmn": FIELD_TYPE.DATETIME, "ts": FIELD_TYPE.TIMESTAMP, "ts3": FIELD_TYPE.TIMESTAMP,
    "ts6": FIELD_TYPE.TIMESTAMP, "tsn": FIELD_TYPE.TIMESTAMP,
}
"""The protocol type each column's values arrive as (what MariaDB reports for a SELECT of it)."""

SETTINGS = {
    "default": MySqlConverterSettings(),
    "connect_strings": MySqlConverterSettings(time_precision_mode="connect", decimal_handling_mode="string",
                                              enable_time_adjuster=False),
    "micros_fail": MySqlConverterSettings(time_precision_mode="microseconds",
                                          event_converting_failure_handling_mode="fail"),
}

VECTORISED = {
    "default": {"i", "iu", "bi", "biu", "si", "ti", "mi", "iz", "yr", "vc", "tx", "en", "st", "js", "d2", "d0", "d6",
                "dn", "dt", "dtn", "dtm", "dtm3", "dtm6", "dtmn", "ts", "ts3", "ts6", "tsn"},
    "connect_strings": {"i", "iu", "bi", "biu", "si", "ti", "mi", "iz", "yr", "vc", "tx", "en", "st", "js", "d2",
                        "d0", "d6", "dn", "dt", "dtn", "dtm", "dtm3", "dtm6", "dtmn", "ts", "ts3", "ts6", "tsn"},
    "micros_fail": {"i", "iu", "bi", "biu", "si", "ti", "mi", "iz", "yr", "vc", "tx", "en", "st", "js", "d2", "d0",
                    "d6", "dn", "dt", "dtn", "dtm", "dtm3", "dtm6", "dtmn", "ts", "ts3", "ts6", "tsn"},
}
"""The columns each settings variant must vectorise (the others would be rendered per value)."""


def _columns() -> dict[str, ColumnDef]:
    model = SchemaModel()
    model.apply(DDL, database="d")
    table = model.table(TableId("d", "t"))
    assert table is not None
    return {c.name: c for c in table.columns}


COLUMNS = _columns()


def _result(name: str) -> ResultColumn:
    code = RESULT_TYPES[name]
    text = code in (FIELD_TYPE.VAR_STRING, FIELD_TYPE.BLOB, FIELD_TYPE.STRING)
    return ResultColumn(name, code, 0, UTF8MB4 if text else BINARY_CHARSET)


# -- texts as MySQL prints them, and texts it never prints -----------------------------------------

def _integers(rng: random.Random, bits: int, unsigned: bool) -> list[str]:
    low, high = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    edges = [low, high, 0, 1, -1 if not unsigned else 2, low + 1, high - 1]
    return [str(v) for v in edges + [rng.randint(low, high) for _ in range(300)]]


def _decimals(rng: random.Random, precision: int, scale: int) -> list[str]:
    def text(unscaled: int) -> str:
        sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled)).rjust(scale + 1, "0")
        return sign + (f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits)
    top = 10**precision - 1
    edges = [0, 1, -1, top, -top, 10**scale, -(10**scale)]
    return [text(v) for v in edges + [rng.randint(-top, top) for _ in range(300)]]


def _date_text(days: int) -> str:
    day = dt.date(1970, 1, 1) + dt.timedelta(days=days)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def _dates(rng: random.Random) -> list[str]:
    low, high = (dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days, (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days
    edges = ["1000-01-01", "9999-12-31", "1970-01-01", "1969-12-31", "2024-02-29", "0000-00-00", "2020-00-15",
             "2020-05-00", "0000-01-01", "0001-01-01", "0050-06-15", "0069-12-31", "0070-01-01", "0099-12-31",
             "0100-01-01", "2023-02-29", "2024-04-31", "2024-13-01"]
    return edges + [_date_text(rng.randint(low, high)) for _ in range(300)]


def _datetime_text(micros: int, digits: int) -> str:
    micros -= micros % 10 ** (6 - digits)
    when = EPOCH + dt.timedelta(microseconds=micros)
    text = f"{when.year:04d}-{when.month:02d}-{when.day:02d} {when.hour:02d}:{when.minute:02d}:{when.second:02d}"
    return text + (f".{when.microsecond:06d}"[:digits + 1] if digits else "")


def _datetimes(rng: random.Random, digits: int, low_year: int = 1, high_year: int = 9999) -> list[str]:
    low = int((dt.datetime(low_year, 1, 1) - EPOCH).total_seconds()) * 10**6
    high = int((dt.datetime(high_year, 12, 31, 23, 59, 59) - EPOCH).total_seconds()) * 10**6
    zero = "0000-00-00 00:00:00" + ("." + "0" * digits if digits else "")
    edges = [zero, "2020-00-01 00:00:00" + ("." + "0" * digits if digits else ""),
             _datetime_text(0, digits), _datetime_text(-1, digits), _datetime_text(low, digits),
             _datetime_text(high, digits), "0050-06-15 12:00:00", "0069-12-31 23:59:59", "0070-01-01 00:00:00",
             "2024-02-29 12:00:00" + (".5".ljust(digits + 1, "0") if digits else ""),
             "2000-01-01 00:00:00" + ("." + "0" * (digits - 1) + "1" if digits else "")]
    near = [rng.randint(-10**13, 10**13) for _ in range(150)]
    return edges + [_datetime_text(m, digits) for m in near + [rng.randint(low, high) for _ in range(150)]]


def _strings(rng: random.Random) -> list[str]:
    alphabet = "abcXYZ 019_-é☃😀\u2028\"\\\t\n\x01\x00,{}[]:"
    edges = ["", " ", "plain", 'quote " back \\ tab \t nl \n', "ctl \x01 \x1f end", "ünïcödé 😀", "\u2028\u2029",
             "null", "{}", "nul\x00"]
    return edges + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(300)]


TEXTS: dict[str, Callable[[random.Random], list[str]]] = {
    "i": lambda r: _integers(r, 32, False), "iu": lambda r: _integers(r, 32, True),
    "bi": lambda r: _integers(r, 64, False), "biu": lambda r: _integers(r, 64, True),
    "si": lambda r: _integers(r, 16, False), "ti": lambda r: _integers(r, 8, False),
    "mi": lambda r: _integers(r, 24, False),
    "iz": lambda r: [str(v).rjust(6, "0") for v in (0, 1, 42, 999999, 1000000, 4294967295)],
    "yr": lambda r: ["0000", "1901", "2155", "2024", *(str(r.randint(1901, 2155)) for _ in range(50))],
    "vc": _strings, "tx": _strings, "en": lambda r: ["a", "b,c", ""], "st": lambda r: ["", "x", "y", "x,y"],
    "js": lambda r: ['{"a": [1, "x\\"y"]}', "[]", '"scalar"', "null", "{}"],
    "d2": lambda r: _decimals(r, 12, 2), "d0": lambda r: _decimals(r, 10, 0), "d6": lambda r: _decimals(r, 18, 6),
    "dn": lambda r: _decimals(r, 8, 3),
    "dt": _dates, "dtn": _dates,
    "dtm": lambda r: _datetimes(r, 0), "dtm3": lambda r: _datetimes(r, 3), "dtm6": lambda r: _datetimes(r, 6),
    "dtmn": lambda r: _datetimes(r, 3),
    "ts": lambda r: _datetimes(r, 0, 1970, 2037), "ts3": lambda r: _datetimes(r, 3, 1970, 2037),
    "ts6": lambda r: _datetimes(r, 6, 1970, 2037), "tsn": lambda r: _datetimes(r, 0, 1970, 2037),
}

ODD_TEXTS = ["", " 1", "1 ", "+1", "-0", "1e3", "0x1F", "1.5.5", "--1", "1-", "٣", "12:00", "2024-01-01T00:00:00",
             "2024-1-1", "2024-01-01 0:00:00", "99999-01-01", "-2024-01-01"]
"""Texts MySQL never prints for these types: the encoders must leave them to the converter."""


def _outcome(convert: Callable[[Any], Any], value: Any) -> str | type[Exception]:
    try:
        return orjson.dumps(convert(value)).decode()
    except Exception as exc:  # what the per-row rendering raises
        return type(exc)


def _check(name: str, settings: MySqlConverterSettings, texts: Sequence[str | None]) -> bool:
    """Vectorised == per value on an unaligned slice; returns whether an encoder was used."""
    column, result = COLUMNS[name], _result(name)
    conv = converter_for(column, settings, origin="snapshot")
    assert conv is not None
    coding = decoding(result)
    convert = coding.converter(conv.convert)
    encoder = encoder_for(column, conv.convert, settings, result)
    outcomes = [orjson.dumps(conv.null_value).decode() if t is None else _outcome(convert, t) for t in texts]
    accepted = [t for t, o in zip(texts, outcomes, strict=True) if isinstance(o, str)]
    array = pa.array(["pad", *accepted, "pad"], pa.string()).slice(1, len(accepted))
    expected = [o for o in outcomes if isinstance(o, str)]
    assert render_column(array, convert, conv.null_value, encoder).to_pylist() == expected
    for text, outcome in zip(texts, outcomes, strict=True):
        if not isinstance(outcome, str):
            with pytest.raises(outcome):
                render_column(pa.array([*accepted[:1], text], pa.string()), convert, conv.null_value, encoder)
    return encoder is not None


@pytest.mark.parametrize("variant", sorted(SETTINGS))
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_vectorised_rendering_equals_the_converter(name: str, variant: str) -> None:
    settings = SETTINGS[variant]
    rng = random.Random(f"{RNG_SEED}-{name}")
    texts: list[str | None] = [*TEXTS[name](rng), None, None]
    rng.shuffle(texts)
    vectorised = _check(name, settings, texts)
    assert vectorised == (name in VECTORISED[variant]), f"{name} ({variant}) vectorised: {vectorised}"


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_texts_mysql_never_prints_go_to_the_converter(name: str) -> None:
    for variant, settings in SETTINGS.items():
        assert _check(name, settings, ODD_TEXTS) == (name in VECTORISED[variant])


def test_the_encoders_claim_mysqls_own_texts() -> None:
    """The fast path is really taken: canonical values are not handed back to the converter."""
    settings = SETTINGS["default"]
    claimed = {"i": ["-5", "0", "2147483647"], "biu": ["0", "123456789012345678"], "yr": ["2024", "1901"],
               "vc": ["plain", 'q"uote', "back\\slash"], "d2": ["-123.45", "0.00", "9999999999.99"],
               "d0": ["-5", "0"], "dt": ["2024-02-29", "1000-01-01"], "dtm3": ["2024-01-02 03:04:05.678"],
               "dtm6": ["1969-12-31 23:59:59.999999"], "ts3": ["2024-01-02 03:04:05.500", "1970-01-01 00:00:01.000"],
               "ts": ["2038-01-19 03:14:07"]}
    for name, texts in claimed.items():
        column, result = COLUMNS[name], _result(name)
        conv = converter_for(column, settings, origin="snapshot")
        assert conv is not None
        encoder = encoder_for(column, conv.convert, settings, result)
        assert encoder is not None, name
        _, redo = encoder(pa.array(texts, pa.string()))
        assert redo is None or not any(redo.to_pylist()), f"{name}: the encoder hands MySQL's own texts back"


def test_transformed_and_binary_fields_are_rendered_per_value() -> None:
    settings = SETTINGS["default"]
    column = COLUMNS["vc"]
    conv = converter_for(column, settings, origin="snapshot")
    assert conv is not None

    def masked(value: Any) -> Any:
        return "*****"
    assert encoder_for(column, masked, settings, _result("vc")) is None
    binary = ResultColumn("vc", FIELD_TYPE.VAR_STRING, 0, BINARY_CHARSET)  # bytes: not a text column
    assert encoder_for(column, conv.convert, settings, binary) is None
    as_text = ResultColumn("d2", FIELD_TYPE.VAR_STRING, 0, UTF8MB4)  # an override selecting a DECIMAL as text
    decimal = converter_for(COLUMNS["d2"], settings, origin="snapshot")
    assert decimal is not None
    assert encoder_for(COLUMNS["d2"], decimal.convert, settings, as_text) is None
