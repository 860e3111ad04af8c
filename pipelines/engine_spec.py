"""``engine:`` in the pipeline YAML, as a typed model. Imports no Spark.

The session factory that acts on it is `pipelines.engine` (which needs pyspark); this module
stays importable by the capture and validation paths of an install without the Spark extras.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DEFAULT_SERVER_MEMORY_MB", "SERVER_RESTART_MAX_DELAY_MS", "EngineSpec"]

DEFAULT_SERVER_MEMORY_MB = 512
"""``engine.server_memory_mb``'s default: the Sail server's resident memory that makes a looping
run restart it between passes."""

SERVER_RESTART_MAX_DELAY_MS = 10_000
"""The longest wait between two tries of a Sail server restart (unless ``server_restart_delay_ms`` is longer)."""


class EngineSpec(BaseModel):
    """Which Spark runs the silver jobs: embedded Sail, classic Spark, or a Spark Connect URL.

    Attributes:
        kind: ``sail``, ``spark`` or ``connect``.
        url: the Spark Connect URL (``sc://host:port``), for ``connect`` only.
        conf: Spark settings applied to the session.
        server: ``sail`` only: where the Sail server runs. ``auto`` (default): in a child process
            for looping runs (``run``, ``silver`` without ``--once``), in this process otherwise;
            ``process``: always a child process; ``embedded``: always in this process.
        server_memory_mb: ``sail`` only, with the server in a child process: between two silver
            passes the server is restarted when its resident memory exceeds this (MB).
        server_port: ``sail`` only, with the server in a child process: the loopback port it listens
            on (0, the default: any free port).
        server_restart_retries: ``sail`` only: how often a restart whose new server fails to start
            is tried again before the run ends with exit 1.
        server_restart_delay_ms: ``sail`` only: the wait before the first of those retries, doubled
            at each further one up to `SERVER_RESTART_MAX_DELAY_MS` (or this, if longer).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["sail", "spark", "connect"] = "sail"
    url: str | None = None
    conf: dict[str, str] = {}
    server: Literal["auto", "process", "embedded"] = "auto"
    server_memory_mb: int = Field(default=DEFAULT_SERVER_MEMORY_MB, gt=0)
    server_port: int = Field(default=0, ge=0, le=65535)
    server_restart_retries: int = Field(default=5, ge=0)
    server_restart_delay_ms: int = Field(default=300, ge=1)

    @model_validator(mode="after")
    def _url_rules(self) -> EngineSpec:
        if self.kind == "connect" and not (self.url or "").startswith("sc://"):
            raise ValueError("engine kind 'connect' needs url: sc://host:port")
        if self.kind != "connect" and self.url is not None:
            raise ValueError(f"url is only used with kind 'connect', not {self.kind!r}")
        sail_only = sorted({"server", "server_memory_mb", "server_port", "server_restart_retries",
                            "server_restart_delay_ms"} & self.model_fields_set)
        if self.kind != "sail" and sail_only:
            raise ValueError(f"{' and '.join(sail_only)} only apply to kind 'sail', not {self.kind!r}")
        return self

    def sail_in_child(self, *, looping: bool) -> bool:
        """Whether a Sail session for this spec runs its server in a child process."""
        return self.kind == "sail" and (self.server == "process" or (self.server == "auto" and looping))
