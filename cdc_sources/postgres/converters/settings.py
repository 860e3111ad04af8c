"""The connector options that change how column values are rendered.

Each attribute mirrors a Debezium PostgreSQL connector property of the same meaning and default
(``decimal.handling.mode``, ``time.precision.mode``, ...). Instances are immutable and validated
on construction, so a converter factory never sees an unknown mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal, get_args

from cdc_sources.common.connect_values import BinaryMode, DecimalMode
from cdc_sources.spi import ConfigError, ConfigProblem

TimePrecisionMode = Literal[
    "adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds", "nanoseconds"
]
HstoreMode = Literal["json", "map"]
IntervalMode = Literal["numeric", "string"]

_CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "decimal_handling_mode": ("decimal.handling.mode", get_args(DecimalMode)),
    "time_precision_mode": ("time.precision.mode", get_args(TimePrecisionMode)),
    "binary_handling_mode": ("binary.handling.mode", get_args(BinaryMode)),
    "hstore_handling_mode": ("hstore.handling.mode", get_args(HstoreMode)),
    "interval_handling_mode": ("interval.handling.mode", get_args(IntervalMode)),
}

HEX_PREFIX = "hex:"


@dataclass(frozen=True)
class ConverterSettings:
    """How values are rendered; one instance serves every column of a connector.

    Attributes:
        decimal_handling_mode: ``decimal.handling.mode`` (NUMERIC, DECIMAL, MONEY).
        time_precision_mode: ``time.precision.mode`` (DATE, TIME, TIMESTAMP).
        binary_handling_mode: ``binary.handling.mode`` (BYTEA and unknown types).
        hstore_handling_mode: ``hstore.handling.mode``.
        interval_handling_mode: ``interval.handling.mode``.
        money_fraction_digits: ``money.fraction.digits``, the scale of MONEY values.
        unavailable_value_placeholder: ``unavailable.value.placeholder``; a ``hex:`` prefix
            means the rest is hex-encoded bytes.
        include_unknown_datatypes: ``include.unknown.datatypes``; unknown types are rendered as
            their text's bytes instead of being left out.

    Immutable and thread-safe.
    """

    decimal_handling_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive"
    binary_handling_mode: BinaryMode = "bytes"
    hstore_handling_mode: HstoreMode = "json"
    interval_handling_mode: IntervalMode = "numeric"
    money_fraction_digits: int = 2
    unavailable_value_placeholder: str = "__debezium_unavailable_value"
    include_unknown_datatypes: bool = False

    def __post_init__(self) -> None:
        problems = [
            ConfigProblem(option, f"unknown value {getattr(self, attr)!r}; valid values: {', '.join(valid)}")
            for attr, (option, valid) in _CHOICES.items()
            if getattr(self, attr) not in valid
        ]
        if not isinstance(self.money_fraction_digits, int) or self.money_fraction_digits < 0:
            problems.append(ConfigProblem(
                "money.fraction.digits", f"must be a non-negative integer, got {self.money_fraction_digits!r}"
            ))
        problems.extend(self._placeholder_problems())
        if problems:
            raise ConfigError(problems)

    def _placeholder_problems(self) -> list[ConfigProblem]:
        text = self.unavailable_value_placeholder
        if not text.startswith(HEX_PREFIX):
            return []
        digits = text[len(HEX_PREFIX):]
        try:
            bytes.fromhex(digits)
        except ValueError:
            return [ConfigProblem(
                "unavailable.value.placeholder",
                f"{text!r} starts with 'hex:' but the rest is not an even number of hex digits",
            )]
        return []

    @cached_property
    def placeholder_bytes(self) -> bytes:
        """The placeholder as bytes: hex-decoded after a ``hex:`` prefix, else UTF-8."""
        text = self.unavailable_value_placeholder
        if text.startswith(HEX_PREFIX):
            return bytes.fromhex(text[len(HEX_PREFIX):])
        return text.encode()

    @cached_property
    def placeholder_text(self) -> str:
        """The placeholder as a string: its bytes decoded as UTF-8 (as Debezium's ``new String``)."""
        return self.placeholder_bytes.decode("utf-8", errors="replace")
