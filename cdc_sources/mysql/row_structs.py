"""Compiled struct builders: a binlog row's Debezium value or key struct in one generated function.

`TableCodec.row` renders a row field by field in a loop (look the value up, test for NULL, call
the field's converter). On the streaming hot path that loop, run for every field of every row,
costs more than reading the row from the binlog. `compile_struct` turns a table version's
fields into one straight-line function instead, made once per table version:

    def struct(values):
        get = values.get
        return {'id': v0 if (v0 := get('id')) is not None else f0, 'note': ..., ...}

where a field whose converter returns every value unchanged (`IDENTITY_CONVERTERS`: integers,
text already decoded by the binlog reader) is not called at all, and a NULL becomes the
field's fallback. The result is equal, key order included, to the loop's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from cdc_sources.mysql.converters import integers, text

Struct = Callable[[Mapping[str, Any]], dict[str, Any]]
"""``values -> struct``: the value or key struct of a row given as column name -> library value."""

IDENTITY_CONVERTERS: Final = frozenset({integers.identity, text.identity})
"""Converters that return their argument itself: calling them can be left out."""


def compile_struct(fields: Sequence[Any]) -> Struct:
    """The struct builder of ``fields`` (objects with ``name``, ``convert`` and ``fallback``, in
    struct order): ``{f.name: f.fallback if v is None else f.convert(v)}`` with ``v =
    values.get(f.name)``, for every field in order."""
    env: dict[str, Any] = {}
    items: list[str] = []
    for i, f in enumerate(fields):
        value, fallback, convert = f"v{i}", f"f{i}", f"c{i}"
        env[fallback] = f.fallback
        converted = value
        if f.convert not in IDENTITY_CONVERTERS:
            env[convert] = f.convert
            converted = f"{convert}({value})"
        get = f"({value} := get({f.name!r}))"
        if converted == value and f.fallback is None:
            items.append(f"{f.name!r}: get({f.name!r})")
        else:
            items.append(f"{f.name!r}: {converted} if {get} is not None else {fallback}")
    source = "def struct(values):\n    get = values.get\n    return {" + ", ".join(items) + "}\n"
    namespace = dict(env)
    exec(compile(source, "<mysql row struct>", "exec"), namespace)  # source built from field names only
    return namespace["struct"]  # type: ignore[no-any-return]
