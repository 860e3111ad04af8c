"""The ``source`` block of SQL Server change events, as Debezium 3.6.3's ``SourceInfo`` and
``SqlServerSourceInfoStructMaker`` build it.

Fields in order: ``version``, ``connector`` (``sqlserver``), ``name`` (``topic.prefix``),
``ts_ms``, ``snapshot`` (an ``io.debezium.data.Enum`` string: ``true``, ``first``,
``first_in_data_collection``, ``last_in_data_collection``, ``last``, ``false``, ``incremental``;
default ``false``), ``db``, ``sequence`` (always null here), ``ts_us``, ``ts_ns``, ``schema``,
``table``, ``change_lsn``, ``commit_lsn``, ``event_serial_no``. Checked against the jar
(test_source_info.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from cdc_sources.common import kschema as ks
from cdc_sources.sqlserver.lsn import Lsn

__all__ = ["DEBEZIUM_VERSION", "SOURCE_SCHEMA", "SnapshotRecord", "SqlServerSource"]

DEBEZIUM_VERSION: Final = "3.6.3.Final"
"""``source.version``: the Debezium release this connector reproduces."""


class SnapshotRecord(Enum):
    """``source.snapshot``: where a record stands in a snapshot (``false`` when streaming)."""

    TRUE = "true"
    FIRST = "first"
    FIRST_IN_DATA_COLLECTION = "first_in_data_collection"
    LAST_IN_DATA_COLLECTION = "last_in_data_collection"
    LAST = "last"
    FALSE = "false"
    INCREMENTAL = "incremental"


def _field(name: str, kind: str, optional: bool) -> tuple[str, ks.Schema, bool]:
    return name, ks.primitive(kind), optional


_SNAPSHOT_ENUM = ks.logical("string", "io.debezium.data.Enum",
                            params={"allowed": ",".join(r.value for r in SnapshotRecord)})

SOURCE_SCHEMA: Final[ks.Schema] = {
    "type": "struct",
    "fields": [
        ks.complete(ks.primitive("string"), optional=False, field="version"),
        ks.complete(ks.primitive("string"), optional=False, field="connector"),
        ks.complete(ks.primitive("string"), optional=False, field="name"),
        ks.complete(ks.primitive("int64"), optional=False, field="ts_ms"),
        ks.complete(_SNAPSHOT_ENUM, optional=True, default="false", field="snapshot"),
        ks.complete(ks.primitive("string"), optional=False, field="db"),
        ks.complete(ks.primitive("string"), optional=True, field="sequence"),
        ks.complete(ks.primitive("int64"), optional=True, field="ts_us"),
        ks.complete(ks.primitive("int64"), optional=True, field="ts_ns"),
        ks.complete(ks.primitive("string"), optional=False, field="schema"),
        ks.complete(ks.primitive("string"), optional=False, field="table"),
        ks.complete(ks.primitive("string"), optional=True, field="change_lsn"),
        ks.complete(ks.primitive("string"), optional=True, field="commit_lsn"),
        ks.complete(ks.primitive("int64"), optional=True, field="event_serial_no"),
    ],
    "optional": False,
    "name": "io.debezium.connector.sqlserver.Source",
    "version": 1,
}
"""The ``source`` struct's schema as JsonConverter writes it."""


@dataclass(frozen=True)
class SqlServerSource:
    """One event's ``source`` values.

    Attributes:
        name: ``topic.prefix``.
        ts_ns: the commit time (``fn_cdc_map_lsn_to_time``) or, for snapshot records, the time
            the snapshot read the table, in nanoseconds since the epoch (UTC).
        db / schema / table: where the row lives (``db`` as the server spells it).
        commit_lsn / change_lsn: the event's position (``change_lsn`` NULL for snapshot records).
        event_serial_no: the event's serial at its position; None for snapshot records.
        snapshot: the snapshot marker.
    """

    name: str
    ts_ns: int
    db: str
    schema: str
    table: str
    commit_lsn: Lsn
    change_lsn: Lsn = Lsn.NULL
    event_serial_no: int | None = None
    snapshot: SnapshotRecord = SnapshotRecord.FALSE

    def payload(self) -> dict[str, Any]:
        """The ``source`` payload, fields in schema order (LSNs as text, NULL LSNs as null)."""
        return {
            "version": DEBEZIUM_VERSION,
            "connector": "sqlserver",
            "name": self.name,
            "ts_ms": self.ts_ns // 10**6,
            "snapshot": self.snapshot.value,
            "db": self.db,
            "sequence": None,
            "ts_us": self.ts_ns // 1000,
            "ts_ns": self.ts_ns,
            "schema": self.schema,
            "table": self.table,
            "change_lsn": str(self.change_lsn) if self.change_lsn.available else None,
            "commit_lsn": str(self.commit_lsn) if self.commit_lsn.available else None,
            "event_serial_no": self.event_serial_no,
        }
