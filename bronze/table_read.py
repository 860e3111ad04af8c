"""Reading a few columns of a small bronze bookkeeping table, cheaply.

delta-rs reads tables through ``pyarrow.dataset``, whose import (pandas included) costs more than
everything else a capture with nothing to do spends. The bookkeeping tables read at start-up
(the connector's history, the schema versions) are small, append-only, unpartitioned tables that
this writer made, so on local storage their active files are read with ``pyarrow.parquet``
directly. Anything else (an object store, partitions, deletion vectors or column mapping, a file
without one of the columns) goes through delta-rs as before.
"""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

_PLAIN_READER_FEATURES = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})
"""Reader features that do not change which rows a data file holds or how its columns are named."""


def read_columns(table: DeltaTable, columns: list[str]) -> pa.Table:
    """The given columns of every row of the table's current version (rows in no particular order)."""
    files = table.file_uris()
    if not _plain(table, files):
        return table.to_pyarrow_table(columns=columns)
    import pyarrow.parquet as pq

    parts: list[pa.Table] = []
    for path in files:
        parquet = pq.ParquetFile(path)
        if not set(columns) <= set(parquet.schema_arrow.names):
            return table.to_pyarrow_table(columns=columns)  # a file from before a column was added
        parts.append(parquet.read(columns=columns))
    if not parts:
        return table.to_pyarrow_table(columns=columns)  # the empty table with the table's own schema
    return pa.concat_tables(parts, promote_options="permissive")


def _plain(table: DeltaTable, files: list[str]) -> bool:
    """Whether the table's rows are exactly the rows of its local data files."""
    metadata = table.metadata()
    if any("://" in f for f in files) or metadata.partition_columns:
        return False
    if metadata.configuration.get("delta.columnMapping.mode", "none") != "none":
        return False
    protocol = table.protocol()
    if protocol.min_reader_version == 2:  # reader version 2 is column mapping
        return False
    return set(protocol.reader_features or []) <= _PLAIN_READER_FEATURES
