"""Lists of column names built without higher-order functions.

Silver records per row which columns are in some state (unavailable, unknown) as an array of
names. Building it as ``filter(array(when(flag, name), ...), x -> x IS NOT NULL)`` puts a
lambda into the projection, and classic Spark evaluates a projection holding a lambda without
code generation: every expression of it, the whole decoding included, is then interpreted row
by row (several times slower). `names_where` builds the same array with ``array_remove``,
which code generation covers, on every engine.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import ArrayType, StringType

__all__ = ["names_where"]

_LIST = ArrayType(StringType(), containsNull=True)
_ABSENT = ""
"""Stands for "not listed" before removal: no column is named by the empty string."""


def names_where(flagged: Sequence[tuple[str, Column]]) -> Column:
    """The names whose flag is true, in the given order; an empty ``array<string>`` when none is.

    A null flag counts as false.
    """
    if not flagged:
        return sf.array().cast(_LIST)
    items = [sf.when(flag, sf.lit(name)).otherwise(sf.lit(_ABSENT)) for name, flag in flagged]
    # the type every other form of the list has (elements may be null), or unions and staged
    # reads disagree with it
    return sf.array_remove(sf.array(*items), _ABSENT).cast(_LIST)
