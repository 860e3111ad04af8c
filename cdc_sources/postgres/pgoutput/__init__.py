"""PostgreSQL's ``pgoutput`` logical replication protocol, decoded without I/O.

One module per concept:

- `messages`: the frozen message types (`Begin`, `Insert`, `Relation`, ...), `UNCHANGED_TOAST`
  and `PgOutputError`;
- `decoder`: `decode` and `PgOutputDecoder`, one replication payload (``bytes``) to one message;
- `columnar`: `tuple_columns`, the TupleData of many Insert messages at once, column-wise, as
  Arrow arrays.

Import the public names from here: ``from cdc_sources.postgres import pgoutput as pg``, then
``pg.decode(payload)``, ``pg.Insert``, ``pg.UNCHANGED_TOAST``.
"""

from cdc_sources.postgres.pgoutput.columnar import ColumnarUnsupportedError, tuple_columns
from cdc_sources.postgres.pgoutput.decoder import PG_EPOCH_US, PgOutputDecoder, decode
from cdc_sources.postgres.pgoutput.messages import (
    TRUNCATE_CASCADE,
    TRUNCATE_RESTART_IDENTITY,
    UNCHANGED_TOAST,
    Begin,
    BeginPrepare,
    Commit,
    CommitPrepared,
    Delete,
    Insert,
    Message,
    OldKind,
    Origin,
    PgOutputError,
    PgOutputMessage,
    Prepare,
    Relation,
    RelationColumn,
    RollbackPrepared,
    StreamAbort,
    StreamCommit,
    StreamStart,
    StreamStop,
    Truncate,
    TupleValue,
    Type,
    UnchangedToast,
    Update,
)

__all__ = [
    "PG_EPOCH_US",
    "TRUNCATE_CASCADE",
    "TRUNCATE_RESTART_IDENTITY",
    "UNCHANGED_TOAST",
    "Begin",
    "BeginPrepare",
    "ColumnarUnsupportedError",
    "Commit",
    "CommitPrepared",
    "Delete",
    "Insert",
    "Message",
    "OldKind",
    "Origin",
    "PgOutputDecoder",
    "PgOutputError",
    "PgOutputMessage",
    "Prepare",
    "Relation",
    "RelationColumn",
    "RollbackPrepared",
    "StreamAbort",
    "StreamCommit",
    "StreamStart",
    "StreamStop",
    "Truncate",
    "TupleValue",
    "Type",
    "UnchangedToast",
    "Update",
    "decode",
    "tuple_columns",
]
