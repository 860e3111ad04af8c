"""Errors of the DDL parser and schema model.

`DdlParseError` is raised when a statement cannot be read (bad or unsupported syntax) and also,
as its subclass `DdlUnknownObjectError`, when a statement refers to a column or table the model
does not have where Debezium's parser stops with a ``ParsingException`` too (``MODIFY`` /
``CHANGE`` / ``RENAME COLUMN`` of a missing column, ``CREATE UNIQUE INDEX`` on a missing table).
Both mean "the model cannot follow this statement"; the caller decides, as Debezium does with
``schema.history.internal.skip.unparseable.ddl``, whether to stop or to skip the statement.
`SchemaModel.apply` is atomic: when it raises, the model is unchanged.

Where Debezium tolerates an inconsistency silently (``ALTER TABLE`` of an unknown table, ``DROP
COLUMN`` of a missing column...), the model does the same and reports it in
``DdlOutcome.warnings`` instead of raising.
"""

from __future__ import annotations

from cdc_sources.spi import CdcError

__all__ = ["DdlParseError", "DdlUnknownObjectError"]

_SHOWN = 300
"""How much of a statement a message quotes."""


def shorten(text: str, limit: int = _SHOWN) -> str:
    """``text`` on one line, cut to ``limit`` characters (with an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class DdlParseError(CdcError):
    """A DDL statement could not be read or applied.

    Attributes:
        reason: what is wrong, e.g. ``expected ')' but found 'FOO'``.
        statement: the statement text (the whole QUERY event text when the statement could not
            be isolated).
        database: the default database the statement ran in (None: none).
        position: 0-based character offset of the problem in ``statement`` (None: unknown).
    """

    reason: str
    statement: str
    database: str | None
    position: int | None

    _WHAT = "cannot parse DDL"

    def __init__(self, reason: str, *, statement: str, database: str | None, position: int | None) -> None:
        where = "" if position is None else f" at offset {position}{_near(statement, position)}"
        super().__init__(
            f"{self._WHAT}{where} (database {database!r}): {reason}; statement: {shorten(statement)!r}",
            reason=reason, statement=statement, database=database, position=position)


class DdlUnknownObjectError(DdlParseError):
    """The statement names a table or column the schema model does not have, and Debezium's
    parser fails on it too: the model and the database have drifted apart."""

    _WHAT = "cannot apply DDL"


def _near(statement: str, position: int) -> str:
    fragment = statement[position : position + 30]
    return f" near {shorten(fragment, 40)!r}" if fragment.strip() else " (end of statement)"
