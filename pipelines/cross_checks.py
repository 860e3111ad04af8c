"""Checks across the entries of a pipeline file, which no single entry's schema can see.

Each entry of ``sources:`` and ``silver:`` is valid on its own once the schema accepts it; these
checks find what lies between them: two silver tables with one name or one location, a silver
``source`` topic that no declared source produces, two bronze topics with one catalog name
(`pipelines.bronze_names`). Every problem names the key and its line.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from cdc_sources.spi import ConfigProblem
from pipelines.bronze_names import bronze_name_problems
from pipelines.config import PipelineConfig, nearest_line


def cross_entry_problems(config: PipelineConfig, lines: Mapping[str, int]) -> list[ConfigProblem]:
    """Every problem between entries of ``config`` (see module doc)."""
    return (_duplicate_tables(config, lines) + _undeclared_topics(config, lines)
            + _shared_locations(config, lines) + bronze_name_problems(config, lines))


def _duplicate_tables(config: PipelineConfig, lines: Mapping[str, int]) -> list[ConfigProblem]:
    problems = []
    first: dict[str, int] = {}
    for i, decl in enumerate(config.silver):
        if decl.table in first:
            j = first[decl.table]
            problems.append(ConfigProblem(
                f"silver[{i}].table",
                f"silver table {decl.table!r} is declared twice (also silver[{j}]{_at(f'silver[{j}].table', lines)})",
                nearest_line(f"silver[{i}].table", lines)))
        else:
            first[decl.table] = i
    return problems


def _undeclared_topics(config: PipelineConfig, lines: Mapping[str, int]) -> list[ConfigProblem]:
    prefixes = config.topic_prefixes()
    accepted = set(prefixes.values())
    declared = ", ".join(f"{n} (topics {p}.<schema>.<table>)" for n, p in prefixes.items())
    problems = []
    for i, decl in enumerate(config.silver):
        if not any(decl.source.startswith(prefix + ".") for prefix in accepted):
            path = f"silver[{i}].source"
            problems.append(ConfigProblem(
                path, f"{decl.source!r} is not a topic of a declared source; declared: {declared}",
                nearest_line(path, lines)))
    return problems


def _location(where: str) -> str:
    """A location compared by text: trailing slashes and ``./`` segments do not count."""
    if "://" in where:
        return where.rstrip("/")
    return posixpath.normpath(where)


def _shared_locations(config: PipelineConfig, lines: Mapping[str, int]) -> list[ConfigProblem]:
    root = config.lakehouse.root.rstrip("/")
    taken: dict[str, tuple[str, str]] = {}  # location -> (owner path, description)
    quarantine = config.silver_options.quarantine.location or f"{root}/silver/_quarantine"
    taken[_location(quarantine)] = ("silver_options.quarantine.location", "the quarantine table")
    problems = []
    for i, decl in enumerate(config.silver):
        where = decl.location or f"{root}/silver/{decl.table}"
        key = _location(where)
        if key in taken and taken[key][1] == decl.table and not decl.location:
            continue  # the same name twice: reported by _duplicate_tables
        if key in taken and taken[key][0] != f"silver[{i}]":
            owner, what = taken[key]
            path = f"silver[{i}].location" if decl.location else f"silver[{i}].table"
            given = "" if decl.location else "the default location "
            problems.append(ConfigProblem(path, f"{given}{where!r} is also the location of {owner} ({what})",
                                          nearest_line(path, lines)))
        elif key not in taken:
            taken[key] = (f"silver[{i}]", decl.table)
    return problems


def _at(path: str, lines: Mapping[str, int]) -> str:
    line = nearest_line(path, lines)
    return f", line {line}" if line else ""


def truncate_warnings(config: PipelineConfig, lines: Mapping[str, int], *, file: str) -> list[str]:
    """Silver tables over a source that drops truncates (``skipped.operations`` containing ``t``,
    Debezium's default): their current rows keep everything a TRUNCATE removed from the source."""
    warnings = []
    for index, spec in enumerate(config.sources):
        skipped = {p.strip().lower() for p in str(spec.options.get("skipped.operations", "t")).split(",")}
        if "t" not in skipped:
            continue
        prefix = config.topic_prefixes()[spec.name]
        tables = [d.table for d in config.silver if d.source.startswith(prefix + ".")]
        if not tables:
            continue
        path = f"sources[{index}].options.skipped.operations"
        line = nearest_line(path, lines)
        where = f"{file}:{line}" if line else file
        given = "given" if "skipped.operations" in spec.options else "Debezium's default"
        warnings.append(
            f"{where}: {path}: source {spec.name} skips truncates (skipped.operations: "
            f"{spec.options.get('skipped.operations', 't')}, {given}), so silver table{'s' if len(tables) > 1 else ''} "
            f"{', '.join(tables)} keep{'' if len(tables) > 1 else 's'} every row a TRUNCATE removes from the source; "
            "set skipped.operations: none in the source's options to apply truncates")
    return warnings
