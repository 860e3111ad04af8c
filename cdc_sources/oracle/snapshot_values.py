"""Snapshot values (what python-oracledb fetches) in the literal forms LogMiner writes.

The snapshot reads rows with a flashback query; the converters (`cdc_sources.oracle.converters`)
read the literal forms of SQL_REDO under the session's NLS settings. Rendering each fetched value
in that form lets one converter serve both, so a snapshot row and a streamed row of the same
values make the same event payload: numbers as their plain decimal text, ``DATE`` as
``TO_DATE('..', 'YYYY-MM-DD HH24:MI:SS')``, ``TIMESTAMP`` as ``TO_TIMESTAMP('..')`` with nine
fraction digits, zoned timestamps as ``TO_TIMESTAMP_TZ('.. +HH:MM')``, ``RAW``/``BLOB`` as
``HEXTORAW('..')``, intervals as ``TO_YMINTERVAL``/``TO_DSINTERVAL``. A value of another Python
type is an error naming the column.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from cdc_sources.oracle.converters import OracleColumn, OracleType, OracleValueError
from cdc_sources.oracle.redo import RedoExpr, RedoValue

__all__ = ["redo_value"]


def _stamp(v: datetime) -> str:
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"


def redo_value(column: OracleColumn, value: Any) -> RedoValue:
    """``value`` of ``column`` as LogMiner would write it in SQL_REDO."""
    if value is None:
        return None
    if hasattr(value, "read") and callable(value.read):  # a LOB locator
        value = value.read()
    kind = column.type
    if isinstance(value, bool):
        raise OracleValueError(f"column {column.name}: unexpected boolean value")
    if isinstance(value, int | Decimal) and kind in (OracleType.NUMBER, OracleType.FLOAT):
        return format(value, "f") if isinstance(value, Decimal) else str(value)
    if isinstance(value, float) and kind in (OracleType.NUMBER, OracleType.FLOAT, OracleType.BINARY_FLOAT,
                                             OracleType.BINARY_DOUBLE):
        return repr(value)
    if isinstance(value, int | Decimal) and kind in (OracleType.BINARY_FLOAT, OracleType.BINARY_DOUBLE):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return RedoExpr(f"HEXTORAW('{value.hex().upper()}')")
    if isinstance(value, datetime):
        if kind is OracleType.DATE:
            return RedoExpr(f"TO_DATE('{_stamp(value)}', 'YYYY-MM-DD HH24:MI:SS')")
        if kind is OracleType.TIMESTAMP:
            return RedoExpr(f"TO_TIMESTAMP('{_stamp(value)}.{value.microsecond * 1000:09d}')")
        if kind in (OracleType.TIMESTAMP_TZ, OracleType.TIMESTAMP_LTZ):
            off = value.utcoffset() or timedelta(0)
            minutes = int(off.total_seconds() // 60)
            sign = "+" if minutes >= 0 else "-"
            return RedoExpr(f"TO_TIMESTAMP_TZ('{_stamp(value)}.{value.microsecond * 1000:09d} "
                            f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}')")
    if isinstance(value, timedelta) and kind is OracleType.INTERVAL_DS:
        sign = "-" if value < timedelta(0) else "+"
        v = -value if value < timedelta(0) else value
        hours, rest = divmod(v.seconds, 3600)
        minutes, seconds = divmod(rest, 60)
        return RedoExpr(f"TO_DSINTERVAL('{sign}{v.days:09d} {hours:02d}:{minutes:02d}:{seconds:02d}."
                        f"{v.microseconds * 1000:09d}')")
    raise OracleValueError(f"column {column.name} ({kind.value}): cannot read a snapshot value of type "
                           f"{type(value).__name__}")
