"""``engine:`` in the pipeline YAML, as a typed model. Imports no Spark.

The session factory that acts on it is `pipelines.engine` (which needs pyspark); this module
stays importable by the capture and validation paths of an install without the Spark extras.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["EngineSpec"]


class EngineSpec(BaseModel):
    """Which Spark runs the silver jobs: embedded Sail, classic Spark, or a Spark Connect URL.

    Attributes:
        kind: ``sail``, ``spark`` or ``connect``.
        url: the Spark Connect URL (``sc://host:port``), for ``connect`` only.
        conf: Spark settings applied to the session.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["sail", "spark", "connect"] = "sail"
    url: str | None = None
    conf: dict[str, str] = {}

    @model_validator(mode="after")
    def _url_rules(self) -> EngineSpec:
        if self.kind == "connect" and not (self.url or "").startswith("sc://"):
            raise ValueError("engine kind 'connect' needs url: sc://host:port")
        if self.kind != "connect" and self.url is not None:
            raise ValueError(f"url is only used with kind 'connect', not {self.kind!r}")
        return self
