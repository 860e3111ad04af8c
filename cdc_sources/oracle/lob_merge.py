"""LOB values assembled at commit (``lob.enabled``), as Debezium 3.6.3's ``TransactionCommitConsumer``.

LogMiner writes a LOB value apart from the row change it belongs to: ``insert .. values ('1',
EMPTY_CLOB())``, then ``SELECT_LOB_LOCATOR`` (the column and row) and ``LOB_WRITE`` rows (pieces of
the value at offsets), sometimes an ``update`` setting a small LOB directly. At commit, `merge_lobs`
folds them into one change per row, in Debezium's way:

- changes of a table without ``CLOB``/``NCLOB``/``BLOB`` columns pass through at once;
- the others are kept per row (the table and its key values; a keyless table is one row) and
  merged: a ``SELECT_LOB_LOCATOR`` or an ``update`` following an ``insert``, ``update`` or
  ``SELECT_LOB_LOCATOR`` of the same row merges into it (an ``update`` after an ``update`` only when
  it sets a ``CLOB`` or ``BLOB`` column, and both have the same ``ROW_ID``); the ``update``'s values
  that are not unavailable replace the held ones. Another change of the row hands the held change
  out first;
- a ``SELECT_LOB_LOCATOR`` starts the LOB value of its column from the value held (``EMPTY_CLOB()``
  / ``EMPTY_BLOB()``: empty; a literal: its text; else nothing yet, which is null), and each
  ``LOB_WRITE`` writes its piece at its offset (gaps are spaces in a CLOB, zero bytes in a BLOB);
  a ``LOB_ERASE`` drops the held change of that row altogether (Debezium does not support it; it
  logs a warning); a ``LOB_WRITE`` or ``LOB_ERASE`` with no locator before it is ignored;
- a held ``SELECT_LOB_LOCATOR`` whose values equal its before image is not emitted; else it is
  an update (``op: u``) whose before image has the unavailable placeholder for the LOB columns
  (its LOB starts from no value: with no write after it, the LOB is null);
- held changes are handed out at the end in the order they were first held, so a change of a
  table without LOBs can come out before an earlier change of a LOB table.

Each `MergedChange` carries the row change (the first change of its row: its SCN, ``ROW_ID``,
``RS_ID``) and its before and after images. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdc_sources.oracle.converters import OracleType
from cdc_sources.oracle.lob_redo import parse_lob_write, parse_select_lob_locator
from cdc_sources.oracle.redo import UNAVAILABLE, RedoExpr, RedoValue, parse_redo
from cdc_sources.oracle.transactions import BufferedChange, ChangeKind

if TYPE_CHECKING:  # the envelope imports this module
    from cdc_sources.oracle.envelope import OracleTable

__all__ = ["LobMergeError", "LobValue", "MergedChange", "MergedValue", "merge_lobs"]

_EMPTY_ROW_ID = "AAAAAAAAAAAAAAAAAA"
_NULL_COLUMN = "__debezium_null"
_LOB_TYPES = frozenset({OracleType.CLOB, OracleType.NCLOB, OracleType.BLOB})
_CLOB_OR_BLOB = frozenset({OracleType.CLOB, OracleType.BLOB})  # Debezium's type-name check: not NCLOB


class LobMergeError(ValueError):
    """A LOB operation sequence that cannot be assembled."""


MergedValue = RedoValue | bytes
"""A column's value: as the parser gave it, or an assembled LOB (text: `str`, a BLOB: `bytes`)."""


@dataclass(frozen=True, slots=True)
class MergedChange:
    """One change to emit: its kind (insert, update, delete), its first row and its images."""

    kind: ChangeKind
    change: BufferedChange
    before: tuple[MergedValue, ...]
    after: tuple[MergedValue, ...]

    def images(self) -> tuple[tuple[RedoValue, ...], tuple[RedoValue, ...]]:
        """The before and after images as the value converters take them (a BLOB as ``HEXTORAW('..')``)."""
        return tuple(_redo(v) for v in self.before), tuple(_redo(v) for v in self.after)


def _redo(value: MergedValue) -> RedoValue:
    return RedoExpr(f"HEXTORAW('{value.hex().upper()}')") if isinstance(value, bytes) else value


@dataclass(slots=True)
class _Fragment:
    binary: bool
    data: str | bytes
    offset: int

    @classmethod
    def of(cls, value: str, offset: int = 0) -> _Fragment:
        if value.startswith("HEXTORAW('") and value.endswith("')"):
            try:
                return cls(True, bytes.fromhex(value[10:-2]), offset)
            except ValueError:
                raise LobMergeError(f"malformed hex string in LogMiner event BLOB value: {value[:80]!r}") from None
        return cls(False, value, offset)

    @property
    def end(self) -> int:
        return self.offset + len(self.data)

    def truncate(self, length: int) -> None:
        if length > len(self.data):
            raise LobMergeError(f"cannot truncate LOB fragment from length {len(self.data)} to length {length}")
        self.data = self.data[:length]

    def front_truncate(self, length: int) -> None:
        if length > len(self.data):
            raise LobMergeError(f"cannot front-truncate LOB fragment from length {len(self.data)} to {length}")
        self.offset += len(self.data) - length
        self.data = self.data[len(self.data) - length:]

    def absorb(self, other: _Fragment) -> None:
        if other.offset < self.offset or other.end > self.end:
            raise LobMergeError(f"cannot absorb fragment ({other.offset}, {other.end}) into fragment "
                                f"({self.offset}, {self.end})")
        prefix, suffix = other.offset - self.offset, other.end - self.offset
        self.data = self.data[:prefix] + other.data + self.data[suffix:]  # type: ignore[operator]

    def append(self, other: _Fragment) -> None:
        if other.offset < self.end:
            raise LobMergeError(f"cannot append fragment: offset {other.offset} is before this fragment's end "
                                f"{self.end}")
        gap = other.offset - self.end
        if isinstance(self.data, bytes):
            assert isinstance(other.data, bytes)
            self.data = self.data + bytes(gap) + other.data
        else:
            assert isinstance(other.data, str)
            self.data = self.data + " " * gap + other.data


@dataclass(slots=True)
class LobValue:
    """A LOB column's value under construction (Debezium's ``LobUnderConstruction``)."""

    fragments: list[_Fragment] = field(default_factory=list)
    is_null: bool = True
    binary: bool = False
    end: int = 0
    middle_inserts: int = 0

    @classmethod
    def initial(cls, value: object) -> LobValue:
        """The value a ``SELECT_LOB_LOCATOR`` starts from: the column's value held so far."""
        if isinstance(value, LobValue):
            return value
        lob = cls()
        if isinstance(value, str):
            if value == "EMPTY_BLOB()":
                lob.binary, lob.is_null = True, False
            elif value == "EMPTY_CLOB()":
                lob.is_null = False
            else:
                lob.add(_Fragment.of(value))
        return lob

    def add(self, fragment: _Fragment) -> None:
        self.is_null = False
        if not self.fragments:
            self.fragments.append(fragment)
            self.end, self.binary = fragment.end, fragment.binary
            return
        if fragment.binary != self.binary:
            raise LobMergeError("mixing binary and non-binary writes in a single LOB")
        if fragment.offset >= self.end:
            self.fragments.append(fragment)
            self.end = fragment.end
            return
        self.middle_inserts += 1
        if self.middle_inserts % 10 == 0:
            self._compact()
        frags = self.fragments
        i = 0
        while i < len(frags):  # find the right spot to insert
            frag = frags[i]
            i += 1
            if frag.offset <= fragment.offset < frag.end:
                if fragment.end >= frag.end:  # partial overlap: truncate frag, insert after it
                    frag.truncate(fragment.offset - frag.offset)
                    frags.insert(i, fragment)
                    i += 1
                else:  # fragment lies within frag
                    frag.absorb(fragment)
                break
            if frag.offset > fragment.offset:  # insert before it
                i -= 1
                frags.insert(i, fragment)
                i += 1
                break
        while i < len(frags):  # following fragments (partially) overwritten
            frag = frags[i]
            if frag.offset >= fragment.end:
                break
            if frag.end <= fragment.end:
                del frags[i]
                continue
            frag.front_truncate(frag.end - fragment.end)
            i += 1
        self.end = max(self.end, fragment.end)

    def _compact(self) -> None:
        if not self.fragments:
            return
        out = [self.fragments[0]]
        for frag in self.fragments[1:]:
            if frag.offset - out[-1].end < 128:
                out[-1].append(frag)
            else:
                out.append(frag)
        self.fragments = out

    def merge(self) -> str | bytes | RedoExpr | None:
        """The value: None, ``EMPTY_BLOB()``/``EMPTY_CLOB()`` (empty), text (CLOB) or bytes (BLOB)."""
        if self.is_null:
            return None
        if self.end == 0:
            return RedoExpr("EMPTY_BLOB()" if self.binary else "EMPTY_CLOB()")
        if self.binary:
            buffer = bytearray(self.end)
            for frag in self.fragments:
                assert isinstance(frag.data, bytes)
                buffer[frag.offset:frag.offset + len(frag.data)] = frag.data
            return bytes(buffer)
        parts: list[str] = []
        offset = 0
        for frag in self.fragments:
            if offset < frag.offset:
                parts.append(" " * (frag.offset - offset))
            if not frag.data:
                continue
            assert isinstance(frag.data, str)
            parts.append(frag.data)
            offset = frag.end
        return "".join(parts)


_Value = RedoValue | LobValue | bytes


@dataclass(slots=True)
class _Event:
    kind: ChangeKind  # INSERT, UPDATE, DELETE or SELECT_LOB_LOCATOR
    change: BufferedChange
    old: list[_Value]
    new: list[_Value]


@dataclass(slots=True)
class _Held:
    event: _Event
    index: int


@dataclass(slots=True)
class _Locator:
    row: str
    column: str
    position: int


@dataclass(frozen=True, slots=True)
class _Columns:
    types: tuple[OracleType, ...]
    key: tuple[int, ...]


def _java_equals(a: object, b: object) -> bool:
    """``Objects.equals`` of Debezium's values: a merged BLOB (a Java array) equals only itself."""
    if isinstance(a, bytes) or isinstance(b, bytes):
        return a is b
    return a == b


def _emitted(value: _Value) -> MergedValue:
    return value.merge() if isinstance(value, LobValue) else value


def merge_lobs(changes: Sequence[BufferedChange],
               lookup: Callable[[str, str], OracleTable | None]) -> list[MergedChange]:
    """Merge a committed transaction's LOB operations into its row changes (see the module).

    ``lookup(owner, name)`` gives the captured table (an `OracleTable`), None when not captured:
    such changes are dropped, as Debezium drops them before they reach its commit consumer."""
    merger = _Merger(lookup)
    for change in changes:
        merger.accept(change)
    return merger.close()


class _Merger:
    def __init__(self, lookup: Callable[[str, str], OracleTable | None]) -> None:
        self._lookup = lookup
        self._rows: dict[str, _Held] = {}
        self._lob: _Locator | None = None
        self._index = 0
        self._out: list[MergedChange] = []

    def accept(self, change: BufferedChange) -> None:
        kind = change.kind
        row = change.row
        table = self._lookup(row.seg_owner or "", row.table_name or "")
        if table is None:  # not captured: Debezium never buffers it
            return
        if kind is ChangeKind.LOB_WRITE or kind is ChangeKind.LOB_ERASE:
            self._manipulation(change)
            return
        self._index += 1
        if kind is ChangeKind.TRUNCATE or kind is ChangeKind.DDL:
            self._dispatch(_Event(kind, change, [], []))
            return
        event = self._event(change, table)
        names = [c.name for c in table.columns]
        columns = _Columns(tuple(c.type for c in table.columns), tuple(names.index(k) for k in table.key))
        if not any(t in _LOB_TYPES for t in columns.types):
            self._dispatch(event)
            return
        values = event.old if kind is ChangeKind.DELETE else event.new
        row_id = "|".join([f"{table.schema}.{table.name}",
                           *(_NULL_COLUMN if values[i] is None else str(values[i]) for i in columns.key)])
        held = self._rows.get(row_id)
        accumulator = held.event if held is not None else None
        if not self._try_merge(accumulator, event, columns):
            self._prepare_and_dispatch(held)
            if self._lob is not None and self._lob.row == row_id:
                self._lob = None
            self._rows[row_id] = _Held(event, self._index)
            accumulator = event
        if kind is ChangeKind.SELECT_LOB_LOCATOR:
            assert accumulator is not None
            locator = parse_select_lob_locator(row.sql_redo or "", table.redo_table)
            position = table.redo_table.position(locator.column)
            self._lob = _Locator(row_id, locator.column, position)
            accumulator.new[position] = LobValue.initial(accumulator.new[position])

    @staticmethod
    def _event(change: BufferedChange, table: OracleTable) -> _Event:
        sql = change.row.sql_redo or ""
        if change.kind is ChangeKind.SELECT_LOB_LOCATOR:
            values = list(parse_select_lob_locator(sql, table.redo_table).values)
            return _Event(change.kind, change, list(values), list(values))
        dml = parse_redo(sql, table.redo_table)
        return _Event(change.kind, change, list(dml.before), list(dml.after))

    def _manipulation(self, change: BufferedChange) -> None:
        lob = self._lob
        if lob is None:  # streaming started inside a LOB operation: ignored, as Debezium does
            return
        if change.kind is ChangeKind.LOB_ERASE:
            if self._rows.pop(lob.row, None) is not None:
                self._lob = None
            return
        write = parse_lob_write(change.row.sql_redo)
        if write is None:
            return
        held = self._rows.get(lob.row)
        value = held.event.new[lob.position] if held is not None else None
        if not isinstance(value, LobValue):
            raise LobMergeError(f"LOB_WRITE at SCN {change.row.scn} (XID {change.row.xid}) on column {lob.column}: "
                                "the column's value was replaced after its SELECT_LOB_LOCATOR")
        try:
            fragment = _Fragment.of(write.data, write.offset)
            if write.length < len(fragment.data):
                fragment.truncate(write.length)
            value.add(fragment)
        except LobMergeError:
            return  # Debezium logs the invalid write and ignores it

    def _try_merge(self, prev: _Event | None, nxt: _Event, columns: _Columns) -> bool:
        if prev is None or prev.kind not in (ChangeKind.INSERT, ChangeKind.UPDATE, ChangeKind.SELECT_LOB_LOCATOR):
            return False
        if nxt.kind is ChangeKind.SELECT_LOB_LOCATOR:
            return prev.kind is not ChangeKind.SELECT_LOB_LOCATOR or self._same_row(prev, nxt, columns)
        if nxt.kind is ChangeKind.UPDATE:
            if prev.kind is ChangeKind.UPDATE and not self._sets_lob(prev, nxt, columns):
                return False
            for i, v in enumerate(nxt.new):
                if v is not UNAVAILABLE:
                    prev.new[i] = v
            return True
        return False

    @staticmethod
    def _sets_lob(into: _Event, event: _Event, columns: _Columns) -> bool:
        a, b = into.change.row.row_id, event.change.row.row_id
        if a and b and _EMPTY_ROW_ID not in (a, b) and a != b:
            return False
        return any(t in _CLOB_OR_BLOB and v is not UNAVAILABLE for t, v in zip(columns.types, event.new, strict=True))

    @staticmethod
    def _same_row(into: _Event, event: _Event, columns: _Columns) -> bool:
        if columns.key:
            return all(_java_equals(into.new[i], event.old[i]) for i in columns.key)
        return all(_java_equals(into.new[i], event.old[i])
                   for i, t in enumerate(columns.types) if t not in _CLOB_OR_BLOB)

    def _prepare_and_dispatch(self, held: _Held | None) -> None:
        if held is None:
            return
        event = held.event
        event.new = [v.merge() if isinstance(v, LobValue) else v for v in event.new]
        if event.kind is ChangeKind.SELECT_LOB_LOCATOR and all(
                _java_equals(o, n) for o, n in zip(event.old, event.new, strict=True)):
            return  # nothing changed: not emitted
        self._dispatch(event)

    def _dispatch(self, event: _Event) -> None:
        kind = ChangeKind.UPDATE if event.kind is ChangeKind.SELECT_LOB_LOCATOR else event.kind
        self._out.append(MergedChange(kind, event.change, tuple(_emitted(v) for v in event.old),
                                      tuple(_emitted(v) for v in event.new)))

    def close(self) -> list[MergedChange]:
        for held in sorted(self._rows.values(), key=lambda h: h.index):
            self._prepare_and_dispatch(held)
        self._rows.clear()
        self._lob = None
        return self._out
