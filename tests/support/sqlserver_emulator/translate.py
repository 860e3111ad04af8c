"""The SQL Server CDC emulator's statement translator: the connector's T-SQL in, PostgreSQL out.

The connector sends only its catalogue's T-SQL (cdc_sources/sqlserver/catalogue.py); against
the emulator the gateway passes each statement through `to_postgres` first. sqlglot transpiles
T-SQL to PostgreSQL; what has no PostgreSQL form is rewritten onto the emulator's objects
(tests/support/sqlserver_emulator/sys_objects.sql):

- ``EXEC sys.sp_cdc_help_change_data_capture`` -> a set-returning function;
- ``USE [db]`` -> ``sys.use_database('db')`` (the current database, or SQL Server's error 911);
- ``SET LOCK_TIMEOUT n`` -> PostgreSQL's ``lock_timeout`` (-1 waits forever: 0 there; SQL
  Server's 0, fail at once, is 1 ms);
- ``SELECT TOP(0) * FROM t WITH (TABLOCKX)`` -> ``LOCK TABLE t IN ACCESS EXCLUSIVE MODE``;
- ``@@VERSION`` -> ``sys.version()``; ``0x..`` literals -> ``bytea``;
- ``PARSE(? AS <date/time type>)`` -> ``CAST(? AS <PostgreSQL type>)`` (``datetime``,
  ``datetime2`` and ``smalldatetime`` as ``timestamp``, ``datetimeoffset`` as ``timestamptz``);
- ``?`` parameters stay ``?`` (the ODBC driver binds them) and function names keep their case.
"""

from __future__ import annotations

from sqlglot import exp, parse_one
from sqlglot.dialects.postgres import Postgres

__all__ = ["TranslationError", "to_postgres"]


class TranslationError(ValueError):
    """A statement the emulator does not serve (the message quotes it)."""


class _Postgres(Postgres):
    class Generator(Postgres.Generator):
        TRANSFORMS = {**Postgres.Generator.TRANSFORMS, exp.Placeholder: lambda self, e: "?"}


_PARSED = {"date": "date", "time": "time", "datetime": "timestamp", "datetime2": "timestamp",
           "smalldatetime": "timestamp", "datetimeoffset": "timestamptz"}


def _rewrite(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "PARSE":
        (alias,) = node.expressions
        if not isinstance(alias, exp.Alias) or alias.alias.lower() not in _PARSED:
            raise TranslationError(f"the emulator has no PARSE for {node.sql(dialect='tsql')!r}")
        return exp.cast(alias.this, exp.DataType.build(_PARSED[alias.alias.lower()], dialect="postgres"))
    if isinstance(node, exp.Parameter) and node.sql(dialect="tsql").upper() == "@@VERSION":
        return exp.Anonymous(this="sys.version")
    if isinstance(node, exp.HexString):
        return exp.cast(exp.Literal.string("\\x" + node.this), exp.DataType.build("bytea", dialect="postgres"))
    return node


def to_postgres(tsql: str) -> str:
    """The PostgreSQL statement that does on the emulator what ``tsql`` does on SQL Server.

    Raises:
        TranslationError: a statement that does not parse as T-SQL, or that the emulator has no form for.
    """
    try:
        tree = parse_one(tsql, read="tsql")
    except Exception as error:  # sqlglot raises ParseError and TokenError
        raise TranslationError(f"not T-SQL the emulator can read: {tsql!r}: {error}") from None
    if isinstance(tree, exp.Execute):
        name = tree.this.sql(dialect="tsql").lower()
        if name == "sys.sp_cdc_help_change_data_capture" and not tree.args.get("expressions"):
            return "SELECT * FROM sys.sp_cdc_help_change_data_capture()"
        raise TranslationError(f"the emulator has no procedure for {tsql!r}")
    if isinstance(tree, exp.Use):
        database = tree.this.name
        return f"SELECT sys.use_database({exp.Literal.string(database).sql(dialect='postgres')})"
    if isinstance(tree, exp.Set):
        items = tree.expressions
        if len(items) == 1 and isinstance(items[0].this, exp.EQ) and items[0].this.this.name.upper() == "LOCK_TIMEOUT":
            value = int(items[0].this.expression.sql(dialect="tsql"))
            return f"SET lock_timeout = {0 if value == -1 else max(value, 1)}"
        raise TranslationError(f"the emulator has no SET for {tsql!r}")
    if isinstance(tree, exp.Select):
        source = tree.args.get("from_")
        table = source.this if source is not None else None
        hints = table.args.get("hints") if isinstance(table, exp.Table) else None
        if hints:
            names = {h.name.upper() for hint in hints for h in hint.expressions}
            if names == {"TABLOCKX"} and isinstance(table, exp.Table):
                bare = table.copy()
                bare.set("hints", None)
                return f"LOCK TABLE {bare.sql(dialect='postgres')} IN ACCESS EXCLUSIVE MODE"
            raise TranslationError(f"the emulator has no table hint {sorted(names)} ({tsql!r})")
    tree = tree.transform(_rewrite)
    return _Postgres().generate(tree, normalize_functions=False)  # type: ignore[no-any-return]
