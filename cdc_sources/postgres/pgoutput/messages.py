"""The pgoutput message types: one frozen dataclass per message, and the decoding error.

`decoder` builds these from replication payloads; everything downstream reads only these types.
Tuple column values are ``str`` (text), ``bytes`` (binary), None (NULL) or `UNCHANGED_TOAST`;
LSNs are plain ints, timestamps (``*_ts_us``) are Unix-epoch microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

from cdc_sources.spi import CdcError, Fatal

TRUNCATE_CASCADE: Final = 1
TRUNCATE_RESTART_IDENTITY: Final = 2


class PgOutputError(CdcError, Fatal, ValueError):
    """A payload is not a well-formed pgoutput message.

    Attributes:
        message_type: the first byte of the payload as a character (None if the payload is empty).
        reason: what is wrong. Never contains row values.
    """

    message_type: str | None
    reason: str

    def __init__(self, reason: str, *, message_type: str | None = None) -> None:
        what = f"pgoutput message {message_type!r}" if message_type else "pgoutput message"
        super().__init__(
            f"cannot decode {what}: {reason}. Check that the replication slot uses the pgoutput "
            "plugin with proto_version 1 and that client_encoding is UTF8; otherwise report this "
            "with the server version",
            message_type=message_type,
            reason=reason,
        )


@final
class UnchangedToast:
    """The type of `UNCHANGED_TOAST`: a value the server did not send because it did not change.

    PostgreSQL omits TOASTed (large, out-of-line) values that an UPDATE left unchanged. This is
    not NULL: the column has a value, the stream just does not carry it.
    """

    __slots__ = ()
    _instance: UnchangedToast | None = None

    def __new__(cls) -> UnchangedToast:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"

    def __reduce__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST: Final = UnchangedToast()
"""Stands for a column value pgoutput sent as ``u`` (unchanged TOAST). Compare with ``is``."""

TupleValue: TypeAlias = "str | bytes | UnchangedToast | None"
OldKind: TypeAlias = Literal["K", "O"]


@dataclass(frozen=True, slots=True)
class Begin:
    """``B``: a transaction starts. ``final_lsn`` is the LSN of its commit record."""

    final_lsn: int
    commit_ts_us: int
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    """``C``: a transaction ends. ``end_lsn`` is the LSN just after its commit record."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True, slots=True)
class Origin:
    """``O``: the transaction came from replication origin ``name`` at its ``lsn``."""

    lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    """One column of a `Relation`. ``flags`` bit 1 means the column is part of the key."""

    flags: int
    name: str
    type_oid: int
    typmod: int

    @property
    def is_key(self) -> bool:
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class Relation:
    """``R``: a table's shape, sent before its first change in a session and after DDL.

    ``namespace`` is the schema (``pg_catalog`` when the server sends an empty string);
    ``replica_identity`` is ``d`` (default), ``n`` (nothing), ``f`` (full) or ``i`` (index).
    """

    oid: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[RelationColumn, ...]
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Type:
    """``Y``: a non-built-in type used by a column, sent before the `Relation` using it.

    For a domain, ``oid`` is the domain's but ``namespace`` and ``name`` are its base type's
    (a domain over ``int4`` arrives as ``pg_catalog.int4``).
    """

    oid: int
    namespace: str
    name: str
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Insert:
    """``I``: a row was inserted; ``new`` has one value per `Relation` column."""

    relation_oid: int
    new: tuple[TupleValue, ...]
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """``U``: a row was updated.

    ``old`` is None unless the key changed (``old_kind`` ``K``: only key columns set, others
    None) or the replica identity is FULL (``O``: the whole old row).
    """

    relation_oid: int
    old: tuple[TupleValue, ...] | None
    old_kind: OldKind | None
    new: tuple[TupleValue, ...]
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    """``D``: a row was deleted; ``old`` is its key (``K``) or, under FULL identity, the row (``O``)."""

    relation_oid: int
    old: tuple[TupleValue, ...]
    old_kind: OldKind
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Truncate:
    """``T``: tables were truncated; ``options`` has `TRUNCATE_CASCADE`, `TRUNCATE_RESTART_IDENTITY`."""

    options: int
    relation_oids: tuple[int, ...]
    xid: int | None = None

    @property
    def cascade(self) -> bool:
        return bool(self.options & TRUNCATE_CASCADE)

    @property
    def restart_identity(self) -> bool:
        return bool(self.options & TRUNCATE_RESTART_IDENTITY)


@dataclass(frozen=True, slots=True)
class Message:
    """``M``: a ``pg_logical_emit_message`` call (non-transactional ones arrive outside B/C)."""

    transactional: bool
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class StreamStart:
    """``S`` (v2+): a block of a large in-progress transaction ``xid`` follows."""

    xid: int
    first_segment: bool


@dataclass(frozen=True, slots=True)
class StreamStop:
    """``E`` (v2+): the current stream block ends."""


@dataclass(frozen=True, slots=True)
class StreamCommit:
    """``c`` (v2+): streamed transaction ``xid`` committed."""

    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True, slots=True)
class StreamAbort:
    """``A`` (v2+): streamed (sub)transaction aborted; LSN and time only with v4 parallel streaming."""

    xid: int
    subxid: int
    abort_lsn: int | None = None
    abort_ts_us: int | None = None


@dataclass(frozen=True, slots=True)
class BeginPrepare:
    """``b`` (v3+): a two-phase transaction's changes follow."""

    prepare_lsn: int
    end_lsn: int
    prepare_ts_us: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class Prepare:
    """``P`` (v3+): ``PREPARE TRANSACTION gid``. Also used for ``p`` (stream prepare)."""

    flags: int
    prepare_lsn: int
    end_lsn: int
    prepare_ts_us: int
    xid: int
    gid: str
    streamed: bool = False


@dataclass(frozen=True, slots=True)
class CommitPrepared:
    """``K`` (v3+): ``COMMIT PREPARED gid``."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int
    xid: int
    gid: str


@dataclass(frozen=True, slots=True)
class RollbackPrepared:
    """``r`` (v3+): ``ROLLBACK PREPARED gid``."""

    flags: int
    prepare_end_lsn: int
    rollback_end_lsn: int
    prepare_ts_us: int
    rollback_ts_us: int
    xid: int
    gid: str


PgOutputMessage: TypeAlias = (
    "Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | Message"
    " | StreamStart | StreamStop | StreamCommit | StreamAbort | BeginPrepare | Prepare"
    " | CommitPrepared | RollbackPrepared"
)
