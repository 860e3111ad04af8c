"""The PostgreSQL catalog model the connector works with: types and columns.

Built from ``pg_catalog`` by ``catalog.py``; consumed by the value converters and the schema
builder. Pure data, no connections.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PgType:
    """A PostgreSQL type as ``pg_type`` describes it.

    Attributes:
        oid: ``pg_type.oid``.
        name: ``pg_type.typname`` (``int4``, ``_int4`` for arrays, ``varchar``, ``hstore``...).
        schema: the namespace of the type (``pg_catalog``, ``public``...).
        kind: ``pg_type.typtype``: ``b`` base, ``d`` domain, ``e`` enum, ``r`` range,
            ``m`` multirange, ``c`` composite, ``p`` pseudo.
        category: ``pg_type.typcategory`` (``A`` array, ``N`` numeric, ``S`` string...).
        element: for arrays, the element type.
        base: for domains, the type the domain is defined over (itself maybe a domain).
        base_typmod: for domains, ``pg_type.typtypmod`` (the domain's length/precision).
        enum_values: for enums, the labels in sort order.
    """

    oid: int
    name: str
    schema: str = "pg_catalog"
    kind: str = "b"
    category: str = "U"
    element: PgType | None = None
    base: PgType | None = None
    base_typmod: int = -1
    enum_values: tuple[str, ...] = ()

    def resolved(self, typmod: int) -> tuple[PgType, int]:
        """The non-domain type behind this one, with the effective typmod.

        A domain's own typmod wins over the column's when the column has none, so a domain
        over ``numeric(10,2)`` keeps its precision and scale.
        """
        t, mod = self, typmod
        while t.kind == "d" and t.base is not None:
            if mod < 0:
                mod = t.base_typmod
            t = t.base
        return t, mod


@dataclass(frozen=True, slots=True)
class PgColumn:
    """A table column.

    Attributes:
        name: the column name.
        type: its type.
        typmod: ``pg_attribute.atttypmod`` (-1: none). For ``varchar(n)`` it is ``n + 4``; for
            ``numeric(p,s)`` it is ``((p << 16) | s) + 4``; for time types it is the precision.
        nullable: False when the column is NOT NULL.
        default: the default expression as ``pg_get_expr`` prints it, or None.
        position: ``pg_attribute.attnum`` (1-based).
    """

    name: str
    type: PgType
    typmod: int = -1
    nullable: bool = True
    default: str | None = None
    position: int = 0
