"""Decoding bronze change events into silver-typed columns.

`DecodePlan.build` resolves, once per increment, the silver columns from the schema versions
the increment's rows point at: the union of their row fields (kept by the declaration), each
field's codec per schema version, the widest type across versions, renames and casts.
`DecodePlan.decode` then turns bronze rows into one row per event with:

* ``__cdc_seq``, ``__cdc_op`` (c/u/r/d, null for tombstones), ``__cdc_kind`` (``u`` upsert or
  ``d`` delete), ``__cdc_ts`` (source commit time), ``__cdc_key`` (the bronze key text);
* ``__cdc_reason``: why the event cannot be applied (quarantine), null when it can;
* ``__cdc_unavailable``: silver names of columns holding the unavailable-value placeholder;
* ``__cdc_value``: the raw envelope, kept only for bad events;
* ``__cdc_oldkey`` / ``__cdc_newkey``: the primary-key-change headers;
* the silver columns, named and typed as in silver.

Over Spark Connect (Sail), columns holding floating-point numbers are re-read from the
envelope's JSON text with ``get_json_object`` (see `silver.types.Codec.exact`): Sail's
``from_json`` can lose the last digit of a double. Classic Spark's ``from_json`` is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import ArrayType, DataType, LongType, MapType, StringType, StructField, StructType

from cdc_sources.spi import HEADER_NEW_KEY, HEADER_OLD_KEY
from silver.cast_types import parse_cast_type
from silver.declarations import SilverTable
from silver.engine_traits import EngineTraits
from silver.errors import IncompatibleSchemaChangeError, KeyResolutionError
from silver.name_lists import names_where
from silver.schema_history import TopicSchema
from silver.types import Codec, Placeholder, TypeOptions, codec_for, json_member, widen
from silver.types.widening import convert

__all__ = ["META_COLUMNS", "ColumnPlan", "DecodePlan"]

SEQ, OP, KIND, TS, KEY, REASON, UNAVAILABLE, VALUE, OLDKEY, NEWKEY = (
    "__cdc_seq", "__cdc_op", "__cdc_kind", "__cdc_ts", "__cdc_key", "__cdc_reason", "__cdc_unavailable",
    "__cdc_value", "__cdc_oldkey", "__cdc_newkey")
META_COLUMNS = (SEQ, OP, KIND, TS, KEY, REASON, UNAVAILABLE, VALUE, OLDKEY, NEWKEY)
_UPSERT_OPS = ("c", "u", "r")


@dataclass(frozen=True)
class ColumnPlan:
    """How one source column becomes one silver column.

    Attributes:
        source: the source column name.
        silver: the silver column name.
        raw_type: the ``from_json`` type (union across versions).
        target_type: the silver type (after widening and ``casts``).
        groups: (schema ids, codec) pairs; one pair when every version decodes alike.
        cast: the declared cast, if any.
        is_key: whether it is a key column.
        former: (schema ids, field name) for versions where the column had another name (the
            source renamed it since; see `silver.renames`).
    """

    source: str
    silver: str
    raw_type: DataType
    target_type: DataType
    groups: tuple[tuple[tuple[str, ...], Codec], ...]
    cast: str | None
    is_key: bool
    former: tuple[tuple[tuple[str, ...], str], ...] = ()

    def _per_group(self, raw: Column, schema_id: Column,
                   fn: Callable[[Codec, Column], Column | None], *, exact: bool = False) -> Column | None:
        parts: list[tuple[tuple[str, ...], Column]] = []
        for ids, codec in self.groups:
            raw_in = raw if codec.raw_type == self.raw_type else _reparse(raw, codec.raw_type)
            if exact and raw_in is not raw:  # raw is the field's JSON text: re-read its floats
                reread = codec.exact(raw_in, raw)
                raw_in = raw_in if reread is None else reread
            part = fn(codec, raw_in)
            if part is not None:
                parts.append((ids, part))
        if not parts:
            return None
        if len(parts) == 1 and len(self.groups) == 1:
            return parts[0][1]
        out = sf.when(schema_id.isin(*parts[0][0]), parts[0][1])
        for ids, part in parts[1:]:
            out = out.when(schema_id.isin(*ids), part)
        return out

    @cached_property
    def holds_floats(self) -> bool:
        """Whether some version of the column holds floating-point numbers `exact` re-reads."""
        probe = sf.lit(None)
        return any(codec.exact(probe, probe) is not None for _, codec in self.groups)

    @property
    def text_only(self) -> bool:
        """Whether the raw value is the field's JSON text alone, ``from_json`` not needed: a leaf
        (or versions whose raw forms differ) holding floats, with a name a JSONPath addresses."""
        return self.holds_floats and self.raw_type == StringType() and "'" not in self.source

    def exact(self, raw: Column, text: Column | None) -> Column:
        """The raw field with its floats re-read from ``text``, the field's JSON text (see
        `silver.types.Codec.exact`); ``raw`` when ``text`` is None or there are no floats."""
        if text is None or not self.holds_floats:
            return raw
        if self.raw_type == StringType():  # a leaf, or versions whose raw forms differ
            return text
        for _, codec in self.groups:
            out = codec.exact(raw, text)
            if out is not None:
                return out
        return raw

    @property
    def can_be_unavailable(self) -> bool:
        """Whether any version of the column can carry the unavailable-value placeholder."""
        probe = sf.lit(None)
        return any(codec.unavailable(probe, Placeholder()) is not None for _, codec in self.groups)

    @property
    def decoded_type(self) -> DataType:
        """The type after decoding and widening across versions, before ``casts``."""
        t: DataType | None = self.groups[0][1].target_type
        for _, codec in self.groups[1:]:
            t = widen(t, codec.target_type) if t is not None else None
        assert t is not None
        return t

    def decoded(self, raw: Column, schema_id: Column, *, reread: bool = True) -> Column:
        """The decoded value, before ``casts``; ``reread``: re-read floats from JSON text."""
        decoded = self.decoded_type

        def dec(codec: Codec, r: Column) -> Column:
            out = codec.decode(r)
            return convert(out, codec.target_type, decoded)

        out = self._per_group(raw, schema_id, dec, exact=reread and self.holds_floats)
        assert out is not None
        return out

    def final(self, decoded: Column) -> Column:
        """The silver value from the decoded one (applies ``casts``)."""
        return decoded if self.cast is None else decoded.try_cast(self.target_type)

    def mismatch(self, raw: Column, decoded: Column, final: Column, schema_id: Column) -> Column:
        """True where the raw value did not decode (or does not fit the cast).

        ``decoded``/``final`` are references to the already computed columns.
        """
        out = self._per_group(raw, schema_id, lambda codec, r: codec.mismatch(r, decoded))
        base = sf.coalesce(out, sf.lit(False)) if out is not None else sf.lit(False)
        if self.cast is not None:
            base = base | (raw.isNotNull() & final.isNull())
        return base

    def unavailable(self, raw: Column, schema_id: Column, ph: Placeholder) -> Column | None:
        """True where the raw value is the unavailable-value placeholder; None if never."""
        out = self._per_group(raw, schema_id, lambda codec, r: codec.unavailable(r, ph))
        return None if out is None else sf.coalesce(out, sf.lit(False))


def _rereads_floats(frame: DataFrame) -> bool:
    """Whether floats are re-read from the JSON text (`silver.engine_traits`)."""
    return EngineTraits.of(frame).rereads_floats


def _reparse(raw_text: Column, raw_type: DataType) -> Column:
    """Raw JSON text parsed into a complex raw type (for versions whose raw types differ)."""
    if isinstance(raw_type, (StructType, ArrayType)):
        return sf.from_json(raw_text, raw_type)
    if isinstance(raw_type, MapType):
        return sf.from_json(sf.concat(sf.lit('{"m":'), raw_text, sf.lit("}")),
                            StructType([StructField("m", raw_type)]))["m"]
    return raw_text


@dataclass(frozen=True)
class DecodePlan:
    """Everything needed to decode one increment of one topic (see module doc)."""

    table: SilverTable
    columns: tuple[ColumnPlan, ...]
    keys: tuple[str, ...]
    keys_are_primary_key: bool
    raw_key_dedupe: bool
    schema_ids: tuple[str, ...]
    placeholder: Placeholder

    @staticmethod
    def build(table: SilverTable, versions: Sequence[TopicSchema], *, placeholder: Placeholder,
              type_options: TypeOptions | None = None,
              renamed: Mapping[str, Mapping[str, str]] | None = None) -> DecodePlan:
        """Plan the decoding of rows written with ``versions`` (oldest first).

        ``renamed``: per schema id, the newest name of its columns the source renamed since
        (`silver.renames.current_names`); their values decode into the column's newest name.

        Raises:
            KeyResolutionError: no key columns, or versions disagree on the primary key.
            IncompatibleSchemaChangeError: a column's types across versions cannot be unified.
        """
        if not versions:
            raise KeyResolutionError(
                f"silver table {table.table!r}: the schema history has no schema for {table.source}; "
                "has the capture written it (bronze/_cdc/<source>/schemas)?", table=table.table)
        keys, is_pk = _resolve_keys(table, versions)
        columns = _plan_columns(table, versions, keys, type_options or TypeOptions(), renamed or {})
        key_schemas = {v.key for v in versions}
        return DecodePlan(table, columns, keys, is_pk, is_pk and len(key_schemas) == 1,
                          tuple(v.schema_id for v in versions), placeholder)

    @property
    def key_columns(self) -> tuple[ColumnPlan, ...]:
        """The key columns, in key order."""
        by_source = {c.source: c for c in self.columns}
        return tuple(by_source[k] for k in self.keys)

    def envelope_type(self, *, reread: bool = True) -> StructType:
        """The ``from_json`` schema of ``value``; with ``reread``, ``after`` leaves out the
        `ColumnPlan.text_only` columns (read from the text instead)."""
        parsed = [c for c in self.columns if not (reread and c.text_only)] or self.columns
        fields_ = [StructField(c.source, c.raw_type) for c in parsed]
        named = {f.name for f in fields_}
        for c in self.columns:  # a renamed column's former names, for rows written before the rename
            for _, name in c.former:
                if name not in named:
                    named.add(name)
                    fields_.append(StructField(name, c.raw_type))
        row = StructType(fields_)
        fields = [StructField("after", row)]
        if not self.keys_are_primary_key:
            fields.append(StructField("before", StructType(
                [StructField(c.source, c.raw_type) for c in self.key_columns])))
        source = StructType([StructField("ts_ms", LongType()), StructField("txId", LongType()),
                             StructField("lsn", LongType()), StructField("snapshot", StringType())])
        return StructType([*fields, StructField("source", source), StructField("op", StringType())])

    def keys_from_text(self, key_text: Column) -> list[Column]:
        """The silver key columns decoded from a key JSON text (e.g. the ``__debezium.oldkey`` header)."""
        raw = sf.from_json(key_text, self.key_type())
        out = []
        for c in self.key_columns:
            codec = c.groups[-1][1]
            text = json_member(key_text, c.source)
            exact = None if text is None else codec.exact(raw[c.source], text)
            value = raw[c.source] if exact is None else exact
            out.append(codec.decode(value).cast(c.target_type).alias(c.silver))
        return out

    def key_type(self) -> StructType:
        """The ``from_json`` schema of ``key`` (the key struct)."""
        return StructType([StructField(c.source, c.raw_type) for c in self.key_columns])

    def decode(self, bronze: DataFrame) -> DataFrame:
        """Decode bronze rows (``op`` t/m removed) into silver-typed events (see module doc).

        Built as successive projections (raw fields, decoded values, final columns) so each
        expression refers to the previous step's columns by name instead of repeating it.
        """
        reread = _rereads_floats(bronze)
        env = sf.from_json(sf.col("value"), self.envelope_type(reread=reread))
        keyj = [sf.from_json(sf.col("key"), self.key_type()).alias("__keyj")] if self.keys_are_primary_key else []
        headers = sf.col("headers")
        parsed = bronze.select(
            sf.col("seq").alias(SEQ), sf.col("key").alias(KEY), sf.col("op").alias("__b_op"),
            sf.col("value").alias("__b_value"), sf.col("schema_id").alias("__b_sid"), env.alias("__env"),
            headers[HEADER_OLD_KEY].alias(OLDKEY), headers[HEADER_NEW_KEY].alias(NEWKEY), *keyj)
        base = [sf.col(n) for n in (SEQ, KEY, "__b_op", "__b_value", "__b_sid", "__env", OLDKEY, NEWKEY)]
        raws = parsed.select(*base, *[self._raw_row(c, reread).alias(f"__r{i}") for i, c in enumerate(self.columns)])
        sid = sf.col("__b_sid")
        decoded = raws.select(*base, *[sf.col(f"__r{i}") for i in range(len(self.columns))],
                              *[c.decoded(sf.col(f"__r{i}"), sid, reread=reread).alias(f"__d{i}")
                                for i, c in enumerate(self.columns)])
        return decoded.select(*self._decoded_columns())

    def _raw_row(self, c: ColumnPlan, reread: bool) -> Column:
        def exact(raw: Column, text: Column | None) -> Column:
            return c.exact(raw, text) if reread else raw

        def field(name: str) -> Column:
            text = json_member(sf.col("__b_value"), "after", name)
            return text if reread and c.text_only and text is not None else exact(sf.col("__env")["after"][name], text)

        after = field(c.source)
        if c.former:  # rows written before a rename carry the column under its former name
            chosen = sf.when(sf.col("__b_sid").isin(*c.former[0][0]), field(c.former[0][1]))
            for ids, name in c.former[1:]:
                chosen = chosen.when(sf.col("__b_sid").isin(*ids), field(name))
            after = chosen.otherwise(after)
        if not c.is_key:
            return after
        if self.keys_are_primary_key:
            other = exact(sf.col("__keyj")[c.source], json_member(sf.col(KEY), c.source))
        else:
            other = exact(sf.col("__env")["before"][c.source], json_member(sf.col("__b_value"), "before", c.source))
        return sf.coalesce(after, other)

    def _decoded_columns(self) -> list[Column]:
        sid = sf.col("__b_sid")
        kind = sf.when(sf.col("__b_value").isNull() | (sf.col("__b_op") == "d"), sf.lit("d")).otherwise(sf.lit("u"))
        raw = [sf.col(f"__r{i}") for i in range(len(self.columns))]
        final = [c.final(sf.col(f"__d{i}")) for i, c in enumerate(self.columns)]
        flags = [c.unavailable(raw[i], sid, self.placeholder) for i, c in enumerate(self.columns)]
        unavailable = names_where([(c.silver, f & (kind == "u")) for c, f in zip(self.columns, flags, strict=True)
                                   if f is not None])
        values = [(v if f is None else sf.when(~f, v)).alias(c.silver)
                  for c, v, f in zip(self.columns, final, flags, strict=True)]
        bad = [c.mismatch(raw[i], sf.col(f"__d{i}"), final[i], sid) for i, c in enumerate(self.columns)]
        bad = [b if f is None else (b & ~f) for b, f in zip(bad, flags, strict=True)]
        reason = self._reason(kind, sid, bad, final)
        return [sf.col(SEQ), sf.coalesce(sf.col("__env")["op"], sf.col("__b_op")).alias(OP), kind.alias(KIND),
                sf.timestamp_millis(sf.col("__env")["source"]["ts_ms"]).alias(TS), sf.col(KEY),
                reason.alias(REASON), unavailable.alias(UNAVAILABLE),
                sf.when(reason.isNotNull(), sf.col("__b_value")).alias(VALUE), sf.col(OLDKEY), sf.col(NEWKEY),
                *values]

    def _reason(self, kind: Column, sid: Column, bad: list[Column], final: list[Column]) -> Column:
        value, env_op, b_op = sf.col("__b_value"), sf.col("__env")["op"], sf.col("__b_op")
        index = {c.source: i for i, c in enumerate(self.columns)}
        null_keys = sf.concat_ws(", ", *[sf.when(final[index[c.source]].isNull(), sf.lit(c.source))
                                         for c in self.key_columns])
        bad_cols = sf.concat_ws(", ", *[sf.when(b, sf.lit(c.source)) for c, b in zip(self.columns, bad, strict=True)])
        return (sf.when(value.isNotNull() & env_op.isNull(), sf.lit("undecodable value: not a Debezium JSON envelope"))
                .when(value.isNotNull() & ~sid.isin(*self.schema_ids),
                      sf.concat(sf.lit("schema_id "), sf.coalesce(sid, sf.lit("null")),
                                sf.lit(" is not in the schema history")))
                .when(value.isNotNull() & ~env_op.isin(*_UPSERT_OPS, "d"),
                      sf.concat(sf.lit("unsupported op "), env_op))
                .when(b_op.isNotNull() & (b_op != env_op), sf.lit("bronze op column disagrees with the envelope op"))
                .when((kind == "u") & sf.col("__env")["after"].isNull(),
                      sf.lit("upsert event without an 'after' row"))
                .when(null_keys != "", sf.concat(sf.lit("key column(s) null: "), null_keys))
                .when((kind == "u") & (bad_cols != ""),
                      sf.concat(sf.lit("values do not match the schema in column(s): "), bad_cols)))


def _resolve_keys(table: SilverTable, versions: Sequence[TopicSchema]) -> tuple[tuple[str, ...], bool]:
    pks = {v.primary_key for v in versions}
    if len(pks) > 1 and table.keys is None:
        raise KeyResolutionError(
            f"silver table {table.table!r}: the primary key of {table.source} changed between schema "
            f"versions ({sorted(pks)}); declare 'keys:' or rebuild the table", table=table.table)
    pk = versions[-1].primary_key
    keys = tuple(table.keys) if table.keys is not None else pk
    if not keys:
        raise KeyResolutionError(
            f"silver table {table.table!r}: {table.source} has no primary key; declare 'keys:' "
            "(and set REPLICA IDENTITY FULL on the source table so deletes carry them)", table=table.table)
    row = versions[-1].row
    missing = [k for k in keys if row.field(k) is None]
    if missing:
        raise KeyResolutionError(
            f"silver table {table.table!r}: key column(s) {missing} are not columns of {table.source}",
            table=table.table, missing=missing)
    return keys, keys == pk and len(pks) == 1


def _plan_columns(table: SilverTable, versions: Sequence[TopicSchema], keys: tuple[str, ...],
                  opts: TypeOptions, renamed: Mapping[str, Mapping[str, str]]) -> tuple[ColumnPlan, ...]:
    order: list[str] = []
    per_column: dict[str, list[tuple[str, Codec]]] = {}
    former: dict[str, dict[str, list[str]]] = {}  # column -> former field name -> schema ids
    for v in versions:
        moved = {} if v.primary_key != versions[-1].primary_key else renamed.get(v.schema_id, {})
        for f in v.row.fields:
            name = moved.get(f.name, f.name) if f.name not in keys else f.name
            if not (table.keeps(name) or name in keys):
                continue
            if name not in per_column:
                order.append(name)
                per_column[name] = []
            per_column[name].append((v.schema_id, codec_for(f.schema, opts)))
            if name != f.name:
                former.setdefault(name, {}).setdefault(f.name, []).append(v.schema_id)
    return tuple(_column_plan(table, name, per_column[name], name in keys,
                              tuple((tuple(ids), old) for old, ids in former.get(name, {}).items()))
                 for name in order)


def _column_plan(table: SilverTable, name: str, codecs: list[tuple[str, Codec]], is_key: bool,
                 former: tuple[tuple[tuple[str, ...], str], ...] = ()) -> ColumnPlan:
    groups: dict[str, tuple[list[str], Codec]] = {}
    for sid, codec in codecs:
        groups.setdefault(codec.signature, ([], codec))[0].append(sid)
    grouped = tuple((tuple(ids), codec) for ids, codec in groups.values())
    raw_types = {codec.raw_type for _, codec in grouped}
    raw_type: DataType = raw_types.pop() if len(raw_types) == 1 else StringType()
    target: DataType | None = grouped[0][1].target_type
    for _, codec in grouped[1:]:
        target = widen(target, codec.target_type) if target is not None else None
    if target is None:
        types = sorted({c.target_type.simpleString() for _, c in grouped})
        raise IncompatibleSchemaChangeError(table.table, f"column {name!r} changed type across schema versions: "
                                            f"{' -> '.join(types)}", mode=table.schema_evolution)
    cast = table.casts.get(name)
    if cast is not None:
        target = _parse_cast(cast)
    return ColumnPlan(name, table.silver_name(name), raw_type, target, grouped, cast, is_key, former)


def _parse_cast(cast: str) -> DataType:
    return parse_cast_type(cast)
