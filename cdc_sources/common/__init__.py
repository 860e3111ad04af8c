"""Behaviour shared by every connector, independent of any database driver.

Import from the modules directly; this package re-exports nothing, so importing one of
them loads only what it needs. The filter and column-option modules:

- `regex_list`: Debezium's comma-separated lists of anchored, case-insensitive Java regexes.
- `filters`: include/exclude lists for containers, tables, columns and message prefixes.
- `column_rules`: which single truncate/mask/hash/propagation rule applies to a column.
- `column_transforms`: the truncate, asterisk-mask and hash value transforms.
- `hashing`: Debezium's salted-hash pseudonyms, byte for byte.
- `source_type`: ``column.propagate.source.type`` / ``datatype.propagate.source.type``.
- `key_columns`: ``message.key.columns``.

The columnar snapshot modules, shared by the connectors' fast snapshot paths:

- `vector_encoders`: vectorised JSON renderings of SQL text columns (integers, strings,
  fixed-scale decimals, timestamps, dates).
- `column_render`: one batch of a column as JSON fragments (encoder, per-value converter,
  NULL fallback) and the encoders' probe self-check.
- `snapshot_blocks`: rendered columns joined into `ChangeBlock`s, cut at ``source.snapshot``
  marker changes.

Modules here import only `cdc_sources.spi`, each other, the standard library and the core
dependencies (orjson; pyarrow and numpy for the columnar modules).
"""
