"""Field-by-field comparison of our change records with the real Debezium's.

Records are paired in order within each topic. Keys, values (and headers, when ours carry
them) are parsed as JSON and compared strictly: types must match (``1`` is not ``1.0``,
``true`` is not ``1``), floats must have the same text (``1.0E10`` is not ``10000000000.0``),
and, unless ``check_order=False``, object members must come in the same order, because the
bronze contract stores Debezium's JSON text verbatim. Differences are reported with paths
such as ``shop.public.items[3] value.after.price``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from tests.conformance.debezium_runner import DbzRecord

DEFAULT_IGNORE: frozenset[str] = frozenset(
    {
        "value.ts_ms",
        "value.ts_us",
        "value.ts_ns",
        "value.source.version",
        "headers.__debezium.context.runId",
    }
)
"""Processing-time fields, the engine version and the per-run id: they never match."""

OurRecord = tuple[str, str | None, str | None] | tuple[str, str | None, str | None, Mapping[str, str]]
"""``(topic, key, value)``, optionally with a fourth element: headers (name -> JSON text)."""

_MISSING = object()


@dataclass(frozen=True)
class _JsonFloat:
    """A JSON float kept as its text, so that number formatting differences are visible."""

    text: str

    def __repr__(self) -> str:
        return self.text


class _Differ:
    def __init__(self, ignore: frozenset[str], check_order: bool) -> None:
        self.ignore = ignore
        self.check_order = check_order
        self.out: list[str] = []

    def ignored(self, path: str) -> bool:
        return any(
            fnmatchcase(path, pat) or path.startswith((pat + ".", pat + "[")) for pat in self.ignore
        )

    def text(self, where: str, path: str, ours: str | None, theirs: str | None) -> None:
        """Compare two JSON texts (either may be None: a null key or a tombstone)."""
        if ours == theirs or self.ignored(path):
            return
        if ours is None or theirs is None:
            self.out.append(f"{where} {path}: ours {_show(ours)} != Debezium {_show(theirs)}")
            return
        parsed = []
        for side, txt in (("ours", ours), ("Debezium's", theirs)):
            try:
                parsed.append(json.loads(txt, parse_float=_JsonFloat))
            except ValueError as exc:
                self.out.append(f"{where} {path}: {side} is not valid JSON ({exc}): {txt[:200]!r}")
                return
        self.node(where, path, parsed[0], parsed[1])

    def node(self, where: str, path: str, ours: Any, theirs: Any) -> None:
        if self.ignored(path):
            return
        if isinstance(ours, dict) and isinstance(theirs, dict):
            self.obj(where, path, ours, theirs)
        elif isinstance(ours, list) and isinstance(theirs, list):
            if len(ours) != len(theirs):
                self.out.append(f"{where} {path}: ours has {len(ours)} items, Debezium {len(theirs)}")
            for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
                self.node(where, f"{path}[{i}]", a, b)
        elif type(ours) is not type(theirs) or ours != theirs:
            self.out.append(f"{where} {path}: ours {_show(ours)} != Debezium {_show(theirs)}")

    def obj(self, where: str, path: str, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
        ours_keys = [k for k in ours if not self.ignored(f"{path}.{k}")]
        theirs_keys = [k for k in theirs if not self.ignored(f"{path}.{k}")]
        for key in theirs_keys:
            if key not in ours:
                self.out.append(f"{where} {path}.{key}: missing in ours (Debezium {_show(theirs[key])})")
        for key in ours_keys:
            if key not in theirs:
                self.out.append(f"{where} {path}.{key}: not in Debezium's (ours {_show(ours[key])})")
            else:
                self.node(where, f"{path}.{key}", ours[key], theirs[key])
        common_ours = [k for k in ours_keys if k in theirs]
        common_theirs = [k for k in theirs_keys if k in ours]
        if self.check_order and common_ours != common_theirs:
            self.out.append(
                f"{where} {path}: field order differs: ours {common_ours}, Debezium {common_theirs}"
            )

    def headers(self, where: str, ours: Mapping[str, str], theirs: Mapping[str, str]) -> None:
        for name in sorted(set(ours) | set(theirs)):
            path = f"headers.{name}"
            if self.ignored(path):
                continue
            if name not in ours or name not in theirs:
                side = "ours" if name not in ours else "Debezium's"
                self.out.append(f"{where} {path}: missing in {side} headers")
            else:
                self.text(where, path, ours[name], theirs[name])


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    text = value.text if isinstance(value, _JsonFloat) else json.dumps(value, default=repr)
    return text if len(text) <= 300 else text[:300] + "..."


def _by_topic(records: Iterable[tuple[str, Any]]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for topic, rec in records:
        grouped.setdefault(topic, []).append(rec)
    return grouped


def _summary(key: str | None, value: str | None) -> str:
    op = "tombstone"
    if value is not None:
        try:
            op = str(json.loads(value).get("op", "?"))
        except (ValueError, AttributeError):
            op = "?"
    return f"op={op} key={key}"


def diff_records(
    ours: Sequence[OurRecord],
    theirs: Sequence[DbzRecord],
    *,
    ignore: frozenset[str] = DEFAULT_IGNORE,
    check_order: bool = True,
) -> list[str]:
    """Human-readable differences between our records and Debezium's; empty when they agree.

    Args:
        ours: ``(topic, key, value)`` or ``(topic, key, value, headers)`` tuples, in emit order.
            Headers are compared only for records that carry them.
        theirs: Debezium's records (from :func:`run_debezium_postgres`), in delivery order.
        ignore: paths to skip: exact (``value.source.lsn``), a subtree (``value.source``) or a
            glob (``headers.__debezium.context.*``). Pass ``DEFAULT_IGNORE | {...}`` to extend.
        check_order: also report object members that come in a different order.

    Returns:
        One line per difference, e.g. ``shop.public.t[0] value.after.price: ours 1 != Debezium 2``.
    """
    differ = _Differ(ignore, check_order)
    mine = _by_topic((r[0], r) for r in ours)
    dbz = _by_topic((r.topic, r) for r in theirs)
    for topic in [*mine, *(t for t in dbz if t not in mine)]:
        a, b = mine.get(topic, []), dbz.get(topic, [])
        if len(a) != len(b):
            differ.out.append(f"{topic}: ours has {len(a)} records, Debezium {len(b)}")
        for i, (o, t) in enumerate(zip(a, b, strict=False)):
            where = f"{topic}[{i}]"
            differ.text(where, "key", o[1], t.key)
            differ.text(where, "value", o[2], t.value)
            if len(o) > 3:
                differ.headers(where, o[3], t.headers)
        for i in range(len(b), len(a)):
            differ.out.append(f"{topic}[{i}]: only in ours: {_summary(a[i][1], a[i][2])}")
        for i in range(len(a), len(b)):
            differ.out.append(f"{topic}[{i}]: only in Debezium's: {_summary(b[i].key, b[i].value)}")
    return differ.out
