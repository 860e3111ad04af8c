"""From the text of a QUERY event to the token lists of its statements.

Three steps, in Debezium's order:

1. `normalize`: what Debezium's ``DdlNormalizer`` does before its ANTLR parser sees the text.
   Double-quoted strings become single-quoted ones (``"it's"`` -> ``'it''s'``; not under
   ``ANSI_QUOTES``, where they are identifiers) and a few window-function names used as table or
   column names get backquotes. The statement texts Debezium puts in schema change events are cut
   from this normalised text, so ours are too.
2. MySQL version comments ``/*!50100 ... */`` are opened: the server executes their content
   (``SHOW CREATE TABLE`` and mysqldump wrap partitioning and other clauses in them), so the
   parser must see it. The markers are blanked with spaces, so offsets do not move. MariaDB's
   ``/*M!...*/`` stays a comment, as it does for Debezium's MySQL grammar.
3. sqlglot's MySQL tokenizer cuts the text into tokens (quotes, backquoted identifiers, escapes,
   hex/bit literals, charset introducers, comments); `split_statements` then cuts the token list
   at top-level ``;`` (a stored routine, trigger or event body is kept whole).

`Cursor` is the reading head the statement parsers move over one statement's tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token as SqlglotToken
from sqlglot.tokenizer_core import TokenType

from cdc_sources.mysql.ddl.errors import DdlParseError

__all__ = ["Cursor", "Statement", "Token", "normalize", "open_version_comments", "split_statements", "tokenize"]

_QUOTED_OR_COMMENT = re.compile(
    r"(--[^\n]*|#[^\n]*|/\*(?!!).*?\*/)|('(?:''|[^'\\]|\\.)*')|\"((?:[^\"\\]|\\.|\"\")*)\"|(`(?:``|[^`])*`)",
    re.DOTALL)
_WINDOW_NAMES = ("CUME_DIST|DENSE_RANK|FIRST_VALUE|JSON_TABLE|LAG|LAST_VALUE|LEAD|NTH_VALUE|NTILE|"
                 "PERCENT_RANK|RANK|ROW_NUMBER")
_AFTER_TABLE_KEYWORD = re.compile(
    r"(?i)\b(CREATE\s+TABLE|ALTER\s+TABLE|DROP\s+TABLE|FROM|JOIN|LEFT\s+JOIN|RIGHT\s+JOIN|INNER\s+JOIN|"
    rf"OUTER\s+JOIN|INTO)\s+({_WINDOW_NAMES})\b")
_BEFORE_TYPE = re.compile(
    rf"(?i)\b({_WINDOW_NAMES})\s+((?:VAR)?CHAR|INT|BIGINT|DECIMAL|NUMERIC|FLOAT|DOUBLE|JSON|TEXT|BLOB|DATE|"
    r"DATETIME|TIMESTAMP|TIME|YEAR|ENUM|SET|BINARY|VARBINARY|BIT|BOOL|BOOLEAN)\b")
_AS_LABEL = re.compile(rf"(?i)\b({_WINDOW_NAMES})\s*:")


def normalize(text: str, *, ansi_quotes: bool = False) -> str:
    """The text as Debezium's ``DdlNormalizer`` rewrites it before parsing (see the module doc)."""
    out: list[str] = []
    last = 0
    for match in _QUOTED_OR_COMMENT.finditer(text):
        out.append(_quote_window_names(text[last : match.start()]))
        double_quoted = match.group(3)
        if double_quoted is not None and not ansi_quotes:
            out.append("'" + double_quoted.replace("'", "''") + "'")
        else:
            out.append(match.group(0))
        last = match.end()
    out.append(_quote_window_names(text[last:]))
    return "".join(out)


def _quote_window_names(segment: str) -> str:
    segment = _AFTER_TABLE_KEYWORD.sub(r"\1 `\2`", segment)
    segment = _BEFORE_TYPE.sub(r"`\1` \2", segment)
    return _AS_LABEL.sub(r"`\1`:", segment)


def open_version_comments(text: str) -> str:
    """``text`` with the ``/*!NNNNN`` openers and their ``*/`` closers blanked out (same length)."""
    if "/*!" not in text:
        return text
    chars = list(text)
    i, n, inside = 0, len(text), False
    while i < n:
        c = text[i]
        if c in "'\"`":
            i = _after_quoted(text, i)
        elif c == "#" or text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
        elif text.startswith("/*!", i):
            j = i + 3
            while j < n and text[j].isdigit():
                j += 1
            chars[i:j] = " " * (j - i)
            inside, i = True, j
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
        elif inside and text.startswith("*/", i):
            chars[i : i + 2] = "  "
            inside, i = False, i + 2
        else:
            i += 1
    return "".join(chars)


def _after_quoted(text: str, i: int) -> int:
    """The offset just past the quoted string or identifier opening at ``i`` (``len`` if unclosed)."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n:
        c = text[j]
        if c == "\\" and quote != "`":
            j += 2
        elif c == quote:
            if j + 1 < n and text[j + 1] == quote:
                j += 2
            else:
                return j + 1
        else:
            j += 1
    return n


class _Tokenizer(MySQL.Tokenizer):
    """sqlglot's MySQL tokenizer without its "command" mode, which turns everything after a
    leading ``RENAME`` or ``REPLACE`` into one string token."""

    COMMANDS: ClassVar = set()


class _AnsiQuotesTokenizer(_Tokenizer):
    """MySQL tokens under ``sql_mode=ANSI_QUOTES``: ``"..."`` is an identifier, not a string."""

    QUOTES: ClassVar = ["'"]
    IDENTIFIERS: ClassVar = ["`", '"']


_WORD = re.compile(r"[A-Za-z0-9_$\x80-\U0010ffff]+")
_NOT_WORDS: Final = frozenset({
    TokenType.STRING, TokenType.IDENTIFIER, TokenType.NATIONAL_STRING, TokenType.HEX_STRING,
    TokenType.BIT_STRING, TokenType.BYTE_STRING, TokenType.NUMBER, TokenType.INTRODUCER,
})


@dataclass(frozen=True, slots=True)
class Token:
    """One token of a statement.

    Attributes:
        kind: sqlglot's token type.
        text: sqlglot's text: unescaped for strings and quoted identifiers, as written otherwise.
        start: offset of the first character in the (normalised) QUERY text.
        end: offset just past the last character.
        word: the upper-cased text when the token is an unquoted word (keyword or plain
            identifier), else None.
        raw: the sqlglot token (for handing statements to sqlglot's parser).
    """

    kind: TokenType
    text: str
    start: int
    end: int
    word: str | None
    raw: SqlglotToken

    @classmethod
    def of(cls, raw: SqlglotToken) -> Token:
        """Wrap a sqlglot token."""
        word = raw.text.upper() if raw.token_type not in _NOT_WORDS and _WORD.fullmatch(raw.text) else None
        return cls(raw.token_type, raw.text, raw.start, raw.end + 1, word, raw)

    @property
    def is_identifier(self) -> bool:
        """A quoted identifier, or an unquoted word that can be one."""
        return self.kind is TokenType.IDENTIFIER or self.word is not None


def tokenize(text: str, *, ansi_quotes: bool = False) -> list[Token]:
    """The tokens of ``text`` (already normalised, version comments opened).

    Raises:
        DdlParseError: an unterminated string, identifier or comment.
    """
    tokenizer = _AnsiQuotesTokenizer() if ansi_quotes else _Tokenizer()
    try:
        raw = tokenizer.tokenize(text)
    except TokenError as exc:
        position = _unterminated_at(text)
        reason = "unterminated quoted string or identifier" if position is not None else _first_line(exc)
        raise DdlParseError(reason, statement=text, database=None, position=position) from exc
    return _merge(text, [piece for t in raw for piece in _split_multiword(text, t)])


_PIECE = re.compile(r"\S+")


def _split_multiword(text: str, raw: SqlglotToken) -> list[Token]:
    """sqlglot reads some keyword pairs as one token (``PRIMARY KEY``, ``CHARACTER VARYING``,
    ``DOUBLE PRECISION``...); MySQL's grammar has a word each, so they are split again."""
    if " " not in raw.text or raw.token_type in _NOT_WORDS:
        return [Token.of(raw)]
    return [_synthetic(TokenType.VAR, m.group(), raw.start + m.start(), raw.start + m.end())
            for m in _PIECE.finditer(text[raw.start : raw.end + 1])]


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _unterminated_at(text: str) -> int | None:
    """Where an unterminated quote starts, if there is one."""
    i, n = 0, len(text)
    while i < n:
        if text[i] in "'\"`":
            end = _after_quoted(text, i)
            if end >= n and not (end - i >= 2 and text[end - 1] == text[i]):
                return i
            i = end
        else:
            i += 1
    return None


def _merge(text: str, tokens: list[Token]) -> list[Token]:
    """Undo two splits sqlglot makes that MySQL does not: ``.5`` (a number) and ``1st`` (a name)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and nxt.start == tok.end:
            joined = text[tok.start : nxt.end]
            if tok.kind is TokenType.DOT and nxt.kind is TokenType.NUMBER and not _ends_name(out, tok):
                out.append(_synthetic(TokenType.NUMBER, joined, tok.start, nxt.end))
                i += 2
                continue
            if tok.kind is TokenType.NUMBER and nxt.word is not None and tok.text.isdigit():
                out.append(_synthetic(TokenType.VAR, joined, tok.start, nxt.end))
                i += 2
                continue
        out.append(tok)
        i += 1
    return out


def _ends_name(before: list[Token], dot: Token) -> bool:
    """True when the token before ``dot`` ends right at it (``t.5`` is a qualified name)."""
    return bool(before) and before[-1].end == dot.start and before[-1].is_identifier


def _synthetic(kind: TokenType, text: str, start: int, end: int) -> Token:
    return Token.of(SqlglotToken(kind, text, start=start, end=end - 1))


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a QUERY event.

    Attributes:
        tokens: its tokens (without the closing ``;``).
        source: the whole normalised QUERY text the token offsets point into (version comments
            opened).
        display: the same text with the version comment markers left in place (same offsets):
            what statement texts are cut from, as Debezium cuts them.
    """

    tokens: tuple[Token, ...]
    source: str
    display: str

    @property
    def text(self) -> str:
        """The statement text, from its first to its last token."""
        return self.display[self.tokens[0].start : self.tokens[-1].end]

    @property
    def source_text(self) -> str:
        """The statement text as tokenized (version comments opened)."""
        return self.source[self.tokens[0].start : self.tokens[-1].end]

    @property
    def start(self) -> int:
        """Offset of the statement in `source`."""
        return self.tokens[0].start


_ROUTINE_KINDS: Final = frozenset({"PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"})
_OBJECT_KINDS: Final = frozenset({
    "TABLE", "TABLES", "DATABASE", "SCHEMA", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "VIEW", "USER", "ROLE",
    "SERVER", "TABLESPACE", "SEQUENCE", "LOGFILE", "TEMPORARY", "ONLINE", "IGNORE", "INSTANCE",
})
_HEAD = 16
"""How many leading tokens `_has_body` looks at."""


def split_statements(tokens: Sequence[Token], source: str, display: str | None = None) -> list[Statement]:
    """Cut a QUERY event's tokens into statements at top-level semicolons.

    A ``CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT`` (or ``ALTER EVENT``, or a MariaDB
    ``BEGIN NOT ATOMIC`` block) keeps everything up to the end of the text: its body has
    semicolons of its own, and the server logs such a statement as a QUERY event of its own.
    ``display`` is the text statement texts are cut from (default: ``source``).
    """
    shown = source if display is None else display
    statements: list[Statement] = []
    current: list[Token] = []
    depth = 0
    whole = False
    for tok in tokens:
        if tok.kind is TokenType.SEMICOLON and depth == 0 and not whole:
            if current:
                statements.append(Statement(tuple(current), source, shown))
            current = []
            continue
        current.append(tok)
        if tok.kind is TokenType.L_PAREN:
            depth += 1
        elif tok.kind is TokenType.R_PAREN:
            depth = max(0, depth - 1)
        if not whole and len(current) <= _HEAD:
            whole = _has_body(current)
    if current:
        statements.append(Statement(tuple(current), source, shown))
    return statements


def _has_body(head: list[Token]) -> bool:
    """Whether the statement starting with ``head`` is a routine-like one with a compound body:
    ``BEGIN NOT ATOMIC``, or ``CREATE``/``ALTER`` where a routine kind (``PROCEDURE``...) comes
    before any other object kind (``TABLE``...) and before any parenthesis."""
    first = head[0].word
    if first == "BEGIN":
        return len(head) > 1 and head[1].word == "NOT"
    if first not in ("CREATE", "ALTER"):
        return False
    for tok in head[1:_HEAD]:
        if tok.kind is TokenType.L_PAREN or tok.word in _OBJECT_KINDS:
            return False
        if tok.word in _ROUTINE_KINDS:
            return True
    return False


class Cursor:
    """A reading head over one statement's tokens.

    Every ``expect_*`` method raises `DdlParseError` naming the statement, the database and the
    offset (within the statement) of the token it could not accept.
    """

    def __init__(self, statement: Statement, database: str | None, *, ansi_quotes: bool = False) -> None:
        self.statement = statement
        self.tokens = statement.tokens
        self.database = database
        self.ansi_quotes = ansi_quotes
        self.pos = 0

    # -- looking -----------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """No token left."""
        return self.pos >= len(self.tokens)

    def peek(self, k: int = 0) -> Token | None:
        """The token ``k`` places ahead, or None past the end."""
        i = self.pos + k
        return self.tokens[i] if i < len(self.tokens) else None

    def word(self, k: int = 0) -> str | None:
        """The upper-cased unquoted word ``k`` places ahead, or None."""
        tok = self.peek(k)
        return None if tok is None else tok.word

    def kind(self, k: int = 0) -> TokenType | None:
        """The type of the token ``k`` places ahead, or None."""
        tok = self.peek(k)
        return None if tok is None else tok.kind

    def at(self, *words: str) -> bool:
        """Whether the next tokens are exactly these words."""
        return all(self.word(k) == w for k, w in enumerate(words))

    def at_any(self, *words: str) -> bool:
        """Whether the next token is one of these words."""
        return self.word() in words

    # -- moving ------------------------------------------------------------------------------

    def next(self) -> Token:
        """The next token, consumed."""
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of statement")
        self.pos += 1
        return tok

    def accept(self, *words: str) -> bool:
        """Consume the words if they come next."""
        if self.at(*words):
            self.pos += len(words)
            return True
        return False

    def accept_any(self, *words: str) -> str | None:
        """Consume and return the next word if it is one of these."""
        word = self.word()
        if word is not None and word in words:
            self.pos += 1
            return word
        return None

    def accept_kind(self, kind: TokenType) -> Token | None:
        """Consume and return the next token if it is of this type."""
        tok = self.peek()
        if tok is not None and tok.kind is kind:
            self.pos += 1
            return tok
        return None

    def expect(self, *words: str) -> None:
        """Consume these words or fail."""
        for word in words:
            if not self.accept(word):
                raise self.error(f"expected {word}")

    def expect_kind(self, kind: TokenType, what: str) -> Token:
        """Consume a token of this type or fail."""
        tok = self.accept_kind(kind)
        if tok is None:
            raise self.error(f"expected {what}")
        return tok

    def accept_equals(self) -> None:
        """Skip an optional ``=``."""
        self.accept_kind(TokenType.EQ)

    def identifier(self, what: str, *, keep_doubled_quotes: bool = False) -> str:
        """An identifier: backquoted (unescaped, or with ``keep_doubled_quotes`` only stripped of
        its outer quotes, as Debezium's ``parseName`` leaves it) or an unquoted word."""
        tok = self.peek()
        if tok is None or not tok.is_identifier:
            raise self.error(f"expected {what}")
        self.pos += 1
        if keep_doubled_quotes and tok.kind is TokenType.IDENTIFIER:
            return self.statement.source[tok.start + 1 : tok.end - 1]
        return tok.text

    def name_or_string(self, what: str) -> str:
        """An identifier or a quoted string (charset and collation names may be either)."""
        tok = self.peek()
        if tok is not None and tok.kind is TokenType.STRING:
            self.pos += 1
            return tok.text
        return self.identifier(what)

    def qualified_name(self, what: str) -> tuple[str | None, str]:
        """``name`` or ``qualifier.name`` (a leading ``.name`` is also read, as MySQL does)."""
        first = self.identifier(what)
        if self.kind() is TokenType.DOT:
            self.pos += 1
            return first, self.identifier(what)
        return None, first

    def skip_parenthesized(self) -> tuple[int, int]:
        """Skip a balanced ``( ... )`` group; returns its token index range [open, close]."""
        opening = self.pos
        self.expect_kind(TokenType.L_PAREN, "'('")
        depth = 1
        while depth:
            tok = self.next()
            if tok.kind is TokenType.L_PAREN:
                depth += 1
            elif tok.kind is TokenType.R_PAREN:
                depth -= 1
        return opening, self.pos - 1

    def skip_to_comma_or_close(self) -> None:
        """Skip tokens (balanced) up to, not including, a top-level ``,`` or ``)``, or the end."""
        depth = 0
        while not self.done:
            kind = self.kind()
            if depth == 0 and kind in (TokenType.COMMA, TokenType.R_PAREN):
                return
            if kind is TokenType.L_PAREN:
                depth += 1
            elif kind is TokenType.R_PAREN:
                depth -= 1
            self.pos += 1

    # -- text --------------------------------------------------------------------------------

    def source(self, first: int, last: int) -> str:
        """The source text from token index ``first`` to token index ``last`` (inclusive)."""
        return self.statement.source[self.tokens[first].start : self.tokens[last].end]

    def shown(self, first: int, last: int) -> str:
        """The statement text (as shown in events) from token ``first`` to token ``last``."""
        return self.statement.display[self.tokens[first].start : self.tokens[last].end]

    def source_before(self, index: int) -> str:
        """The statement text from its start up to (not including) token index ``index``."""
        return self.statement.display[self.statement.start : self.tokens[index].start]

    def error(self, reason: str) -> DdlParseError:
        """A `DdlParseError` at the current token (or at the end)."""
        tok = self.peek()
        if tok is None:
            position = len(self.statement.text)
        else:
            position = tok.start - self.statement.start
            reason = f"{reason} but found {self.statement.display[tok.start : tok.end]!r}"
        return DdlParseError(reason, statement=self.statement.text, database=self.database, position=position)
