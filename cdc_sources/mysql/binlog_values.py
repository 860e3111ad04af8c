"""Binlog values python-mysql-replication rejects, read as Debezium's binlog reader reads them.

Two kinds of value stop the library (it raises in the middle of a rows event, which would end
the capture with a traceback), where Debezium goes on or stops with a clear error:

* **Character bytes its codec cannot decode**, such as latin1 bytes 0x81, 0x8D, 0x8F, 0x90
  and 0x9D (MySQL's latin1 is Java's windows-1252, where those five bytes are undefined).
  Debezium decodes a character column with Java's charset and replaces what it cannot decode
  with U+FFFD, one per undecodable byte; so do we (Python's ``replace`` error handler). The
  snapshot is unaffected: the server converts such text to UTF-8 itself.
* **Dates that do not exist** (``2020-02-30``: a server with ``ALLOW_INVALID_DATES`` stores
  them). Debezium's row deserializers follow ``event.processing.failure.handling.mode``:
  ``fail`` (its default) stops with "Error while deserializing binlog data of date: ...";
  ``warn`` and ``skip`` read the value as the epoch, 1970-01-01 (00:00:00). Dates with a zero
  part stay null, as before. The library itself read an invalid DATETIME(n) as null and
  raised on an invalid DATE or old-format DATETIME.

`install` replaces the library's readers of those values once per process; the mode comes
from `failure_mode` (per thread: each source's stream sets its own).
"""

from __future__ import annotations

import datetime
import logging
import threading
from typing import Any, Final

from cdc_sources.mysql.converters.model import InvalidTemporalError

__all__ = ["InvalidTemporalError", "failure_mode", "install"]

EPOCH_DATE: Final = datetime.date(1970, 1, 1)
EPOCH_DATETIME: Final = datetime.datetime(1970, 1, 1)
_MODES: Final = ("fail", "warn", "skip")


log = logging.getLogger(__name__)
_state = threading.local()
_lock = threading.Lock()


def failure_mode(mode: str) -> None:
    """Set ``event.processing.failure.handling.mode`` for the binlog events this thread decodes."""
    if mode not in _MODES:
        raise ValueError(f"unknown event.processing.failure.handling.mode {mode!r}")
    _state.mode = mode


def _invalid(kind: str, text: str, epoch: Any) -> Any:
    """What an invalid ``kind`` value becomes: the epoch, or `InvalidTemporalError` in ``fail`` mode."""
    mode = getattr(_state, "mode", "fail")
    if mode == "warn":
        log.warning("binlog %s value %r is no date (ALLOW_INVALID_DATES): read as the epoch, as Debezium does",
                    kind, text)
    if mode == "fail":
        raise InvalidTemporalError(
            f"Error while deserializing binlog data of {kind}: invalid date {text!r} (the server allows invalid "
            "dates: sql_mode ALLOW_INVALID_DATES); Debezium stops here too. Set "
            "event.processing.failure.handling.mode=warn (or skip) to read such values as 1970-01-01, as Debezium does")
    return epoch


def _read_string(self: Any, size: int, column: Any) -> Any:
    raw = self.packet.read_length_coded_pascal_string(size)
    errors = "ignore" if self._ignore_decode_errors else "replace"
    if column.character_set_name is None:
        return raw.decode(errors=errors)
    try:
        return raw.decode(self.charset_to_encoding(column.character_set_name), errors)
    except LookupError:  # a charset Python has no codec for (binary...): the bytes, as the library keeps them
        return raw


def _read_date(self: Any) -> Any:
    value = self.packet.read_uint24()
    year, month, day = value >> 9, value >> 5 & 15, value & 31
    if not (year and month and day):
        return None  # zero dates: null (the library's reason is set by its caller)
    try:
        return datetime.date(year, month, day)
    except ValueError:
        return _invalid("date", f"{year:04d}-{month:02d}-{day:02d}", EPOCH_DATE)


def _read_datetime(self: Any) -> Any:
    value = self.packet.read_uint64()
    date, time = divmod(value, 1_000_000)
    year, month, day = date // 10_000, date // 100 % 100, date % 100
    if not (year and month and day):
        return None
    hour, minute, second = time // 10_000, time // 100 % 100, time % 100
    try:
        return datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        return _invalid("datetime", f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}",
                        EPOCH_DATETIME)


def _read_datetime2(self: Any, column: Any) -> Any:
    data = self.packet.read_int_be_by_size(5)
    year, month = divmod(data >> 22 & 0x1FFFF, 13)
    day, hour, minute, second = data >> 17 & 31, data >> 12 & 31, data >> 6 & 63, data & 63
    try:
        value = datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        self._RowsEvent__read_fsp(column)
        if not (year and month and day):
            return None  # zero parts: null (the library's reason is set by its caller)
        return _invalid("datetimeV2", f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}",
                        EPOCH_DATETIME)
    return self._RowsEvent__add_fsp_to_time(value, column)


def install() -> None:
    """Replace python-mysql-replication's string and date readers (once per process; idempotent)."""
    from pymysqlreplication.row_event import RowsEvent

    with _lock:
        for name, reader in (("_RowsEvent__read_string", _read_string), ("_RowsEvent__read_date", _read_date),
                             ("_RowsEvent__read_datetime", _read_datetime),
                             ("_RowsEvent__read_datetime2", _read_datetime2)):
            setattr(RowsEvent, name, reader)
