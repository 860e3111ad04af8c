"""The ``silver:`` and ``silver_options:`` sections of a pipeline file, as typed models.

Each entry of ``silver:`` declares one silver table built from one bronze topic. The models
are pydantic v2 with ``extra="forbid"``: an unknown key is an error, and the pipeline loader
turns every error into ``file:line: silver[i].key: message``. Cross-field rules (a key column
that is excluded, a rename onto another column, a cast to an unknown type...) are checked
here, before Spark starts.

Column references in a declaration (``keys``, ``columns``, ``exclude_columns``, ``rename``,
``casts``, ``partition_by``, ``cluster_by``) always use the **source** column names; ``rename``
only changes the name written to silver.

Example (YAML)::

    silver:
      - table: customers
        source: shop_pg.public.customers
        keys: [id]
        exclude_columns: [password_hash]
        rename: {email: email_address}
        casts: {balance: "decimal(18,2)"}
        deletes: soft
        history: scd1
        schema_evolution: add_columns
        partition_by: [country]
        table_properties: {delta.autoOptimize.optimizeWrite: "true"}
    silver_options:
      interval_seconds: 30
      consistency: {shop_pg: transaction}
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from silver.expectations import Expectation

__all__ = [
    "METADATA_PREFIX",
    "QuarantineOptions",
    "Scd2Columns",
    "SilverOptions",
    "SilverTable",
    "SoftDeleteColumns",
    "is_supported_cast",
]

METADATA_PREFIX = "_cdc_"
"""Prefix of the bookkeeping columns silver adds (``_cdc_seq``, ``_cdc_op``, ``_cdc_ts``)."""

_TABLE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$"
PRIMITIVE_CASTS = ("boolean", "tinyint", "smallint", "int", "integer", "bigint", "float", "double", "string",
                   "binary", "date", "timestamp", "timestamp_ntz")
"""The type names `casts:` accepts besides ``decimal(p,s)``; their Spark types are in `silver.cast_types`."""
DECIMAL_CAST = re.compile(r"^decimal\(\s*(\d{1,2})\s*,\s*(\d{1,2})\s*\)$")


def is_supported_cast(type_text: str) -> bool:
    """True if ``type_text`` is a Spark SQL type `casts:` accepts (primitives and decimals)."""
    text = type_text.strip().lower()
    if text in PRIMITIVE_CASTS:
        return True
    match = DECIMAL_CAST.match(text)
    if match is None:
        return False
    precision, scale = int(match.group(1)), int(match.group(2))
    return 0 < precision <= 38 and scale <= precision


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SoftDeleteColumns(_Strict):
    """Names of the columns that mark a soft-deleted row (``deletes: soft``).

    Attributes:
        flag: BOOLEAN, true once the source row was deleted.
        timestamp: TIMESTAMP, the source commit time of the delete.
    """

    flag: str = "_cdc_deleted"
    timestamp: str = "_cdc_deleted_at"


class Scd2Columns(_Strict):
    """Names of the SCD2 bookkeeping columns (``history: scd2``).

    Attributes:
        valid_from: TIMESTAMP, source commit time of the change that opened the version.
        valid_to: TIMESTAMP, source commit time of the change that closed it (null while open).
        current: BOOLEAN, true for the open version of a key.
        deleted: BOOLEAN, true when the version was closed by a delete or a truncate.
        end_seq: BIGINT, bronze ``seq`` of the change that closed the version.
    """

    valid_from: str = "_cdc_valid_from"
    valid_to: str = "_cdc_valid_to"
    current: str = "_cdc_is_current"
    deleted: str = "_cdc_deleted"
    end_seq: str = "_cdc_end_seq"


class SilverTable(_Strict):
    """One silver table: where it comes from and how changes are applied to it.

    Attributes:
        table: the silver table's name; also the default folder (``<root>/silver/<table>``) and
            the id of its progress record.
        source: the bronze topic, e.g. ``shop_pg.public.customers``.
        keys: key columns (source names). Default: the source primary key from the schema
            history. Keys other than the primary key need REPLICA IDENTITY FULL for deletes.
        columns: the source columns to keep (default: all). Key columns are always kept.
        exclude_columns: source columns to drop.
        rename: source name -> silver name.
        casts: source name -> Spark SQL type (``int``, ``bigint``, ``decimal(p,s)``, ...),
            applied after the Debezium type is decoded.
        deletes: ``hard`` removes the row; ``soft`` keeps it with the soft-delete columns set.
        soft_delete: names of the soft-delete columns.
        history: ``scd1`` keeps the latest version per key; ``scd2`` keeps one row per version.
        scd2: names of the SCD2 columns.
        schema_evolution: ``add_columns`` (new source columns are added, safe type widening is
            applied), ``strict`` (any schema change stops the table), ``ignore`` (the silver
            schema never changes; new source columns are left out).
        partition_by: partition columns (source names).
        cluster_by: liquid clustering columns (source names; Spark/Databricks only).
        table_properties: Delta table properties set when the table is created (``delta.*``).
        change_data_feed: create the table with Delta's Change Data Feed, so downstream jobs can
            read silver's own changes incrementally (``readChangeFeed``; Spark/Databricks only).
        location: path or URI of the table (default ``<root>/silver/<table>``).
        catalog_table: a catalog name (``catalog.schema.table``) to address the table by; with
            ``location`` it is an external table at that location.
        expectations: data-quality expectations checked on every increment before it is applied
            (`silver.expectations`).
    """

    table: str = Field(pattern=_TABLE_NAME)
    source: str = Field(min_length=3)
    keys: list[str] | None = None
    columns: list[str] | None = None
    exclude_columns: list[str] = []
    rename: dict[str, str] = {}
    casts: dict[str, str] = {}
    deletes: Literal["hard", "soft"] = "hard"
    soft_delete: SoftDeleteColumns = SoftDeleteColumns()
    history: Literal["scd1", "scd2"] = "scd1"
    scd2: Scd2Columns = Scd2Columns()
    schema_evolution: Literal["add_columns", "strict", "ignore"] = "add_columns"
    partition_by: list[str] = []
    cluster_by: list[str] = []
    table_properties: dict[str, str] = {}
    change_data_feed: bool = False
    location: str | None = None
    catalog_table: str | None = None
    expectations: list[Expectation] = []

    @field_validator("source")
    @classmethod
    def _topic_shape(cls, value: str) -> str:
        if value.count(".") < 2 or any(not part for part in value.split(".")):
            raise ValueError(
                f"{value!r} is not a bronze topic; expected <topic.prefix>.<schema>.<table>, "
                "e.g. shop_pg.public.customers"
            )
        return value

    @field_validator("keys")
    @classmethod
    def _keys_not_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("keys must name at least one column; leave it out to use the primary key")
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"keys has repeated columns: {value}")
        return value

    @field_validator("casts")
    @classmethod
    def _known_casts(cls, value: dict[str, str]) -> dict[str, str]:
        bad = {c: t for c, t in value.items() if not is_supported_cast(t)}
        if bad:
            raise ValueError(
                f"unsupported cast type(s) {bad}; use boolean, tinyint, smallint, int, bigint, float, "
                "double, string, binary, date, timestamp, timestamp_ntz or decimal(p,s) with p <= 38"
            )
        return value

    @field_validator("table_properties")
    @classmethod
    def _delta_properties(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(k for k in value if not k.startswith("delta."))
        if bad:
            raise ValueError(f"table properties must be Delta properties starting with 'delta.': {bad}")
        return value

    @field_validator("catalog_table")
    @classmethod
    def _catalog_parts(cls, value: str | None) -> str | None:
        if value is not None and any(not part.strip() for part in value.split(".")):
            raise ValueError(f"{value!r} is not a table name; expected [catalog.]schema.table")
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> SilverTable:
        """Rules between keys; each problem is raised as ``<key>: <message>``, one per line, so
        the pipeline loader can report it at that key."""
        problems = self._column_problems() + self._name_problems()
        if self.deletes == "soft" and self.history == "scd2":
            problems.append(("deletes", "soft does not apply to history: scd2 (a delete closes the version)"))
        if self.partition_by and self.cluster_by:
            problems.append(("cluster_by", "use either partition_by or cluster_by, not both"))
        problems += self._expectation_problems()
        if problems:
            raise ValueError("\n".join(f"{key}: {message}" for key, message in problems))
        return self

    def _column_problems(self) -> list[tuple[str, str]]:
        problems = []
        keys = self.keys or []
        if self.columns is not None:
            problems += [("partition_by", f"partition column {c!r} is not in columns") for c in self.partition_by
                         if c not in self.columns and c not in keys]
        problems += [("exclude_columns", f"key column {k!r} cannot be in exclude_columns")
                     for k in keys if k in self.exclude_columns]
        if self.columns is not None and set(self.columns) & set(self.exclude_columns):
            problems.append(("exclude_columns", "a column cannot be both in columns and exclude_columns"))
        for option in ("rename", "casts"):
            problems += [(option, f"{option} names excluded column {c!r}") for c in getattr(self, option)
                         if c in self.exclude_columns]
        problems += [("partition_by", f"partition column {c!r} is excluded")
                     for c in self.partition_by if c in self.exclude_columns]
        return problems

    def _expectation_problems(self) -> list[tuple[str, str]]:
        if not self.expectations:
            return []
        labels = [e.label for e in self.expectations]
        repeated = sorted({n for n in labels if labels.count(n) > 1})
        if repeated:
            return [("expectations", f"expectation names must differ within a table (give each a name): {repeated}")]
        return []

    def _name_problems(self) -> list[tuple[str, str]]:
        problems = []
        targets = list(self.rename.values())
        if len(set(targets)) != len(targets):
            problems.append(("rename", f"rename maps two columns onto the same name: {self.rename}"))
        clash = sorted(set(targets) & (set(self.columns or []) - set(self.rename)))
        if clash:
            problems.append(("rename", f"rename targets {clash} are also kept source column names"))
        reserved = sorted(n for n in targets if n.startswith(METADATA_PREFIX) or n in self.metadata_names())
        if reserved:
            problems.append(("rename", f"rename targets {reserved} collide with silver bookkeeping columns"))
        if any(not n for n in targets):
            problems.append(("rename", "rename targets cannot be empty"))
        meta = self.metadata_names()
        if len(set(meta)) != len(meta):
            key = "scd2" if self.history == "scd2" else "soft_delete"
            problems.append((key, f"bookkeeping column names must differ: {meta}"))
        return problems

    def metadata_names(self) -> list[str]:
        """The bookkeeping columns this declaration adds to the silver table."""
        names = [f"{METADATA_PREFIX}seq", f"{METADATA_PREFIX}op", f"{METADATA_PREFIX}ts"]
        if self.history == "scd2":
            s = self.scd2
            names += [s.valid_from, s.valid_to, s.current, s.deleted, s.end_seq]
        elif self.deletes == "soft":
            names += [self.soft_delete.flag, self.soft_delete.timestamp]
        return names

    def silver_name(self, source_column: str) -> str:
        """The silver column name of a source column (after ``rename``)."""
        return self.rename.get(source_column, source_column)

    def keeps(self, source_column: str) -> bool:
        """True if the declaration keeps this source column (selection + exclusions)."""
        if source_column in self.exclude_columns:
            return False
        return self.columns is None or source_column in self.columns or source_column in (self.keys or [])


class QuarantineOptions(_Strict):
    """Where undecodable or mismatching bronze events go.

    Attributes:
        location: the quarantine Delta table (default ``<root>/silver/_quarantine``).
        enabled: when false, a bad event stops its table instead (nothing is applied).
    """

    location: str | None = None
    enabled: bool = True


class SilverOptions(_Strict):
    """Options for every silver table of a pipeline (YAML ``silver_options:``).

    Attributes:
        interval_seconds: pause between passes when the runner loops (without ``--once``).
        consistency: per source name, ``table`` (default: each table advances on its own) or
            ``transaction`` (all silver tables of the source advance to the same committed
            capture batch, a source transaction boundary).
        quarantine: where bad events go.
        state_location: where progress and staging live (default ``<root>/silver/_cdc``).
        unavailable_value_placeholder: the source connector's ``unavailable.value.placeholder``
            (unchanged TOAST values); ``hex:``-prefixed values are bytes, as in Debezium.
        max_bronze_rows_per_run: cap on bronze rows one table reads per pass (None: no cap).
        variable_scale_decimal: the Spark type for ``VariableScaleDecimal`` (NUMERIC without
            precision): ``string`` (the exact value as text) or ``decimal(p,s)``, where a value
            that does not fit exactly is quarantined (never rounded).
        storage_options: object-store options for reading Delta metadata with delta-rs.
    """

    interval_seconds: float = Field(10.0, gt=0)
    consistency: dict[str, Literal["table", "transaction"]] = {}
    quarantine: QuarantineOptions = QuarantineOptions()
    state_location: str | None = None
    unavailable_value_placeholder: str = Field("__debezium_unavailable_value", min_length=1)
    max_bronze_rows_per_run: int | None = Field(None, ge=1000)
    variable_scale_decimal: str = "string"
    storage_options: dict[str, str] = {}

    @field_validator("variable_scale_decimal")
    @classmethod
    def _decimal_type(cls, value: str) -> str:
        if value.strip().lower() == "string":
            return "string"
        if not DECIMAL_CAST.match(value.strip().lower()) or not is_supported_cast(value):
            raise ValueError(f"{value!r} is neither 'string' nor a decimal type; write 'string' or decimal(p,s) "
                             "with p <= 38")
        return value.strip().lower()
