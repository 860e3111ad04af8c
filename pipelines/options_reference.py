"""``docs/connector-options.md``: every connector option, rendered from the option declarations.

The connectors declare their options (`cdc_sources.common.options.OptionSpec`: Debezium's
name, default, kind, valid values, whether it has an effect here); this module renders them as
markdown tables, so the reference cannot drift from what `validate` accepts. Regenerate with::

    python -m pipelines.options_reference > docs/connector-options.md

(`tests/pipelines/test_options_reference.py` fails while the file differs.)
"""

from __future__ import annotations

import sys

from cdc_sources.common.options import OptionSet, OptionSpec
from cdc_sources.mysql.options import MARIADB_OPTIONS, MYSQL_OPTIONS
from cdc_sources.oracle.options import ORACLE_OPTIONS
from cdc_sources.postgres.options import POSTGRES_OPTIONS
from cdc_sources.sqlserver.options import SQLSERVER_OPTIONS

__all__ = ["render"]

_HEAD = """# Connector options

Every option the connectors accept in a source's `options:`, with its default. The names,
values and defaults are Debezium's (3.6), so Debezium's documentation describes what each one
does; this page says which exist here, their defaults and valid values, and which are accepted
without effect (Kafka and Kafka Connect settings, Java plug-ins). An option not listed is an
error (`unknown option`), with the closest name suggested. How the connectors differ from
Debezium: [postgres.md](postgres.md#deliberate-differences),
[mysql.md](mysql.md#deliberate-differences).

This page is generated from the option declarations (`python -m pipelines.options_reference`).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _values(spec: OptionSpec) -> str:
    if spec.kind == "enum":
        values = ", ".join(f"`{c}`" for c in spec.choices)
        aliases = ", ".join(f"`{old}` (= `{new}`)" for old, new in spec.aliases.items())
        return values + (f"; also {aliases}" if aliases else "")
    if spec.kind == "int":
        return f"integer >= {spec.minimum}" if spec.minimum is not None else "integer"
    if spec.kind == "bool":
        return "`true`, `false`"
    if spec.kind == "list":
        return "comma-separated list"
    return "text"


def _default(spec: OptionSpec) -> str:
    if spec.default is None:
        return ""
    return f"`{_cell(spec.default)}`" if spec.default != "" else '`""`'


def _table(options: OptionSet, differs: OptionSet | None = None, other: str = "") -> list[str]:
    rows = ["| option | default | values | note |", "| --- | --- | --- | --- |"]
    for name in sorted(options.specs):
        spec = options.specs[name]
        note = "no effect here (accepted for compatibility)" if spec.inert else _cell(spec.doc)
        default = _default(spec)
        if differs is not None and differs.specs[name].default != spec.default:
            default += f" ({other}: {_default(differs.specs[name]) or 'none'})"
        values = _cell(_values(spec))
        if differs is not None and differs.specs[name].choices != spec.choices:
            values += f" ({other}: {_cell(_values(differs.specs[name]))})"
        rows.append(f"| `{name}` | {default} | {values} | {note} |")
    return rows


def _families(options: OptionSet) -> list[str]:
    rows = ["| name pattern (regular expression) | what | effect |", "| --- | --- | --- |"]
    for _, family in options.prefixes:
        effect = "no effect here (accepted for compatibility)" if family.inert else "applied"
        rows.append(f"| `{_cell(family.pattern)}` | {family.doc} | {effect} |")
    return rows


def render() -> str:
    """The whole markdown page."""
    parts = [_HEAD,
             "## PostgreSQL (`connector: postgres`)\n", *_table(POSTGRES_OPTIONS),
             "\nOption families (any name matching the pattern):\n", *_families(POSTGRES_OPTIONS),
             "\n## MySQL and MariaDB (`connector: mysql`, `connector: mariadb`)\n",
             "The same options for both; where MariaDB's default or values differ, they follow in "
             "parentheses.\n",
             *_table(MYSQL_OPTIONS, MARIADB_OPTIONS, "MariaDB"),
             "\nOption families (any name matching the pattern):\n", *_families(MYSQL_OPTIONS),
             "\n## SQL Server (`connector: sqlserver`)\n",
             "What the connector captures so far: [sqlserver.md](sqlserver.md).\n",
             *_table(SQLSERVER_OPTIONS),
             "\nOption families (any name matching the pattern):\n", *_families(SQLSERVER_OPTIONS),
             "\n## Oracle (`connector: oracle`)\n",
             "What the connector captures so far: [oracle.md](oracle.md).\n",
             *_table(ORACLE_OPTIONS),
             "\nOption families (any name matching the pattern):\n", *_families(ORACLE_OPTIONS)]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
