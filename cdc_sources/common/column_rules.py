"""Debezium's ordered column-mapper rules: which single rule applies to a column.

Debezium (``ColumnMappers.create``, 3.6.3) turns these options into ONE list of rules and
gives a column the mapper of the FIRST rule that matches it, never two:

1. ``column.truncate.to.<N>.chars``
2. ``column.mask.with.<N>.chars``
3. ``column.propagate.source.type``
4. ``datatype.propagate.source.type``
5. ``column.mask.hash.<alg>.with.salt.<salt>``
6. ``column.mask.hash.v2.<alg>.with.salt.<salt>``

So a column matched by a truncate rule and by ``column.propagate.source.type`` is truncated
but gets no source-type parameters, and one matched by ``column.propagate.source.type`` and a
hash rule is propagated but NOT hashed (checked against Debezium 3.6.3 by
``tests/cdc_sources/common/DebeziumProbe.java``). Several options of one kind apply in the
order of Debezium's config ``HashMap``, which is unspecified; here they apply in the order
of the options mapping.

An option's value is a regex list (`cdc_sources.common.regex_list`). A column rule matches
``<container>.<table>.<column>`` or, for tables with a catalog (a SQL Server database),
``<catalog>.<container>.<table>.<column>``. ``datatype.propagate.source.type`` matches
``<container>.<table>.<type name>`` the same way: not the bare type name, so write
``.+\\.varchar``. Matching ignores case.

Rules apply to VALUE fields only; key fields are never truncated, masked or annotated.
`cdc_sources.common.column_transforms` and `cdc_sources.common.source_type` are the two
views connectors use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from cdc_sources.common.hashing import hashlib_name, supported_algorithms
from cdc_sources.common.regex_list import InvalidRegexListError, RegexList
from cdc_sources.spi import ConfigProblem

__all__ = ["ColumnRule", "ColumnRules", "RuleKind", "is_column_rule_option", "parse_column_rules"]

_JAVA_INT_MAX = 2**31 - 1


class RuleKind(Enum):
    """The kinds of rule, in Debezium's precedence order."""

    TRUNCATE = "truncate"
    MASK = "mask"
    PROPAGATE_COLUMN = "propagate_column"
    PROPAGATE_TYPE = "propagate_type"
    HASH_V1 = "hash_v1"
    HASH_V2 = "hash_v2"

    @property
    def propagates(self) -> bool:
        """Whether the rule adds source-type schema parameters (rather than changing values)."""
        return self in (RuleKind.PROPAGATE_COLUMN, RuleKind.PROPAGATE_TYPE)


_OPTION_NAMES: tuple[tuple[RuleKind, re.Pattern[str]], ...] = (
    (RuleKind.TRUNCATE, re.compile(r"column\.truncate\.to\.(\d+)\.chars", re.ASCII)),
    (RuleKind.MASK, re.compile(r"column\.mask\.with\.(\d+)\.chars", re.ASCII)),
    (RuleKind.PROPAGATE_COLUMN, re.compile(r"column\.propagate\.source\.type")),
    (RuleKind.PROPAGATE_TYPE, re.compile(r"datatype\.propagate\.source\.type")),
    (RuleKind.HASH_V1, re.compile(r"column\.mask\.hash\.([^.]+)\.with\.salt\.(.+)")),
    (RuleKind.HASH_V2, re.compile(r"column\.mask\.hash\.v2\.([^.]+)\.with\.salt\.(.+)")),
)


@dataclass(frozen=True, slots=True)
class ColumnRule:
    """One rule: an option and the columns it names.

    Attributes:
        kind: what the rule does.
        option: the option name it came from (for messages).
        patterns: the columns (or types) it applies to.
        size: the ``<N>`` of truncate and mask options.
        algorithm: the Java ``MessageDigest`` name of hash options.
        salt: the salt of hash options.
    """

    kind: RuleKind
    option: str
    patterns: RegexList
    size: int = 0
    algorithm: str = ""
    salt: str = ""


def is_column_rule_option(name: str) -> bool:
    """Whether ``name`` is one of the option families above (for unknown-option checks)."""
    return any(pattern.fullmatch(name) for _, pattern in _OPTION_NAMES)


def parse_column_rules(
    options: Mapping[str, str], *, case_sensitive: bool = False
) -> tuple[ColumnRules, list[tuple[RuleKind, ConfigProblem]]]:
    """Collect every rule from ``options``, with the problems found, tagged by rule kind."""
    found: dict[RuleKind, list[ColumnRule]] = {kind: [] for kind in RuleKind}
    problems: list[tuple[RuleKind, ConfigProblem]] = []
    for name, value in options.items():
        for kind, option_name in _OPTION_NAMES:
            match = option_name.fullmatch(name)
            if match is None:
                continue
            rule, problem = _rule(kind, name, match, value, case_sensitive)
            if problem is not None:
                problems.append((kind, ConfigProblem(name, problem)))
            elif rule is not None:
                found[kind].append(rule)
    return ColumnRules([rule for kind in RuleKind for rule in found[kind]]), problems


def _rule(
    kind: RuleKind, name: str, match: re.Match[str], value: str, case_sensitive: bool
) -> tuple[ColumnRule | None, str | None]:
    size, algorithm, salt = 0, "", ""
    if kind in (RuleKind.TRUNCATE, RuleKind.MASK):
        size = int(match.group(1))
        if size > _JAVA_INT_MAX:
            return None, f"the length {match.group(1)} in the option name is larger than {_JAVA_INT_MAX}"
    elif kind in (RuleKind.HASH_V1, RuleKind.HASH_V2):
        algorithm, salt = match.group(1), match.group(2)
        if hashlib_name(algorithm) is None:
            return None, _unknown_algorithm(algorithm)
    try:
        patterns = RegexList(value, case_sensitive=case_sensitive)
    except InvalidRegexListError as exc:
        return None, f"{exc.message}; the value is a comma-separated list of column regexes"
    if not patterns.items:
        return None, None
    return ColumnRule(kind, name, patterns, size, algorithm, salt), None


def _unknown_algorithm(algorithm: str) -> str:
    valid = ", ".join(supported_algorithms())
    if algorithm.upper() == "MD2":
        return f"hash algorithm MD2 is not available in Python's hashlib; use one of {valid}"
    return f"unknown hash algorithm {algorithm!r}; use a Java MessageDigest name: {valid}"


class ColumnRules:
    """The ordered rules; `first_match` gives the one rule Debezium applies to a column.

    Thread-safe; results are cached per column.
    """

    __slots__ = ("_cache", "rules")

    def __init__(self, rules: Sequence[ColumnRule] = ()) -> None:
        """Keep ``rules`` in precedence order (first match wins)."""
        self.rules: tuple[ColumnRule, ...] = tuple(rules)
        self._cache: dict[tuple[str | None, str, str, str, str | None], ColumnRule | None] = {}

    def first_match(
        self,
        container: str,
        table: str,
        column: str,
        *,
        type_name: str | None = None,
        catalog: str | None = None,
    ) -> ColumnRule | None:
        """The rule Debezium applies to this column, or None.

        Args:
            container: schema (PostgreSQL, SQL Server) or database (MySQL).
            table: the table name.
            column: the column name.
            type_name: the source type name as Debezium's ``Column.typeName()`` has it;
                needed for ``datatype.propagate.source.type`` (None never matches those).
            catalog: the database, for connectors whose tables have three-part names.
        """
        if not self.rules:
            return None
        key = (catalog, container, table, column, type_name)
        try:
            return self._cache[key]
        except KeyError:
            found = self._cache[key] = self._find(container, table, column, type_name, catalog)
            return found

    def _find(
        self, container: str, table: str, column: str, type_name: str | None, catalog: str | None
    ) -> ColumnRule | None:
        mapped = f"{container}.{table}."
        full = f"{catalog}.{mapped}" if catalog else None
        for rule in self.rules:
            leaf = type_name if rule.kind is RuleKind.PROPAGATE_TYPE else column
            if leaf is None:
                continue
            if rule.patterns.matches(mapped + leaf) or (full is not None and rule.patterns.matches(full + leaf)):
                return rule
        return None
