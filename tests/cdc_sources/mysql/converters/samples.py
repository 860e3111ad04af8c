"""Column values as each side receives them, for the Debezium conformance matrix.

A `Sample` is one source value four ways: the Java object the binlog client hands Debezium, the
Python object python-mysql-replication hands us, the Java object Debezium's JDBC snapshot reads,
and what pymysql (with `SNAPSHOT_CONVERSIONS`) hands us. The builders below derive all four from
one description, following mysql-binlog-connector-java 0.41 with Debezium's RowDeserializers,
MySQL Connector/J 9 with Debezium's field readers, python-mysql-replication 1.0.17 and pymysql.
"""

from __future__ import annotations

import datetime
import json
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

Cell = dict[str, str] | None


def cell(kind: str, value: object) -> dict[str, str]:
    """A probe cell: the Java object of ``kind`` (see MySqlConverterProbe.javaValue)."""
    return {"t": kind, "v": str(value)}


@dataclass(frozen=True)
class Sample:
    """One value as the four readers deliver it."""

    binlog_java: Cell
    binlog_py: Any
    snapshot_java: Cell
    snapshot_py: Any


def same(java: Cell, py: Any) -> Sample:
    """A value both paths deliver alike."""
    return Sample(java, py, java, py)


NULL = same(None, None)


def integer(value: int, bits: int, *, unsigned: bool = False) -> Sample:
    """TINYINT (8) .. BIGINT (64). The binlog client reads every integer as signed; Connector/J
    gives ``Long`` for INT UNSIGNED and ``BigInteger`` for BIGINT UNSIGNED; Debezium reads TINYINT
    and SMALLINT with ``getInt``."""
    signed = value - (1 << bits) if unsigned and value >= 1 << (bits - 1) else value
    binlog = cell("long" if bits == 64 else "int", signed)
    if bits == 64:
        snapshot = cell("bigint" if unsigned else "long", value)
    elif bits == 32 and unsigned:
        snapshot = cell("long", value)
    else:
        snapshot = cell("int", value)
    return Sample(binlog, value, snapshot, value)


def boolean(value: int) -> Sample:
    """BOOLEAN (TINYINT(1)): an int in the binlog, a ``Boolean`` from Connector/J."""
    return Sample(cell("int", value), value, cell("bool", str(value != 0).lower()), value)


def _f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]  # type: ignore[no-any-return]


def _f32_hex(value: float) -> str:
    return struct.pack(">f", value).hex()


def _f64_hex(value: float) -> str:
    return struct.pack(">d", value).hex()


def float4(value: float, text: str) -> Sample:
    """A binary32 column (FLOAT, FLOAT(M,D)): every bit in the binlog, ``text`` (6 significant
    digits, as the server prints it) in the snapshot, read as a ``Float`` by Connector/J."""
    return Sample(cell("float", _f32_hex(_f32(value))), _f32(value),
                  cell("float", _f32_hex(_f32(float(text)))), float(text))


def float8(value: float) -> Sample:
    """A DOUBLE column."""
    return same(cell("double", _f64_hex(value)), value)


def decimal(text: str) -> Sample:
    """A DECIMAL value at the column's scale."""
    return Sample(cell("decimal", text), Decimal(text), cell("decimal", text), text)


def string(text: str, encoding: str = "utf-8") -> Sample:
    """A character value: the column charset's bytes (``encoding``: the Python codec) from the
    binlog client, a String from JDBC, text from both Python libraries."""
    return Sample(cell("bytes", text.encode(encoding).hex()), text, cell("str", text), text)


def binary(stored: bytes, streamed: bytes | None = None) -> Sample:
    """A binary value; ``streamed``: what the binlog carries when it differs (BINARY(n) loses
    trailing zero bytes)."""
    wire = stored if streamed is None else streamed
    return Sample(cell("bytes", wire.hex()), wire, cell("bytes", stored.hex()), stored)


def bits(text: str) -> Sample:
    """A BIT(n) value, ``text`` its n binary digits: a BitSet from the binlog client, a
    ``Boolean`` (BIT(1)) or big-endian bytes from Connector/J and pymysql."""
    size = (len(text) + 7) // 8
    big_endian = int(text, 2).to_bytes(size, "big")
    snapshot = cell("bool", str(text == "1").lower()) if len(text) == 1 else cell("bytes", big_endian.hex())
    return Sample(cell("bitset", text), text, snapshot, big_endian)


def enum(index: int, members: tuple[str, ...]) -> Sample:
    """An ENUM value: the 1-based index in the binlog (0: an invalid value, ``''``)."""
    value = ("", *members)[index]
    return Sample(cell("int", index), value, cell("str", value), value)


def set_of(chosen: tuple[str, ...], members: tuple[str, ...]) -> Sample:
    """A SET value: a bit mask in the binlog, a Python set from python-mysql-replication (an
    empty set as `restore_empty_sets` puts it back)."""
    mask = sum(1 << members.index(m) for m in chosen)
    text = ",".join(m for m in members if m in chosen)
    return Sample(cell("long", mask), frozenset(chosen), cell("str", text), text)


def year(value: int) -> Sample:
    """YEAR: a ``Year`` from the binlog, a ``java.sql.Date`` from Connector/J (yearIsDateType)."""
    return Sample(cell("year", value), value, cell("sqldate", f"{value:04d}-01-01"), value)


def date(text: str) -> Sample:
    """DATE: a LocalDate from the binlog (null for a zero year, month or day), a LocalDate from
    Debezium's text reader (null for a zero month or day)."""
    y, m, d = (int(p) for p in text.split("-"))
    binlog_zero = y == 0 or m == 0 or d == 0
    snapshot_zero = m == 0 or d == 0
    return Sample(None if binlog_zero else cell("date", text), None if binlog_zero else datetime.date(y, m, d),
                  None if snapshot_zero else cell("date", text), text)


def time_micros(text: str) -> int:
    """Microseconds of a MySQL TIME text."""
    negative = text.startswith("-")
    hms, _, fraction = text.lstrip("-").partition(".")
    h, m, s = (int(p) for p in hms.split(":"))
    micros = ((h * 60 + m) * 60 + s) * 1_000_000 + int((fraction + "000000")[:6])
    return -micros if negative else micros


def library_time_micros(micros: int) -> int:
    """What python-mysql-replication 1.0.17 decodes a TIME2 of ``micros`` as: a negative value
    with a fraction comes out one second longer minus the fraction (seen on MariaDB 10.11)."""
    whole, fraction = divmod(-micros, 1_000_000)
    return -(whole * 1_000_000 + 1_000_000 - fraction) if micros < 0 and fraction else micros


def time(text: str) -> Sample:
    """TIME: a Duration on both Debezium paths, a timedelta from the binlog library."""
    micros = time_micros(text)
    java = cell("duration", micros * 1000)
    return Sample(java, datetime.timedelta(microseconds=library_time_micros(micros)), java, text)


def _zero_date_part(text: str) -> bool:
    _, month, day = (int(p) for p in text[:10].split("-"))
    return month == 0 or day == 0


def datetime_value(text: str) -> Sample:
    """DATETIME: a LocalDateTime from the binlog (null for zero parts), a ``java.sql.Timestamp``
    of the same wall clock from JDBC (null for a zero month or day)."""
    iso = text.replace(" ", "T")
    y = int(text[:4])
    binlog_zero = y == 0 or _zero_date_part(text)
    binlog_py = None if binlog_zero else datetime.datetime.fromisoformat(text)
    return Sample(None if binlog_zero else cell("datetime", iso), binlog_py,
                  None if _zero_date_part(text) else cell("sqltimestamp", iso), text)


def timestamp(text: str) -> Sample:
    """TIMESTAMP (UTC text): a ZonedDateTime from the binlog (null for the zero value), a
    naive UTC datetime from python-mysql-replication (1970-01-01 00:00:00 for the zero value),
    a ``java.sql.Timestamp`` from JDBC."""
    if _zero_date_part(text):
        return Sample(None, datetime.datetime(1970, 1, 1), None, text)
    iso = text.replace(" ", "T")
    return Sample(cell("zoned", iso + "Z"), datetime.datetime.fromisoformat(text), cell("sqltimestamp", iso), text)


def geometry(srid: int, wkb_hex: str) -> Sample:
    """A spatial value: SRID (little-endian) + WKB bytes on every path."""
    data = struct.pack("<i", srid) + bytes.fromhex(wkb_hex)
    return same(cell("bytes", data.hex()), data)


POINT_WKB = "0101000000000000000000f03f0000000000000040"  # POINT(1 2)
LINE_WKB = "010200000002000000000000000000000000000000000000000000000000000000000000000000f03f"


# -- MySQL binary JSON (what MySQL, not MariaDB, writes to the binlog) ---------------------------

def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _scalar(value: Any) -> tuple[int, bytes]:
    """(type code, payload) of a JSON scalar in MySQL's binary format."""
    if value is None or isinstance(value, bool):
        return 0x04, bytes([0 if value is None else 1 if value else 2])
    if isinstance(value, int):
        if -(2**15) <= value < 2**15:
            return 0x05, struct.pack("<h", value)
        if -(2**31) <= value < 2**31:
            return 0x07, struct.pack("<i", value)
        if value < 2**63:
            return 0x09, struct.pack("<q", value)
        return 0x0A, struct.pack("<Q", value)
    if isinstance(value, float):
        return 0x0B, struct.pack("<d", value)
    data = value.encode()
    return 0x0C, _varlen(len(data)) + data


def _container(value: dict[str, Any] | list[Any]) -> tuple[int, bytes]:
    """A small object or array (2-byte offsets)."""
    items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
    keys = [k.encode() for k, _ in items if k is not None]
    header = 4 + 4 * len(keys) + 3 * len(items)
    key_area = b"".join(keys)
    values = bytearray()
    entries = bytearray()
    for _, item in items:
        code, payload = _container(item) if isinstance(item, (dict, list)) else _scalar(item)
        if code in (0x04, 0x05):  # inlined in a small container
            entries += bytes([code]) + payload.ljust(2, b"\x00")
        else:
            entries += bytes([code]) + struct.pack("<H", header + len(key_area) + len(values))
            values += payload
    key_entries = bytearray()
    offset = header
    for key in keys:
        key_entries += struct.pack("<HH", offset, len(key))
        offset += len(key)
    size = header + len(key_area) + len(values)
    body = struct.pack("<HH", len(items), size) + key_entries + entries + key_area + values
    return (0x00 if isinstance(value, dict) else 0x02), body


def json_document(value: Any) -> Sample:
    """A JSON document: MySQL's binary form from the binlog (decoded by python-mysql-replication
    for us), the server's text from the snapshot."""
    from pymysqlreplication.json_binary import parse_json

    code, payload = _container(value) if isinstance(value, (dict, list)) else _scalar(value)
    document = bytes([code]) + payload
    text = json.dumps(value)
    return Sample(cell("bytes", document.hex()), parse_json(document[0], document[1:]), cell("str", text), text)
