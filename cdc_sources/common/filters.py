"""Which tables, columns and logical-decoding messages a connector captures.

Debezium's include/exclude lists (``RelationalTableFilters``, ``Selectors``,
``Tables.ColumnNameFilterFactory``, ``LogicalDecodingMessageFilter``), for names with two
levels: a container (a PostgreSQL/SQL Server schema, a MySQL database) and a table.
The rules, checked against Debezium 3.6.3:

- Every list is a comma-separated list of anchored, case-insensitive Java regexes
  (`cdc_sources.common.regex_list`). Tables are matched as ``<container>.<table>``,
  columns as ``<container>.<table>.<column>``, containers and message prefixes alone.
- Include and exclude lists of the same level may not both be given (a config problem,
  reported on the exclude option) even if one is blank. If they were, include would win.
- A blank include or exclude list is ignored (everything passes), except
  ``column.include.list``: Debezium then drops every column from the value, so a blank
  one is reported as a problem here instead.
- ``table.ignore.builtin`` (default true) hides the connector's system tables whatever
  the lists say; the connector supplies them as `BuiltinTables`.
- Tables given as ``always_include`` (Debezium adds the ``signal.data.collection`` tables
  this way) are captured whatever the lists and ``table.ignore.builtin`` say.
- The column lists shape the event VALUE only: key columns stay in the key.

Results are cached per name, so repeated calls cost one dict lookup. Filters are
immutable after construction and thread-safe (the caches only ever gain equal entries).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from cdc_sources.common.regex_list import JAVA_TRIM, RegexList, regex_list_option
from cdc_sources.spi import ConfigProblem

__all__ = [
    "COLUMN_LISTS",
    "DATABASE_LISTS",
    "IGNORE_BUILTIN_OPTION",
    "MESSAGE_PREFIX_LISTS",
    "SCHEMA_LISTS",
    "TABLE_LISTS",
    "BuiltinTables",
    "ColumnFilter",
    "DataCollectionFilter",
    "ListOptions",
    "MessagePrefixFilter",
    "no_table_matches",
]

Predicate = Callable[[str], bool]

IGNORE_BUILTIN_OPTION = "table.ignore.builtin"
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True)
class ListOptions:
    """The names of one include/exclude option pair."""

    include: str
    exclude: str


SCHEMA_LISTS = ListOptions("schema.include.list", "schema.exclude.list")
DATABASE_LISTS = ListOptions("database.include.list", "database.exclude.list")
TABLE_LISTS = ListOptions("table.include.list", "table.exclude.list")
COLUMN_LISTS = ListOptions("column.include.list", "column.exclude.list")
MESSAGE_PREFIX_LISTS = ListOptions("message.prefix.include.list", "message.prefix.exclude.list")


@dataclass(frozen=True)
class BuiltinTables:
    """A connector's system tables, hidden while ``table.ignore.builtin`` is true.

    Attributes:
        containers: system containers, lower-case; compared with the lower-cased name
            (PostgreSQL: ``pg_catalog``, ``information_schema``; MySQL: ``mysql``, ``sys``,
            ``performance_schema``, ``information_schema``).
        container_prefixes: container name prefixes, compared case-sensitively
            (PostgreSQL: ``pg_temp``).
        tables: system tables in any container, lower-case (PostgreSQL: ``spatial_ref_sys``).
    """

    containers: frozenset[str] = frozenset()
    container_prefixes: tuple[str, ...] = ()
    tables: frozenset[str] = frozenset()

    def holds_container(self, container: str) -> bool:
        """Whether the whole container is a system one."""
        return container.lower() in self.containers or container.startswith(self.container_prefixes)

    def holds(self, container: str, table: str) -> bool:
        """Whether ``container.table`` is a system table."""
        return self.holds_container(container) or table.lower() in self.tables


def _selection(
    options: Mapping[str, str], lists: ListOptions, *, case_sensitive: bool, problems: list[ConfigProblem]
) -> Predicate | None:
    """Debezium's include-or-exclude predicate for one level; None when both are absent."""
    if options.get(lists.include) is not None and options.get(lists.exclude) is not None:
        problems.append(
            ConfigProblem(
                lists.exclude,
                f"cannot be used together with {lists.include}: Debezium allows either the "
                "include or the exclude list of a level, not both; keep one of them",
            )
        )
    include = regex_list_option(options, lists.include, case_sensitive=case_sensitive, problems=problems)
    exclude = regex_list_option(options, lists.exclude, case_sensitive=case_sensitive, problems=problems)
    if include is not None:
        return include.matches
    if exclude is not None:
        return _negate(exclude)
    return None


def _negate(patterns: RegexList) -> Predicate:
    matches = patterns.matches
    return lambda name: not matches(name)


def _flag(options: Mapping[str, str], name: str, default: bool, problems: list[ConfigProblem]) -> bool:
    text = options.get(name)
    if text is None:
        return default
    value = text.strip(JAVA_TRIM).lower()
    if value not in ("true", "false"):
        problems.append(ConfigProblem(name, f"must be true or false, got {text!r}"))
        return default
    return value == "true"


class DataCollectionFilter:
    """Which tables are captured: container lists, table lists, system tables.

    Build it with `from_options`. Thread-safe; ``includes_table`` is cached per table.
    """

    __slots__ = ("_always", "_always_containers", "_builtin", "_cache", "_container", "_fold", "_table")

    def __init__(
        self,
        *,
        container: Predicate | None = None,
        table: Predicate | None = None,
        builtin: BuiltinTables | None = None,
        always_include: Iterable[tuple[str, str]] = (),
        case_sensitive: bool = False,
    ) -> None:
        """Combine already-built predicates.

        Args:
            container: decides on a container name; None lets every container through.
            table: decides on ``<container>.<table>``; None lets every table through.
            builtin: system tables to hide; None hides nothing (``table.ignore.builtin=false``).
            always_include: ``(container, table)`` pairs captured whatever else says.
            case_sensitive: whether ``always_include`` names are compared case-sensitively.
        """
        self._container = container
        self._table = table
        self._builtin = builtin
        self._fold: Callable[[str], str] = (lambda s: s) if case_sensitive else _ascii_lower
        pairs = [(self._fold(c), self._fold(t)) for c, t in always_include]
        self._always = frozenset(f"{c}.{t}" for c, t in pairs)
        self._always_containers = frozenset(c for c, _ in pairs)
        self._cache: dict[tuple[str, str], bool] = {}

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, str],
        *,
        container_lists: ListOptions,
        builtin: BuiltinTables,
        always_include: Iterable[tuple[str, str]] = (),
        case_sensitive: bool = False,
    ) -> tuple[DataCollectionFilter, list[ConfigProblem]]:
        """Build the filter from Debezium options.

        Args:
            options: the connector options (Debezium property names).
            container_lists: `SCHEMA_LISTS` (PostgreSQL, SQL Server, Oracle) or
                `DATABASE_LISTS` (MySQL).
            builtin: the connector's system tables (``table.ignore.builtin``).
            always_include: tables captured regardless (the signal table).
            case_sensitive: False for every Debezium relational connector.

        Returns:
            The filter and every problem found; the filter is meaningful only without problems.
        """
        problems: list[ConfigProblem] = []
        container = _selection(options, container_lists, case_sensitive=case_sensitive, problems=problems)
        table = _selection(options, TABLE_LISTS, case_sensitive=case_sensitive, problems=problems)
        ignore_builtin = _flag(options, IGNORE_BUILTIN_OPTION, True, problems)
        built = cls(
            container=container,
            table=table,
            builtin=builtin if ignore_builtin else None,
            always_include=always_include,
            case_sensitive=case_sensitive,
        )
        return built, problems

    def includes_container(self, container: str) -> bool:
        """Whether tables of ``container`` may be captured (a quick pre-check)."""
        if self._fold(container) in self._always_containers:
            return True
        if self._builtin is not None and self._builtin.holds_container(container):
            return False
        return self._container is None or self._container(container)

    def includes_table(self, container: str, table: str) -> bool:
        """Whether ``container.table`` is captured."""
        key = (container, table)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._decide(container, table)
        return cached

    def _decide(self, container: str, table: str) -> bool:
        name = f"{container}.{table}"
        if self._fold(name) in self._always:
            return True
        if self._builtin is not None and self._builtin.holds(container, table):
            return False
        if self._container is not None and not self._container(container):
            return False
        return self._table is None or self._table(name)


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


class ColumnFilter:
    """Which columns appear in the event value (``column.include.list``/``exclude.list``).

    Key columns are never removed from the key. Thread-safe; cached per column.
    """

    __slots__ = ("_cache", "_predicate")

    def __init__(self, predicate: Predicate | None = None) -> None:
        """Wrap a predicate over ``<container>.<table>.<column>``; None keeps every column."""
        self._predicate = predicate
        self._cache: dict[tuple[str, str, str], bool] = {}

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], *, case_sensitive: bool = False
    ) -> tuple[ColumnFilter, list[ConfigProblem]]:
        """Build the filter from Debezium options; returns it with every problem found."""
        problems: list[ConfigProblem] = []
        text = options.get(COLUMN_LISTS.include)
        if text is not None and not text.strip(JAVA_TRIM):
            problems.append(
                ConfigProblem(
                    COLUMN_LISTS.include,
                    "is empty, which makes Debezium drop every column from the event value; "
                    "list the columns to keep, or remove the option",
                )
            )
        predicate = _selection(options, COLUMN_LISTS, case_sensitive=case_sensitive, problems=problems)
        return cls(predicate), problems

    @property
    def active(self) -> bool:
        """Whether some column may be left out (Debezium's ``isColumnsFiltered``)."""
        return self._predicate is not None

    def includes(self, container: str, table: str, column: str) -> bool:
        """Whether ``column`` of ``container.table`` is part of the value."""
        if self._predicate is None:
            return True
        key = (container, table, column)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._predicate(f"{container}.{table}.{column}")
        return cached


class MessagePrefixFilter:
    """Which logical-decoding message prefixes are captured (``message.prefix.*.list``).

    Thread-safe and immutable.
    """

    __slots__ = ("_predicate",)

    def __init__(self, predicate: Predicate | None = None) -> None:
        """Wrap a predicate over the prefix; None captures every prefix."""
        self._predicate = predicate

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], *, case_sensitive: bool = False
    ) -> tuple[MessagePrefixFilter, list[ConfigProblem]]:
        """Build the filter from Debezium options; returns it with every problem found."""
        problems: list[ConfigProblem] = []
        predicate = _selection(options, MESSAGE_PREFIX_LISTS, case_sensitive=case_sensitive, problems=problems)
        return cls(predicate), problems

    def includes(self, prefix: str) -> bool:
        """Whether messages with this prefix are captured."""
        return self._predicate is None or self._predicate(prefix)


_FILTER_OPTIONS = ("{c}.include.list", "{c}.exclude.list", "table.include.list", "table.exclude.list")
_LITERAL = re.compile(r"[A-Za-z0-9_$]+")


def no_table_matches(options: Mapping[str, str], existing: Iterable[tuple[str, str]], *,
                     container: str = "schema", containers: Iterable[str] | None = None) -> str:
    """The message for filters that leave no table: the filters given, with their values, and
    the tables that exist in the containers they name (or in every container if they name none).

    Args:
        options: the connector's raw options.
        existing: (container, table) of every table there is.
        container: what a container is called (``schema``, ``database``).
        containers: every container there is, so a named one that does not exist is said so
            (None: not said).
    """
    names = [n.format(c=container) for n in _FILTER_OPTIONS]
    given = [f"{n}: {options[n]}" for n in names if str(options.get(n) or "").strip()]
    named: set[str] = set()
    for entry in str(options.get(f"{container}.include.list") or "").split(","):
        if _LITERAL.fullmatch(entry.strip()):
            named.add(entry.strip())
    for entry in str(options.get("table.include.list") or "").split(","):
        head = re.split(r"\\?\.", entry.strip(), maxsplit=1)[0]
        if _LITERAL.fullmatch(head):
            named.add(head)
    lowered = {n.lower() for n in named}
    tables = sorted(f"{c}.{t}" for c, t in existing if not lowered or c.lower() in lowered)
    shown = ", ".join(tables[:50]) + (f", ... ({len(tables)} in all)" if len(tables) > 50 else "")
    where = f"tables in {container} {', '.join(sorted(named))}" if named else "tables"
    there = {c.lower() for c in containers} if containers is not None else None
    missing = sorted(n for n in named if there is not None and n.lower() not in there)
    absent = f" (there is no {container} {', '.join(missing)})" if missing else ""
    return (f"no table matches the filters ({'; '.join(given) or 'no filter given'}); "
            f"{where}: {shown or 'none'}{absent}")
