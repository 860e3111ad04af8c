"""Renders Debezium PostgreSQL records: envelopes, source blocks, keys and positions as JSON."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.envelope import VERSION, dumps, envelope, envelope_text
from cdc_sources.common.transactions import TransactionBlock

__all__ = ["CONNECTOR", "VERSION", "SourceInfo", "dumps", "envelope", "envelope_text", "message_envelope",
           "sequence"]

CONNECTOR = "postgresql"


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """The parts of a ``source`` block that are fixed for a connector run."""

    name: str
    db: str

    def stream_parts(self, *, schema: str, table: str, ts_us: int, tx_id: int | None) -> tuple[str, str, str]:
        """A streamed ``source`` block's JSON text around its ``sequence`` and ``lsn`` values.

        ``head + <sequence JSON string> + mid + <lsn> + tail`` gives the same text as
        ``dumps(block(...))``.
        """
        text = dumps(self.block(schema=schema, table=table, ts_us=ts_us, snapshot="false", tx_id=tx_id,
                                lsn=-1, sequence="\0"))
        head, rest = text.split('"\\u0000"', 1)
        mid, tail = rest.split('"lsn":-1', 1)
        return head, mid + '"lsn":', tail

    def block(self, *, schema: str, table: str, ts_us: int, snapshot: str, tx_id: int | None,
              lsn: int | None, sequence: str | None) -> dict[str, Any]:
        return {
            "version": VERSION,
            "connector": CONNECTOR,
            "name": self.name,
            "ts_ms": ts_us // 1000,
            "snapshot": snapshot,
            "db": self.db,
            "sequence": sequence,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": schema,
            "table": table,
            "txId": tx_id,
            "lsn": lsn,
            "xmin": None,
            "origin": None,
            "origin_lsn": None,
        }


def message_envelope(source: dict[str, Any], transaction: TransactionBlock | None, prefix: str,
                     content: Any) -> str:
    """The value JSON of a logical decoding message (``op: m``): Debezium's own field order,
    and no ``ts_us``/``ts_ns``."""
    return dumps({
        "op": "m",
        "ts_ms": time.time_ns() // 1_000_000,
        "source": source,
        "transaction": transaction,
        "message": {"prefix": prefix, "content": content},
    })


def sequence(last_commit_lsn: int | None, lsn: int) -> str:
    """``source.sequence``: a JSON array of two strings, the last commit LSN and this LSN."""
    first = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
    return f'[{first},"{lsn}"]'
