"""Generated image readers: Python source specialised for a table's columns and a null pattern.

A row image is a null bitmap (one bit per present column) followed by the values of the
present, non-NULL columns. Two kinds of readers are compiled from the columns' `ColumnPlan`s:

* `compile_pattern`: for one null pattern, straight-line code with no NULL test; adjacent
  fixed-width columns of one byte order are read by a single ``struct`` unpack.
* `compile_generic`: for any null pattern, one bit test per nullable present column; used when
  a table shows more null patterns than the decoder keeps compiled readers for.

Both return ``(values, none_sources, position after the image)``, with ``values`` holding every
column of the table map in order and ``none_sources`` the reason of each None value in column
order, as python-mysql-replication builds them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from cdc_sources.mysql.rows.plans import COLS_BITMAP_REASON, NULL_REASON, ColumnPlan, reason

ImageReader = Callable[[bytes, int], tuple[dict[str, Any], dict[str, str], int]]
"""``(data, p) -> (values, none_sources, end)``: reads one row image starting after its null bitmap."""

GenericReader = Callable[[int, bytes, int], tuple[dict[str, Any], dict[str, str], int]]
"""``(nulls, data, p) -> ...``: an `ImageReader` for any null bitmap (``nulls``, as an int)."""


def _exec(source: str, env: dict[str, Any], name: str) -> Any:
    namespace = dict(env)
    exec(compile(source, f"<binlog row image {name}>", "exec"), namespace)  # source built from plans only
    return namespace[name]


def _values(plans: Sequence[ColumnPlan], values: Sequence[str]) -> str:
    """The dict display of a row's values, keyed by column name in table order."""
    return "{" + ", ".join(f"{p.name!r}: {v}" for p, v in zip(plans, values, strict=True)) + "}"


def _env(plans: Sequence[ColumnPlan]) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for plan in plans:
        env.update(plan.env)
    return env


def compile_pattern(plans: Sequence[ColumnPlan], present: Sequence[bool], nulls: int) -> ImageReader:
    """The reader of images whose null bitmap is ``nulls``.

    Args:
        plans: one plan per column of the table map.
        present: per column, whether the image holds it (the event's columns-present bitmap).
        nulls: the null bitmap of the image, bit ``j`` for the ``j``-th present column.
    """
    env = _env(plans)
    lines: list[str] = ["ns = {}"]
    values: list[str] = []
    segment: list[ColumnPlan | str] = []  # fixed columns to unpack together, and reasons in between

    def flush() -> None:
        fixed = [s for s in segment if isinstance(s, ColumnPlan)]
        if fixed:
            unpack = f"_unpack{len(lines)}"
            env[unpack] = struct.Struct(fixed[0].order + "".join(p.fields for p in fixed)).unpack_from
            raws = [r for p in fixed for r in p.raws]
            lines.append(f"{', '.join(raws)}{',' if len(raws) == 1 else ''} = {unpack}(data, p)")
            lines.append(f"p += {sum(p.size for p in fixed)}")
        for item in segment:
            lines.extend(item.body if isinstance(item, ColumnPlan) else (item,))
        segment.clear()

    bit = 0
    for plan, here in zip(plans, present, strict=True):
        if not here:
            values.append("None")
            segment.append(reason(plan.name, COLS_BITMAP_REASON))
            continue
        is_null = nulls >> bit & 1
        bit += 1
        if is_null:
            values.append("None")
            segment.append(reason(plan.name, NULL_REASON))
        elif plan.fields:
            if any(isinstance(s, ColumnPlan) and s.order != plan.order for s in segment):
                flush()
            segment.append(plan)
            values.append(plan.value)
        else:
            flush()
            lines.extend(plan.body)
            values.append(plan.value)
    flush()
    lines.append(f"return {_values(plans, values)}, ns, p")
    source = "def image(data, p):\n" + "".join(f"    {line}\n" for line in lines)
    return _exec(source, env, "image")  # type: ignore[no-any-return]


def compile_generic(plans: Sequence[ColumnPlan], present: Sequence[bool]) -> GenericReader:
    """The reader of images with any null bitmap (tested bit by bit at run time)."""
    env = _env(plans)
    lines: list[str] = ["ns = {}"]
    values: list[str] = []
    bit = 0
    for i, (plan, here) in enumerate(zip(plans, present, strict=True)):
        var = f"v{i}"
        values.append(var)
        if not here:
            lines += [f"{var} = None", reason(plan.name, COLS_BITMAP_REASON)]
            continue
        lines += [f"if nulls & {1 << bit:#x}:", f"    {var} = None", f"    {reason(plan.name, NULL_REASON)}", "else:"]
        bit += 1
        body: list[str] = []
        if plan.fields:
            unpack = f"_unpack{i}"
            env[unpack] = struct.Struct(plan.order + plan.fields).unpack_from
            body += [f"{', '.join(plan.raws)}{',' if len(plan.raws) == 1 else ''} = {unpack}(data, p)",
                     f"p += {plan.size}"]
        body += [*plan.body, f"{var} = {plan.value}"]
        lines += [f"    {line}" for line in body]
    lines.append(f"return {_values(plans, values)}, ns, p")
    source = "def image(nulls, data, p):\n" + "".join(f"    {line}\n" for line in lines)
    return _exec(source, env, "image")  # type: ignore[no-any-return]
