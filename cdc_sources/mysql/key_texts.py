"""Compiled key texts: a binlog row's Debezium key JSON in one generated function.

Most tables are keyed by integer columns, and the key JSON of such a row is a fixed text with
the integers in between (``{"id":42}``). Building the key struct (a dict) and serialising it
costs more than writing that text directly. `compile_key_text` makes, once per table
version, a function that writes the text with an f-string when every key value is an ``int``
(what the binlog reader returns for integer columns, whose converter is
`integers.identity`), and otherwise falls back to serialising the compiled key struct. The
result is the same text, byte for byte, as ``dumps(key_struct(values))``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from cdc_sources.mysql.converters import integers
from cdc_sources.mysql.row_structs import Struct

KeyText = Callable[[Mapping[str, Any]], str]
"""``values -> key JSON``: the key of a row given as column name -> library value."""


def compile_key_text(fields: Sequence[Any], struct: Struct) -> KeyText:
    """The key text builder of the key ``fields`` (objects with ``name`` and ``convert``, in key
    order) whose compiled struct builder is ``struct``.

    When every field's converter is `integers.identity`, the generated function writes
    ``{"<name>":<int>,...}`` itself whenever every value is an ``int`` (not a ``bool``, not
    None); any other row, and any other key, is ``dumps(struct(values))``.
    """
    def generic(values: Mapping[str, Any]) -> str:
        return orjson.dumps(struct(values)).decode()

    if not fields or any(f.convert is not integers.identity for f in fields):
        return generic
    # the f-string's literal parts: each name's JSON text (as orjson writes it), braces doubled
    parts = [("," if i else "") + orjson.dumps(f.name).decode().replace("{", "{{").replace("}", "}}") + f":{{v{i}}}"
             for i, f in enumerate(fields)]
    template = "{{" + "".join(parts) + "}}"
    gets = "".join(f"    v{i} = get({f.name!r})\n" for i, f in enumerate(fields))
    test = " and ".join(f"type(v{i}) is int" for i in range(len(fields)))
    source = ("def key_text(values):\n    get = values.get\n" + gets
              + f"    if {test}:\n        return f{template!r}\n    return generic(values)\n")
    namespace: dict[str, Any] = {"generic": generic}
    exec(compile(source, "<mysql key text>", "exec"), namespace)  # source built from field names only
    return namespace["key_text"]  # type: ignore[no-any-return]
