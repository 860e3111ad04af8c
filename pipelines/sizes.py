"""Byte sizes as people write and read them (``5GB``, ``512MiB``, ``1.2 GB``)."""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """``5GB`` -> bytes (units are powers of 1024, as PostgreSQL's settings).

    Raises:
        ValueError: not a size.
    """
    m = _SIZE.fullmatch(text)
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (a number with B, kB, MB, GB or TB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: int | None) -> str:
    """Bytes for people: ``1.2 GB``; ``-`` for None."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(size) < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
