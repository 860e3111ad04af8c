"""Reads table and type metadata from ``pg_catalog``.

The replication stream's Relation messages name a table's columns and type oids; everything
else a Debezium schema needs (primary key, nullability, defaults, type details such as enum
labels, domain bases and array elements) comes from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.postgres.types import PgColumn, PgType

SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema"})

_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname, c.relreplident, c.relkind, c.relispartition
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp%%'
ORDER BY n.nspname, c.relname
"""

_COLUMNS_SQL = """
SELECT a.attrelid, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.attnum,
       pg_get_expr(d.adbin, d.adrelid), a.attgenerated <> ''
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""

_PK_SQL = """
SELECT i.indrelid, array_agg(a.attname ORDER BY k.ord)
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indisprimary AND i.indrelid = ANY(%s)
GROUP BY i.indrelid
"""

_TYPES_SQL = """
SELECT t.oid, t.typname, n.nspname, t.typtype, t.typcategory, t.typelem, t.typbasetype, t.typtypmod,
       ARRAY(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder)
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = ANY(%s)
"""


@dataclass(frozen=True)
class TableInfo:
    """A captured table as the catalog describes it now.

    Attributes:
        oid: ``pg_class.oid``.
        schema / name: the qualified name.
        columns: the columns in attribute order (generated columns included).
        primary_key: primary-key column names in key order; empty if none.
        replica_identity: ``d`` default, ``n`` nothing, ``f`` full, ``i`` index.
        generated: names of generated columns (pgoutput does not send their values).
    """

    oid: int
    schema: str
    name: str
    columns: tuple[PgColumn, ...]
    primary_key: tuple[str, ...]
    replica_identity: str
    generated: frozenset[str] = frozenset()

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass
class Catalog:
    """Cached catalog reads over one SQL connection (psycopg 3). Not thread-safe."""

    conn: Any
    _types: dict[int, PgType] = field(default_factory=dict)

    def list_tables(self) -> list[tuple[int, str, str]]:
        """(oid, schema, table) of every user table, partitioned parents included."""
        rows = self.conn.execute(_TABLES_SQL).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def tables(self, oids: Iterable[int]) -> dict[int, TableInfo]:
        """Full metadata of the given tables, keyed by oid."""
        oid_list = list(oids)
        if not oid_list:
            return {}
        head = {int(r[0]): r for r in self.conn.execute(
            "SELECT c.oid, n.nspname, c.relname, c.relreplident FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ANY(%s)", (oid_list,)).fetchall()}
        cols = self.conn.execute(_COLUMNS_SQL, (oid_list,)).fetchall()
        pks = {int(r[0]): tuple(r[1]) for r in self.conn.execute(_PK_SQL, (oid_list,)).fetchall()}
        types = self.types({int(r[2]) for r in cols})
        by_table: dict[int, list[PgColumn]] = {}
        generated: dict[int, set[str]] = {}
        for relid, name, typid, typmod, notnull, attnum, default, is_generated in cols:
            by_table.setdefault(int(relid), []).append(
                PgColumn(str(name), types[int(typid)], int(typmod), not notnull,
                         None if is_generated else default, int(attnum)))
            if is_generated:
                generated.setdefault(int(relid), set()).add(str(name))
        return {
            oid: TableInfo(oid, str(h[1]), str(h[2]), tuple(by_table.get(oid, [])), pks.get(oid, ()),
                           str(h[3]), frozenset(generated.get(oid, set())))
            for oid, h in head.items()
        }

    def types(self, oids: Iterable[int]) -> dict[int, PgType]:
        """Types by oid, with array elements and domain bases resolved (cached)."""
        wanted = {o for o in oids if o not in self._types}
        rows: dict[int, tuple[Any, ...]] = {}
        while wanted:
            fetched = self.conn.execute(_TYPES_SQL, (list(wanted),)).fetchall()
            for r in fetched:
                rows[int(r[0])] = r
            deps = {int(r[5]) for r in fetched if r[5]} | {int(r[6]) for r in fetched if r[6]}
            wanted = {d for d in deps if d not in rows and d not in self._types}
        for oid in rows:
            self._build(oid, rows)
        return {o: self._types[o] for o in oids if o in self._types}

    def _build(self, oid: int, rows: dict[int, tuple[Any, ...]]) -> PgType:
        if oid in self._types:
            return self._types[oid]
        r = rows[oid]
        element = self._build(int(r[5]), rows) if r[5] and r[4] == "A" else None
        base = self._build(int(r[6]), rows) if r[6] else None
        t = PgType(oid, str(r[1]), str(r[2]), str(r[3]), str(r[4]), element, base, int(r[7]),
                   tuple(r[8] or ()))
        self._types[oid] = t
        return t
