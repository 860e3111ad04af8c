"""Paths in a pipeline file are relative to the file's folder, not to the working directory."""

from __future__ import annotations

from pathlib import Path

from pipelines.config import PipelineConfig


def _resolve(location: str, folder: Path) -> str:
    if "://" in location or Path(location).is_absolute():
        return location
    return str((folder / location).resolve())


def resolve_paths(config: PipelineConfig, folder: Path) -> PipelineConfig:
    """``config`` with its relative local paths (the lakehouse root, the silver state location)
    made absolute against ``folder``; URIs and absolute paths are kept."""
    lakehouse = config.lakehouse.model_copy(update={"root": _resolve(config.lakehouse.root, folder)})
    silver = config.silver_options
    if silver.state_location is not None:
        silver = silver.model_copy(update={"state_location": _resolve(silver.state_location, folder)})
    return config.model_copy(update={"lakehouse": lakehouse, "silver_options": silver})
