"""Character sets: which one a collation belongs to, and which one a new table gets.

A MySQL/MariaDB collation name starts with its character set name and an underscore
(``utf8mb4_general_ci`` -> ``utf8mb4``, ``latin1_swedish_ci`` -> ``latin1``); ``binary`` is its
own. Debezium looks collations up in MySQL Connector/J's table of MySQL collations, where this
rule holds for every entry; for a collation missing from that table (MariaDB's
``utf8mb4_uca1400_ai_ci``, the old ``utf8_general_ci`` spelling) Debezium finds no character set
and falls back to the server's, while the rule still gives the right one.
"""

from __future__ import annotations

__all__ = ["charset_of_collation"]


def charset_of_collation(collation: str) -> str | None:
    """The character set of ``collation`` (None if the name has no charset prefix)."""
    name = collation.strip().lower()
    if name == "binary":
        return "binary"
    underscore = name.find("_")
    return name[:underscore] if underscore > 0 else None
