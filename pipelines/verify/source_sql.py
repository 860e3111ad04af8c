"""The source side of the canonical texts, in SQL: one `Dialect` per database family.

Each dialect writes, for a compared column, the expression of its canonical text
(`pipelines.verify.canonical`), and from those the key text, the bucket and the checksum of a
row, so that the bucket sums are computed by the source database, never by moving the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipelines.verify.canonical import NULL_FIELD, ColumnKind
from pipelines.verify.model import ColumnPlan, ComparedColumn

__all__ = ["MYSQL", "POSTGRES", "Dialect", "bucket_query", "rows_query"]


@dataclass(frozen=True)
class Dialect:
    """How one database family spells the canonical texts.

    Attributes:
        quote: quotes an identifier.
        texts: kind -> template of the value's text, ``{c}`` standing for the quoted column.
        length: template of a text's length in characters (``{e}``: the text).
        concat: joins texts (never null).
        bucket: template of a key text's bucket (``{k}``: key text, ``{n}``: buckets).
        checksum: template of a row text's checksum (``{r}``: row text).
        keys_in: template of the key filter (``{k}``: key text); its one parameter is the list.
        percent: how a literal ``%`` is written (statements always run with parameters).
    """

    quote: Callable[[str], str]
    texts: dict[ColumnKind, str]
    length: str
    concat: Callable[[Sequence[str]], str]
    bucket: str
    checksum: str
    keys_in: str
    percent: str = "%%"

    def text(self, column: ComparedColumn) -> str:
        """The expression of a column's canonical text (null for null)."""
        return self.texts[column.kind].format(c=self.quote(column.source)).replace("%", self.percent)

    def field(self, column: ComparedColumn) -> str:
        """The expression of a column's field text (``-`` for null)."""
        e = self.text(column)
        text = self.concat([self.length.format(e=e), "':'", e])
        return f"CASE WHEN {self.quote(column.source)} IS NULL THEN '{NULL_FIELD}' ELSE {text} END"

    def key_text(self, plan: ColumnPlan) -> str:
        return self.concat(_joined([self.field(c) for c in plan.keys]))

    def row_text(self, plan: ColumnPlan) -> str:
        return self.concat(_joined([self.field(c) for c in plan.compared]))

    def table(self, plan: ColumnPlan) -> str:
        return f"{self.quote(plan.container)}.{self.quote(plan.source_table)}"


def _joined(fields: list[str]) -> list[str]:
    out: list[str] = []
    for f in fields:
        if out:
            out.append("','")
        out.append(f)
    return out


def bucket_query(d: Dialect, plan: ColumnPlan, buckets: int) -> str:
    """Rows ``(bucket, rows, checksum)`` of the source table, one per non-empty bucket."""
    bucket = d.bucket.format(k=d.key_text(plan), n=buckets)
    checksum = d.checksum.format(r=d.row_text(plan))
    return (f"SELECT b, COUNT(*), SUM(h) FROM (SELECT {bucket} AS b, {checksum} AS h FROM {d.table(plan)}) s "
            "GROUP BY b")


def rows_query(d: Dialect, plan: ColumnPlan, *, buckets: int, by_key: bool) -> str:
    """The compared columns' texts of the rows in given buckets (``by_key``: of given key texts).

    Its one parameter is the list of buckets (or key texts).
    """
    texts = ", ".join(d.text(c) for c in plan.compared)
    if by_key:
        where = d.keys_in.format(k=d.key_text(plan))
    else:
        where = d.keys_in.format(k=d.bucket.format(k=d.key_text(plan), n=buckets))
    return f"SELECT {texts} FROM {d.table(plan)} WHERE {where}"


def _pg_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _my_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


POSTGRES = Dialect(
    quote=_pg_quote,
    texts={
        ColumnKind.INT: "{c}::text", ColumnKind.DECIMAL: "{c}::text", ColumnKind.TEXT: "{c}::text",
        ColumnKind.NUMBER: "trim_scale({c})::text",
        ColumnKind.BOOL: "CASE WHEN {c} THEN 'true' WHEN NOT {c} THEN 'false' END",
        ColumnKind.BYTES: "encode({c}, 'hex')", ColumnKind.DATE: "to_char({c}, 'YYYY-MM-DD')",
        ColumnKind.TIMESTAMP: "to_char({c}, 'YYYY-MM-DD HH24:MI:SS.US')",
        ColumnKind.FLOAT64: "encode(float8send({c}), 'hex')", ColumnKind.FLOAT32: "encode(float4send({c}), 'hex')",
    },
    length="length({e})::text",
    concat=lambda parts: "(" + " || ".join(parts) + ")",
    bucket="((('x' || substr(md5({k}), 1, 8))::bit(32)::bigint) %% {n})",
    checksum="(('x' || substr(md5({r}), 1, 15))::bit(60)::bigint)",
    keys_in="{k} = ANY(%s)",
)
"""PostgreSQL, in a session with ``TimeZone=UTC`` (the connector's session settings)."""

MYSQL = Dialect(
    quote=_my_quote,
    texts={
        ColumnKind.INT: "CAST({c} AS CHAR)", ColumnKind.DECIMAL: "CAST({c} AS CHAR)",
        ColumnKind.TEXT: "CONVERT({c} USING utf8mb4)", ColumnKind.BYTES: "LOWER(HEX({c}))",
        ColumnKind.DATE: "DATE_FORMAT({c}, '%Y-%m-%d')",
        ColumnKind.TIMESTAMP: "DATE_FORMAT({c}, '%Y-%m-%d %H:%i:%s.%f')",
    },
    length="CHAR_LENGTH({e})",
    concat=lambda parts: "CONCAT(" + ", ".join(parts) + ")",
    bucket="(CAST(CONV(SUBSTR(MD5({k}), 1, 8), 16, 10) AS UNSIGNED) %% {n})",
    checksum="CAST(CONV(SUBSTR(MD5({r}), 1, 15), 16, 10) AS UNSIGNED)",
    keys_in="{k} IN %s",
)
"""MySQL/MariaDB, in a session with ``time_zone='+00:00'`` and utf8mb4 (the connector's settings)."""
