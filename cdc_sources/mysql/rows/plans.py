"""How one column of a binlog row image is read: a `ColumnPlan` of generated Python source.

Every plan reproduces python-mysql-replication 1.0.17's ``RowsEvent.__read_values_name`` for
its column type and metadata, value for value, including the library's quirks: TIMESTAMP as a
naive UTC ``datetime``, zero dates as None with an "out of ... range" reason, an empty SET as
None with "empty set", BIT as a string of ``0``/``1``, TIME2 and DECIMAL read the way the
library reads them. Work that depends only on the table map (byte counts, the decimal layout,
the charset's Python encoding, ENUM/SET values) is done here once, so the generated code does
no type dispatch.

The generated source names a column's variables by a prefix (``c3`` for column 3) and the row
buffer and read position ``data`` and ``p``; a plan never names user data in its source
except the column name through ``repr``. What the library would refuse (an unknown type, a
missing ENUM value list, an empty MySQL JSON value) raises `Unsupported`: the decoder then
lets the library decode the whole event.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final


class Unsupported(Exception):  # noqa: N818 - a signal, not an error condition
    """A column or value the decoder leaves to python-mysql-replication (the whole event is
    then decoded by the library)."""


# MySQL protocol column types (``enum_field_types``) that appear in table maps.
TINY: Final = 1
SHORT: Final = 2
LONG: Final = 3
FLOAT: Final = 4
DOUBLE: Final = 5
TIMESTAMP: Final = 7
LONGLONG: Final = 8
INT24: Final = 9
DATE: Final = 10
TIME: Final = 11
DATETIME: Final = 12
YEAR: Final = 13
VARCHAR: Final = 15
BIT: Final = 16
TIMESTAMP2: Final = 17
DATETIME2: Final = 18
TIME2: Final = 19
JSON: Final = 245
NEWDECIMAL: Final = 246
ENUM: Final = 247
SET: Final = 248
BLOB: Final = 252
STRING: Final = 254
GEOMETRY: Final = 255

NULL_REASON: Final = "null"
COLS_BITMAP_REASON: Final = "cols bitmap"
"""``none_sources`` reasons of the library (``pymysqlreplication.constants.NONE_SOURCE``)."""
_DATE_REASON: Final = "out of date range"
_DATETIME_REASON: Final = "out of datetime range"
_DATETIME2_REASON: Final = "out of datetime2 range"
_EMPTY_SET_REASON: Final = "empty set"

_DECIMAL_GROUP_BYTES: Final = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
"""Bytes of a NEWDECIMAL group of 0..9 digits."""

_INTEGERS: Final = {TINY: ("b", "B"), SHORT: ("h", "H"), LONG: ("i", "I"), LONGLONG: ("q", "Q"), INT24: ("Hb", "HB")}
"""Struct fields of the integer types: (signed, unsigned); INT24 as a low 16-bit and a high 8-bit part."""


@dataclass(frozen=True)
class ColumnPlan:
    """Generated source reading one present, non-NULL column value of a row image.

    Attributes:
        name: the column name (the key in ``values`` and ``none_sources``).
        fields: for a fixed-width column, its ``struct`` fields (without byte order); the
            decoder unpacks them at ``p`` into the variables `raws` (several adjacent fixed
            columns of one byte order share one unpack), then runs `body`. Empty for a
            variable-length column, whose `body` reads at ``p`` and advances ``p`` itself.
        order: the byte order of `fields` (``<`` or ``>``).
        raws: the variable names `fields` unpack into, in order.
        body: source lines (unindented) run after the unpack, or reading the value.
        value: the expression of the column's value once `body` has run.
        env: the objects `body` and `value` name (globals of the generated code).
    """

    name: str
    fields: str
    order: str
    raws: tuple[str, ...]
    body: tuple[str, ...]
    value: str
    env: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Bytes of a fixed-width column (0 for a variable-length one)."""
        return _struct_size(self.fields)


def _struct_size(fields: str) -> int:
    return struct.calcsize("<" + fields) if fields else 0


def reason(name: str, why: str) -> str:
    """The statement recording why the column ``name`` is None."""
    return f"ns[{name!r}] = {why!r}"


# -- helpers --------------------------------------------------------------------------------------

_PIECES: Final[dict[int, tuple[tuple[str, int], ...]]] = {
    1: (("B", 1),), 2: (("H", 2),), 3: (("B", 1), ("H", 2)), 4: (("I", 4),), 5: (("B", 1), ("I", 4)),
    6: (("H", 2), ("I", 4)), 7: (("B", 1), ("H", 2), ("I", 4)), 8: (("Q", 8),),
}
"""An unsigned big-endian integer of 1..8 bytes as struct pieces (most significant first)."""


def _uint(n: int, order: str, prefix: str, signed: bool = False) -> tuple[str, tuple[str, ...], str]:
    """Struct fields, raw names and the combining expression of an ``n``-byte integer.

    ``signed`` makes the most significant piece signed, so the combined value is the
    two's-complement reading (``b | c << k`` stays exact for a negative high part).
    """
    if n not in _PIECES:
        raise Unsupported(f"a {n}-byte integer field")
    pieces = list(_PIECES[n])
    if order == "<":
        pieces.reverse()
    names = tuple(f"{prefix}{i}" for i in range(len(pieces)))
    top = 0 if order == ">" else len(pieces) - 1
    fields = "".join(c.lower() if signed and i == top else c for i, (c, _) in enumerate(pieces))
    terms, shift = [], 0
    for i in reversed(range(len(pieces))) if order == ">" else range(len(pieces)):
        terms.append(names[i] if shift == 0 else f"{names[i]} << {shift}")
        shift += pieces[i][1] * 8
    expr = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
    return fields, names, expr


def _fsp_field(fsp: int) -> tuple[str, int]:
    """The struct fields of a fractional-seconds part and its byte count (the library's signed read)."""
    size = {1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}.get(fsp, 0)
    return {0: "", 1: "b", 2: "h", 3: "bH"}[size], size


def _fsp_raw(fsp: int, names: tuple[str, ...]) -> str:
    """The raw fractional value from its unpacked parts (``names``, as `_fsp_field` lays them out)."""
    return f"({names[0]} << 16 | {names[1]})" if len(names) == 2 else names[0]


def _text_of(encoding: str | None, ignore_errors: bool) -> str:
    """The source that follows a character column's bytes to make its value: ``.decode(...)``;
    for a charset whose codec Python lacks (``binary``...), the library keeps the bytes, except
    an empty value, which ``bytes.decode`` turns into ``""`` before it looks the codec up."""
    if encoding is None:
        return " or ''"
    return f".decode({encoding!r}, 'ignore')" if ignore_errors else f".decode({encoding!r})"


def python_encoding(column: Any) -> str | None:
    """The Python codec the library decodes a character column with; None: it returns bytes.

    Mirrors ``RowsEvent.__read_string``: no charset known means UTF-8; a charset whose codec
    Python lacks (``binary``, ``ucs2``...) leaves the bytes undecoded.
    """
    name = column.character_set_name
    if name is None:
        return "utf-8"
    from pymysqlreplication.row_event import RowsEvent

    encoding = str(RowsEvent.charset_to_encoding(name))
    try:
        b"\0\0\0\0".decode(encoding)  # not b"": decoding nothing skips the codec lookup
    except LookupError:
        return None
    except UnicodeError:
        pass  # a codec that exists
    return encoding


def _length_prefixed(prefix: str, size: int) -> tuple[str, str]:
    """Source computing the end of a value behind a ``size``-byte little-endian length, and
    the value's start."""
    if size == 1:
        length = "data[p]"
    elif size == 2:
        length = "(data[p] | data[p + 1] << 8)"
    elif size == 3:
        length = "(data[p] | data[p + 1] << 8 | data[p + 2] << 16)"
    elif size == 4:
        length = "int.from_bytes(data[p:p + 4], 'little')"
    else:
        raise Unsupported(f"a {size}-byte length prefix")
    return f"{prefix}e = p + {size} + {length}", f"p + {size}"


# -- plans by type --------------------------------------------------------------------------------

def plan_column(column: Any, prefix: str, ignore_errors: bool) -> ColumnPlan:
    """The plan reading ``column`` (a ``pymysqlreplication.column.Column`` of a table map).

    Args:
        column: the table map's column (type, name, signedness, metadata).
        prefix: the prefix of the column's variables in the generated source (``c3``).
        ignore_errors: the stream's ``ignore_decode_errors`` (undecodable bytes dropped).

    Raises:
        Unsupported: the library reads this column in a way the plans do not reproduce.
    """
    kind = column.type
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise Unsupported(f"column type {kind}")
    return builder(column, str(column.name), prefix, ignore_errors)


def _integer(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    signed, unsigned = _INTEGERS[column.type]
    fields = unsigned if column.unsigned else signed
    if len(fields) == 1:
        return ColumnPlan(name, fields, "<", (f"{x}_0",), (), f"{x}_0")
    return ColumnPlan(name, fields, "<", (f"{x}_0", f"{x}_1"), (), f"({x}_0 | {x}_1 << 16)")


def _real(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    return ColumnPlan(name, "f" if column.type == FLOAT else "d", "<", (f"{x}_0",), (), f"{x}_0")


def _year(_column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    return ColumnPlan(name, "B", "<", (f"{x}_0",), (), f"{x}_0 + 1900")


def _enum(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    if not column.enum_values:  # the library returns None with a leftover reason: leave those to it
        raise Unsupported("an ENUM column without its values in the table map")
    fields, raws, expr = _uint(int(column.size), "<", f"{x}_")
    return ColumnPlan(name, fields, "<", raws, (), f"{x}_E[{expr}]", {f"{x}_E": tuple(column.enum_values)})


def _set(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    fields, raws, expr = _uint(int(column.size), "<", f"{x}_")
    empty = (f"{x}v = None", reason(name, _EMPTY_SET_REASON))
    if not column.set_values:
        return ColumnPlan(name, fields, "<", raws, empty, f"{x}v")
    members = tuple((1 << i, v) for i, v in enumerate(column.set_values))
    body = (f"{x}m = {expr}", f"{x}v = {{v for k, v in {x}_S if {x}m & k}}",
            f"if not {x}v:", *(f"    {line}" for line in empty))
    return ColumnPlan(name, fields, "<", raws, body, f"{x}v", {f"{x}_S": members})


def _bit(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    bits, size = int(column.bits), int(column.bytes)
    fields, raws, expr = _uint(size, ">", f"{x}_")
    return ColumnPlan(name, fields, ">", raws, (), f"f'{{{expr} & {(1 << bits) - 1:#x}:0{bits}b}}'")


def _date(_column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    body = (f"{x}t = {x}_0 | {x}_1 << 16",
            f"{x}y = {x}t >> 9", f"{x}m = {x}t >> 5 & 15", f"{x}d = {x}t & 31",
            f"if {x}y and {x}m and {x}d:",
            f"    {x}v = DATE({x}y, {x}m, {x}d)",
            "else:",
            f"    {x}v = None",
            f"    {reason(name, _DATE_REASON)}")
    return ColumnPlan(name, "HB", "<", (f"{x}_0", f"{x}_1"), body, f"{x}v", {"DATE": datetime.date})


def _time(_column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    body = (f"{x}t = {x}_0 | {x}_1 << 16",
            f"{x}v = TD(hours=int({x}t / 10000), minutes=int(({x}t % 10000) / 100), seconds=int({x}t % 100))")
    return ColumnPlan(name, "HB", "<", (f"{x}_0", f"{x}_1"), body, f"{x}v", {"TD": datetime.timedelta})


def _datetime(_column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    # The library's float arithmetic, kept as written.
    body = (f"{x}n = {x}_0",
            f"{x}a = {x}n / 1000000", f"{x}b = int({x}n % 1000000)",
            f"{x}y = int({x}a / 10000)", f"{x}m = int(({x}a % 10000) / 100)", f"{x}d = int({x}a % 100)",
            f"if {x}n and {x}y and {x}m and {x}d:",
            f"    {x}v = DT({x}y, {x}m, {x}d, int({x}b / 10000), int(({x}b % 10000) / 100), int({x}b % 100))",
            "else:",
            f"    {x}v = None",
            f"    {reason(name, _DATETIME_REASON)}")
    return ColumnPlan(name, "Q", "<", (f"{x}_0",), body, f"{x}v", {"DT": datetime.datetime})


def _timestamp(_column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    return ColumnPlan(name, "I", "<", (f"{x}_0",), (), f"UTC({x}_0)", {"UTC": datetime.datetime.utcfromtimestamp})


def _fraction(fsp: int, x: str, start: int) -> tuple[str, tuple[str, ...], str | None]:
    """Fields, raw names and the microseconds expression (None: no fraction) of a TIMESTAMP2 or
    DATETIME2 fraction; an odd precision drops the stored extra digit (``// 10`` equals the
    library's ``int(n / 10)`` for the non-negative values the server writes)."""
    fields, size = _fsp_field(fsp)
    if not size:
        return "", (), None
    names = tuple(f"{x}_{start + i}" for i in range(len(fields)))
    raw = _fsp_raw(fsp, names)
    scale = 10 ** (6 - fsp)
    return fields, names, f"{raw} // 10 * {scale}" if fsp % 2 else f"{raw} * {scale}"


def _datetime2(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    fsp = int(column.fsp)
    frac_fields, frac_names, micros = _fraction(fsp, x, 2)
    body = [f"{x}t = {x}_0 << 8 | {x}_1", f"{x}ym = {x}t >> 22 & 0x1FFFF"]
    args = f"{x}ym // 13, {x}ym % 13, {x}t >> 17 & 31, {x}t >> 12 & 31, {x}t >> 6 & 63, {x}t & 63"
    if micros is not None:
        # Out-of-range microseconds make the library raise after a valid date: leave it those.
        body += [f"{x}us = {micros}", f"if not 0 <= {x}us <= 999999:", "    raise UNSUPPORTED"]
        args += f", {x}us"
    # a zero part reads as None; an invalid date is left to the library's reader, which
    # `cdc_sources.mysql.binlog_values` replaces (Debezium's failure handling mode)
    body += [f"if not ({x}ym // 13 and {x}ym % 13 and {x}t >> 17 & 31):", f"    {x}v = None",
             f"    {reason(name, _DATETIME2_REASON)}", "else:",
             "    try:", f"        {x}v = DT({args})", "    except ValueError:", "        raise UNSUPPORTED from None"]
    return ColumnPlan(name, "IB" + frac_fields, ">", (f"{x}_0", f"{x}_1", *frac_names), tuple(body), f"{x}v",
                      {"DT": datetime.datetime, "UNSUPPORTED": Unsupported})


def _timestamp2(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    fsp = int(column.fsp)
    frac_fields, frac_names, micros = _fraction(fsp, x, 1)
    env = {"UTC": datetime.datetime.utcfromtimestamp}
    if micros is None:
        return ColumnPlan(name, "i", ">", (f"{x}_0",), (), f"UTC({x}_0)", env)
    body = (f"{x}v = UTC({x}_0)", f"{x}us = {micros}", f"if {x}us > 0:",
            f"    {x}v = {x}v.replace(microsecond={x}us)")
    return ColumnPlan(name, "i" + frac_fields, ">", (f"{x}_0", *frac_names), body, f"{x}v", env)


def _time2(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    fsp = int(column.fsp)
    frac_fields, size = _fsp_field(fsp)
    frac_names = tuple(f"{x}_{2 + i}" for i in range(len(frac_fields)))
    micros = "0"
    if size:  # the library's __read_fsp, arithmetic kept as written (the fraction may be negative)
        raw = _fsp_raw(fsp, frac_names)
        micros = f"int({raw} / 10) * {10 ** (6 - fsp)}" if fsp % 2 else f"{raw} * {10 ** (6 - fsp)}"
    body = (f"{x}t = {x}_0 << 16 | {x}_1",
            f"{x}s = 1 if ({x}t >> 23) & 1 else -1",
            f"if {x}s == -1:",
            f"    {x}t = ~{x}t + 1",
            f"{x}v = TD(hours={x}t >> 12 & 0x3FF, minutes={x}t >> 6 & 0x3F, seconds={x}t & 0x3F, "
            f"microseconds={micros}) * {x}s")
    return ColumnPlan(name, "bH" + frac_fields, ">", (f"{x}_0", f"{x}_1", *frac_names), body, f"{x}v",
                      {"TD": datetime.timedelta})


def _newdecimal(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    """NEWDECIMAL: groups of 9 digits in 4 bytes, the leading/trailing partial groups in fewer;
    the first bit flipped is the sign, a negative value has every byte inverted.

    The library concatenates the groups' digits (``str`` of the leading group, the others
    zero-padded to their digits) around a ``.`` and parses that text; here the groups' digits
    make one integer coefficient parsed with the scale as exponent (``"12345E-2"``), which
    ``Decimal`` turns into the same value, sign of zero and exponent included.
    """
    precision, scale = int(column.precision), int(column.decimals)
    int_full, int_part = divmod(precision - scale, 9)
    frac_full, frac_part = divmod(scale, 9)
    groups: list[tuple[int, int]] = []  # (bytes, digits)
    if _DECIMAL_GROUP_BYTES[int_part]:
        groups.append((_DECIMAL_GROUP_BYTES[int_part], int_part))
    groups += [(4, 9)] * (int_full + frac_full)
    if _DECIMAL_GROUP_BYTES[frac_part]:
        groups.append((_DECIMAL_GROUP_BYTES[frac_part], frac_part))
    if not groups:
        raise Unsupported("a DECIMAL of no digits")
    fields = ""
    raws: list[str] = []
    plus: list[str] = []
    minus: list[str] = []
    digits_after = sum(d for _, d in groups)
    for g, (size, digits) in enumerate(groups):
        # The library reads every group as a signed big-endian integer (after flipping the
        # sign bit of the first); the first group's pieces are unsigned here to test that bit.
        f, names, expr = _uint(size, ">", f"{x}_{g}_", signed=g > 0)
        fields += f
        raws += names
        digits_after -= digits
        scale_by = f" * {10 ** digits_after}" if digits_after else ""
        if g == 0:
            top = 1 << (size * 8 - 1)
            plus.append(f"({expr} ^ {top:#x}){scale_by}")
            minus.append(f"({expr} ^ {top - 1:#x}){scale_by}")
        else:
            plus.append(f"{expr}{scale_by}")
            minus.append(f"~{expr}{scale_by}")
    positive, negative = " + ".join(plus), " + ".join(minus)
    exponent = f"E-{scale}" if scale else ""
    first_bits = _struct_size(fields[0]) * 8
    body = (f"if {raws[0]} & {1 << (first_bits - 1):#x}:",
            f"    {x}v = DEC(f'{{{positive}}}{exponent}')" if scale else f"    {x}v = DEC({positive})",
            "else:",
            f"    {x}v = DEC(f'-{{{negative}}}{exponent}')")
    return ColumnPlan(name, fields, ">", tuple(raws), body, f"{x}v", {"DEC": decimal.Decimal})


def _string(column: Any, name: str, x: str, ignore: bool) -> ColumnPlan:
    size = 2 if column.type in (VARCHAR, STRING) and column.max_length > 255 else 1
    if column.type == BLOB:
        size = int(column.length_size)
    end, start = _length_prefixed(x, size)
    decode = _text_of(python_encoding(column), ignore)
    return ColumnPlan(name, "", "<", (), (end, f"{x}v = data[{start}:{x}e]{decode}", f"p = {x}e"), f"{x}v")


def _geometry(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    end, start = _length_prefixed(x, int(column.length_size))
    return ColumnPlan(name, "", "<", (), (end, f"{x}v = data[{start}:{x}e]", f"p = {x}e"), f"{x}v")


def _json(column: Any, name: str, x: str, _ignore: bool) -> ColumnPlan:
    """MySQL's binary JSON, parsed by the library's own parser. An empty value is None in the
    library with a reason left over from other rows: left to the library."""
    from pymysqlreplication.json_binary import parse_json

    size = int(column.length_size)
    end, start = _length_prefixed(x, size)
    body = (end, f"if {x}e == {start}:", "    raise UNSUPPORTED",
            f"{x}v = PARSE_JSON(data[{start}], data[{start} + 1:{x}e])", f"p = {x}e")
    return ColumnPlan(name, "", "<", (), body, f"{x}v", {"PARSE_JSON": parse_json, "UNSUPPORTED": Unsupported})


_BUILDERS: Final[dict[int, Callable[[Any, str, str, bool], ColumnPlan]]] = {
    TINY: _integer, SHORT: _integer, LONG: _integer, LONGLONG: _integer, INT24: _integer,
    FLOAT: _real, DOUBLE: _real, YEAR: _year, ENUM: _enum, SET: _set, BIT: _bit,
    DATE: _date, TIME: _time, DATETIME: _datetime, TIMESTAMP: _timestamp,
    DATETIME2: _datetime2, TIMESTAMP2: _timestamp2, TIME2: _time2, NEWDECIMAL: _newdecimal,
    VARCHAR: _string, STRING: _string, BLOB: _string, GEOMETRY: _geometry, JSON: _json,
}
"""The plan builder of each column type the library decodes."""
