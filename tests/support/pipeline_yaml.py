"""Builds pipeline YAML for a test database."""

from __future__ import annotations

from typing import Any

from pipelines.config import PipelineConfig, parse_pipeline


def dsn_parts(dsn: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in dsn.split())


def pipeline_text(root: str, dsn: str, *, name: str = "pg", user: str | None = None,
                  password: str | None = None, capture: dict[str, Any] | None = None, **options: str) -> str:
    parts = dsn_parts(dsn)
    slot = "s_" + parts["dbname"][-40:].lower()
    opts = "".join(f'      {k}: "{v}"\n' for k, v in {"slot.name": slot, **options}.items())
    pw = f", password: \"{password}\"" if password is not None else ""
    cap = ""
    if capture:
        cap = "    capture: {" + ", ".join(f"{k}: {v}" for k, v in capture.items()) + "}\n"
    return (f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: {name}\n    connector: postgres\n'
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, "
            f"user: {user or parts['user']}{pw}}}\n    options:\n{opts}{cap}")


def pipeline(root: str, dsn: str, **kwargs: Any) -> PipelineConfig:
    return parse_pipeline(pipeline_text(root, dsn, **kwargs), env={})
