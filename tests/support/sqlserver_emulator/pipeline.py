"""Pipeline YAML for a ``connector: sqlserver`` source on the CDC emulator (source ``ms``)."""

from __future__ import annotations

from typing import Any

from psycopg.conninfo import conninfo_to_dict

SOURCE = "ms"


def sqlserver_pipeline_text(root: str, dsn: str, *, capture: dict[str, Any] | None = None,
                            silver: list[dict[str, str]] | None = None, **options: str) -> str:
    """A one-source pipeline capturing the emulated database of ``dsn`` (fast polls and retries)."""
    info = conninfo_to_dict(dsn)
    opts = {"database.names": str(info["dbname"]), "poll.interval.ms": "100",
            "errors.retry.delay.initial.ms": "100", "errors.retry.delay.max.ms": "400", **options}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    cap = ("    capture: {" + ", ".join(f"{k}: {v}" for k, v in capture.items()) + "}\n") if capture else ""
    text = (f'pipeline: ms_test\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: {SOURCE}\n'
            "    connector: sqlserver\n"
            f"    connection: {{host: {info.get('host', '127.0.0.1')}, port: {info.get('port', 5432)}, "
            f"user: {info.get('user', 'postgres')}}}\n{cap}    options:\n{lines}")
    if silver:
        text += "silver:\n" + "".join("  - {" + ", ".join(f"{k}: {v}" for k, v in t.items()) + "}\n"
                                      for t in silver)
    return text
