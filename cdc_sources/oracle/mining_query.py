"""The ``V$LOGMNR_CONTENTS`` query of the buffered LogMiner adapter, as Debezium 3.6.3 builds it.

`mining_query` turns the connector's options into the query text Debezium's
``BufferedLogMinerQueryBuilder`` runs (two bind parameters: the mining window's lower SCN,
exclusive, and upper SCN, inclusive). The predicates depend on ``log.mining.query.filter.mode``:

- ``none`` (the default): only Oracle's own schemas and materialized view logs are left out in
  the database; schema, table and user filters apply after reading;
- ``in``: the include/exclude lists become ``IN`` lists (upper-cased; ``UNKNOWN`` is always
  included so rows of tables missing from the dictionary still arrive);
- ``regex``: schema and table lists become ``REGEXP_LIKE`` predicates.

User (``log.mining.username.*``) and client (``log.mining.clientid.*``) lists are ``IN`` lists in
both ``in`` and ``regex`` modes, never applied to START, COMMIT and ROLLBACK rows. LOB operation
codes are mined with ``lob.enabled``; DDL rows are kept apart from the table filters unless
``schema.history.internal.store.only.captured.tables.ddl``. Compared with Debezium's builder
by ``tests/cdc_sources/oracle/test_mining_query.py`` (the order of values inside an ``IN``
list is Debezium's hash order there, so the test compares those lists as sets). Not reproduced:
the CTE form (``internal.log.mining.use.cte.query``). The signal table (``signal.data.collection``,
without its database part) is added to the ``in``/``regex`` table predicates unless the include
list names it, so signals and watermarks are mined whatever the table lists say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cdc_sources.common.options import ParsedOptions

__all__ = ["FilterMode", "MiningQuerySettings", "mining_query"]

FilterMode = Literal["none", "in", "regex"]

EXCLUDED_SCHEMAS = ("APPQOSSYS", "AUDSYS", "CTXSYS", "DVSYS", "DBSFWUSER", "DBSNMP", "GGSHAREDCAP",
                    "GSMADMIN_INTERNAL", "LBACSYS", "MDSYS", "OJVMSYS", "OLAPSYS", "ORDDATA", "ORDSYS", "OUTLN", "SYS",
                    "SYSTEM", "VECSYS", "WMSYS", "XDB")
"""Oracle's own schemas, in Debezium's order."""

_COLUMNS = ("SCN", "SQL_REDO", "OPERATION_CODE", "TIMESTAMP", "XID", "CSF", "TABLE_NAME", "SEG_OWNER", "OPERATION",
            "ROW_ID", "ROLLBACK", "STATUS", "INFO", "SSN", "THREAD#", "DATA_OBJ#", "DATA_OBJV#", "DATA_OBJD#",
            "START_SCN", "COMMIT_SCN", "SEQUENCE#")
_CODES = (1, 2, 3, 6, 7, 27, 34, 36, 255)
_CODES_LOB = (1, 2, 3, 6, 7, 9, 10, 11, 27, 29, 34, 36, 68, 70, 71, 91, 92, 93, 255)
_IN_MAX = 1000
_MLOG = "(TABLE_NAME IS NULL OR TABLE_NAME NOT LIKE 'MLOG$%')"
_TABLE_FIELD = "SEG_OWNER || '.' || TABLE_NAME"


def _items(text: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p.strip() for p in (text or "").split(",") if p.strip()))


@dataclass(frozen=True, slots=True)
class MiningQuerySettings:
    """The options the query depends on (see `from_options`)."""

    filter_mode: FilterMode = "none"
    pdb_name: str | None = None
    lob_enabled: bool = False
    hybrid_strategy: bool = False
    store_only_captured_tables_ddl: bool = False
    schema_include: tuple[str, ...] = ()
    schema_exclude: tuple[str, ...] = ()
    table_include: tuple[str, ...] = ()
    table_exclude: tuple[str, ...] = ()
    username_include: tuple[str, ...] = ()
    username_exclude: tuple[str, ...] = ()
    clientid_include: tuple[str, ...] = ()
    clientid_exclude: tuple[str, ...] = ()
    track_start_timestamp: bool = True
    track_commit_timestamp: bool = True
    track_rs_id: bool = True
    track_username: bool = True
    track_client_id: bool = True
    signal_table: str | None = None
    """``SCHEMA.TABLE`` of ``signal.data.collection`` (its database part dropped)."""

    @classmethod
    def from_options(cls, opts: ParsedOptions) -> MiningQuerySettings:
        def flag(name: str) -> bool:
            return bool(opts.get(name))

        return cls(
            filter_mode=opts.get("log.mining.query.filter.mode") or "none",
            pdb_name=opts.get("database.pdb.name") or None,
            lob_enabled=flag("lob.enabled"),
            hybrid_strategy=opts.get("log.mining.strategy") == "hybrid",
            store_only_captured_tables_ddl=flag("schema.history.internal.store.only.captured.tables.ddl"),
            schema_include=_items(opts.get("schema.include.list")),
            schema_exclude=_items(opts.get("schema.exclude.list")),
            table_include=_items(opts.get("table.include.list")),
            table_exclude=_items(opts.get("table.exclude.list")),
            username_include=_items(opts.get("log.mining.username.include.list")),
            username_exclude=_items(opts.get("log.mining.username.exclude.list")),
            clientid_include=_items(opts.get("log.mining.clientid.include.list")),
            clientid_exclude=_items(opts.get("log.mining.clientid.exclude.list")),
            track_start_timestamp=flag("log.mining.buffer.track.start_timestamp"),
            track_commit_timestamp=flag("log.mining.buffer.track.commit_timestamp"),
            track_rs_id=flag("log.mining.buffer.track.rs_id"),
            track_username=flag("log.mining.buffer.track.username"),
            track_client_id=flag("log.mining.buffer.track.client_id"),
            signal_table=_signal_table(opts.get("signal.data.collection")),
        )


def _signal_table(text: str | None) -> str | None:
    parts = [p.strip() for p in (text or "").split(".")]
    return ".".join(parts[1:]) if len(parts) == 3 and all(parts) else None


def _in(field: str, values: Sequence[object], *, negate: bool = False, upper: bool = False) -> str:
    """An IN list, split into lists of 1000 (Oracle's limit) joined by OR (AND when negated)."""
    def text(v: object) -> str:
        return f"'{str(v).strip().upper() if upper else str(v).strip()}'" if isinstance(v, str) else str(v)

    parts = []
    for start in range(0, len(values), _IN_MAX):
        chunk = ",".join(text(v) for v in values[start:start + _IN_MAX])
        parts.append(f"{f'UPPER({field})' if upper else field}{' NOT' if negate else ''} IN ({chunk})")
    sql = (" AND " if negate else " OR ").join(parts)
    return f"({sql})" if len(values) > _IN_MAX else sql


def _include_exclude(field: str, include: Sequence[str], exclude: Sequence[str], *,
                     default_include: Sequence[str] = (), default_exclude: Sequence[str] = ()) -> str:
    if not include and not exclude:
        return ""
    if exclude:
        return _in(field, [*default_exclude, *exclude], negate=True, upper=True)
    return _in(field, [*default_include, *include], upper=True)


def _regexp(field: str, include: Sequence[str], exclude: Sequence[str]) -> str:
    if not include and not exclude:
        return ""
    values, prefix, junction = (exclude, "NOT ", " AND ") if exclude else (include, "", " OR ")

    def anchored(p: str) -> str:
        return ("" if p.startswith("^") else "^") + p + ("" if p.endswith("$") else "$")

    return "(" + junction.join(f"{prefix}REGEXP_LIKE({field},'{anchored(p)}','i')" for p in values) + ")"


def _schemas(s: MiningQuerySettings) -> str:
    builtin = f"(SEG_OWNER IS NULL OR {_in('SEG_OWNER', EXCLUDED_SCHEMAS, negate=True)})"
    if s.filter_mode == "none" or not (s.schema_include or s.schema_exclude):
        return builtin
    if s.filter_mode == "in":
        return "(SEG_OWNER IS NULL OR " + _include_exclude(
            "SEG_OWNER", s.schema_include, s.schema_exclude, default_include=["UNKNOWN"],
            default_exclude=EXCLUDED_SCHEMAS) + ")"
    head = _in("SEG_OWNER", EXCLUDED_SCHEMAS, negate=True) if not s.schema_include else "SEG_OWNER = 'UNKNOWN'"
    return f"(SEG_OWNER IS NULL OR {head} OR {_regexp('SEG_OWNER', s.schema_include, s.schema_exclude)})"


def _tables(s: MiningQuerySettings) -> str:
    if s.filter_mode == "none" or not (s.table_include or s.table_exclude):
        return _MLOG
    out = "(TABLE_NAME IS NULL OR "
    if s.hybrid_strategy:
        out += "TABLE_NAME LIKE 'OBJ#%' OR "
    if not s.table_include:
        out += "TABLE_NAME NOT LIKE 'MLOG$%' OR "
    signal = (s.signal_table or "").upper()
    named = {(t.replace("\\", "") if s.filter_mode == "in" else t).upper() for t in s.table_include}
    if signal and signal not in named:  # regex mode: only a literal include entry names it
        out += f"UPPER({_TABLE_FIELD}) = '{signal.replace(chr(39), chr(39) * 2)}' OR "
    if s.filter_mode == "in":
        def unescape(values: Sequence[str]) -> list[str]:
            return [v.replace("\\", "") for v in values]

        out += _include_exclude(_TABLE_FIELD, unescape(s.table_include), unescape(s.table_exclude))
    else:
        out += _regexp(_TABLE_FIELD, s.table_include, s.table_exclude)
    return out + ")"


def _list_filter(field: str, include: Sequence[str], exclude: Sequence[str], s: MiningQuerySettings,
                 default_include: Sequence[str] = ()) -> str:
    if s.filter_mode == "none":
        return ""
    predicate = _include_exclude(field, include, exclude, default_include=default_include)
    if predicate and exclude:
        predicate = f"({predicate} OR {field} IS NULL)"
    if not predicate:
        return ""
    return f"(CASE WHEN OPERATION_CODE IN (6,7,36) THEN 1 ELSE CASE WHEN {predicate} THEN 1 ELSE 0 END END = 1)"


def mining_query(s: MiningQuerySettings) -> str:
    """The query text, with ``?`` for the window's lower (exclusive) and upper (inclusive) SCN."""
    columns = list(_COLUMNS)
    for on, name in ((s.track_start_timestamp, "START_TIMESTAMP"), (s.track_commit_timestamp, "COMMIT_TIMESTAMP"),
                     (s.track_rs_id, "RS_ID"), (s.track_username, "USERNAME"), (s.track_client_id, "CLIENT_ID")):
        if on:
            columns.append(name)
    where = "SCN > ? AND SCN <= ?"
    if s.pdb_name:
        pdb = s.pdb_name[1:-1] if len(s.pdb_name) > 2 and s.pdb_name[0] == s.pdb_name[-1] == '"' else s.pdb_name
        where += f" AND SRC_CON_NAME = '{pdb}'"
    ddl = " OR (OPERATION_CODE = 5 AND INFO NOT LIKE 'INTERNAL DDL%')"
    codes = "(" + _in("OPERATION_CODE", _CODES_LOB if s.lob_enabled else _CODES)
    codes += (ddl if s.store_only_captured_tables_ddl else "") + ")"
    parts = [codes,
             _list_filter("USERNAME", s.username_include, s.username_exclude, s, default_include=["UNKNOWN"]),
             _list_filter("CLIENT_ID", s.clientid_include, s.clientid_exclude, s),
             _schemas(s), _tables(s)]
    body = " AND ".join(p for p in parts if p)
    where += " AND " + (body if s.store_only_captured_tables_ddl else f"(({body}){ddl})")
    return f"SELECT {', '.join(columns)} FROM V$LOGMNR_CONTENTS WHERE {where}"

