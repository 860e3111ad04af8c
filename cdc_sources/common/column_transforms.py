"""Value transforms of Debezium's column options: truncate, mask with asterisks, hash.

Which rule applies to a column is decided by `cdc_sources.common.column_rules` (one rule
per column, first match wins). What each rule does, as Debezium 3.6.3's ``TruncateColumn``
and ``MaskStrings`` do it (checked by ``tests/cdc_sources/common/DebeziumProbe.java``):

- ``column.truncate.to.<N>.chars``: only when the column length is unknown or larger than
  N. Then a text value longer than N is cut to its first N characters, a binary value
  longer than N bytes to its first N bytes, and anything else passes unchanged: the test
  is on the value, not the column type, so e.g. a numeric written as a string
  (``decimal.handling.mode=string``) is cut too. Schema parameter ``truncateLength=N``.
  Java counts UTF-16 units, so a character outside the BMP counts two; when the cut falls
  inside such a pair the whole character is dropped (Java would keep half a pair, which
  no UTF-8 JSON can carry).
- ``column.mask.with.<N>.chars``: character columns get N asterisks (``""`` for 0) in
  place of EVERY value, null included. Other columns keep their values.
- ``column.mask.hash[.v2].<alg>.with.salt.<salt>``: character columns get the salted hash
  (`cdc_sources.common.hashing`), cut to the column length when that is positive; null
  stays null. Other columns keep their values.
- Both masks add the schema parameter ``masked=true`` to every column they match, character
  or not. No rule changes a field's schema type or optionality.

"Character column" means a JDBC type in `JDBC_CHARACTER_TYPES`; the connector says so
with ``is_string``. The transform runs after the type conversion (Debezium wraps the value
converter), so give it the value as it will be written: the ``str``, or ``bytes`` before
base64. Rules apply to value fields only, never to key fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cdc_sources.common.column_rules import ColumnRule, ColumnRules, RuleKind, parse_column_rules
from cdc_sources.common.hashing import HashStrategy, make_hasher
from cdc_sources.spi import ConfigProblem

__all__ = ["JDBC_CHARACTER_TYPES", "ColumnTransform", "ColumnTransforms"]

JDBC_CHARACTER_TYPES = frozenset(
    {"CHAR", "VARCHAR", "LONGVARCHAR", "CLOB", "NCHAR", "NVARCHAR", "LONGNVARCHAR", "NCLOB", "DATALINK"}
)
"""The ``java.sql.Types`` a column must have for masks to change its values."""

_MASKED: Mapping[str, str] = MappingProxyType({"masked": "true"})
_BMP_MAX = "\uffff"


@dataclass(frozen=True, slots=True)
class ColumnTransform:
    """What one rule does to one column.

    Attributes:
        option: the option that decided it.
        convert: maps a converted value to the value written; None leaves values unchanged.
        schema_parameters: parameters Debezium adds to the field schema.
    """

    option: str
    convert: Callable[[Any], Any] | None
    schema_parameters: Mapping[str, str]


class ColumnTransforms:
    """Truncate/mask/hash rules, resolved once per column.

    Thread-safe; `for_column` is cached, and costs one check when no rule is configured.
    """

    __slots__ = ("_cache", "_rules")

    def __init__(self, rules: ColumnRules | None = None) -> None:
        """Use ``rules`` (shared with `SourceTypePropagation` to keep Debezium's precedence)."""
        self._rules = rules if rules is not None else ColumnRules()
        self._cache: dict[tuple[Any, ...], ColumnTransform | None] = {}

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], *, case_sensitive: bool = False
    ) -> tuple[ColumnTransforms, list[ConfigProblem]]:
        """Build from Debezium options; returns the problems of the truncate/mask/hash options."""
        rules, tagged = parse_column_rules(options, case_sensitive=case_sensitive)
        return cls(rules), [problem for kind, problem in tagged if not kind.propagates]

    def for_column(
        self,
        container: str,
        table: str,
        column: str,
        *,
        is_string: bool,
        length: int | None,
        type_name: str | None = None,
        catalog: str | None = None,
    ) -> ColumnTransform | None:
        """The transform of a value column, or None when no truncate/mask/hash rule applies.

        Args:
            container: schema (PostgreSQL) or database (MySQL).
            table: the table name.
            column: the column name.
            is_string: the column's JDBC type is in `JDBC_CHARACTER_TYPES`.
            length: the column length (``varchar(20)`` -> 20); None or negative if unknown.
            type_name: the source type name, so ``datatype.propagate.source.type`` can take
                precedence over hash rules as in Debezium.
            catalog: the database, for three-part table names.
        """
        if not self._rules.rules:
            return None
        key = (catalog, container, table, column, type_name, is_string, length)
        try:
            return self._cache[key]
        except KeyError:
            rule = self._rules.first_match(container, table, column, type_name=type_name, catalog=catalog)
            built = self._cache[key] = None if rule is None else _build(rule, is_string, length)
            return built

    def transform_for(
        self,
        container: str,
        table: str,
        column: str,
        *,
        is_string: bool,
        length: int | None,
        type_name: str | None = None,
        catalog: str | None = None,
    ) -> Callable[[Any], Any] | None:
        """Only the value function of `for_column`; None when values pass unchanged."""
        found = self.for_column(
            container, table, column, is_string=is_string, length=length, type_name=type_name, catalog=catalog
        )
        return None if found is None else found.convert


def _build(rule: ColumnRule, is_string: bool, length: int | None) -> ColumnTransform | None:
    if rule.kind is RuleKind.TRUNCATE:
        if length is not None and 0 <= length <= rule.size:
            return None
        return ColumnTransform(rule.option, _truncator(rule.size), {"truncateLength": str(rule.size)})
    if rule.kind is RuleKind.MASK:
        convert = _constant("*" * rule.size) if is_string else None
        return ColumnTransform(rule.option, convert, _MASKED)
    if rule.kind in (RuleKind.HASH_V1, RuleKind.HASH_V2):
        strategy = HashStrategy.V1 if rule.kind is RuleKind.HASH_V1 else HashStrategy.V2
        hasher = make_hasher(rule.algorithm, rule.salt, strategy, length=length) if is_string else None
        return ColumnTransform(rule.option, hasher, _MASKED)
    return None  # a source-type rule came first: Debezium then neither truncates nor masks


def _constant(mask: str) -> Callable[[Any], Any]:
    def masked(_value: Any) -> Any:
        return mask

    return masked


def _truncator(max_length: int) -> Callable[[Any], Any]:
    def truncate(value: Any) -> Any:
        if isinstance(value, str):
            return _truncate_text(value, max_length)
        if isinstance(value, bytes | bytearray | memoryview) and len(value) > max_length:
            return bytes(value[:max_length])
        return value

    return truncate


def _truncate_text(value: str, max_units: int) -> str:
    """The first ``max_units`` UTF-16 units of ``value``, as Java's ``substring`` counts."""
    if len(value) * 2 <= max_units:
        return value
    if value.isascii() or max(value) <= _BMP_MAX:
        return value if len(value) <= max_units else value[:max_units]
    units = 0
    for index, char in enumerate(value):
        units += 2 if char > _BMP_MAX else 1
        if units > max_units:
            return value[:index]
    return value
