"""The MySQL connector options that change how column values are rendered.

Each attribute mirrors a Debezium 3.6.3 MySQL connector property of the same meaning and
default. Instances are immutable and validated on construction, so a converter factory never
sees an unknown mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from cdc_sources.common.connect_values import BinaryMode, DecimalMode
from cdc_sources.spi import ConfigError, ConfigProblem

TimePrecisionMode = Literal["adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"]
"""``time.precision.mode`` values the MySQL connector accepts (its enum minus ``adaptive``)."""

BigIntUnsignedMode = Literal["long", "precise"]
"""``bigint.unsigned.handling.mode``."""

FailureMode = Literal["fail", "warn", "skip"]
"""``event.converting.failure.handling.mode`` and ``event.processing.failure.handling.mode``."""

_CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "decimal_handling_mode": ("decimal.handling.mode", get_args(DecimalMode)),
    "time_precision_mode": ("time.precision.mode", get_args(TimePrecisionMode)),
    "bigint_unsigned_handling_mode": ("bigint.unsigned.handling.mode", get_args(BigIntUnsignedMode)),
    "binary_handling_mode": ("binary.handling.mode", get_args(BinaryMode)),
    "event_converting_failure_handling_mode": ("event.converting.failure.handling.mode", get_args(FailureMode)),
    "event_processing_failure_handling_mode": ("event.processing.failure.handling.mode", get_args(FailureMode)),
}


@dataclass(frozen=True)
class MySqlConverterSettings:
    """How MySQL column values are rendered; one instance serves every column of a connector.

    Attributes:
        decimal_handling_mode: ``decimal.handling.mode`` (DECIMAL/NUMERIC).
        time_precision_mode: ``time.precision.mode`` (DATE, TIME, DATETIME; TIMESTAMP is always
            a UTC ``ZonedTimestamp``). ``adaptive`` is refused, as Debezium refuses it for MySQL.
        bigint_unsigned_handling_mode: ``bigint.unsigned.handling.mode``: ``long`` (int64; values
            of 2^63 and more wrap to negative numbers, as Java's ``long`` does) or ``precise``
            (a ``Decimal`` with scale 0).
        binary_handling_mode: ``binary.handling.mode`` (BINARY, VARBINARY, BLOB types).
        enable_time_adjuster: ``enable.time.adjuster``: DATE/DATETIME/TIMESTAMP years 0-69
            become 2000-2069 and years 70-99 become 1970-1999.
        include_schema_comments: ``include.schema.comments``: column comments become the
            field's ``doc`` (and a propagated ``__debezium.source.column.comment``).
        event_converting_failure_handling_mode: ``event.converting.failure.handling.mode``:
            what a value (or default) Debezium cannot convert becomes: ``fail`` raises
            `ValueConversionError`; ``warn`` (the default) and ``skip`` render it as NULL (the
            schema default, else null; a NOT NULL column without default still raises, as
            JsonConverter then fails) and leave an unconvertible default out of the schema.
        event_processing_failure_handling_mode: ``event.processing.failure.handling.mode``:
            what a stored date that is no date (``2020-02-30``, ``ALLOW_INVALID_DATES``) does in
            a snapshot, as in the stream (`cdc_sources.mysql.binlog_values`): ``fail`` (the
            default) raises `InvalidTemporalError`; ``warn`` and ``skip`` render the epoch.

    Immutable and thread-safe.
    """

    decimal_handling_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive_time_microseconds"
    bigint_unsigned_handling_mode: BigIntUnsignedMode = "long"
    binary_handling_mode: BinaryMode = "bytes"
    enable_time_adjuster: bool = True
    include_schema_comments: bool = False
    event_converting_failure_handling_mode: FailureMode = "warn"
    event_processing_failure_handling_mode: FailureMode = "fail"

    def __post_init__(self) -> None:
        problems: list[ConfigProblem] = []
        for attr, (option, valid) in _CHOICES.items():
            value = getattr(self, attr)
            if attr == "time_precision_mode" and value == "adaptive":
                problems.append(ConfigProblem(
                    option, "The 'adaptive' time.precision.mode is no longer supported (Debezium's MySQL "
                    "connector refuses it); use 'adaptive_time_microseconds' (the default) or 'connect'"))
            elif value not in valid:
                problems.append(ConfigProblem(option, f"unknown value {value!r}; valid values: {', '.join(valid)}"))
        for attr, option in (("enable_time_adjuster", "enable.time.adjuster"),
                             ("include_schema_comments", "include.schema.comments")):
            if not isinstance(getattr(self, attr), bool):
                problems.append(ConfigProblem(option, f"must be true or false, got {getattr(self, attr)!r}"))
        if problems:
            raise ConfigError(problems)
