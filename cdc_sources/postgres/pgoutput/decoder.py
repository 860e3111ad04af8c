"""The pgoutput decoder: `decode`, `PgOutputDecoder` and their struct layouts and handlers.

A pure decoder for PostgreSQL's ``pgoutput`` logical replication protocol.

Turns one replication message payload (``bytes``) into one neutral, frozen message object.
It opens no connections, reads no config and never logs values; it is safe to replay on
recorded payloads (``tests/cases/postgres/pgoutput/``).

Formats follow the PostgreSQL docs, "Logical Replication Message Formats" (protocol versions 1
to 4). Tuple column values decode as: ``n`` -> ``None``, ``u`` -> `UNCHANGED_TOAST`, ``t`` ->
``str`` (UTF-8; the connection's ``client_encoding`` must be UTF8), ``b`` -> ``bytes``. LSNs are
plain ints, timestamps are Unix-epoch microseconds (pgoutput sends µs since 2000-01-01).

Use `decode` (stateless, thread-safe) for protocol version 1, what the connector requests.
From version 2 on, messages inside a streamed transaction (between ``S`` and ``E``) carry an
extra xid, so such a stream needs the stateful `PgOutputDecoder`.

Observed on PostgreSQL 15 (see the recordings): ``ReplicationMessage.data_start`` is 0 for
``R`` and ``Y`` messages, and for ``B`` when the transaction has a replication origin; for
``C`` it equals ``end_lsn``. Use the LSNs inside the messages, not ``data_start``, for those.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import fields
from typing import Final, TypeAlias

from cdc_sources.postgres.pgoutput.messages import (
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
    Update,
)

PG_EPOCH_US: Final = 946_684_800_000_000
"""Microseconds from 1970-01-01 to 2000-01-01 (PostgreSQL's timestamp epoch), both UTC."""


class _MalformedError(Exception):
    """Raised by the message handlers; `decode` turns it into a `PgOutputError`."""


_Handler: TypeAlias = Callable[[bytes, int, "int | None"], PgOutputMessage]

# -- hot path: Begin, Commit, tuples, Insert, Update, Delete -------------------------------------
# A frozen dataclass's __init__ stores each field with object.__setattr__(self, "name", value);
# calling the slot descriptors' __set__ directly stores the same values at about half the cost.
# Used only for the messages decoded once per row or per transaction.


def _setters(cls: type) -> tuple[Callable[[object, object], None], ...]:
    return tuple(cls.__dict__[f.name].__set__ for f in fields(cls))


_alloc = object.__new__
_BEGIN_LSN, _BEGIN_TS, _BEGIN_XID = _setters(Begin)
_COMMIT_FLAGS, _COMMIT_LSN, _COMMIT_END, _COMMIT_TS = _setters(Commit)
_INS_OID, _INS_NEW, _INS_XID = _setters(Insert)
_UPD_OID, _UPD_OLD, _UPD_KIND, _UPD_NEW, _UPD_XID = _setters(Update)
_DEL_OID, _DEL_OLD, _DEL_KIND, _DEL_XID = _setters(Delete)
BEGIN_SIZE: Final = 21
unpack_begin: Final = struct.Struct(">QqI").unpack_from
"""``unpack_begin(payload, 1)``: a Begin's (final LSN, commit time in µs since 2000-01-01, xid); the
payload must be `BEGIN_SIZE` bytes. For readers that handle the per-transaction messages inline."""
COMMIT_SIZE: Final = 26
unpack_commit: Final = struct.Struct(">BQQq").unpack_from
"""``unpack_commit(payload, 1)``: a Commit's (flags, commit LSN, end LSN, commit time in µs since
2000-01-01); the payload must be `COMMIT_SIZE` bytes."""
_kind_len = struct.Struct(">BI").unpack_from
_u32 = struct.Struct(">I").unpack_from


def _begin(buf: bytes, pos: int, xid: int | None) -> Begin:
    if len(buf) != BEGIN_SIZE:
        raise _bad_length(BEGIN_SIZE, buf)
    final_lsn, ts, txid = unpack_begin(buf, 1)
    msg = _alloc(Begin)
    _BEGIN_LSN(msg, final_lsn)
    _BEGIN_TS(msg, ts + PG_EPOCH_US)
    _BEGIN_XID(msg, txid)
    return msg


def _commit(buf: bytes, pos: int, xid: int | None) -> Commit:
    if len(buf) != COMMIT_SIZE:
        raise _bad_length(COMMIT_SIZE, buf)
    flags, commit_lsn, end_lsn, ts = unpack_commit(buf, 1)
    msg = _alloc(Commit)
    _COMMIT_FLAGS(msg, flags)
    _COMMIT_LSN(msg, commit_lsn)
    _COMMIT_END(msg, end_lsn)
    _COMMIT_TS(msg, ts + PG_EPOCH_US)
    return msg


def _read_tuple(buf: bytes, pos: int) -> tuple[tuple[TupleValue, ...], int]:
    """TupleData at ``pos`` (Int16 count, then kind [Int32 length, bytes] per column).

    ``buf`` must carry 4 padding bytes after the message so the kind+length read of a trailing
    ``n``/``u`` column stays inside it; callers check the end position against the real length.
    """
    values: list[TupleValue] = []
    append = values.append
    count = (buf[pos] << 8) | buf[pos + 1]
    pos += 2
    for _ in range(count):
        kind, length = _kind_len(buf, pos)
        if kind == 116:  # 't'
            pos += 5
            append(buf[pos : pos + length].decode())
            pos += length
        elif kind == 110:  # 'n'
            append(None)
            pos += 1
        elif kind == 117:  # 'u'
            append(UNCHANGED_TOAST)
            pos += 1
        elif kind == 98:  # 'b'
            pos += 5
            append(buf[pos : pos + length])
            pos += length
        else:
            raise _MalformedError(f"unknown tuple value kind {chr(kind)!r} in column {len(values)}")
    return tuple(values), pos


def _insert(buf: bytes, pos: int, xid: int | None) -> Insert:
    if buf[pos + 4] != 78:  # 'N'
        raise _MalformedError(f"expected 'N' (new tuple), got {chr(buf[pos + 4])!r}")
    new, end = _read_tuple(buf + b"\0\0\0\0", pos + 5)
    if end != len(buf):
        raise _bad_length(end, buf)
    msg = _alloc(Insert)
    _INS_OID(msg, _u32(buf, pos)[0])
    _INS_NEW(msg, new)
    _INS_XID(msg, xid)
    return msg


def _update(buf: bytes, pos: int, xid: int | None) -> Update:
    padded = buf + b"\0\0\0\0"
    kind = buf[pos + 4]
    old: tuple[TupleValue, ...] | None = None
    old_kind: OldKind | None = None
    tpos = pos + 5
    if kind in {75, 79}:  # 'K', 'O'
        old, tpos = _read_tuple(padded, tpos)
        old_kind = "K" if kind == 75 else "O"
        kind = buf[tpos]
        tpos += 1
    if kind != 78:
        raise _MalformedError(f"expected 'K', 'O' or 'N' tuple marker, got {chr(kind)!r}")
    new, end = _read_tuple(padded, tpos)
    if end != len(buf):
        raise _bad_length(end, buf)
    msg = _alloc(Update)
    _UPD_OID(msg, _u32(buf, pos)[0])
    _UPD_OLD(msg, old)
    _UPD_KIND(msg, old_kind)
    _UPD_NEW(msg, new)
    _UPD_XID(msg, xid)
    return msg


def _delete(buf: bytes, pos: int, xid: int | None) -> Delete:
    kind = buf[pos + 4]
    if kind not in {75, 79}:
        raise _MalformedError(f"expected 'K' or 'O' tuple marker, got {chr(kind)!r}")
    old, end = _read_tuple(buf + b"\0\0\0\0", pos + 5)
    if end != len(buf):
        raise _bad_length(end, buf)
    msg = _alloc(Delete)
    _DEL_OID(msg, _u32(buf, pos)[0])
    _DEL_OLD(msg, old)
    _DEL_KIND(msg, "K" if kind == 75 else "O")
    _DEL_XID(msg, xid)
    return msg


def _bad_length(end: int, buf: bytes) -> _MalformedError:
    what = "is truncated" if end > len(buf) else f"has {len(buf) - end} unexpected trailing byte(s)"
    return _MalformedError(f"the message {what} ({len(buf)} bytes)")


# -- the other messages -------------------------------------------------------------------------
_COLUMN = struct.Struct(">Ii").unpack_from
_MESSAGE = struct.Struct(">BQ").unpack_from
_STREAM_COMMIT = struct.Struct(">IBQQq").unpack_from
_BEGIN_PREPARE = struct.Struct(">QQqI").unpack_from
_PREPARE = struct.Struct(">BQQqI").unpack_from
_ROLLBACK_PREPARED = struct.Struct(">BQQqqI").unpack_from
_Q = struct.Struct(">Q").unpack_from
_II = struct.Struct(">II").unpack_from
_Qq = struct.Struct(">Qq").unpack_from


def _cstring(buf: bytes, pos: int) -> tuple[str, int]:
    """A NUL-terminated UTF-8 string at ``pos``, and the position after its NUL."""
    end = buf.index(0, pos)
    return buf[pos:end].decode(), end + 1


def _check_end(buf: bytes, end: int) -> None:
    if end != len(buf):
        raise _bad_length(end, buf)


def _origin(buf: bytes, pos: int, xid: int | None) -> Origin:
    name, end = _cstring(buf, 9)
    _check_end(buf, end)
    return Origin(_Q(buf, 1)[0], name)


def _relation(buf: bytes, pos: int, xid: int | None) -> Relation:
    oid = _u32(buf, pos)[0]
    namespace, pos = _cstring(buf, pos + 4)
    name, pos = _cstring(buf, pos)
    identity = chr(buf[pos])
    columns: list[RelationColumn] = []
    pos += 3
    for _ in range((buf[pos - 2] << 8) | buf[pos - 1]):
        flags = buf[pos]
        column, pos = _cstring(buf, pos + 1)
        type_oid, typmod = _COLUMN(buf, pos)
        columns.append(RelationColumn(flags, column, type_oid, typmod))
        pos += 8
    _check_end(buf, pos)
    return Relation(oid, namespace or "pg_catalog", name, identity, tuple(columns), xid)


def _type(buf: bytes, pos: int, xid: int | None) -> Type:
    oid = _u32(buf, pos)[0]
    namespace, pos = _cstring(buf, pos + 4)
    name, pos = _cstring(buf, pos)
    _check_end(buf, pos)
    return Type(oid, namespace or "pg_catalog", name, xid)


def _truncate(buf: bytes, pos: int, xid: int | None) -> Truncate:
    count = _u32(buf, pos)[0]
    _check_end(buf, pos + 5 + 4 * count)
    oids = struct.unpack_from(f">{count}I", buf, pos + 5)
    return Truncate(buf[pos + 4], oids, xid)


def _message(buf: bytes, pos: int, xid: int | None) -> Message:
    flags, lsn = _MESSAGE(buf, pos)
    prefix, pos = _cstring(buf, pos + 9)
    size = _u32(buf, pos)[0]
    _check_end(buf, pos + 4 + size)
    return Message(bool(flags & 1), lsn, prefix, buf[pos + 4 :], xid)


def _stream_start(buf: bytes, pos: int, xid: int | None) -> StreamStart:
    _check_end(buf, 6)
    return StreamStart(_u32(buf, 1)[0], buf[5] == 1)


def _stream_stop(buf: bytes, pos: int, xid: int | None) -> StreamStop:
    _check_end(buf, 1)
    return StreamStop()


def _stream_commit(buf: bytes, pos: int, xid: int | None) -> StreamCommit:
    _check_end(buf, 30)
    txid, flags, commit_lsn, end_lsn, ts = _STREAM_COMMIT(buf, 1)
    return StreamCommit(txid, flags, commit_lsn, end_lsn, ts + PG_EPOCH_US)


def _stream_abort(buf: bytes, pos: int, xid: int | None) -> StreamAbort:
    txid, subxid = _II(buf, 1)
    if len(buf) == 9:
        return StreamAbort(txid, subxid)
    _check_end(buf, 25)
    lsn, ts = _Qq(buf, 9)
    return StreamAbort(txid, subxid, lsn, ts + PG_EPOCH_US)


def _begin_prepare(buf: bytes, pos: int, xid: int | None) -> BeginPrepare:
    prepare_lsn, end_lsn, ts, txid = _BEGIN_PREPARE(buf, 1)
    gid, end = _cstring(buf, 29)
    _check_end(buf, end)
    return BeginPrepare(prepare_lsn, end_lsn, ts + PG_EPOCH_US, txid, gid)


def _prepare(buf: bytes, pos: int, xid: int | None) -> Prepare:
    flags, prepare_lsn, end_lsn, ts, txid = _PREPARE(buf, 1)
    gid, end = _cstring(buf, 30)
    _check_end(buf, end)
    return Prepare(flags, prepare_lsn, end_lsn, ts + PG_EPOCH_US, txid, gid, buf[0] == 112)


def _commit_prepared(buf: bytes, pos: int, xid: int | None) -> CommitPrepared:
    flags, commit_lsn, end_lsn, ts, txid = _PREPARE(buf, 1)
    gid, end = _cstring(buf, 30)
    _check_end(buf, end)
    return CommitPrepared(flags, commit_lsn, end_lsn, ts + PG_EPOCH_US, txid, gid)


def _rollback_prepared(buf: bytes, pos: int, xid: int | None) -> RollbackPrepared:
    flags, prepare_end, rollback_end, prepare_ts, rollback_ts, txid = _ROLLBACK_PREPARED(buf, 1)
    gid, end = _cstring(buf, 38)
    _check_end(buf, end)
    return RollbackPrepared(
        flags, prepare_end, rollback_end, prepare_ts + PG_EPOCH_US, rollback_ts + PG_EPOCH_US, txid, gid
    )


def _unknown(buf: bytes, pos: int, xid: int | None) -> PgOutputMessage:
    raise _MalformedError(f"unknown message type byte 0x{buf[0]:02X}")


# -- dispatch -----------------------------------------------------------------------------------
_HANDLERS: Final[list[_Handler]] = [_unknown] * 256
_BY_LETTER: dict[str, _Handler] = {
    "B": _begin, "C": _commit, "O": _origin, "R": _relation, "Y": _type, "I": _insert,
    "U": _update, "D": _delete, "T": _truncate, "M": _message, "S": _stream_start,
    "E": _stream_stop, "c": _stream_commit, "A": _stream_abort, "b": _begin_prepare,
    "P": _prepare, "K": _commit_prepared, "r": _rollback_prepared, "p": _prepare,
}
for _letter, _handler in _BY_LETTER.items():
    _HANDLERS[ord(_letter)] = _handler
_STREAM_XID_TYPES: Final = frozenset(b"RYIUDTM")
"""Message types that carry a leading xid when sent inside a stream block (v2+)."""
_DECODE_ERRORS: Final = (_MalformedError, IndexError, struct.error, ValueError)


def decode(payload: bytes) -> PgOutputMessage:
    """Decode one pgoutput message of protocol version 1 (or a non-streamed later version).

    Args:
        payload: ``ReplicationMessage.payload`` of a ``decode=False`` replication stream.

    Raises:
        PgOutputError: the type byte is unknown, or the payload is truncated or malformed.
    """
    try:
        return _HANDLERS[payload[0]](payload, 1, None)
    except _DECODE_ERRORS as exc:
        raise _error(payload, exc) from None


def _error(payload: bytes, exc: Exception) -> PgOutputError:
    if not payload:
        return PgOutputError("the payload is empty")
    if isinstance(exc, _MalformedError):
        reason = str(exc)
    elif isinstance(exc, UnicodeDecodeError):
        reason = f"a text value or name is not valid UTF-8 (byte {exc.start} of the value)"
    else:
        reason = f"the message is truncated or malformed ({len(payload)} bytes; {type(exc).__name__})"
    return PgOutputError(reason, message_type=chr(payload[0]))


class PgOutputDecoder:
    """Decodes a whole pgoutput stream of any protocol version, streamed transactions included.

    Owns one flag: whether the stream is inside an ``S``...``E`` block, where row and relation
    messages carry their transaction's xid. Not thread-safe; use one per replication stream.
    """

    __slots__ = ("_in_stream",)

    def __init__(self) -> None:
        self._in_stream = False

    def decode(self, payload: bytes) -> PgOutputMessage:
        """Decode the next message of the stream. Raises `PgOutputError` like `decode`."""
        if not self._in_stream:
            msg = decode(payload)
            if type(msg) is StreamStart:
                self._in_stream = True
            return msg
        try:
            kind = payload[0]
            if kind in _STREAM_XID_TYPES:
                msg = _HANDLERS[kind](payload, 5, _u32(payload, 1)[0])
            else:
                msg = _HANDLERS[kind](payload, 1, None)
        except _DECODE_ERRORS as exc:
            raise _error(payload, exc) from None
        if type(msg) is StreamStop:
            self._in_stream = False
        return msg
