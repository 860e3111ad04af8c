"""Whole-file validation: the pipeline schema and every source's connector options at once."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cdc_sources.common.options import kafka_connect_warnings
from cdc_sources.spi import ConfigError, ConfigProblem, Connector
from pipelines.config import PipelineConfig, SourceSpec, nearest_line, pydantic_problems, read_yaml, redact
from pipelines.cross_checks import cross_entry_problems, truncate_warnings
from pipelines.gcs_credentials import gcs_key_problems
from pipelines.object_store import commit_safety_problems
from pipelines.paths import resolve_paths
from pipelines.registry import build_connector, declared_options

__all__ = ["ConfigError", "ValidatedPipeline", "load_validated"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ValidatedPipeline:
    """A pipeline file whose schema and connector options are all valid."""

    config: PipelineConfig
    path: Path
    connectors: dict[str, Connector]


def load_validated(path: str | Path, *, env: Mapping[str, str] | None = None,
                   secrets: bool = True, connectors: bool = True) -> ValidatedPipeline:
    """Read a pipeline file and validate everything that can be checked without connecting.

    ``secrets=False``: for commands that never connect to a source (silver, status): source
    passwords given as ``${VAR}`` are not resolved, so their variables need not be set, and a
    missing connection key (``user``...) is no error. ``connectors=False``: for commands that
    only read the lakehouse (silver, status): the connectors' options are not checked, so their
    drivers need not be installed; ``connectors`` in the result is then empty.

    Raises:
        ConfigError: every problem found, each with file, line and key path.
    """
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError([ConfigProblem("", f"cannot read the file: {exc.strerror}")], file=file) from None
    doc = read_yaml(text, file=file, env=os.environ if env is None else env, secrets=secrets)
    data, lines = doc.data, doc.lines
    problems: list[ConfigProblem] = []
    config: PipelineConfig | None = None
    try:
        config = PipelineConfig.model_validate(data)
    except ValidationError as exc:
        problems.extend(pydantic_problems(exc, lines))
    if config is not None:
        problems.extend(cross_entry_problems(config, lines))
        problems.extend(commit_safety_problems(config.lakehouse.root, config.lakehouse.storage_options,
                                               os.environ if env is None else env, lines))
        problems.extend(gcs_key_problems(config.lakehouse.root, config.lakehouse.storage_options,
                                         os.environ if env is None else env, lines))
    specs = list(enumerate(config.sources)) if config else _valid_sources(data.get("sources"))
    built: dict[str, Connector] = {}
    for index, spec in specs if connectors else []:
        connector, found = build_connector(spec, f"sources[{index}]")
        problems.extend(ConfigProblem(p.path, p.message, p.line or nearest_line(p.path, lines)) for p in found
                        if secrets or not _missing_connection_key(p))
        if connector is not None:
            built[spec.name] = connector
    if problems or config is None:
        raise ConfigError([redact(p, doc) for p in problems], file=file)
    for spec in config.sources:
        for warning in kafka_connect_warnings(spec.options, source=spec.name,
                                              declared=declared_options(spec.connector)):
            log.warning("%s", warning)
    for warning in truncate_warnings(config, lines, file=file):
        log.warning("%s", warning)
    return ValidatedPipeline(resolve_paths(config, path.parent), path, built)


def _missing_connection_key(problem: ConfigProblem) -> bool:
    return (bool(re.fullmatch(r"sources\[\d+\]\.connection\.\w+", problem.path))
            and problem.message.startswith("is required"))


def _valid_sources(raw: Any) -> list[tuple[int, SourceSpec]]:
    """The source entries that are valid on their own, when the file as a whole is not."""
    out = []
    for index, item in enumerate(raw if isinstance(raw, list) else []):
        try:
            out.append((index, SourceSpec.model_validate(item)))
        except ValidationError:
            continue
    return out
