"""Editing one table, with the semantics of Debezium's ``TableEditor``.

* Columns are looked up by name case-insensitively; adding a column whose name exists replaces
  it *in place* (that is how ``MODIFY`` keeps a column's position).
* ``reorder(name, after)`` moves a column to the front (``after`` None, or - as Debezium does -
  an ``after`` column that does not exist) or behind ``after``.
* Renaming keeps the position and renames the column in the primary key.
* Removing a column removes it from the primary key.
* The primary key is a plain list of names; it must name existing columns when the table is
  built (Debezium fails the statement otherwise).
* When the table is built, character columns without a character set take the table's default,
  and every NULLable column gets ``hasDefaultValue`` (Debezium's column copy sets it whenever a
  table is edited).

The editor also keeps the table's UNIQUE indexes by name (``DROP INDEX`` needs the name), which
Debezium does not model; they feed `TableDef.unique_keys`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cdc_sources.mysql.ddl.types import CHARSET_TYPES
from cdc_sources.mysql.model import ColumnDef, TableDef, TableId

__all__ = ["TableEditor", "UniqueIndex"]


@dataclass(frozen=True, slots=True)
class UniqueIndex:
    """A UNIQUE index: its name and key parts (None for an expression part)."""

    name: str
    columns: tuple[str | None, ...]


class TableEditor:
    """A table being changed by one statement."""

    def __init__(self, table_id: TableId, *, default_charset: str | None = None) -> None:
        self.table_id = table_id
        self.columns: dict[str, ColumnDef] = {}
        self.primary_key: list[str] = []
        self.default_charset = default_charset
        self.comment: str | None = None
        self.attributes: tuple[tuple[str, str], ...] = ()
        self.unique_indexes: list[UniqueIndex] = []
        self.renames: list[tuple[str, str]] = []

    @classmethod
    def of(cls, table: TableDef, unique_indexes: tuple[UniqueIndex, ...] = ()) -> TableEditor:
        """An editor holding ``table``."""
        editor = cls(table.id, default_charset=table.default_charset)
        editor.columns = {c.name.lower(): c for c in table.columns}
        editor.primary_key = list(table.primary_key)
        editor.comment = table.comment
        editor.attributes = table.attributes
        editor.unique_indexes = list(unique_indexes)
        return editor

    # -- columns -----------------------------------------------------------------------------

    def column(self, name: str) -> ColumnDef | None:
        """The column called ``name`` (any case)."""
        return self.columns.get(name.lower())

    def add(self, column: ColumnDef) -> None:
        """Add ``column`` at the end, or in place of the column with the same name."""
        self.columns[column.name.lower()] = column

    def update(self, column: ColumnDef) -> None:
        """Replace the column with exactly ``column``'s name (Debezium's ``updateColumn``)."""
        key = column.name.lower()
        existing = self.columns.get(key)
        if existing is not None and existing.name == column.name:
            self.columns[key] = column

    def remove(self, name: str) -> bool:
        """Remove a column (and its primary key entry); False if there is none."""
        existing = self.columns.pop(name.lower(), None)
        if existing is None:
            if name in self.primary_key:
                self.primary_key.remove(name)
            return False
        if existing.name in self.primary_key:
            self.primary_key.remove(existing.name)
        self._drop_from_indexes(existing.name)
        return True

    def reorder(self, name: str, after: str | None) -> bool:
        """Move column ``name`` first (``after`` None) or behind ``after``; False when ``after``
        names no column (the column then goes first, as in Debezium)."""
        key = name.lower()
        moving = self.columns.pop(key)
        anchor = None if after is None else after.lower()
        found = anchor is not None and anchor in self.columns
        reordered: dict[str, ColumnDef] = {} if found else {key: moving}
        for other_key, other in self.columns.items():
            reordered[other_key] = other
            if found and other_key == anchor:
                reordered[key] = moving
        self.columns = reordered
        return found or after is None

    def rename(self, old: str, new: str) -> None:
        """Rename a column in place (and in the primary key and the unique indexes)."""
        key = old.lower()
        existing = self.columns[key]
        renamed = dataclasses.replace(existing, name=new)
        self.renames.append((existing.name, new))
        self.columns = {(new.lower() if k == key else k): (renamed if k == key else c) for k, c in self.columns.items()}
        self.primary_key = [new if n == existing.name else n for n in self.primary_key]
        self.unique_indexes = [
            UniqueIndex(u.name, tuple(new if c is not None and c.lower() == key else c for c in u.columns))
            for u in self.unique_indexes]

    # -- keys --------------------------------------------------------------------------------

    @property
    def has_primary_key(self) -> bool:
        """Whether the table has a primary key (Debezium's, which may come from a unique key)."""
        return bool(self.primary_key)

    def add_unique_index(self, name: str | None, columns: tuple[str | None, ...]) -> None:
        """Record a UNIQUE index (unnamed: named after its first column, ``_2``... on a clash)."""
        base = name or next((c for c in columns if c is not None), "functional_index")
        taken = {u.name.lower() for u in self.unique_indexes}
        chosen, n = base, 2
        while name is None and chosen.lower() in taken:
            chosen, n = f"{base}_{n}", n + 1
        self.unique_indexes.append(UniqueIndex(chosen, columns))

    def drop_index(self, name: str) -> bool:
        """Forget the index ``name``; False if it is not a known UNIQUE index."""
        before = len(self.unique_indexes)
        self.unique_indexes = [u for u in self.unique_indexes if u.name.lower() != name.lower()]
        return len(self.unique_indexes) != before

    def rename_index(self, old: str, new: str) -> None:
        """Rename a UNIQUE index (other indexes are not tracked)."""
        self.unique_indexes = [UniqueIndex(new, u.columns) if u.name.lower() == old.lower() else u
                               for u in self.unique_indexes]

    def _drop_from_indexes(self, column: str) -> None:
        kept: list[UniqueIndex] = []
        for index in self.unique_indexes:
            parts = tuple(c for c in index.columns if c is None or c.lower() != column.lower())
            if any(c is not None for c in parts):
                kept.append(UniqueIndex(index.name, parts))
        self.unique_indexes = kept

    # -- result ------------------------------------------------------------------------------

    def missing_key_columns(self) -> list[str]:
        """Primary key names that match no column."""
        return [n for n in self.primary_key if n.lower() not in self.columns]

    def build(self) -> TableDef:
        """The table as it now is (see the module docstring for what building settles)."""
        columns: list[ColumnDef] = []
        for position, column in enumerate(self.columns.values(), start=1):
            changes: dict[str, object] = {}
            if column.position != position:
                changes["position"] = position
            if column.jdbc_type in CHARSET_TYPES and (column.charset is None or column.charset.upper() == "DEFAULT"):
                changes["charset"] = self.default_charset
            if column.optional and not column.has_default:
                changes["has_default"] = True
                changes["default_expression"] = None
            columns.append(dataclasses.replace(column, **changes) if changes else column)  # type: ignore[arg-type]
        unique = tuple(
            tuple(self.columns[c.lower()].name for c in u.columns if c is not None) for u in self.unique_indexes
            if all(c is not None and c.lower() in self.columns for c in u.columns))
        return TableDef(id=self.table_id, columns=tuple(columns), primary_key=tuple(self.primary_key),
                        unique_keys=unique, default_charset=self.default_charset, comment=self.comment,
                        attributes=self.attributes, renamed_columns=self._net_renames())

    def _net_renames(self) -> tuple[tuple[str, str], ...]:
        """The statement's renames from the original name to the final one (``a`` to ``b`` then
        ``b`` to ``c`` is ``a`` to ``c``), for columns that still exist."""
        final: dict[str, str] = {}
        for old, new in self.renames:
            origin = next((o for o, n in final.items() if n.lower() == old.lower()), old)
            final[origin] = new
        return tuple((o, n) for o, n in final.items() if o != n and n.lower() in self.columns)
