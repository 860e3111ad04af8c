"""Applying parsed statements to a `SchemaState`, the way Debezium 3.6.3's MySQL parser does.

The rules, per statement (Debezium's behaviour unless marked *deliberate*, see the conformance
test for the list of differences and why):

* ``CREATE TABLE``: a table that already exists is left alone (no event); columns are built
  with `ColumnBuilder`; an inline ``PRIMARY KEY`` sets the key to that column, an inline
  ``UNIQUE``/``SERIAL`` column becomes the key when the table has none yet (even a NULLable
  one); a ``PRIMARY KEY (...)`` makes its columns NOT NULL (dropping a null default); a table
  ``UNIQUE (...)`` becomes the key when there is none and all its columns exist and are NOT
  NULL. The table's charset is its ``CHARACTER SET`` option, else the database's, else
  ``character_set_database``, else ``character_set_server``; *deliberate*: a lone ``COLLATE``
  option gives its charset (Debezium ignores it). ``... LIKE`` copies columns, key, charset and
  attributes (not the comment); *deliberate*: ``IF NOT EXISTS ... LIKE`` keeps an existing table
  (Debezium overwrites it). *Deliberate*: ``TEMPORARY`` tables are ignored (the server does
  not log them in row-based replication) and MariaDB's ``OR REPLACE`` replaces the table.
* ``ALTER TABLE`` of an unknown table does nothing (a warning). ``ADD COLUMN`` of an existing
  name replaces the column in place; ``FIRST``/``AFTER`` move it (``AFTER`` an unknown column
  puts it first, with a warning); ``MODIFY`` replaces the column (name as written) in place;
  ``CHANGE`` edits it and renames it; ``MODIFY``/``CHANGE``/``RENAME COLUMN`` of a missing column
  fail (`DdlUnknownObjectError`); ``DROP COLUMN`` of a missing one is ignored (a warning);
  ``ALTER COLUMN ... SET/DROP DEFAULT``; ``DROP PRIMARY KEY`` empties the key; ``ADD PRIMARY
  KEY``/``ADD UNIQUE`` as in ``CREATE TABLE``; ``RENAME TO`` moves the table (the event is an ALTER
  of the new name); ``CONVERT TO CHARACTER SET`` changes the table's and every character
  column's charset; ``COMMENT``. *Deliberate*: ``[DEFAULT] CHARACTER SET``/``COLLATE`` changes
  the table's default charset for columns added later (Debezium ignores it).
* ``RENAME TABLE a TO b, ...``: one ALTER event per pair, with ``previousId``.
* ``DROP TABLE a, b``: one DROP event per table, known or not.
* ``TRUNCATE``: a truncate event for a known table.
* ``CREATE UNIQUE INDEX``: sets the key like a table ``UNIQUE (...)`` (fails on an unknown table).
* ``CREATE``/``ALTER``/``DROP DATABASE``, ``USE``, ``SET``: database charsets and the
  ``character_set_*`` variables that decide the charset of new tables.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cdc_sources.mysql.ddl.charsets import charset_of_collation
from cdc_sources.mysql.ddl.column_builder import ColumnBuilder
from cdc_sources.mysql.ddl.errors import DdlParseError, DdlUnknownObjectError
from cdc_sources.mysql.ddl.outcome import ChangeType, DdlEvent, EventKind, TableChange
from cdc_sources.mysql.ddl.schema_state import CHARSET_DATABASE, CHARSET_SERVER, SchemaState
from cdc_sources.mysql.ddl.statements import (
    AddColumn,
    AddColumns,
    AddKey,
    AlterAction,
    AlterDatabase,
    AlterTable,
    ChangeColumn,
    ColumnDefinition,
    ConvertCharset,
    CreateDatabase,
    CreateIndex,
    CreateTable,
    DefaultKind,
    DropColumn,
    DropDatabase,
    DropIndex,
    DropIndexStatement,
    DropPrimaryKey,
    DropTables,
    Ignored,
    KeyDefinition,
    KeyKind,
    ModifyColumn,
    Name,
    ParsedStatement,
    Place,
    RenameColumn,
    RenameIndex,
    RenameTables,
    RenameTo,
    SetColumnDefault,
    SetVariables,
    TableCharset,
    TableComment,
    Truncate,
    Use,
)
from cdc_sources.mysql.ddl.table_editor import TableEditor
from cdc_sources.mysql.model import ColumnDef, TableId

__all__ = ["Applier"]

_CHANGE_OF: dict[EventKind, ChangeType] = {EventKind.CREATE_TABLE: ChangeType.CREATE,
                                           EventKind.ALTER_TABLE: ChangeType.ALTER,
                                           EventKind.CREATE_INDEX: ChangeType.ALTER}


@dataclass(frozen=True, slots=True)
class _Pending:
    """An event whose ``tableChanges`` entry is settled when the whole QUERY event is applied."""

    kind: EventKind
    database: str
    statement: str
    table_id: TableId | None = None
    renamed_from: TableId | None = None
    previous_id: TableId | None = None
    name: str | None = None
    value: str | None = None


class Applier:
    """Applies the statements of one QUERY event to ``state`` (a working copy).

    Attributes:
        database: the current default database (``USE`` changes it).
        warnings: inconsistencies tolerated (see `DdlOutcome.warnings`).
        ignored: how many statements had no schema meaning.
    """

    def __init__(self, state: SchemaState, *, database: str | None, include_comments: bool) -> None:
        self.state = state
        self.database = database or None
        self.include_comments = include_comments
        self.warnings: list[str] = []
        self.ignored = 0
        self._pending: list[_Pending] = []
        self._statement = ""

    # -- entry points --------------------------------------------------------------------------

    def apply(self, statement: ParsedStatement) -> None:
        """Apply one statement."""
        self._statement = statement.text
        match statement:
            case CreateTable():
                self._create_table(statement)
            case AlterTable():
                self._alter_table(statement)
            case RenameTables():
                self._rename_tables(statement)
            case DropTables():
                self._drop_tables(statement)
            case Truncate():
                self._truncate(statement)
            case CreateIndex():
                self._create_index(statement)
            case DropIndexStatement():
                self._drop_index(statement)
            case CreateDatabase():
                self._create_database(statement)
            case AlterDatabase():
                self._alter_database(statement)
            case DropDatabase():
                self._drop_database(statement)
            case Use():
                self._use(statement)
            case SetVariables():
                self._set(statement)
            case Ignored():
                self.ignored += 1

    def events(self) -> tuple[DdlEvent, ...]:
        """The events, with their ``tableChanges`` entries taken from the final state."""
        out: list[DdlEvent] = []
        for p in self._pending:
            change: TableChange | None = None
            if p.kind is EventKind.DROP_TABLE and p.table_id is not None:
                change = TableChange(ChangeType.DROP, p.table_id, None)
            elif p.kind in _CHANGE_OF and p.table_id is not None:
                table = self.state.table(p.table_id)
                if table is not None:
                    change = TableChange(_CHANGE_OF[p.kind], p.table_id, table, p.previous_id)
            out.append(DdlEvent(p.kind, p.database, p.statement, p.table_id, p.renamed_from, p.previous_id, change,
                                p.name, p.value))
        return tuple(out)

    # -- helpers -------------------------------------------------------------------------------

    def _id(self, name: Name) -> TableId:
        database = name.database if name.database is not None else self.database
        if not database:
            raise DdlParseError(f"no database selected for table {name.table!r} (qualify it or run USE first)",
                                statement=self._statement, database=self.database, position=None)
        return TableId(database, name.table)

    def _unknown(self, reason: str) -> DdlUnknownObjectError:
        return DdlUnknownObjectError(reason, statement=self._statement, database=self.database, position=None)

    def _event(self, kind: EventKind, database: str | None, *, statement: str | None = None,
               table_id: TableId | None = None, renamed_from: TableId | None = None,
               previous_id: TableId | None = None, name: str | None = None, value: str | None = None) -> None:
        self._pending.append(_Pending(kind, database or "", statement or self._statement, table_id, renamed_from,
                                      previous_id, name, value))

    def _store(self, editor: TableEditor, *, replaced: TableId | None = None) -> None:
        missing = editor.missing_key_columns()
        if missing:
            raise self._unknown(f"the primary key of {editor.table_id} names columns the table does not have: "
                                f"{', '.join(missing)}")
        if replaced is not None:
            self.state.remove(replaced)
        self.state.put(editor.build(), tuple(editor.unique_indexes))

    def _define(self, definition: ColumnDefinition, *, base: ColumnDef | None = None,
                limited: bool = False) -> ColumnBuilder:
        builder = ColumnBuilder(definition.name if base is None else base.name, base)
        builder.define(definition, include_comments=self.include_comments, limited=limited)
        return builder

    # -- CREATE TABLE --------------------------------------------------------------------------

    def _create_table(self, stmt: CreateTable) -> None:
        if stmt.temporary:
            self.ignored += 1
            return
        table_id = self._id(stmt.table)
        exists = self.state.table(table_id) is not None
        if exists and not stmt.or_replace:
            if not stmt.if_not_exists:
                self.warnings.append(f"CREATE TABLE of {table_id}, which already exists: kept the known definition")
            return
        if stmt.like is not None:
            self._create_like(table_id, self._id(stmt.like))
            return
        editor = TableEditor(table_id)
        for element in stmt.elements:
            if isinstance(element, ColumnDefinition):
                builder = self._define(element)
                editor.add(builder.build())
                if builder.primary:
                    editor.primary_key = [builder.name]
                if builder.unique:
                    editor.add_unique_index(builder.name, (builder.name,))
                    if not editor.has_primary_key:
                        editor.primary_key = [builder.name]
            else:
                self._key(editor, element)
        editor.default_charset = self._table_charset(table_id, stmt.charset, stmt.collation)
        if self.include_comments and stmt.comment is not None:
            editor.comment = stmt.comment
        self._store(editor)
        self._event(EventKind.CREATE_TABLE, table_id.database, table_id=table_id)

    def _table_charset(self, table_id: TableId, charset: str | None, collation: str | None) -> str | None:
        if charset is not None:
            return self.state.charset_for_table(table_id) if charset.upper() == "DEFAULT" else charset
        if collation is not None and (from_collation := charset_of_collation(collation)) is not None:
            return from_collation
        return self.state.charset_for_table(table_id)

    def _create_like(self, table_id: TableId, source_id: TableId) -> None:
        source = self.state.table(source_id)
        if source is None:
            self.warnings.append(f"CREATE TABLE {table_id} LIKE {source_id}: {source_id} is unknown, "
                                 f"{table_id} was not created")
            return
        copied = dataclasses.replace(source, id=table_id, comment=None, renamed_columns=())
        self.state.put(copied, self.state.indexes(source_id))
        self._event(EventKind.CREATE_TABLE, table_id.database, table_id=table_id)

    def _key(self, editor: TableEditor, key: KeyDefinition) -> None:
        """A table-level key: PRIMARY KEY sets the key, UNIQUE may become it; others do nothing."""
        if key.kind is KeyKind.PRIMARY:
            self._primary_key(editor, key.columns)
        elif key.kind is KeyKind.UNIQUE:
            editor.add_unique_index(key.name, key.columns)
            if not editor.has_primary_key:
                self._unique_as_key(editor, key.columns)

    @staticmethod
    def _primary_key(editor: TableEditor, parts: tuple[str | None, ...]) -> None:
        names: list[str] = []
        for part in parts:
            if part is None:
                continue
            column = editor.column(part)
            if column is not None and column.optional:
                builder = ColumnBuilder.editing(column)
                builder.set_optional(False)
                if builder.has_default and builder.default is None:
                    builder.unset_default()
                editor.add(builder.build(column.position))
            names.append(column.name if column is not None else part)
        editor.primary_key = names

    @staticmethod
    def _unique_as_key(editor: TableEditor, parts: tuple[str | None, ...]) -> bool:
        """Debezium's ``isTableUniqueIndexIncluded`` + ``parseUniqueIndexColumnNames``; returns
        whether the index was *included* (all parts are existing columns)."""
        columns = [editor.column(p) for p in parts if p is not None]
        if len(columns) != len(parts) or any(c is None for c in columns):
            return False
        if all(c is not None and not c.optional for c in columns):
            editor.primary_key = [c.name for c in columns if c is not None]
        return True

    # -- ALTER TABLE ---------------------------------------------------------------------------

    def _alter_table(self, stmt: AlterTable) -> None:
        table_id = self._id(stmt.table)
        table = self.state.table(table_id)
        if table is None:
            self.warnings.append(f"ALTER TABLE of {table_id}, which the model does not know: ignored")
            return
        editor = TableEditor.of(table, self.state.indexes(table_id))
        for action in stmt.actions:
            self._alter_action(editor, action)
        renamed = editor.table_id != table.id
        self._store(editor, replaced=table.id if renamed else None)
        self._event(EventKind.ALTER_TABLE, editor.table_id.database, table_id=editor.table_id,
                    renamed_from=table.id if renamed else None)

    def _alter_action(self, editor: TableEditor, action: AlterAction) -> None:
        if isinstance(action, AddColumn):
            self._add_column(editor, action)
        elif isinstance(action, AddColumns):
            self._add_columns(editor, action)
        elif isinstance(action, AddKey):
            self._key(editor, action.key)
        elif isinstance(action, ChangeColumn):
            self._change_column(editor, action)
        elif isinstance(action, ModifyColumn):
            self._modify_column(editor, action)
        elif isinstance(action, DropColumn):
            if not editor.remove(action.name) and not action.if_exists:
                self.warnings.append(f"DROP COLUMN {action.name} of {editor.table_id}: no such column")
        elif isinstance(action, DropPrimaryKey):
            editor.primary_key = []
        elif isinstance(action, DropIndex):
            editor.drop_index(action.name)
        elif isinstance(action, RenameIndex):
            editor.rename_index(action.old_name, action.new_name)
        elif isinstance(action, RenameTo):
            editor.table_id = self._id(action.name)
        elif isinstance(action, SetColumnDefault):
            self._set_column_default(editor, action)
        elif isinstance(action, RenameColumn):
            column = editor.column(action.old_name)
            if column is None:
                raise self._unknown(f"RENAME COLUMN {action.old_name} of {editor.table_id}: no such column")
            if column.name != action.new_name:
                editor.rename(column.name, action.new_name)
        elif isinstance(action, ConvertCharset):
            self._convert(editor, action)
        elif isinstance(action, TableCharset):
            charset = self._table_charset(editor.table_id, action.charset, action.collation)
            if action.charset is not None or action.collation is not None:
                editor.default_charset = charset
        elif isinstance(action, TableComment) and self.include_comments:
            editor.comment = action.text

    def _place(self, editor: TableEditor, name: str, place: Place | None) -> None:
        if place is not None and not editor.reorder(name, place.after):
            self.warnings.append(f"column {name} of {editor.table_id} placed AFTER {place.after}, which does not "
                                 f"exist: put first, as Debezium does")

    def _add_column(self, editor: TableEditor, action: AddColumn) -> None:
        existing = editor.column(action.column.name)
        if existing is not None:
            if action.if_not_exists:
                return
            self.warnings.append(f"ADD COLUMN {action.column.name} to {editor.table_id}: the column exists; "
                                 "replaced it")
        builder = self._define(action.column)
        if builder.primary:
            editor.primary_key = [builder.name]
        editor.add(builder.build())
        if builder.unique:
            editor.add_unique_index(builder.name, (builder.name,))
        self._place(editor, builder.name, action.place)

    def _add_columns(self, editor: TableEditor, action: AddColumns) -> None:
        """``ADD (a ..., b ..., KEY ...)``: keys act first, columns are added at the end."""
        added: list[ColumnDef] = []
        for element in action.elements:
            if isinstance(element, ColumnDefinition):
                added.append(self._define(element, limited=True).build())
            else:
                self._key(editor, element)
        for column in added:
            editor.add(column)

    def _change_column(self, editor: TableEditor, action: ChangeColumn) -> None:
        existing = editor.column(action.old_name)
        if existing is None:
            if action.if_exists:
                return
            raise self._unknown(f"CHANGE COLUMN {action.old_name} of {editor.table_id}: no such column")
        builder = self._define(action.column, base=existing)
        if builder.primary:
            editor.primary_key = [existing.name]
        editor.add(builder.build(existing.position))
        new_name = action.column.name
        if new_name != existing.name:
            editor.rename(existing.name, new_name)
        if builder.unique:
            editor.add_unique_index(new_name, (new_name,))
        self._place(editor, new_name, action.place)

    def _modify_column(self, editor: TableEditor, action: ModifyColumn) -> None:
        existing = editor.column(action.column.name)
        if existing is None:
            if action.if_exists:
                return
            raise self._unknown(f"MODIFY COLUMN {action.column.name} of {editor.table_id}: no such column")
        builder = self._define(action.column)
        if builder.primary:
            editor.primary_key = [builder.name]
        editor.add(builder.build(existing.position))
        if builder.unique:
            editor.add_unique_index(builder.name, (builder.name,))
        self._place(editor, builder.name, action.place)

    def _set_column_default(self, editor: TableEditor, action: SetColumnDefault) -> None:
        column = editor.column(action.name)
        if column is None:
            self.warnings.append(f"ALTER COLUMN {action.name} of {editor.table_id}: no such column; ignored")
            return
        builder = ColumnBuilder.editing(column)
        if action.default is None:
            builder.unset_default()
        elif action.default.kind is not DefaultKind.NULL:
            builder.set_default(action.default.expression)
        editor.update(builder.build(column.position))

    def _convert(self, editor: TableEditor, action: ConvertCharset) -> None:
        charset = action.charset or self.state.charset_for_table(editor.table_id)
        if charset is None:
            return
        editor.default_charset = charset
        for key, column in list(editor.columns.items()):
            if column.charset is not None:
                editor.columns[key] = dataclasses.replace(column, charset=charset)

    # -- other table statements ----------------------------------------------------------------

    def _rename_tables(self, stmt: RenameTables) -> None:
        for old_name, new_name, text in stmt.pairs:
            old, new = self._id(old_name), self._id(new_name)
            indexes = self.state.indexes(old)
            table = self.state.remove(old)
            if table is None:
                self.warnings.append(f"RENAME TABLE {old} TO {new}: {old} is unknown")
            else:
                self.state.put(dataclasses.replace(table, id=new, renamed_columns=()), indexes)
            self._event(EventKind.ALTER_TABLE, new.database, statement=text, table_id=new, renamed_from=old,
                        previous_id=old)

    def _drop_tables(self, stmt: DropTables) -> None:
        if stmt.temporary:
            self.ignored += 1
            return
        for name in stmt.tables:
            table_id = self._id(name)
            if self.state.remove(table_id) is None and not stmt.if_exists:
                self.warnings.append(f"DROP TABLE of {table_id}, which the model does not know")
            text = stmt.prefix + f"{_backquoted(table_id.database)}.{_backquoted(table_id.table)}"
            if stmt.suffix:
                text += " " + stmt.suffix
            self._event(EventKind.DROP_TABLE, table_id.database, statement=text, table_id=table_id)

    def _truncate(self, stmt: Truncate) -> None:
        table_id = self._id(stmt.table)
        if self.state.table(table_id) is None:
            self.warnings.append(f"TRUNCATE of {table_id}, which the model does not know: no truncate event")
            return
        self._event(EventKind.TRUNCATE_TABLE, table_id.database, table_id=table_id)

    def _create_index(self, stmt: CreateIndex) -> None:
        if stmt.key.kind is not KeyKind.UNIQUE:
            return
        table_id = self._id(stmt.table)
        table = self.state.table(table_id)
        if table is None:
            raise self._unknown(f"CREATE UNIQUE INDEX on {table_id}, which the model does not know")
        editor = TableEditor.of(table, self.state.indexes(table_id))
        editor.add_unique_index(stmt.key.name, stmt.key.columns)
        signal = not editor.has_primary_key and self._unique_as_key(editor, stmt.key.columns)
        self._store(editor)
        if signal:
            self._event(EventKind.CREATE_INDEX, table_id.database, table_id=table_id)

    def _drop_index(self, stmt: DropIndexStatement) -> None:
        table_id = self._id(stmt.table)
        table = self.state.table(table_id)
        if table is None:
            self.warnings.append(f"DROP INDEX {stmt.name} on {table_id}, which the model does not know")
            return
        editor = TableEditor.of(table, self.state.indexes(table_id))
        if editor.drop_index(stmt.name):
            self._store(editor)

    # -- databases and variables ---------------------------------------------------------------

    def _database_charset(self, name: str, charset: str | None, collation: str | None) -> None:
        if charset is not None:
            value = self.state.variable(CHARSET_SERVER) if charset.upper() == "DEFAULT" else charset
            if value is None:
                self.state.database_charsets.pop(name, None)
            else:
                self.state.database_charsets[name] = value
        elif collation is not None and (from_collation := charset_of_collation(collation)) is not None:
            self.state.database_charsets[name] = from_collation

    def _create_database(self, stmt: CreateDatabase) -> None:
        self._database_charset(stmt.name, stmt.charset, stmt.collation)
        self._event(EventKind.CREATE_DATABASE, stmt.name, name=stmt.name,
                    value=self.state.database_charsets.get(stmt.name))

    def _alter_database(self, stmt: AlterDatabase) -> None:
        name = stmt.name or self.database
        if name is None:
            raise DdlParseError("ALTER DATABASE without a name and without a current database",
                                statement=self._statement, database=None, position=None)
        self._database_charset(name, stmt.charset, stmt.collation)

    def _drop_database(self, stmt: DropDatabase) -> None:
        for table_id in [t.id for t in self.state.tables.values() if t.id.database == stmt.name]:
            self.state.remove(table_id)
        self.state.database_charsets.pop(stmt.name, None)
        self._event(EventKind.DROP_DATABASE, stmt.name, name=stmt.name)

    def _use(self, stmt: Use) -> None:
        self.database = stmt.database
        charset = self.state.database_charsets.get(stmt.database)
        self.state.set_variable("SESSION", CHARSET_DATABASE, charset)
        self._event(EventKind.USE_DATABASE, stmt.database, name=stmt.database, value=charset)

    def _set(self, stmt: SetVariables) -> None:
        for assignment in stmt.assignments:
            self.state.set_variable(assignment.scope, assignment.name, assignment.value)
            if assignment.name.lower() == CHARSET_DATABASE and self.database and assignment.value is not None:
                self.state.database_charsets[self.database] = assignment.value
            self._event(EventKind.SET_VARIABLE, self.database, name=assignment.name, value=assignment.value)


def _backquoted(part: str) -> str:
    """Debezium's ``TableId.toQuotedString('`')`` for one name part."""
    if part and part[0] != "`" and part[-1] != "`":
        return "`" + part.replace("`", "``") + "`"
    return part if part else "``"
