"""``message.key.columns``: which columns make up a table's event key.

As Debezium 3.6.3 does it (``Key.CustomKeyMapper`` and the option's validator, checked by
``tests/cdc_sources/common/DebeziumProbe.java``):

- The value is ``;``-separated entries ``<table regex>:<column>,<column>...``, e.g.
  ``inventory.customers:pk1,pk2;(.*).purchaseorders:pk3,pk4``. The table part is matched
  against ``<container>.<table>`` (schema.table for PostgreSQL, database.table for MySQL).
- Validation: a present but empty value is a problem, and every entry must match
  ``^\\s*([^:]+):([^:,]+(,[^:,]+)*)\\s*$``. Entries are split like Java's ``String.split``,
  which drops trailing empty entries: ``a:b;`` is fine, ``a:b;;c:d`` is not.
- Each (table part, column) pair is ONE regex, ``<table part>.<column>`` (column trimmed),
  matched case-insensitively against ``<container>.<table>.<column>`` (or, with a
  catalog, ``<catalog>.<container>.<table>.<column>``) for every column of the table. So
  the column is a regex too, and the joining ``.`` matches any character.
- The key is, pair by pair in the order written, the table's columns each pair matches (in
  table order): ``t:b,a`` gives ``(b, a)``. When nothing matches, the primary key is used.
- A column matched by two pairs is listed once here; Debezium lists it twice and then fails
  to build the key schema (duplicate field).
- Key columns are key fields whatever ``column.include.list``/``exclude.list`` say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cdc_sources.common.regex_list import JAVA_TRIM, InvalidRegexListError, RegexList
from cdc_sources.spi import ConfigProblem

__all__ = ["KEY_COLUMNS_OPTION", "KeyColumns"]

KEY_COLUMNS_OPTION = "message.key.columns"
_ENTRY = re.compile(r"^\s*([^:]+):([^:,]+(,[^:,]+)*)\s*$", re.ASCII)


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split(separator)`` with Java's limit-0 rules (trailing empties dropped)."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


class KeyColumns:
    """Custom key columns per table. Thread-safe; cached per table and column list."""

    __slots__ = ("_cache", "_pairs")

    def __init__(self, pairs: Sequence[RegexList] = ()) -> None:
        """Keep the compiled ``<table part>.<column>`` regexes in the order written."""
        self._pairs = tuple(pairs)
        self._cache: dict[tuple[str | None, str, str, tuple[str, ...]], tuple[str, ...] | None] = {}

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], *, case_sensitive: bool = False
    ) -> tuple[KeyColumns, list[ConfigProblem]]:
        """Parse ``message.key.columns``; returns the mapping and every problem found."""
        text = options.get(KEY_COLUMNS_OPTION)
        if text is None:
            return cls(), []
        if not text:
            return cls(), [ConfigProblem(KEY_COLUMNS_OPTION, "must not be empty; remove the option instead")]
        problems: list[ConfigProblem] = []
        pairs: list[RegexList] = []
        for entry in _java_split(text, ";"):
            if _ENTRY.search(entry) is None:
                problems.append(ConfigProblem(KEY_COLUMNS_OPTION, _bad_entry(entry)))
                continue
            table_part, columns = entry.split(":", 1)
            for column in _java_split(columns, ","):
                pair = _compile(f"{table_part}.{column.strip(JAVA_TRIM)}", case_sensitive, problems)
                if pair is not None:
                    pairs.append(pair)
        return cls(pairs), problems

    def for_table(
        self, container: str, table: str, columns: Sequence[str], *, catalog: str | None = None
    ) -> tuple[str, ...] | None:
        """The key columns of a table, or None to use its primary key.

        Args:
            container: schema (PostgreSQL) or database (MySQL).
            table: the table name.
            columns: every column of the table, in table order.
            catalog: the database, for three-part table names.
        """
        if not self._pairs:
            return None
        key = (catalog, container, table, tuple(columns))
        try:
            return self._cache[key]
        except KeyError:
            found = self._cache[key] = self._choose(container, table, key[3], catalog)
            return found

    def _choose(
        self, container: str, table: str, columns: tuple[str, ...], catalog: str | None
    ) -> tuple[str, ...] | None:
        mapped = f"{container}.{table}."
        full = f"{catalog}.{mapped}" if catalog else None
        chosen: list[str] = []
        for pair in self._pairs:
            for column in columns:
                if column in chosen:
                    continue
                if pair.matches(mapped + column) or (full is not None and pair.matches(full + column)):
                    chosen.append(column)
        return tuple(chosen) or None


def _bad_entry(entry: str) -> str:
    return (
        f"{entry!r} has an invalid format: expected <table regex>:<column>[,<column>...], "
        "entries separated by ';' (e.g. inventory.customers:pk1,pk2;(.*).purchaseorders:pk3)"
    )


def _compile(text: str, case_sensitive: bool, problems: list[ConfigProblem]) -> RegexList | None:
    try:
        return RegexList(text, case_sensitive=case_sensitive)
    except InvalidRegexListError as exc:
        problems.append(ConfigProblem(KEY_COLUMNS_OPTION, f"{exc.message}; fix the table or column part"))
        return None
