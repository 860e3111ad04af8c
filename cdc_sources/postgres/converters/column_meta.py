"""The length, scale and type name Debezium sees for a column.

Debezium reads them from the JDBC driver (pgjdbc ``DatabaseMetaData.getColumns``: ``COLUMN_SIZE``,
``DECIMAL_DIGITS``, ``TYPE_NAME``) when it reads the catalog (snapshots), and recomputes them
from the attribute type modifier when a pgoutput Relation message arrives (streaming). They decide the ``length`` of
``io.debezium.data.Bits``, the precision and scale of decimals, the temporal precision, and the
``__debezium.source.column.*`` parameters, so the pgjdbc rules are reproduced here exactly,
including their oddities (a temporal type's "precision" is its display size).
"""

from __future__ import annotations

from typing import Literal

from cdc_sources.postgres.types import PgColumn, PgType

Origin = Literal["snapshot", "stream"]
"""Where Debezium produces an event: a snapshot (JDBC metadata and ``ResultSet`` values) or the
replication stream (metadata from pgoutput Relation messages, values from text tuples)."""

UNKNOWN_LENGTH = 2_147_483_647
"""pgjdbc's ``unknownLength`` default: the size of unbounded types (text, bytea, json...)."""

VARIABLE_SCALE_DECIMAL_LENGTH = 131_089
"""pgjdbc's display size of an unconstrained NUMERIC."""

NUMERIC = 1700
_BOOL, _CHAR, _INT2, _INT4, _INT8, _OID = 16, 18, 21, 23, 20, 26
_FLOAT4, _FLOAT8, _BPCHAR, _VARCHAR, _BIT, _VARBIT = 700, 701, 1042, 1043, 1560, 1562
_DATE, _TIME, _TIMETZ, _TIMESTAMP, _TIMESTAMPTZ, _INTERVAL = 1082, 1083, 1266, 1114, 1184, 1186

_CORE_ARRAYS = {
    1005: _INT2, 1007: _INT4, 1028: _OID, 1016: _INT8, 791: 790, 1231: NUMERIC, 1021: _FLOAT4,
    1022: _FLOAT8, 1002: _CHAR, 1014: _BPCHAR, 1015: _VARCHAR, 1563: _VARBIT, 1009: 25, 1003: 19,
    1001: 17, 1000: _BOOL, 1561: _BIT, 1182: _DATE, 1183: _TIME, 1270: _TIMETZ, 1115: _TIMESTAMP,
    1185: _TIMESTAMPTZ, 2201: 1790, 199: 114, 3807: 3802, 1017: 600, 1020: 603, 143: 142,
}
"""Array OID -> element OID for the arrays pgjdbc knows (its ``convertArrayToBaseOid``)."""

_FIXED_PRECISION = {_INT2: 5, _INT4: 10, _OID: 10, _INT8: 19, _FLOAT4: 8, _FLOAT8: 17, _CHAR: 1, _BOOL: 1}
_FIXED_DISPLAY = {_INT2: 6, _INT4: 11, _OID: 10, _INT8: 20, _FLOAT4: 15, _FLOAT8: 25, _CHAR: 1, _BOOL: 1,
                  _DATE: 13, _INTERVAL: 49}
_TEMPORAL = {_TIME: 8, _TIMETZ: 14, _TIMESTAMP: 22, _TIMESTAMPTZ: 28}
_ON_PATH = frozenset({"pg_catalog", "public"})


def precision(oid: int, typmod: int) -> int:
    """pgjdbc ``TypeInfoCache.getPrecision``."""
    oid = _CORE_ARRAYS.get(oid, oid)
    if oid in _FIXED_PRECISION:
        return _FIXED_PRECISION[oid]
    if oid == NUMERIC:
        return 0 if typmod == -1 else ((typmod - 4) & 0xFFFF0000) >> 16
    if oid in (_BPCHAR, _VARCHAR):
        return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    if oid in (_DATE, _INTERVAL) or oid in _TEMPORAL:
        return display_size(oid, typmod)
    if oid == _BIT:
        return typmod
    if oid == _VARBIT:
        return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def scale(oid: int, typmod: int) -> int:
    """pgjdbc ``TypeInfoCache.getScale``."""
    oid = _CORE_ARRAYS.get(oid, oid)
    if oid == _FLOAT4:
        return 8
    if oid == _FLOAT8:
        return 17
    if oid == NUMERIC:
        return 0 if typmod == -1 else (typmod - 4) & 0xFFFF
    if oid in _TEMPORAL:
        return 6 if typmod == -1 else typmod
    if oid == _INTERVAL:
        return 6 if typmod == -1 else typmod & 0xFFFF
    return 0


def display_size(oid: int, typmod: int) -> int:
    """pgjdbc ``TypeInfoCache.getDisplaySize``."""
    oid = _CORE_ARRAYS.get(oid, oid)
    if oid in _FIXED_DISPLAY:
        return _FIXED_DISPLAY[oid]
    if oid in _TEMPORAL:
        seconds = {-1: 7, 0: 0, 1: 3}.get(typmod, typmod + 1)
        return _TEMPORAL[oid] + seconds
    if oid in (_BPCHAR, _VARCHAR):
        return UNKNOWN_LENGTH if typmod == -1 else typmod - 4
    if oid == NUMERIC:
        if typmod == -1:
            return VARIABLE_SCALE_DECIMAL_LENGTH
        digits, fraction = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
        return 1 + digits + (1 if fraction != 0 else 0)
    if oid == _BIT:
        return typmod
    if oid == _VARBIT:
        return UNKNOWN_LENGTH if typmod == -1 else typmod
    return UNKNOWN_LENGTH


def default_length(t: PgType) -> int:
    """Debezium ``PostgresType.getDefaultLength``: walks domains to a length."""
    mods = t.base_typmod if t.kind == "d" else -1
    if t.kind == "d" and t.base is not None:
        if mods == -1:
            return default_length(t.base)
        size = precision(t.base.oid, mods) or display_size(t.base.oid, mods)
        if size not in (0, UNKNOWN_LENGTH):
            return size
    return precision(t.oid, mods) or display_size(t.oid, mods)


def default_scale(t: PgType) -> int:
    """Debezium ``PostgresType.getDefaultScale``."""
    if t.kind == "d" and t.base is not None:
        if t.base_typmod == -1:
            return default_scale(t.base)
        return scale(t.base.oid, t.base_typmod)
    return scale(t.oid, -1)


def length_and_scale(column: PgColumn, origin: Origin) -> tuple[int, int | None]:
    """The (length, scale) Debezium assigns the column; scale None means "not reported"."""
    t, mod = column.type, column.typmod
    if origin == "stream":
        if mod != -1:
            return precision(t.oid, mod), scale(t.oid, mod)
        return default_length(t), default_scale(t)
    if t.kind == "d":
        return default_length(t), default_scale(t)
    size = precision(t.oid, mod)
    if t.oid != NUMERIC and size == 0:
        size = display_size(t.oid, mod)
    return size, None if t.oid == NUMERIC and mod == -1 else scale(t.oid, mod)


def source_type_name(column: PgColumn, origin: Origin) -> str:
    """The type name Debezium records: pgjdbc's ``TYPE_NAME`` (snapshot) or ``typname`` (stream).

    pgjdbc reports ``serial``/``bigserial``/``smallserial`` for integer columns whose default
    calls ``nextval(``, and quotes types outside the search path as ``"schema"."name"``
    (``pg_catalog`` and ``public`` are assumed to be on it).
    """
    t = column.type
    if origin == "stream":
        return t.name
    name = t.name if t.schema in _ON_PATH else f'"{t.schema}"."{t.name}"'
    if column.default is not None and "nextval(" in column.default:
        name = {"int4": "serial", "int8": "bigserial", "int2": "smallserial"}.get(name, name)
    return name
