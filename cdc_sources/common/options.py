"""Debezium-style connector options: specs, parsing and validation.

Each connector declares its options as `OptionSpec`s with Debezium's names and defaults. An
`OptionSet` parses the ``options:`` mapping of a pipeline YAML source, reporting every problem
at once (unknown names with a suggestion, bad values with the valid ones), and returns typed
values. Options Debezium has but that do not apply to a connector writing to bronze (Kafka
topics, JMX, converters) are declared ``inert``: accepted, so Debezium configs move over
unchanged, and logged as having no effect.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from cdc_sources.spi import ConfigProblem

Kind = Literal["string", "int", "bool", "enum", "list"]


@dataclass(frozen=True)
class OptionSpec:
    """One connector option.

    Attributes:
        name: Debezium's property name.
        default: Debezium's default, as text; None when there is none.
        kind: how the value is parsed.
        choices: the valid values of an ``enum`` (lower-case).
        aliases: deprecated values mapped to their replacement (``never`` -> ``no_data``).
        minimum: the smallest valid value of an ``int``.
        inert: accepted for compatibility but without effect when writing to bronze.
        doc: one line saying what the option does.
    """

    name: str
    default: str | None = None
    kind: Kind = "string"
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    minimum: int | None = None
    inert: bool = False
    doc: str = ""


@dataclass(frozen=True)
class PrefixSpec:
    """A family of options sharing a name pattern (``column.mask.with.<n>.chars``).

    Attributes:
        pattern: a regex the whole option name must match.
        doc: what the family does.
        inert: accepted without effect.
    """

    pattern: str
    doc: str = ""
    inert: bool = False


RELATIONAL_PREFIXES = (
    PrefixSpec(r"column\.truncate\.to\.\d+\.chars", "truncate long strings"),
    PrefixSpec(r"column\.mask\.with\.\d+\.chars", "mask with asterisks"),
    PrefixSpec(r"column\.mask\.hash\..+", "hash-mask"),
    PrefixSpec(r"snapshot\.select\.statement\.overrides\..+", "per-table snapshot SELECT"),
)
"""Option families every relational connector of Debezium has: the column rules (read by
`cdc_sources.common.column_rules`) and the per-table snapshot SELECT."""

KAFKA_PREFIXES = (
    PrefixSpec(r"signal\.(kafka|consumer)\..+", "Kafka signal channel", inert=True),
    PrefixSpec(r"notification\..+", "notifications", inert=True),
    PrefixSpec(r"(key|value|header)\.converter\..+", "Kafka Connect converters", inert=True),
    PrefixSpec(r"transforms\..+", "Kafka Connect single message transforms", inert=True),
    PrefixSpec(r"predicates\..+", "Kafka Connect transform predicates", inert=True),
    PrefixSpec(r"errors\.(log\..+|deadletterqueue\..+|retry\..+)", "Kafka Connect error handling",
               inert=True),
    PrefixSpec(r"topic\.creation\..+", "Kafka topic creation", inert=True),
    PrefixSpec(r"(producer|consumer|admin)\.override\..+", "Kafka client overrides", inert=True),
    PrefixSpec(r"schema\.history\.internal\.(kafka|producer|consumer)\..+",
               "Kafka schema history topic and its Kafka clients", inert=True),
)
"""Option families of Kafka and Kafka Connect: accepted without effect by every connector."""

KAFKA_CONNECT_OPTIONS = (
    OptionSpec("key.converter", inert=True), OptionSpec("value.converter", inert=True),
    OptionSpec("header.converter", inert=True),
    OptionSpec("key.converter.schemas.enable", inert=True), OptionSpec("value.converter.schemas.enable", inert=True),
    OptionSpec("offset.storage", inert=True), OptionSpec("offset.flush.interval.ms", inert=True),
    OptionSpec("transforms", inert=True), OptionSpec("predicates", inert=True),
    OptionSpec("errors.tolerance", inert=True), OptionSpec("config.action.reload", inert=True),
    OptionSpec("exactly.once.support", inert=True), OptionSpec("transaction.boundary", inert=True),
    OptionSpec("transaction.boundary.interval.ms", inert=True), OptionSpec("offsets.storage.topic", inert=True),
    OptionSpec("topic.creation.groups", inert=True),
)
"""Kafka Connect worker and connector options found in Debezium configurations: accepted
without effect."""

SCHEMA_HISTORY_STORE_OPTIONS = (
    OptionSpec("schema.history.internal", "io.debezium.storage.kafka.history.KafkaSchemaHistory", inert=True),
    OptionSpec("schema.history.internal.name", inert=True),
    OptionSpec("schema.history.internal.connector.class", inert=True),
    OptionSpec("schema.history.internal.connector.id", inert=True),
    OptionSpec("schema.history.internal.kafka.topic", inert=True),
    OptionSpec("schema.history.internal.kafka.bootstrap.servers", inert=True),
    OptionSpec("schema.history.internal.kafka.recovery.poll.interval.ms", "100", "int", inert=True),
    OptionSpec("schema.history.internal.kafka.recovery.attempts", "100", "int", inert=True),
    OptionSpec("schema.history.internal.kafka.query.timeout.ms", "3000", "int", inert=True),
    OptionSpec("schema.history.internal.kafka.create.timeout.ms", "30000", "int", inert=True),
    OptionSpec("schema.history.internal.kafka.buffer.batch.size", "1024", "int", inert=True),
    OptionSpec("schema.history.internal.file.filename", inert=True),
)
"""Where Debezium keeps a schema-history connector's history (Kafka or a file): accepted without
effect, since capture keeps it in bronze (MySQL/MariaDB, SQL Server)."""

ENGINE_INTERNAL_OPTIONS = (
    OptionSpec("transaction.metadata.factory", "io.debezium.pipeline.txmetadata.DefaultTransactionMetadataFactory",
               inert=True),
    OptionSpec("memory.management.schemas.class", "io.debezium.relational.ConcurrentMapTableMappingStorage",
               inert=True),
    OptionSpec("memory.management.tables.class", "io.debezium.relational.ConcurrentMapTableMappingStorage",
               inert=True),
    OptionSpec("statistics.metrics.enabled", "true", "bool", inert=True),
    OptionSpec("executor.shutdown.timeout.ms", "4000", "int", minimum=1, inert=True),
    OptionSpec("queue.provider.type", "memory", inert=True),
    OptionSpec("post.processors", inert=True),
    OptionSpec("custom.metric.tags", inert=True),
    OptionSpec("custom.sanitize.pattern", r".*secret$|.*password$|.*sasl\.jaas\.config$|.*basic\.auth\.user\.info|"
               r".*registry\.auth\.client-secret|.*credentials\.json$|.*connectionstring$|.*connection\.string$",
               inert=True),
    OptionSpec("openlineage.integration.enabled", "false", "bool", inert=True),
    OptionSpec("openlineage.integration.config.file.path", "./openlineage.yml", inert=True),
    OptionSpec("openlineage.integration.dataset.kafka.bootstrap.servers", inert=True),
    OptionSpec("openlineage.integration.job.description", "Debezium change data capture job", inert=True),
    OptionSpec("openlineage.integration.job.namespace", inert=True),
    OptionSpec("openlineage.integration.job.owners", kind="list", inert=True),
    OptionSpec("openlineage.integration.job.tags", kind="list", inert=True),
)
"""Debezium engine internals without meaning here (metrics, queues, OpenLineage): accepted
without effect (MySQL/MariaDB, SQL Server)."""

_KAFKA_CONNECT_NAMES = frozenset(s.name for s in KAFKA_CONNECT_OPTIONS) | {"connector.class", "tasks.max"}
_KAFKA_CONNECT_FAMILIES = [re.compile(p.pattern) for p in KAFKA_PREFIXES]
_UNWRAP = "io.debezium.transforms.ExtractNewRecordState"


def is_kafka_connect_option(name: str) -> bool:
    """True for the Kafka / Kafka Connect options every connector accepts without effect."""
    return name in _KAFKA_CONNECT_NAMES or any(rx.fullmatch(name) for rx in _KAFKA_CONNECT_FAMILIES)


def kafka_connect_warnings(options: Mapping[str, Any], *, source: str, declared: OptionSet | None = None) -> list[str]:
    """What to log, once, about the Kafka-only options of a source's ``options:`` (none: []).

    ``declared``: the connector's options; a name it declares with an effect is not Kafka-only
    there (``errors.retry.delay.max.ms`` is Kafka Connect's and the Debezium engine's retry wait).
    """
    effective = {n for n, s in declared.specs.items() if not s.inert} if declared is not None else set()
    names = [str(k) for k in options if is_kafka_connect_option(str(k)) and str(k) not in effective]
    if not names:
        return []
    out = [f"source {source}: Kafka/Kafka Connect options have no effect here (bronze stores Debezium's "
           f"change events as they are): {', '.join(names)}"]
    unwrap = sorted(str(k).removesuffix(".type") for k, v in options.items()
                    if re.fullmatch(r"transforms\.[^.]+\.type", str(k)) and str(v).strip() == _UNWRAP)
    if unwrap:
        out.append(f"source {source}: the ExtractNewRecordState transform ({', '.join(unwrap)}) is not applied: "
                   "bronze keeps the full change envelope; declare silver tables (silver: - table: ..., "
                   "source: <topic>) for the flattened current rows, deletes applied")
    return out


@dataclass(frozen=True)
class ParsedOptions:
    """Validated option values: typed getters over the options plus defaults."""

    values: Mapping[str, Any]
    raw: Mapping[str, str]
    inert_used: tuple[str, ...] = ()

    def get(self, name: str) -> Any:
        return self.values[name]

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        return None if value is None else str(value)

    def integer(self, name: str) -> int:
        return int(self.values[name])

    def flag(self, name: str) -> bool:
        return bool(self.values[name])

    def items_with_prefix(self, prefix: str) -> dict[str, str]:
        """The raw options whose names start with ``prefix`` (for option families)."""
        return {k: v for k, v in self.raw.items() if k.startswith(prefix)}


class OptionSet:
    """The options a connector accepts."""

    def __init__(self, specs: Iterable[OptionSpec], prefixes: Iterable[PrefixSpec] = (), *,
                 reference: str = "docs/postgres.md") -> None:
        """``reference``: the document listing the options, named in unknown-option messages."""
        self.specs = {s.name: s for s in specs}
        self.prefixes = [(re.compile(p.pattern), p) for p in prefixes]
        self.reference = reference

    def parse(self, options: Mapping[str, Any], *, path: str) -> tuple[ParsedOptions, list[ConfigProblem]]:
        """Parse ``options`` (the YAML mapping); ``path`` prefixes problem paths."""
        problems: list[ConfigProblem] = []
        raw = {str(k): _as_text(v) for k, v in options.items()}
        values: dict[str, Any] = {}
        inert: list[str] = []
        for name, text in raw.items():
            spec = self.specs.get(name)
            if spec is None:
                family = next((p for rx, p in self.prefixes if rx.fullmatch(name)), None)
                if family is None:
                    problems.append(ConfigProblem(f"{path}.{name}", self._unknown(name)))
                elif family.inert:
                    inert.append(name)
                continue
            if spec.inert:
                inert.append(name)
            value, problem = _convert(spec, text)
            if problem:
                problems.append(ConfigProblem(f"{path}.{name}", problem))
            else:
                values[name] = value
        for name, spec in self.specs.items():
            if name not in values and name not in raw:
                values[name] = _convert(spec, spec.default)[0] if spec.default is not None else None
        return ParsedOptions(values, raw, tuple(inert)), problems

    def _unknown(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self.specs), n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown option {name!r}{hint} (see {self.reference} for the supported options)"


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_as_text(v) for v in value)
    return "" if value is None else str(value)


_CONVERTERS: dict[str, Callable[[OptionSpec, str], tuple[Any, str | None]]] = {}


def _convert(spec: OptionSpec, text: str | None) -> tuple[Any, str | None]:
    if text is None:
        return None, None
    return _CONVERTERS[spec.kind](spec, text.strip())


def _string(spec: OptionSpec, text: str) -> tuple[Any, str | None]:
    return text, None


def _int(spec: OptionSpec, text: str) -> tuple[Any, str | None]:
    try:
        value = int(text)
    except ValueError:
        return None, f"must be a whole number, got {text!r}"
    if spec.minimum is not None and value < spec.minimum:
        return None, f"must be at least {spec.minimum}, got {value}"
    return value, None


def _bool(spec: OptionSpec, text: str) -> tuple[Any, str | None]:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true", None
    return None, f"must be true or false, got {text!r}"


def _enum(spec: OptionSpec, text: str) -> tuple[Any, str | None]:
    lowered = text.lower()
    lowered = spec.aliases.get(lowered, lowered)
    if lowered in spec.choices:
        return lowered, None
    valid = ", ".join(spec.choices)
    return None, f"invalid value {text!r}; valid values: {valid}"


def _list(spec: OptionSpec, text: str) -> tuple[Any, str | None]:
    return tuple(p.strip() for p in text.split(",") if p.strip()), None


_CONVERTERS.update(
    string=_string, int=_int, bool=_bool, enum=_enum, list=_list
)


CUSTOM_MODES = ("snapshot.mode", "snapshot.locking.mode", "snapshot.query.mode")
"""Options whose value ``custom`` plugs in a Java class named by ``<option>.custom.name``."""


def custom_mode_problems(parsed: ParsedOptions, path: str, choices: Mapping[str, Iterable[str]]) -> list[ConfigProblem]:
    """``custom`` snapshot modes: Debezium loads a Java class (``<option>.custom.name``), which a
    connector here cannot; without the class the configuration is not even valid for Debezium.
    ``choices``: option -> its valid values (``custom`` is left out of the suggestion)."""
    problems = []
    for option in CUSTOM_MODES:
        if str(parsed.values.get(option) or "").lower() != "custom":
            continue
        class_option = f"{option}.custom.name"
        builtin = ", ".join(c for c in choices.get(option, ()) if c != "custom")
        if not str(parsed.raw.get(class_option) or "").strip():
            message = (f"'custom' needs {class_option} (the name of a Java plug-in class), which is not given; "
                       f"this connector cannot load Java classes anyway: choose one of {builtin}")
        else:
            message = (f"'custom' plugs in a Java class ({class_option}), which this connector cannot load; "
                       f"choose one of the built-in values: {builtin}")
        problems.append(ConfigProblem(f"{path}.{option}", message))
    return problems
