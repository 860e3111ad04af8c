"""``cdc-lakehouse import-debezium``: a Kafka Connect connector config -> a pipeline YAML file.

The input is the JSON posted to the Kafka Connect REST API: ``{"name": ..., "config": {...}}``
(``POST /connectors``) or the bare ``config`` map (``PUT /connectors/<name>/config``). The
output is one pipeline file with one source:

* ``connector.class`` becomes ``connector:``; ``topic.prefix`` (else ``name``) the source name;
  ``name`` the pipeline name.
* ``database.hostname``/``port``/``dbname``/``user`` go to ``connection:``; a password is never
  copied: the file refers to ``${<SOURCE>_PASSWORD}`` instead.
* Every other key the connector knows is copied to ``options:`` unchanged.
* Kafka and Kafka Connect settings (converters, ``transforms``, ``predicates``, Connect's
  ``errors.*``, ``topic.creation.*``, ``tasks.max``, the Kafka schema history topic and its
  clients ``schema.history.internal.kafka.*``/``producer.*``/``consumer.*``...) and keys the
  connector does not know are dropped, and every dropped key is listed, with the reason, in
  comments at the top of the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from cdc_sources.common.options import is_kafka_connect_option
from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.config import CONNECTOR_ALIASES, SourceSpec
from pipelines.registry import CONNECTORS, build_connector

_CONNECTION_KEYS = {"database.hostname": "host", "database.port": "port", "database.user": "user"}
_DBNAME = {"postgres": "database.dbname"}  # MySQL/MariaDB connect to the server, not a database
_UNWRAP = "io.debezium.transforms.ExtractNewRecordState"


@dataclass
class ImportedPipeline:
    """The pipeline YAML made from a connector config.

    Attributes:
        text: the YAML file, its header comments listing every dropped key.
        dropped: (key, reason) for every key of the input not in the file.
        notes: things to check or add by hand.
    """

    text: str = ""
    dropped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def import_debezium(text: str, *, file: str, root: str = "./lakehouse") -> ImportedPipeline:
    """Turn Kafka Connect connector JSON into pipeline YAML (see module doc).

    Raises:
        ConfigError: malformed JSON, no or an unsupported ``connector.class``.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError([ConfigProblem("", f"malformed JSON: {exc.msg}", exc.lineno)], file=file) from None
    if not isinstance(document, dict):
        raise ConfigError([ConfigProblem("", "expected a JSON object (a Kafka Connect connector config)", 1)],
                          file=file)
    wrapped = isinstance(document.get("config"), dict)
    config = {str(k): _text(v) for k, v in (document["config"] if wrapped else document).items()}
    where = "config." if wrapped else ""
    pipeline_name = str(document.get("name") or config.get("name") or "")

    def problem(key: str, message: str) -> ConfigError:
        return ConfigError([ConfigProblem(f"{where}{key}", message, _line_of(text, key))], file=file)

    class_name = config.get("connector.class", "").strip()
    if not class_name:
        raise problem("connector.class", "is required: the Debezium connector class")
    connector = CONNECTOR_ALIASES.get(class_name.lower(), class_name.lower())
    if connector not in CONNECTORS:
        supported = ", ".join(c for c, alias in sorted(CONNECTOR_ALIASES.items())
                              if alias in CONNECTORS and "." in c)
        raise problem("connector.class", f"{class_name!r} cannot be imported; supported: {supported} "
                                         f"(connector: {', '.join(sorted(CONNECTORS))})")
    result = ImportedPipeline()
    name = _name(config.get("topic.prefix") or pipeline_name or connector)
    connection, options = _split(config, connector, name, result)
    if config.get("topic.prefix") and config["topic.prefix"] != name:
        options["topic.prefix"] = config["topic.prefix"]
    _drop_unknown(name, connector, connection, options, result)
    source: dict[str, Any] = {"name": name, "connector": connector, "connection": connection, "options": options}
    body = {"pipeline": _name(pipeline_name or name), "lakehouse": {"root": root}, "sources": [source]}
    result.text = _header(file, result) + yaml.safe_dump(body, sort_keys=False, default_flow_style=False)
    return result


def _split(config: dict[str, str], connector: str, name: str,
           result: ImportedPipeline) -> tuple[dict[str, Any], dict[str, str]]:
    connection: dict[str, Any] = {}
    options: dict[str, str] = {}
    keys = {**_CONNECTION_KEYS, **({_DBNAME[connector]: "database"} if connector in _DBNAME else {})}
    for key, value in config.items():
        if key in ("connector.class", "name", "topic.prefix"):
            continue
        if key in keys:
            connection[keys[key]] = int(value) if keys[key] == "port" and value.isdigit() else value
        elif key == "database.password":
            variable = f"{name.upper().replace('-', '_').replace('.', '_')}_PASSWORD"
            connection["password"] = f"${{{variable}}}"
            result.dropped.append((key, f"not copied: the file reads it from ${{{variable}}} (set it in the "
                                        "environment)"))
        elif is_kafka_connect_option(key):
            result.dropped.append((key, "a Kafka or Kafka Connect setting: no effect here"))
        else:
            options[key] = value
    unwrap = [k for k, v in config.items() if re.fullmatch(r"transforms\.[^.]+\.type", k) and v.strip() == _UNWRAP]
    if unwrap:
        result.notes.append("ExtractNewRecordState is not applied (bronze keeps the full change events): add "
                            "silver: entries (- table: <name>, source: <topic>) for current rows per key")
    return connection, options


def _drop_unknown(name: str, connector: str, connection: dict[str, Any], options: dict[str, str],
                  result: ImportedPipeline) -> None:
    """Drop the options the connector does not know; note every other problem left in the file."""
    spec = SourceSpec.model_validate({"name": name, "connector": connector, "connection": connection,
                                      "options": options})
    _, problems = build_connector(spec, "sources[0]")
    for p in problems:
        key = p.path.removeprefix("sources[0].options.")
        if key in options and p.message.startswith("unknown option"):
            del options[key]
            result.dropped.append((key, f"not an option of this connector ({p.message})"))
        elif not p.path.endswith(".connection.password"):
            result.notes.append(f"{p.path}: {p.message}")


def _header(file: str, result: ImportedPipeline) -> str:
    lines = [f"# Imported from {file} by cdc-lakehouse import-debezium."]
    if result.dropped:
        lines.append("# Dropped keys (not copied into this file):")
        lines += [f"#   {key}: {reason}" for key, reason in result.dropped]
    if result.notes:
        lines.append("# To check:")
        lines += [f"#   {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def _name(text: str) -> str:
    """``text`` as a pipeline or source name (letters, digits, ``_``, ``.``, ``-``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]", "_", text.strip())
    return cleaned if cleaned and cleaned[0] not in ".-" else f"x{cleaned}"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _line_of(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if f'"{key}"' in line:
            return number
    return None
