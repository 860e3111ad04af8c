"""Builds pipeline YAML for a MariaDB test database (source ``my``, ``connector: mariadb``)."""

from __future__ import annotations

from typing import Any

SOURCE = "my"


def mariadb_pipeline_text(root: str, args: dict[str, Any], *, server_id: int, capture: dict[str, Any] | None = None,
                          silver: list[dict[str, str]] | None = None, **options: str) -> str:
    """A one-source pipeline capturing ``args['database']``.

    Args:
        root: the lakehouse root.
        args: ``pymysql.connect`` keyword arguments (host, port, user, database; no password).
        server_id: ``database.server.id``: unique among the binlog readers running at a time.
        capture: the ``capture:`` settings (``commit_interval_ms``, ``commit_max_records``...).
        silver: ``silver:`` table declarations (``{table, source}``...).
        options: connector options over the defaults (fast retries and polls).
    """
    opts = {"database.include.list": str(args["database"]), "database.server.id": str(server_id),
            "errors.retry.delay.initial.ms": "100", "errors.retry.delay.max.ms": "400", "poll.interval.ms": "100",
            **options}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    cap = ("    capture: {" + ", ".join(f"{k}: {v}" for k, v in capture.items()) + "}\n") if capture else ""
    text = (f'pipeline: my_test\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: {SOURCE}\n'
            f"    connector: mariadb\n"
            f"    connection: {{host: {args['host']}, port: {args['port']}, user: {args['user']}}}\n"
            f"{cap}    options:\n{lines}")
    if silver:
        text += "silver:\n" + "".join("  - {" + ", ".join(f"{k}: {v}" for k, v in t.items()) + "}\n"
                                      for t in silver)
    return text
