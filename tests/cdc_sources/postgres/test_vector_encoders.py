"""Property tests: every vectorised rendering equals the per-value converter, value by value.

For each type the columnar snapshot vectorises, many texts (random ones with a fixed seed, the
edge cases PostgreSQL can print, and texts it never prints, which the encoders must hand back
to the converter) are rendered with `column_render.render_column` and compared with
``orjson.dumps(convert(text))`` (``dumps(fallback)`` for NULL).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pytest

from cdc_sources.postgres.column_render import encoder_for, render_column
from cdc_sources.postgres.converters import ConverterSettings, converter_for
from cdc_sources.postgres.schema import FieldCodec
from cdc_sources.postgres.types import PgColumn
from tests.cdc_sources.postgres.converters.pgtypes import builtin, domain, enum, numeric_typmod

RNG_SEED = 20261122
EPOCH = dt.datetime(1970, 1, 1)


def _column(type_name: str, typmod: int = -1, nullable: bool = True) -> PgColumn:
    return PgColumn("c", builtin(type_name), typmod, nullable)


def _expected(convert: Callable[[str], Any], fallback: Any, texts: Sequence[str | None]) -> list[str]:
    return [orjson.dumps(fallback if t is None else convert(t)).decode() for t in texts]


def _rejects(convert: Callable[[str], Any], text: str | None) -> type[Exception] | None:
    if text is None:
        return None
    try:
        orjson.dumps(convert(text))
    except Exception as exc:  # the exception the per-row rendering raises
        return type(exc)
    return None


def _check(column: PgColumn, texts: Sequence[str | None], settings: ConverterSettings | None = None, *,
           claimed: int = 0) -> None:
    """Vectorised == per value, on an unaligned slice of an array.

    Texts the converter rejects must make the vectorised rendering raise the same exception.
    The encoder itself (not the per-value fallback) must render the first ``claimed`` texts.
    """
    settings = settings or ConverterSettings()
    conv = converter_for(column, settings, origin="snapshot")
    assert conv is not None
    encoder = encoder_for(column, conv.convert, settings)
    assert encoder is not None, f"{column.type.name} is not vectorised"
    field = FieldCodec("c", 0, conv.convert, conv.unavailable, conv.null_value)
    accepted = [t for t in texts if _rejects(conv.convert, t) is None]
    array = pa.array(["pad", *accepted, "pad"], pa.string()).slice(1, len(accepted))
    assert render_column(array, field, encoder).to_pylist() == _expected(conv.convert, conv.null_value, accepted)
    if claimed:
        _, redo = encoder(pa.array(texts[:claimed], pa.string()))
        assert redo is None or not any(redo.to_pylist()), "the encoder hands PostgreSQL's own texts back"
    for text in texts:
        error = _rejects(conv.convert, text)
        if error is not None:
            with pytest.raises(error):
                render_column(pa.array([accepted[0], text], pa.string()), field, encoder)


def _pg_timestamp(micros: int, digits: int, suffix: str = "") -> str:
    """How PostgreSQL prints a timestamp with ``digits`` fraction digits: trailing zeros cut."""
    step = 10 ** (6 - digits)
    micros -= micros % step
    when = EPOCH + dt.timedelta(microseconds=micros)
    text = when.strftime("%Y-%m-%d %H:%M:%S") if when.year >= 1000 else (
        f"{when.year:04d}" + when.strftime("-%m-%d %H:%M:%S"))
    fraction = f"{when.microsecond:06d}".rstrip("0")
    return text + (f".{fraction}" if fraction else "") + suffix


def _random_micros(rng: random.Random, n: int) -> list[int]:
    low = int((dt.datetime(1, 1, 1) - EPOCH).total_seconds()) * 10**6
    high = int((dt.datetime(9999, 12, 31, 23, 59, 59) - EPOCH).total_seconds()) * 10**6
    near = [rng.randint(-10**13, 10**13) for _ in range(n // 2)]  # around 1970, both signs
    return near + [rng.randint(low, high) for _ in range(n - len(near))]


# -- integers and booleans -----------------------------------------------------------------------

@pytest.mark.parametrize("type_name", ["int2", "int4", "int8", "oid"])
def test_integers_match_the_converter(type_name: str) -> None:
    rng = random.Random(RNG_SEED)
    bits = {"int2": 15, "int4": 31, "int8": 63, "oid": 32}[type_name]
    low, high = (0, 2**32 - 1) if type_name == "oid" else (-(2**bits), 2**bits - 1)
    texts: list[str | None] = [str(rng.randint(low, high)) for _ in range(3000)]
    texts += [str(low), str(high), "0", "-1", "1", None, "10", "-10", "100000000000000000", "999999999999999999"]
    _check(_column(type_name), texts, claimed=3000)


def test_integer_texts_postgres_never_prints_go_to_the_converter() -> None:
    texts = ["007", "-0", "+5", " 1", "1 ", "1_000", "\u0661\u0662", "00", "-007", "9223372036854775807",
             "-9223372036854775808", "-9223372036854775809", "-9999999999999999999", "9999999999999999999",
             "18446744073709551615", "18446744073709551616", "12", None]
    _check(_column("int8"), texts)


@pytest.mark.parametrize("text", ["0x10", "", "-", "1-2", "1.0", "1e3", "abc", "--1"])
def test_integer_texts_the_converter_rejects_fail_the_same_way(text: str) -> None:
    conv = converter_for(_column("int8"), ConverterSettings())
    assert conv is not None
    encoder = encoder_for(_column("int8"), conv.convert, ConverterSettings())
    field = FieldCodec("c", 0, conv.convert, conv.unavailable, None)
    with pytest.raises(ValueError, match="invalid literal"):
        render_column(pa.array(["1", text], pa.string()), field, encoder)


def test_integers_beyond_64_bits_fail_like_the_per_row_rendering() -> None:
    conv = converter_for(_column("int8"), ConverterSettings())
    assert conv is not None
    field = FieldCodec("c", 0, conv.convert, conv.unavailable, None)
    with pytest.raises(orjson.JSONEncodeError):
        render_column(pa.array(["123456789012345678901234"]), field, encoder_for(_column("int8"), conv.convert,
                                                                                   ConverterSettings()))


def test_booleans_match_the_converter() -> None:
    _check(_column("bool"), ["t", "f", None, "T", "F", "true", "", "x", "tt"])


def test_not_null_columns_render_null_as_their_fallback() -> None:
    _check(PgColumn("c", builtin("int4"), -1, False, "42"), ["1", None, "-3"])
    _check(PgColumn("c", builtin("bool"), -1, False), ["t", None])


# -- strings --------------------------------------------------------------------------------------

_ALPHABET = [*"abc XYZ 019", '"', "\\", "/", "'", "\x7f", "é", "ß", "\u2028", "\u2029", "\ufeff", "☃", "😀",
             *(chr(c) for c in range(0x20))]


@pytest.mark.parametrize("type_name", ["text", "varchar", "bpchar", "name", "char", "json", "jsonb", "xml",
                                       "uuid", "inet", "cidr", "macaddr", "tsvector", "int4range"])
def test_strings_match_the_converter(type_name: str) -> None:
    rng = random.Random(RNG_SEED)
    texts: list[str | None] = ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12))) for _ in range(2000)]
    texts += ["", None, '"', "\\", '\\"', "plain", "a\nb", "\x00", '{"a": [1, "x\\"y"]}']
    _check(_column(type_name), texts)
    _check(_column(type_name), [t for t in texts if t is None or all(ord(c) >= 0x20 for c in t)], claimed=1000)


def test_strings_without_specials_take_the_plain_path() -> None:
    _check(_column("text"), ["order note 1", "", None, "ünïcödé ☃", "x" * 1000])


def test_enum_and_domain_over_text_are_strings() -> None:
    _check(PgColumn("c", enum("mood", "sad", "ok"), -1, True), ["sad", "ok", None])
    _check(PgColumn("c", domain("email", builtin("text")), -1, True), ['a"b@c', "x@y", None])


# -- decimals -------------------------------------------------------------------------------------

def _decimal_text(unscaled: int, scale: int) -> str:
    sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled)).rjust(scale + 1, "0")
    return sign + (digits[:-scale] + "." + digits[-scale:] if scale else digits)


@pytest.mark.parametrize("scale", [0, 1, 2, 5, 10])
def test_fixed_scale_decimals_match_the_converter(scale: int) -> None:
    rng = random.Random(RNG_SEED + scale)
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 2**23, -(2**23) - 1,
             2**31, -(2**31) - 1, 2**55, -(2**55), 10**17, -(10**17), 2**63 - 1, -(2**63)]
    values = edges + [rng.randint(-(10**rng.randint(1, 18)), 10**18) for _ in range(3000)]
    texts: list[str | None] = [_decimal_text(v, scale) for v in values] + [None]
    _check(_column("numeric", numeric_typmod(18, scale)), texts, claimed=len(values))  # all unscaled fit 64 bits


def test_decimal_texts_postgres_never_prints_go_to_the_converter() -> None:
    texts = ["1.5", "5", "-0.00", "007.10", "1.234", "99999999999999999999.99", "+1.00", None]
    _check(_column("numeric", numeric_typmod(10, 2)), texts)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "0x1.00", "1e5", "1.2.3"])
def test_decimal_texts_the_converter_rejects_fail_the_same_way(text: str) -> None:
    settings = ConverterSettings()
    column = _column("numeric", numeric_typmod(10, 2))
    conv = converter_for(column, settings)
    assert conv is not None
    field = FieldCodec("c", 0, conv.convert, conv.unavailable, None)
    with pytest.raises(ValueError) as per_value:
        conv.convert(text)
    with pytest.raises(type(per_value.value)):
        render_column(pa.array(["1.00", text]), field, encoder_for(column, conv.convert, settings))


def test_decimal_string_mode_matches_the_converter() -> None:
    texts = ["1.50", "-0.01", "NaN", "Infinity", "-Infinity", None, "123456789012345678901234.5"]
    _check(_column("numeric", numeric_typmod(30, 1)), texts, ConverterSettings(decimal_handling_mode="string"))
    _check(_column("numeric"), texts, ConverterSettings(decimal_handling_mode="string"))


# -- temporal -------------------------------------------------------------------------------------

_ODD_TIMESTAMPS = ["infinity", "-infinity", "0044-03-15 12:00:00 BC", "12345-01-01 00:00:00",
                   "2020-02-30 10:00:00", "2020-01-01 24:00:00", "2020-01-01 10:00:60", "2020-01-01T10:00:00",
                   "2020-01-01 10:00:00.1234567", "2020-1-01 10:00:00"]


@pytest.mark.parametrize("typmod", [-1, 0, 1, 3, 4, 6])
def test_zoned_timestamps_match_the_converter(typmod: int) -> None:
    rng = random.Random(RNG_SEED + typmod)
    digits = 6 if typmod < 0 else typmod
    texts: list[str | None] = [_pg_timestamp(m, digits, "+00") for m in _random_micros(rng, 3000)]
    texts += [t + "+00" if t[-1] != "y" else t for t in _ODD_TIMESTAMPS]
    texts += ["2020-01-01 00:00:00.5+00", "2020-01-01 00:00:00.123456+00", "2020-01-01 10:00:00+05:30",
              "2020-01-01 10:00:00-08", "0001-01-01 00:00:00+00 BC", None, "2020-02-29 23:59:59.999999+00"]
    _check(_column("timestamptz", typmod), texts, claimed=3000)


@pytest.mark.parametrize(("typmod", "mode"), [(-1, "adaptive"), (6, "adaptive"), (4, "adaptive"), (3, "adaptive"),
                                              (0, "adaptive"), (-1, "adaptive_time_microseconds"),
                                              (2, "adaptive_time_microseconds"), (-1, "connect"),
                                              (-1, "microseconds")])
def test_timestamps_match_the_converter(typmod: int, mode: str) -> None:
    rng = random.Random(RNG_SEED + typmod)
    digits = 6 if typmod < 0 else typmod
    texts: list[str | None] = [_pg_timestamp(m, digits) for m in _random_micros(rng, 3000)]
    texts += [*_ODD_TIMESTAMPS, None, "1969-12-31 23:59:59.999999", "1969-12-31 23:59:59.0001",
              "2000-02-29 00:00:00", "1900-02-28 23:59:59.5"]
    _check(_column("timestamp", typmod), texts, ConverterSettings(time_precision_mode=mode),  # type: ignore[arg-type]
           claimed=3000)


@pytest.mark.parametrize("mode", ["adaptive", "connect", "adaptive_time_microseconds", "microseconds"])
def test_dates_match_the_converter(mode: str) -> None:
    rng = random.Random(RNG_SEED)
    first, last = dt.date(1, 1, 1).toordinal(), dt.date(9999, 12, 31).toordinal()
    texts: list[str | None] = [dt.date.fromordinal(rng.randint(first, last)).isoformat() for _ in range(3000)]
    texts += ["1970-01-01", "1969-12-31", "2000-02-29", "1900-02-28", "1582-10-04", "1582-10-15", "0001-01-01",
              "9999-12-31", "infinity", "-infinity", "0044-03-15 BC", "0000-01-01", "2021-02-29", "2020-13-01",
              "10000-01-01", None]
    _check(_column("date"), texts, ConverterSettings(time_precision_mode=mode), claimed=3000)  # type: ignore[arg-type]


# -- what is not vectorised -----------------------------------------------------------------------

@pytest.mark.parametrize(("type_name", "typmod", "settings"), [
    ("float8", -1, ConverterSettings()),
    ("interval", -1, ConverterSettings()),
    ("bytea", -1, ConverterSettings()),
    ("numeric", -1, ConverterSettings()),  # variable scale
    ("numeric", numeric_typmod(10, 2), ConverterSettings(decimal_handling_mode="double")),
    ("timestamp", -1, ConverterSettings(time_precision_mode="isostring")),
    ("timestamp", -1, ConverterSettings(time_precision_mode="nanoseconds")),
    ("date", -1, ConverterSettings(time_precision_mode="isostring")),
    ("time", -1, ConverterSettings()),
])
def test_types_without_a_proven_encoder_are_rendered_per_value(type_name: str, typmod: int,
                                                                settings: ConverterSettings) -> None:
    column = _column(type_name, typmod)
    conv = converter_for(column, settings, origin="snapshot")
    assert conv is not None
    assert encoder_for(column, conv.convert, settings) is None


def test_a_transformed_field_is_rendered_per_value() -> None:
    column = _column("text")
    conv = converter_for(column, ConverterSettings())
    assert conv is not None

    def masked(text: str) -> Any:
        return "***"

    assert encoder_for(column, masked, ConverterSettings()) is None
    field = FieldCodec("c", 0, masked, conv.unavailable, None)
    assert render_column(pa.array(["secret", None]), field, None).to_pylist() == ['"***"', "null"]
