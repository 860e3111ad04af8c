"""Renders Debezium PostgreSQL records: envelopes, source blocks, keys and positions as JSON."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.envelope import VERSION, dumps, envelope, envelope_text
from cdc_sources.common.transactions import TransactionBlock

__all__ = ["CONNECTOR", "VERSION", "SourceInfo", "StreamSourceTemplate", "dumps", "envelope", "envelope_text",
           "message_envelope", "sequence"]

CONNECTOR = "postgresql"


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """The parts of a ``source`` block that are fixed for a connector run."""

    name: str
    db: str

    def stream_template(self, *, schema: str, table: str) -> StreamSourceTemplate:
        """The text of a streamed ``source`` block of ``schema.table``, with holes for the values
        that change per transaction or per record (see `StreamSourceTemplate`)."""
        holes = [chr(n) for n in range(1, 7)]  # control characters: JSON text escapes them as \u000N
        text = dumps({**self.block(schema=schema, table=table, ts_us=0, snapshot="false", tx_id=None, lsn=None,
                                   sequence=None),
                      "ts_ms": holes[0], "sequence": holes[1], "ts_us": holes[2], "ts_ns": holes[3],
                      "txId": holes[4], "lsn": holes[5]})
        pieces: list[str] = []
        for hole in holes:
            marker = dumps(hole)
            if text.count(marker) != 1:  # a name holding the control character itself: no template
                return StreamSourceTemplate(self, schema, table, None)
            piece, text = text.split(marker, 1)
            pieces.append(piece)
        a, b, c, d, e, f = pieces
        return StreamSourceTemplate(self, schema, table, (a, b, c, d, e, f, text))

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


@dataclass(frozen=True, slots=True)
class StreamSourceTemplate:
    """A streamed ``source`` block's JSON text around the values that change per transaction
    (``ts_*``, ``txId``) and per record (``sequence``, ``lsn``).

    ``head + <sequence JSON string> + mid + <lsn> + tail`` of `parts` gives the same text as
    ``dumps(info.block(...))``.
    """

    info: SourceInfo
    schema: str
    table: str
    pieces: tuple[str, str, str, str, str, str, str] | None
    """The text between the holes ts_ms, sequence, ts_us, ts_ns, txId, lsn (None: render afresh)."""

    def parts(self, *, ts_us: int, tx_id: int | None) -> tuple[str, str, str]:
        """(head, mid, tail) of the block of a transaction committed at ``ts_us`` (µs), id ``tx_id``."""
        p = self.pieces
        if p is None:
            text = dumps(self.info.block(schema=self.schema, table=self.table, ts_us=ts_us, snapshot="false",
                                         tx_id=tx_id, lsn=-1, sequence="\0"))
            head, rest = text.split('"\\u0000"', 1)
            mid, tail = rest.split('"lsn":-1', 1)
            return head, mid + '"lsn":', tail
        tx = "null" if tx_id is None else tx_id
        return f"{p[0]}{ts_us // 1000}{p[1]}", f"{p[2]}{ts_us}{p[3]}{ts_us * 1000}{p[4]}{tx}{p[5]}", p[6]


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
