"""Data-quality expectations of a silver table (YAML ``expectations:``), as typed models.

Each expectation is checked on every increment before it is applied (`silver.quality`), on the
rows the increment upserts, by their silver column names (after ``rename``; the bookkeeping
columns ``_cdc_seq``, ``_cdc_op``, ``_cdc_ts`` too). Its ``action`` says what a failure does:

* ``warn``: logged and recorded; the increment applies;
* ``quarantine``: the failing rows go to the quarantine table (reason: the expectation's name)
  and are not applied; the rest of the increment is;
* ``fail``: nothing of the increment is applied and progress does not move; the table fails
  with an error naming the expectation and its number of failing rows.

Example (YAML)::

    expectations:
      - {type: not_null, column: email, action: quarantine}
      - {type: between, column: age, min: 0, max: 150, action: quarantine}
      - {type: row_count, max: 100000, action: fail}
      - {type: sql, name: positive_balance, condition: "balance >= 0", action: warn}

This module is pyspark-free: the pipeline file loads where Spark is not installed.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["ROW_LEVEL", "TABLE_LEVEL", "Action", "Expectation", "ExpectationType"]


class ExpectationType(StrEnum):
    """What an expectation checks."""

    NOT_NULL = "not_null"
    UNIQUE = "unique"
    BETWEEN = "between"
    REGEX = "regex"
    ACCEPTED_VALUES = "accepted_values"
    ROW_COUNT = "row_count"
    FRESHNESS = "freshness"
    SQL = "sql"


class Action(StrEnum):
    """What a failing expectation does (see module doc)."""

    WARN = "warn"
    QUARANTINE = "quarantine"
    FAIL = "fail"


ROW_LEVEL = frozenset({ExpectationType.NOT_NULL, ExpectationType.UNIQUE, ExpectationType.BETWEEN,
                       ExpectationType.REGEX, ExpectationType.ACCEPTED_VALUES, ExpectationType.SQL})
"""Expectations that fail individual rows (these can quarantine them)."""
TABLE_LEVEL = frozenset({ExpectationType.ROW_COUNT, ExpectationType.FRESHNESS})
"""Expectations about the increment as a whole."""

_KEYS: dict[ExpectationType, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys, optional keys) besides type, name and action
    ExpectationType.NOT_NULL: (frozenset({"column"}), frozenset()),
    ExpectationType.UNIQUE: (frozenset({"columns"}), frozenset()),
    ExpectationType.BETWEEN: (frozenset({"column"}), frozenset({"min", "max"})),
    ExpectationType.REGEX: (frozenset({"column", "pattern"}), frozenset()),
    ExpectationType.ACCEPTED_VALUES: (frozenset({"column", "values"}), frozenset()),
    ExpectationType.ROW_COUNT: (frozenset(), frozenset({"min", "max"})),
    ExpectationType.FRESHNESS: (frozenset({"max_age_seconds"}), frozenset({"column"})),
    ExpectationType.SQL: (frozenset({"condition"}), frozenset()),
}
_OPTIONAL_FIELDS = ("column", "columns", "min", "max", "pattern", "values", "condition", "max_age_seconds")

FRESHNESS_DEFAULT_COLUMN = "_cdc_ts"
"""The column ``freshness`` looks at by default: the source commit time of each row."""


class Expectation(BaseModel):
    """One expectation of a silver table.

    Attributes:
        type: what is checked (`ExpectationType`).
        action: ``warn``, ``quarantine`` (row-level types only) or ``fail``.
        name: how results, errors and quarantine rows name it (default: type and columns,
            e.g. ``not_null_email``); unique within the table.
        column: the silver column (``not_null``, ``between``, ``regex``, ``accepted_values``,
            ``freshness``: default ``_cdc_ts``).
        columns: ``unique``: the columns whose combined values must not repeat within the increment.
        min / max: ``between``: inclusive bounds of the column's values (either may be left out);
            ``row_count``: inclusive bounds of the increment's upserted rows.
        pattern: ``regex``: a Java regular expression each value must contain a match of.
        values: ``accepted_values``: the allowed values.
        condition: ``sql``: a Spark SQL boolean expression over the row's columns; a row fails
            when it is not true (false or null).
        max_age_seconds: ``freshness``: the increment's newest ``column`` value must be at most
            this old when it is checked.

    Nulls pass every row-level type but ``not_null`` and ``sql``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ExpectationType
    action: Action
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")
    column: str | None = Field(None, min_length=1)
    columns: list[str] | None = None
    min: float | None = None
    max: float | None = None
    pattern: str | None = None
    values: list[str | int | float | bool] | None = None
    condition: str | None = Field(None, min_length=1)
    max_age_seconds: float | None = Field(None, gt=0)

    @field_validator("columns")
    @classmethod
    def _columns(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or len(set(value)) != len(value)):
            raise ValueError("must name at least one column, each once")
        return value

    @field_validator("values")
    @classmethod
    def _values(cls, value: list[str | int | float | bool] | None) -> list[str | int | float | bool] | None:
        if value is not None and not value:
            raise ValueError("must list at least one value")
        return value

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _keys_of_type(self) -> Expectation:
        required, optional = _KEYS[self.type]
        given = {f for f in _OPTIONAL_FIELDS if getattr(self, f) is not None}
        problems = [f"{key}: required by type {self.type.value}" for key in sorted(required - given)]
        problems += [f"{key}: not a key of type {self.type.value}" for key in sorted(given - required - optional)]
        if self.type in (ExpectationType.BETWEEN, ExpectationType.ROW_COUNT) and self.min is None \
                and self.max is None:
            problems.append(f"min: {self.type.value} needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            problems.append(f"min: {self.min:g} is above max {self.max:g}")
        if self.type is ExpectationType.ROW_COUNT and any(
                b is not None and (b < 0 or b != int(b)) for b in (self.min, self.max)):
            problems.append("min: row_count bounds are whole numbers >= 0")
        if self.action is Action.QUARANTINE and self.type in TABLE_LEVEL:
            problems.append(f"action: {self.type.value} checks the increment as a whole, it has no rows to "
                            "quarantine; use warn or fail")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def label(self) -> str:
        """The expectation's name: ``name``, else its type and columns."""
        if self.name is not None:
            return self.name
        cols = self.columns or ([self.column] if self.column else [])
        return "_".join([self.type.value, *cols])

    @property
    def freshness_column(self) -> str:
        """The column ``freshness`` looks at."""
        return self.column or FRESHNESS_DEFAULT_COLUMN

    @property
    def referenced_columns(self) -> list[str]:
        """The silver columns the expectation names (``sql`` conditions are not parsed)."""
        if self.type is ExpectationType.FRESHNESS:
            return [self.freshness_column]
        return list(self.columns or ([self.column] if self.column else []))

    @property
    def kind(self) -> Literal["row", "table"]:
        """Whether it fails rows or the increment as a whole."""
        return "row" if self.type in ROW_LEVEL else "table"
