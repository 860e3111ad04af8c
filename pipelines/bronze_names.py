"""Catalog names of bronze tables: a source's ``bronze_catalog`` and the name each topic gets there.

A source that declares ``bronze_catalog: [catalog.]schema`` has the bronze tables that silver
reads registered under that schema (by the silver job, `pipelines.bronze_register`). A table's
name is its topic, lower-cased, with every character other than a letter, digit or ``_``
(the topic's dots first) turned into ``_``::

    >>> bronze_table_part("shop_pg.public.Customers")
    'shop_pg_public_customers'

The topic prefix stays in the name, so sources may share a schema. Two topics may still end up
with one name (``a.b_c.d`` and ``a.b.c_d``), or a bronze name may be a silver ``catalog_table``:
`bronze_name_problems` reports both at load time. Pure: no Spark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from cdc_sources.spi import ConfigProblem
from pipelines.config import PipelineConfig, nearest_line

__all__ = ["BronzeTableName", "bronze_name_problems", "bronze_table_names", "bronze_table_part"]

_NOT_IDENTIFIER = re.compile(r"[^a-z0-9_]")


def bronze_table_part(topic: str) -> str:
    """The table part of a topic's catalog name (see module doc)."""
    return _NOT_IDENTIFIER.sub("_", topic.lower())


@dataclass(frozen=True)
class BronzeTableName:
    """Where one bronze topic is registered.

    Attributes:
        topic: the bronze topic (its table is at ``<root>/bronze/<topic>``).
        source: the source that captures it.
        parts: the catalog name's parts: ``(catalog, schema, table)`` or ``(schema, table)``.
    """

    topic: str
    source: str
    parts: tuple[str, ...]

    @property
    def dotted(self) -> str:
        """The name as written in SQL and in ``spark.table`` (its parts need no quoting)."""
        return ".".join(self.parts)


def _owner(topic: str, prefixes: Mapping[str, str]) -> str | None:
    """The source whose topic prefix starts ``topic`` (the longest wins), as the silver runner decides."""
    matches = [name for name, prefix in prefixes.items() if topic.startswith(prefix + ".")]
    return max(matches, key=lambda n: len(prefixes[n])) if matches else None


def bronze_table_names(config: PipelineConfig) -> dict[str, BronzeTableName]:
    """Topic -> its catalog name, for every topic silver reads whose source declares ``bronze_catalog``."""
    prefixes = config.topic_prefixes()
    out: dict[str, BronzeTableName] = {}
    for decl in config.silver:
        source = _owner(decl.source, prefixes)
        if source is None or decl.source in out:
            continue
        schema = config.source(source).bronze_catalog
        if schema is not None:
            out[decl.source] = BronzeTableName(decl.source, source,
                                               (*schema.split("."), bronze_table_part(decl.source)))
    return out


def bronze_name_problems(config: PipelineConfig, lines: Mapping[str, int]) -> list[ConfigProblem]:
    """Two topics with one catalog name, or a bronze name that a silver ``catalog_table`` also takes
    (names compared without case: catalogs fold it)."""
    names = bronze_table_names(config)
    where = {s.name: f"sources[{j}].bronze_catalog" for j, s in enumerate(config.sources)}
    problems = []
    taken: dict[str, str] = {}  # lower-cased name -> the topic that has it
    first_use: dict[str, int] = {}  # topic -> the silver entry that reads it first
    for i, decl in enumerate(config.silver):
        first_use.setdefault(decl.source, i)
    for topic, name in names.items():
        key = name.dotted.lower()
        if key in taken:
            path = f"silver[{first_use[topic]}].source"
            other = names[taken[key]].source
            fix = (f"give {where[name.source]} or {where[other]} another schema" if other != name.source else
                   f"their names differ only in case, '.' or '_'; leave out {where[name.source]}")
            problems.append(ConfigProblem(
                path, f"bronze topics {taken[key]!r} and {topic!r} would both be registered as {name.dotted}: {fix}",
                nearest_line(path, lines)))
        else:
            taken[key] = topic
    for i, decl in enumerate(config.silver):
        if decl.catalog_table is not None and decl.catalog_table.lower() in taken:
            path = f"silver[{i}].catalog_table"
            topic = taken[decl.catalog_table.lower()]
            problems.append(ConfigProblem(
                path, f"{decl.catalog_table!r} is the catalog name of bronze topic {topic!r} "
                      f"({where[names[topic].source]}); choose another name",
                nearest_line(path, lines)))
    return problems
