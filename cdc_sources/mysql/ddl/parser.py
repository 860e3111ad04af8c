"""The DDL parser: the text of a QUERY event -> a list of statement objects.

sqlglot (MySQL dialect) does the lexing for every statement (see `lexer`), and its parser
builds the statements it represents completely: ``DROP TABLE``, ``TRUNCATE``, ``CREATE
DATABASE``/``DROP DATABASE``, ``USE`` and ``CREATE TABLE ... LIKE``. Everything else is read by
targeted recursive-descent code over the same sqlglot tokens, because sqlglot 30 either cannot
parse it or loses what Debezium records:

* ``ALTER TABLE`` (most actions: ``CHANGE``, ``MODIFY``, ``FIRST``/``AFTER``, ``RENAME COLUMN``,
  ``CONVERT TO CHARACTER SET``, ``ALTER COLUMN ... SET DEFAULT``...), ``RENAME TABLE``, ``DROP
  TABLES`` and ``ALTER DATABASE`` fall back to an opaque ``exp.Command``;
* in ``CREATE TABLE`` sqlglot normalises type spellings (``INTEGER`` -> ``INT``, ``TIMESTAMP`` ->
  ``TIMESTAMPTZ``, ``UNSIGNED`` folded into ``UINT``), while Debezium's ``typeName`` keeps the
  keywords as written; it turns literals into values (``-5`` -> ``Neg(5)``, ``0x1F`` and ``X'1F'``
  -> the same ``HexString``), while Debezium's ``defaultValueExpression`` keeps their text and
  treats the two hex forms differently; and it rejects MariaDB forms (``INET4``/``INET6``/``UUID``
  types, ``PERSISTENT``, ``DEFAULT uuid()``, ``WITH SYSTEM VERSIONING``) and some partition
  clauses (``VALUES LESS THAN MAXVALUE``);
* ``CREATE INDEX`` and ``DROP INDEX ... ON`` are read with the same key-part reader as the
  ``CREATE TABLE`` keys.

Statements without an effect on table structures (DML, ``GRANT``, users and roles, views,
routines, triggers, events, transaction control, ``FLUSH``, ``ANALYZE``...) are recognised by
their leading keywords and returned as `Ignored`, without being parsed further. A statement of
any other kind is an error: the model must not silently miss a structure change.
"""

from __future__ import annotations

from typing import Final

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ParseError
from sqlglot.tokenizer_core import TokenType

from cdc_sources.mysql.ddl.columns import (
    NOW_WORDS,
    parse_column,
    parse_key,
    parse_key_parts,
    parse_table_element,
    parse_text_literal,
    starts_key,
)
from cdc_sources.mysql.ddl.errors import DdlParseError
from cdc_sources.mysql.ddl.lexer import Cursor, Statement, normalize, open_version_comments, split_statements, tokenize
from cdc_sources.mysql.ddl.statements import (
    AddColumn,
    AddColumns,
    AddKey,
    AlterAction,
    AlterDatabase,
    AlterTable,
    ChangeColumn,
    ConvertCharset,
    CreateDatabase,
    CreateIndex,
    CreateTable,
    DefaultKind,
    DefaultValue,
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
    TableElement,
    Truncate,
    Use,
    VariableAssignment,
)

__all__ = ["parse_ddl"]

_IGNORED_FIRST_WORDS: Final = frozenset({
    "INSERT", "UPDATE", "DELETE", "REPLACE", "SELECT", "WITH", "VALUES", "TABLE", "CALL", "DO", "LOAD", "HANDLER",
    "BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA", "LOCK", "UNLOCK", "GRANT", "REVOKE",
    "FLUSH", "RESET", "PURGE", "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "CHECKSUM", "INSTALL", "UNINSTALL",
    "KILL", "SHOW", "EXPLAIN", "DESCRIBE", "DESC", "HELP", "PREPARE", "EXECUTE", "DEALLOCATE", "CACHE",
    "BINLOG", "CHANGE", "STOP", "SIGNAL", "RESIGNAL", "GET", "SHUTDOWN", "RESTART", "CLONE", "IMPORT",
    "BACKUP", "END", "DECLARE", "IF", "WHILE", "REPEAT", "LOOP", "LEAVE", "ITERATE", "RETURN", "OPEN",
    "CLOSE", "FETCH", "SOURCE",
})
"""Statements (by first word) that never change a table structure."""
_IGNORED_OBJECTS: Final = frozenset({
    "VIEW", "USER", "ROLE", "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "SERVER", "TABLESPACE", "LOGFILE",
    "SEQUENCE", "PACKAGE", "RESOURCE", "SPATIAL", "INSTANCE", "UNDO", "SYNONYM", "DEFINER", "ALGORITHM", "SQL",
    "AGGREGATE", "LIBRARY", "PREPARE", "PLUGIN",
})
"""Object kinds after CREATE/ALTER/DROP (and their leading options) that are not tables."""
_TABLE_OPTIONS: Final = frozenset({
    "ENGINE", "SECONDARY_ENGINE", "MAX_ROWS", "MIN_ROWS", "AVG_ROW_LENGTH", "PASSWORD", "COMPRESSION", "ENCRYPTION",
    "AUTO_INCREMENT", "PACK_KEYS", "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "CHECKSUM",
    "TABLE_CHECKSUM", "DELAY_KEY_WRITE", "ROW_FORMAT", "UNION", "INSERT_METHOD", "CONNECTION", "KEY_BLOCK_SIZE",
    "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "AUTOEXTEND_SIZE", "PAGE_CHECKSUM", "TRANSACTIONAL",
    "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "ENCRYPTED", "ENCRYPTION_KEY_ID", "IETF_QUOTES", "SEQUENCE",
})
"""Table options that take one value (``ENGINE=InnoDB``); any other ``name = value`` is read as an
engine-specific option, and a word without ``=`` that is none of these is an error (it could be
an action the parser does not know)."""
_GLOBAL_SCOPES: Final = {"GLOBAL": "GLOBAL", "SESSION": "SESSION", "LOCAL": "SESSION", "PERSIST": "GLOBAL",
                         "PERSIST_ONLY": "GLOBAL"}
_DATABASE_OPTIONS: Final = frozenset({"DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE", "ENCRYPTION", "READ",
                                      "COMMENT", "UPGRADE"})


def parse_ddl(text: str, *, database: str | None, ansi_quotes: bool = False) -> list[ParsedStatement]:
    """Parse every statement of a QUERY event (``database``: its default database, for messages).

    Raises:
        DdlParseError: a statement could not be read; nothing is returned then.
    """
    display = normalize(text, ansi_quotes=ansi_quotes)
    source = open_version_comments(display)
    try:
        tokens = tokenize(source, ansi_quotes=ansi_quotes)
    except DdlParseError as exc:
        raise DdlParseError(exc.reason, statement=display, database=database, position=exc.position) from None
    return [_statement(Cursor(s, database, ansi_quotes=ansi_quotes))
            for s in split_statements(tokens, source, display)]


def _statement(cur: Cursor) -> ParsedStatement:
    first = cur.word()
    if first == "SET" and cur.word(1) == "STATEMENT":
        return _set_statement_for(cur)
    if first is None and cur.kind() is TokenType.L_PAREN:
        return Ignored(cur.statement.text, "query")
    if first is not None and first in _IGNORED_FIRST_WORDS:
        return Ignored(cur.statement.text, first)
    if first == "CREATE":
        return _create(cur)
    if first == "ALTER":
        return _alter(cur)
    if first == "DROP":
        return _drop(cur)
    if first == "RENAME":
        return _rename(cur)
    if first == "TRUNCATE":
        return _truncate(cur)
    if first == "USE":
        return _use(cur)
    if first == "SET":
        return _set(cur)
    raise cur.error("unsupported statement: expected a DDL statement")


# -- sqlglot-parsed statements ---------------------------------------------------------------


def _sqlglot(cur: Cursor, text: str | None = None) -> exp.Expr:
    """The statement (or ``text``, a rewritten form of it) parsed by sqlglot's MySQL parser."""
    sql = cur.statement.source_text if text is None else text
    try:
        parsed = MySQL().parser().parse([t.raw for t in tokenize(sql, ansi_quotes=cur.ansi_quotes)], sql)
    except ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        reason = str(detail.get("description") or exc).split(" but got <Token")[0]
        position = _offset(sql, detail.get("line"), detail.get("col"))
        raise DdlParseError(f"sqlglot: {reason}", statement=cur.statement.text, database=cur.database,
                            position=position) from None
    if len(parsed) != 1 or parsed[0] is None or isinstance(parsed[0], exp.Command):
        raise cur.error("unsupported form of the statement")
    return parsed[0]


def _offset(text: str, line: object, col: object) -> int | None:
    """The offset of sqlglot's 1-based (line, column) in ``text`` (its column is where the bad
    token ends)."""
    if not isinstance(line, int) or not isinstance(col, int) or line < 1:
        return None
    lines = text.split("\n")
    if line > len(lines):
        return None
    return min(len(text), sum(len(x) + 1 for x in lines[: line - 1]) + max(col - 1, 0))


def _table_name(cur: Cursor, table: exp.Expr | None) -> Name:
    if not isinstance(table, exp.Table) or table.args.get("catalog") is not None or not table.name:
        raise cur.error("expected a table name of the form [database.]table")
    return Name(table.text("db") or None, table.name)


def _truncate(cur: Cursor) -> Truncate:
    node = _sqlglot(cur)
    if not isinstance(node, exp.TruncateTable) or len(node.expressions) != 1:
        raise cur.error("expected TRUNCATE [TABLE] one table")
    return Truncate(cur.statement.text, _table_name(cur, node.expressions[0]))


def _use(cur: Cursor) -> Use:
    node = _sqlglot(cur)
    if not isinstance(node, exp.Use) or not isinstance(node.this, exp.Table):
        raise cur.error("expected USE database")
    return Use(cur.statement.text, node.this.name)


def _drop_tables(cur: Cursor) -> DropTables:
    cur.expect("DROP")
    temporary = cur.accept("TEMPORARY")
    text = cur.statement.source_text
    if cur.at("TABLES"):
        start = cur.tokens[cur.pos].start - cur.statement.start
        text = text[:start] + "TABLE " + text[start + len("TABLES"):]
    cur.pos += 1
    if_exists = cur.accept("IF", "EXISTS")
    if cur.done:
        raise cur.error("expected a table name")
    prefix = cur.source_before(cur.pos)
    node = _sqlglot(cur, text)
    if not isinstance(node, exp.Drop) or node.args.get("kind") != "TABLE":
        raise cur.error("expected DROP TABLE")
    names = tuple(_table_name(cur, t) for t in node.args.get("tables") or ())
    suffix = "RESTRICT" if node.args.get("restrict") else "CASCADE" if node.args.get("cascade") else None
    return DropTables(cur.statement.text, names, if_exists, temporary, prefix, suffix)


def _drop_database(cur: Cursor) -> DropDatabase:
    node = _sqlglot(cur)
    if not isinstance(node, exp.Drop) or node.args.get("kind") not in ("DATABASE", "SCHEMA"):
        raise cur.error("expected DROP DATABASE")
    tables = node.args.get("tables") or []
    target = tables[0] if tables else None
    name = target.name or target.text("db") if isinstance(target, exp.Table) else ""
    if not name:
        raise cur.error("expected a database name")
    return DropDatabase(cur.statement.text, name, bool(node.args.get("exists")))


def _create_database(cur: Cursor) -> CreateDatabase:
    node = _sqlglot(cur)
    if not isinstance(node, exp.Create) or node.kind not in ("DATABASE", "SCHEMA"):
        raise cur.error("expected CREATE DATABASE")
    target = node.this
    name = target.name or target.text("db") if isinstance(target, exp.Table) else ""
    charset = collation = None
    properties = node.args.get("properties")
    for prop in properties.expressions if properties is not None else ():
        if isinstance(prop, exp.CharacterSetProperty):
            charset = prop.this.name
        elif isinstance(prop, exp.CollateProperty):
            collation = prop.this.name
    return CreateDatabase(cur.statement.text, name, bool(node.args.get("exists")), charset, collation)


def _create_table_like(cur: Cursor, head: CreateTable) -> CreateTable:
    node = _sqlglot(cur)
    like = node.find(exp.LikeProperty) if isinstance(node, exp.Create) else None
    if like is None:
        raise cur.error("expected CREATE TABLE ... LIKE")
    return CreateTable(head.text, head.table, temporary=head.temporary, if_not_exists=head.if_not_exists,
                       or_replace=head.or_replace, like=_table_name(cur, like.this))


# -- CREATE ----------------------------------------------------------------------------------


def _create(cur: Cursor) -> ParsedStatement:
    cur.expect("CREATE")
    or_replace = cur.accept("OR", "REPLACE")
    if cur.at_any("DATABASE", "SCHEMA"):
        cur.pos = 0
        return _create_database(cur)
    if cur.at("TEMPORARY", "TABLE") or cur.at("TABLE"):
        return _create_table(cur, or_replace=or_replace)
    start = cur.pos
    cur.accept_any("ONLINE", "OFFLINE")
    kind = cur.accept_any("UNIQUE", "FULLTEXT", "SPATIAL")
    if cur.at_any("INDEX", "KEY") and not (kind == "SPATIAL" and cur.at("REFERENCE")):
        return _create_index(cur, kind)
    cur.pos = start
    return _ignored_object(cur, "CREATE")


def _ignored_object(cur: Cursor, verb: str) -> Ignored:
    """A CREATE/ALTER/DROP of something other than a table, database or index, or a failure."""
    word = cur.word()
    if word in _IGNORED_OBJECTS:
        return Ignored(cur.statement.text, f"{verb} {word}")
    raise cur.error(f"unsupported {verb} statement: expected TABLE, DATABASE, INDEX or a non-table object")


def _create_table(cur: Cursor, *, or_replace: bool) -> CreateTable:
    temporary = cur.accept("TEMPORARY")
    cur.expect("TABLE")
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    table = _name(cur)
    head = CreateTable(cur.statement.text, table, temporary=temporary, if_not_exists=if_not_exists,
                       or_replace=or_replace)
    if cur.at("LIKE") or (cur.kind() is TokenType.L_PAREN and cur.word(1) == "LIKE"):
        if or_replace:
            return _like_after_or_replace(cur, head)
        cur.pos = 0
        return _create_table_like(cur, head)
    elements: list[TableElement] = []
    if cur.kind() is TokenType.L_PAREN and cur.word(1) not in ("SELECT", "WITH", "VALUES", "TABLE") and cur.kind(
            1) is not TokenType.L_PAREN:
        cur.next()
        elements = _element_list(cur)
        cur.expect_kind(TokenType.R_PAREN, "')' closing the column list")
    options = _table_options(cur)
    return CreateTable(head.text, table, tuple(elements), temporary, if_not_exists, or_replace,
                       options.get("CHARSET"), options.get("COLLATE"), options.get("COMMENT"))


def _like_after_or_replace(cur: Cursor, head: CreateTable) -> CreateTable:
    """``CREATE OR REPLACE TABLE a LIKE b`` (MariaDB), which sqlglot does not read."""
    parenthesized = cur.accept_kind(TokenType.L_PAREN) is not None
    cur.expect("LIKE")
    source = _name(cur)
    if parenthesized:
        cur.expect_kind(TokenType.R_PAREN, "')'")
    return CreateTable(head.text, head.table, temporary=head.temporary, or_replace=True, like=source)


def _element_list(cur: Cursor, *, in_alter: bool = False) -> list[TableElement]:
    elements: list[TableElement] = []
    while True:
        element = parse_table_element(cur, in_alter=in_alter)
        if element is not None:
            elements.append(element)
        if cur.accept_kind(TokenType.COMMA) is None:
            return elements


def _name(cur: Cursor) -> Name:
    database, table = cur.qualified_name("a table name")
    return Name(database, table)


def _table_options(cur: Cursor) -> dict[str, str]:
    """Read the table options (and a partition clause or ``AS SELECT``); returns the
    ``CHARSET``, ``COLLATE`` and ``COMMENT`` values found."""
    found: dict[str, str] = {}
    while not cur.done:
        if cur.accept_kind(TokenType.COMMA):
            continue
        if cur.at("PARTITION", "BY") or _starts_query(cur):
            cur.pos = len(cur.tokens)
            return found
        option = _table_option(cur)
        if option is not None:
            found[option[0]] = option[1]
    return found


def _starts_query(cur: Cursor) -> bool:
    """Whether the ``[IGNORE|REPLACE] [AS] SELECT ...`` of ``CREATE TABLE ... SELECT`` starts here
    (the columns it adds are not in the statement; MySQL logs such a table in row-based
    replication as a plain ``CREATE TABLE`` with all its columns)."""
    if cur.at("WITH", "SYSTEM", "VERSIONING"):
        return False
    return cur.kind() is TokenType.L_PAREN or cur.at_any("AS", "SELECT", "WITH", "IGNORE", "REPLACE", "TABLE",
                                                          "VALUES")


def _charset_keyword(cur: Cursor) -> bool:
    return cur.accept("CHARACTER", "SET") or cur.accept("CHAR", "SET") or cur.accept("CHARSET")


def _table_option(cur: Cursor) -> tuple[str, str] | None:
    """One table option; ``("CHARSET", name)``, ``("COLLATE", name)`` and ``("COMMENT", text)``
    are returned, the others are read and dropped."""
    start = cur.pos
    cur.accept("DEFAULT")
    if _charset_keyword(cur):
        cur.accept_equals()
        return "CHARSET", cur.name_or_string("a character set name")
    if cur.accept("COLLATE"):
        cur.accept_equals()
        return "COLLATE", cur.name_or_string("a collation name")
    cur.pos = start
    if cur.accept("COMMENT"):
        cur.accept_equals()
        return "COMMENT", parse_text_literal(cur)
    if cur.accept("WITH", "SYSTEM", "VERSIONING") or cur.accept("START", "TRANSACTION"):
        return None
    if cur.accept_any("STORAGE") is not None:
        cur.next()
        return None
    if cur.accept("TABLESPACE"):
        cur.accept_equals()
        cur.identifier("a tablespace name")
        if cur.accept("STORAGE"):
            cur.next()
        return None
    tok = cur.peek()
    if cur.at_any("DATA", "INDEX") and cur.word(1) == "DIRECTORY":
        cur.pos += 2
    elif cur.word() in _TABLE_OPTIONS or (tok is not None and tok.is_identifier and cur.kind(1) is TokenType.EQ):
        cur.pos += 1
    else:
        raise cur.error("expected a table option")
    cur.accept_equals()
    if cur.kind() is TokenType.L_PAREN:
        cur.skip_parenthesized()
    else:
        cur.next()
    return None


# -- ALTER -----------------------------------------------------------------------------------


def _alter(cur: Cursor) -> ParsedStatement:
    cur.expect("ALTER")
    start = cur.pos
    cur.accept_any("ONLINE", "OFFLINE")
    cur.accept("IGNORE")
    if cur.accept("TABLE"):
        return _alter_table(cur)
    cur.pos = start
    if cur.at_any("DATABASE", "SCHEMA"):
        return _alter_database(cur)
    return _ignored_object(cur, "ALTER")


def _alter_table(cur: Cursor) -> AlterTable:
    cur.accept("IF", "EXISTS")
    table = _name(cur)
    if cur.accept("WAIT"):
        cur.expect_kind(TokenType.NUMBER, "a number of seconds")
    else:
        cur.accept("NOWAIT")
    actions: list[AlterAction] = []
    while not cur.done:
        if cur.accept_kind(TokenType.COMMA):
            continue
        action = _alter_action(cur)
        if action is not None:
            actions.append(action)
    return AlterTable(cur.statement.text, table, tuple(actions))


def _skip_item(cur: Cursor) -> None:
    """Skip an action without effect on the model, up to the next top-level comma."""
    cur.skip_to_comma_or_close()
    if cur.kind() is TokenType.R_PAREN:
        raise cur.error("unbalanced ')'")


def _alter_action(cur: Cursor) -> AlterAction | None:
    word = cur.word()
    if word == "ADD":
        return _alter_add(cur)
    if word == "CHANGE":
        cur.next()
        cur.accept("COLUMN")
        if_exists = cur.accept("IF", "EXISTS")
        old = _alter_name(cur, "the column to change")
        new = _alter_name(cur, "the new column name")
        column = parse_column(cur, new)
        return ChangeColumn(old, column, _place(cur), if_exists)
    if word == "MODIFY":
        cur.next()
        cur.accept("COLUMN")
        if_exists = cur.accept("IF", "EXISTS")
        column = parse_column(cur, _alter_name(cur, "the column to modify"))
        return ModifyColumn(column, _place(cur), if_exists)
    if word == "DROP":
        return _alter_drop(cur)
    if word == "ALTER":
        return _alter_alter(cur)
    if word == "RENAME":
        return _alter_rename(cur)
    if cur.accept("CONVERT", "TO"):
        if not _charset_keyword(cur):
            raise cur.error("expected CHARACTER SET")
        charset = None if cur.accept("DEFAULT") else cur.name_or_string("a character set name")
        collation = cur.name_or_string("a collation name") if cur.accept("COLLATE") else None
        return ConvertCharset(charset, collation)
    if cur.at("PARTITION", "BY") or cur.at("REMOVE", "PARTITIONING"):
        cur.pos = len(cur.tokens)
        return None
    if word in ("ALGORITHM", "LOCK", "FORCE", "ORDER", "DISABLE", "ENABLE", "DISCARD", "IMPORT", "WITH", "WITHOUT",
                "REBUILD", "OPTIMIZE", "ANALYZE", "CHECK", "REPAIR", "COALESCE", "TRUNCATE", "REORGANIZE",
                "EXCHANGE", "SECONDARY_LOAD", "SECONDARY_UNLOAD", "UPGRADE"):
        _skip_item(cur)
        return None
    option = _table_option(cur)
    if option is None:
        return None
    if option[0] == "COMMENT":
        return TableComment(option[1])
    return TableCharset(option[1], None) if option[0] == "CHARSET" else TableCharset(None, option[1])


def _alter_add(cur: Cursor) -> AlterAction | None:
    cur.expect("ADD")
    if cur.at_any("PARTITION", "PERIOD") or cur.at("SYSTEM", "VERSIONING"):
        _skip_item(cur)
        return None
    column_keyword = cur.accept("COLUMN")
    if_not_exists = cur.accept("IF", "NOT", "EXISTS")
    if cur.kind() is TokenType.L_PAREN:
        cur.next()
        elements = _element_list(cur, in_alter=True)
        cur.expect_kind(TokenType.R_PAREN, "')'")
        return AddColumns(tuple(elements))
    if not column_keyword and starts_key(cur):
        return AddKey(parse_key(cur))
    column = parse_column(cur, _alter_name(cur, "a column name"))
    return AddColumn(column, _place(cur), if_not_exists)


def _alter_drop(cur: Cursor) -> AlterAction | None:
    cur.expect("DROP")
    if cur.accept("PRIMARY", "KEY"):
        return DropPrimaryKey()
    if cur.accept_any("INDEX", "KEY") is not None:
        if_exists = cur.accept("IF", "EXISTS")
        return DropIndex(cur.identifier("an index name"), if_exists)
    if cur.at_any("FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "PERIOD") or cur.at("SYSTEM", "VERSIONING"):
        _skip_item(cur)
        return None
    cur.accept("COLUMN")
    if_exists = cur.accept("IF", "EXISTS")
    name = cur.identifier("a column name")
    cur.accept_any("RESTRICT", "CASCADE")
    return DropColumn(name, if_exists)


def _alter_alter(cur: Cursor) -> AlterAction | None:
    cur.expect("ALTER")
    if cur.at_any("INDEX", "KEY", "CHECK", "CONSTRAINT"):
        _skip_item(cur)
        return None
    cur.accept("COLUMN")
    cur.accept("IF", "EXISTS")
    name = cur.identifier("a column name")
    if cur.accept("DROP", "DEFAULT"):
        return SetColumnDefault(name, None)
    if cur.accept("SET", "DEFAULT"):
        return SetColumnDefault(name, _set_default_value(cur))
    if cur.accept("SET"):
        if cur.accept_any("VISIBLE", "INVISIBLE") is None:
            raise cur.error("expected DEFAULT, VISIBLE or INVISIBLE")
        return None
    raise cur.error("expected SET DEFAULT or DROP DEFAULT")


def _set_default_value(cur: Cursor) -> DefaultValue:
    """The value of ``ALTER COLUMN x SET DEFAULT``, recorded as Debezium's ``AlterTableParserListener``
    records it: unlike a column definition's DEFAULT, a charset introducer stays in the text, and
    ``NULL`` or a hex/bit literal is recorded as the text ``null`` (Java's ``"" + null``)."""
    tok = cur.peek()
    if tok is None:
        raise cur.error("expected a default value")
    source = cur.statement.source
    if tok.kind is TokenType.L_PAREN:
        cur.skip_parenthesized()
        return DefaultValue(DefaultKind.EXPRESSION)
    if tok.word == "NULL":
        cur.pos += 1
        return DefaultValue(DefaultKind.LITERAL, "null")
    if tok.word in NOW_WORDS:
        cur.pos += 1
        if cur.kind() is TokenType.L_PAREN:
            cur.skip_parenthesized()
        return DefaultValue(DefaultKind.NOW)
    if tok.kind in (TokenType.PLUS, TokenType.DASH) and cur.kind(1) is TokenType.NUMBER:
        number = cur.tokens[cur.pos + 1]
        cur.pos += 2
        return DefaultValue(DefaultKind.LITERAL, source[tok.start : tok.end] + source[number.start : number.end])
    if tok.kind in (TokenType.HEX_STRING, TokenType.BIT_STRING) or (
            tok.kind is TokenType.INTRODUCER and cur.kind(1) in (TokenType.HEX_STRING, TokenType.BIT_STRING)):
        cur.pos += 2 if tok.kind is TokenType.INTRODUCER else 1
        return DefaultValue(DefaultKind.LITERAL, "null")
    first = cur.pos
    if tok.kind is TokenType.INTRODUCER:
        cur.pos += 1
    if tok.word in ("DATE", "TIME", "TIMESTAMP") and cur.kind(1) is TokenType.STRING:
        cur.pos += 2
    elif cur.kind() in (TokenType.STRING, TokenType.NATIONAL_STRING):
        cur.pos += 1
        while cur.kind() is TokenType.STRING:
            cur.pos += 1
    elif cur.kind() is TokenType.NUMBER or cur.word() in ("TRUE", "FALSE"):
        cur.pos += 1
    else:
        raise cur.error("expected a default value")
    text = "".join(source[t.start : t.end] for t in cur.tokens[first : cur.pos])
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return DefaultValue(DefaultKind.LITERAL, text)


def _alter_rename(cur: Cursor) -> AlterAction:
    cur.expect("RENAME")
    if cur.accept("COLUMN"):
        old = _alter_name(cur, "a column name")
        cur.expect("TO")
        return RenameColumn(old, _alter_name(cur, "the new column name"))
    if cur.accept_any("INDEX", "KEY") is not None:
        old = cur.identifier("an index name")
        cur.expect("TO")
        return RenameIndex(old, cur.identifier("the new index name"))
    cur.accept_any("TO", "AS")
    return RenameTo(_name(cur))


def _alter_name(cur: Cursor, what: str) -> str:
    """A column name in ``ALTER TABLE``, doubled backquotes kept (Debezium's ``parseName``)."""
    return cur.identifier(what, keep_doubled_quotes=True)


def _place(cur: Cursor) -> Place | None:
    if cur.accept("FIRST"):
        return Place(None)
    if cur.accept("AFTER"):
        return Place(_alter_name(cur, "a column name after AFTER"))
    return None


def _alter_database(cur: Cursor) -> AlterDatabase:
    cur.next()
    name = None if cur.word() in _DATABASE_OPTIONS else cur.identifier("a database name")
    charset = collation = None
    while not cur.done:
        cur.accept("DEFAULT")
        if _charset_keyword(cur):
            cur.accept_equals()
            charset = cur.name_or_string("a character set name")
        elif cur.accept("COLLATE"):
            cur.accept_equals()
            collation = cur.name_or_string("a collation name")
        else:
            _skip_item(cur)
            cur.accept_kind(TokenType.COMMA)
    return AlterDatabase(cur.statement.text, name, charset, collation)


# -- CREATE/DROP INDEX, DROP, RENAME ---------------------------------------------------------


def _create_index(cur: Cursor, modifier: str | None) -> CreateIndex:
    cur.next()
    cur.accept("IF", "NOT", "EXISTS")
    index_name = cur.identifier("an index name")
    if cur.accept_any("USING", "TYPE"):
        cur.next()
    cur.expect("ON")
    table = _name(cur)
    parts = parse_key_parts(cur)
    kind = {"UNIQUE": KeyKind.UNIQUE, "FULLTEXT": KeyKind.FULLTEXT, "SPATIAL": KeyKind.SPATIAL}.get(
        modifier or "", KeyKind.INDEX)
    return CreateIndex(cur.statement.text, KeyDefinition(kind, index_name, parts), table)


def _drop(cur: Cursor) -> ParsedStatement:
    cur.expect("DROP")
    if cur.at_any("TABLE", "TABLES") or cur.at("TEMPORARY", "TABLE") or cur.at("TEMPORARY", "TABLES"):
        cur.pos = 0
        return _drop_tables(cur)
    if cur.at_any("DATABASE", "SCHEMA"):
        cur.pos = 0
        return _drop_database(cur)
    start = cur.pos
    cur.accept_any("ONLINE", "OFFLINE")
    if cur.accept("INDEX"):
        cur.accept("IF", "EXISTS")
        name = cur.identifier("an index name")
        cur.expect("ON")
        return DropIndexStatement(cur.statement.text, name, _name(cur))
    cur.pos = start
    return _ignored_object(cur, "DROP")


def _rename(cur: Cursor) -> ParsedStatement:
    cur.expect("RENAME")
    if cur.accept_any("TABLE", "TABLES") is None:
        if cur.at_any("USER"):
            return Ignored(cur.statement.text, "RENAME USER")
        raise cur.error("expected RENAME TABLE")
    cur.accept("IF", "EXISTS")
    if cur.accept("WAIT"):
        cur.expect_kind(TokenType.NUMBER, "a number of seconds")
    else:
        cur.accept("NOWAIT")
    prefix = cur.source_before(cur.pos) if not cur.done else ""
    pairs: list[tuple[Name, Name, str]] = []
    while True:
        first = cur.pos
        old = _name(cur)
        cur.expect("TO")
        new = _name(cur)
        pairs.append((old, new, prefix + cur.shown(first, cur.pos - 1)))
        if cur.accept_kind(TokenType.COMMA) is None:
            break
    if not cur.done:
        raise cur.error("expected ',' or the end of the statement")
    return RenameTables(cur.statement.text, tuple(pairs))


# -- SET -------------------------------------------------------------------------------------


def _set_statement_for(cur: Cursor) -> ParsedStatement:
    """MariaDB's ``SET STATEMENT var=value[, ...] FOR statement``: the inner statement counts."""
    depth = 0
    for index in range(cur.pos, len(cur.tokens)):
        tok = cur.tokens[index]
        depth += tok.kind is TokenType.L_PAREN
        depth -= tok.kind is TokenType.R_PAREN
        if depth == 0 and tok.word == "FOR" and index + 1 < len(cur.tokens):
            inner = Statement(cur.tokens[index + 1 :], cur.statement.source, cur.statement.display)
            return _statement(Cursor(inner, cur.database, ansi_quotes=cur.ansi_quotes))
    raise cur.error("expected SET STATEMENT ... FOR statement")


def _set(cur: Cursor) -> ParsedStatement:
    cur.expect("SET")
    if cur.at_any("NAMES", "PASSWORD", "ROLE", "TRANSACTION", "CHARSET") or cur.at("CHARACTER", "SET") or cur.at(
            "DEFAULT", "ROLE") or (cur.at_any("GLOBAL", "SESSION", "LOCAL") and cur.word(1) == "TRANSACTION"):
        return Ignored(cur.statement.text, "SET")
    assignments: list[VariableAssignment] = []
    scope = "SESSION"
    while not cur.done:
        word = cur.word()
        if word in _GLOBAL_SCOPES:
            scope = _GLOBAL_SCOPES[word]
            cur.next()
        assignment = _assignment(cur, scope)
        if assignment is not None:
            assignments.append(assignment)
        if cur.accept_kind(TokenType.COMMA) is None and not cur.done:
            raise cur.error("expected ',' or the end of the statement")
    if not assignments:
        return Ignored(cur.statement.text, "SET")
    return SetVariables(cur.statement.text, tuple(assignments))


def _assignment(cur: Cursor, scope: str) -> VariableAssignment | None:
    """``name = value``, ``@@[scope.]name = value`` or a user variable ``@v = value`` (None)."""
    user_variable = False
    if cur.accept_kind(TokenType.SESSION_PARAMETER):
        if cur.word() in _GLOBAL_SCOPES and cur.kind(1) is TokenType.DOT:
            scope = _GLOBAL_SCOPES[cur.next().text.upper()]
            cur.next()
    elif cur.accept_kind(TokenType.PARAMETER):
        user_variable = True
    name = cur.identifier("a variable name")
    if cur.accept_kind(TokenType.EQ) is None and cur.accept_kind(TokenType.COLON_EQ) is None:
        raise cur.error("expected '='")
    first = cur.pos
    cur.skip_to_comma_or_close()
    if cur.pos == first:
        raise cur.error("expected a value")
    value = "".join(cur.statement.source[t.start : t.end] for t in cur.tokens[first : cur.pos])
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"`":
        value = value[1:-1]
    return None if user_variable else VariableAssignment(scope, name, value)
