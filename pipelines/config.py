"""Pipeline YAML: loading, ``${ENV}`` interpolation, validation with file/line/key errors.

A pipeline file is parsed into typed objects before anything connects or starts Spark. Every
problem is reported at once, each with the file, line and dotted key path, and the valid
values where there is a fixed set. Secrets come from ``${VAR}`` references or from the
environment override ``CDC__SOURCES__<NAME>__PASSWORD`` and are held as `SecretStr`, so they
never print.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.engine_spec import EngineSpec
from pipelines.maintenance.options import MaintenanceOptions
from silver.declarations import SilverOptions, SilverTable

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
_SCHEMA_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Connection(_Strict):
    """How to reach a source database. ``password`` should be a ``${ENV}`` reference.

    A key left out may be given as its Debezium option instead (``database.hostname``...);
    ``host`` defaults to 127.0.0.1 when neither is given."""

    host: str | None = None
    port: int | None = None
    database: str | None = None
    user: str | None = None
    password: SecretStr | None = None
    sslmode: str | None = None


class CaptureSettings(_Strict):
    """How a capture task batches commits to bronze (not Debezium options).

    Attributes:
        commit_interval_ms: the longest a change waits before it is committed to bronze.
        commit_max_records: a batch is committed once it holds this many records.
        commit_max_bytes: records in memory are written to the batch's data files (staged,
            not yet committed) once they hold this many bytes of key/value/position text
            (bounds memory: at most one buffer is being written while the next one fills).
    """

    commit_interval_ms: int = Field(1000, ge=10)
    commit_max_records: int = Field(200_000, ge=1)
    commit_max_bytes: int = Field(8 * 1024 * 1024, ge=1024)


CONNECTOR_ALIASES = {
    "postgresql": "postgres",
    "io.debezium.connector.postgresql.postgresconnector": "postgres",
    "io.debezium.connector.mysql.mysqlconnector": "mysql",
    "io.debezium.connector.mariadb.mariadbconnector": "mariadb",
    "io.debezium.connector.sqlserver.sqlserverconnector": "sqlserver",
    "io.debezium.connector.oracle.oracleconnector": "oracle",
}
"""Debezium's connector names and ``connector.class`` values -> ``connector:`` (lower-cased)."""


class SourceSpec(_Strict):
    """One source database: a connector, its connection and its Debezium options.

    ``connector`` also accepts Debezium's names (``postgresql``) and connector class names
    (``io.debezium.connector.postgresql.PostgresConnector``), see `CONNECTOR_ALIASES`.
    ``bronze_catalog`` (``[catalog.]schema``): where the silver job registers the bronze tables it
    reads by name (`pipelines.bronze_names`).
    """

    name: str = Field(pattern=_NAME)
    connector: Literal["postgres", "mysql", "mariadb", "sqlserver", "oracle"]
    connection: Connection = Field(default_factory=Connection)
    options: dict[str, Any] = {}
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    bronze_catalog: str | None = Field(None, pattern=_SCHEMA_NAME)

    @field_validator("connector", mode="before")
    @classmethod
    def _connector_alias(cls, value: Any) -> Any:
        if isinstance(value, str):
            return CONNECTOR_ALIASES.get(value.strip().lower(), value)
        return value


class Lakehouse(_Strict):
    """Where the tables live: a path or URI, plus object-store options."""

    root: str
    storage_options: dict[str, str] = {}


class PipelineConfig(_Strict):
    """A whole pipeline file."""

    version: Literal[1] = 1
    pipeline: str = Field(pattern=_NAME)
    lakehouse: Lakehouse
    engine: EngineSpec = Field(default_factory=EngineSpec)
    sources: list[SourceSpec] = Field(min_length=1)
    silver: list[SilverTable] = []
    silver_options: SilverOptions = Field(default_factory=SilverOptions)
    maintenance: MaintenanceOptions = Field(default_factory=MaintenanceOptions)

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, sources: list[SourceSpec]) -> list[SourceSpec]:
        names = [s.name for s in sources]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"source names must be unique; repeated: {', '.join(dupes)}")
        return sources

    def topic_prefixes(self) -> dict[str, str]:
        """Source name -> the prefix of its bronze topics (``topic.prefix``, default the name)."""
        return {s.name: str(s.options.get("topic.prefix") or s.name) for s in self.sources}

    def silver_state_location(self) -> str:
        """Where silver keeps progress, staging and quality results (``silver_options.state_location``,
        default ``<root>/silver/_cdc``), without a trailing slash."""
        root = self.lakehouse.root.rstrip("/")
        return (self.silver_options.state_location or f"{root}/silver/_cdc").rstrip("/")

    def source(self, name: str) -> SourceSpec:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(name)


def parse_pipeline(text: str, *, file: str = "<string>", env: Mapping[str, str]) -> PipelineConfig:
    """Validate pipeline YAML text (the pipeline model only; `pipelines.validation.load_validated`
    reads a file and checks everything else).

    Raises:
        ConfigError: with every problem found, each naming the file, line and key.
    """
    doc = read_yaml(text, file=file, env=env)
    try:
        return PipelineConfig.model_validate(doc.data)
    except ValidationError as exc:
        raise ConfigError([redact(p, doc) for p in pydantic_problems(exc, doc.lines)], file=file) from None


@dataclass(frozen=True)
class YamlDocument:
    """A parsed pipeline document before schema validation.

    Attributes:
        data: the mapping, with ``${VAR}`` references and ``CDC__...`` overrides applied.
        lines: key path -> 1-based line.
        origins: key path -> the environment variable(s) its value came from, so messages can
            name the variable and never echo a value that may be a secret.
        values: key path -> the text substituted from the environment (to keep out of messages).
    """

    data: dict[str, Any]
    lines: dict[str, int]
    origins: dict[str, str]
    values: dict[str, str]


def _is_secret(path: str) -> bool:
    """A source's password: ``sources[i].connection.password`` or its Debezium spelling."""
    return bool(re.fullmatch(r"sources\[\d+\]\.(connection\.password|options\.database\.password)", path))


def read_yaml(text: str, *, file: str, env: Mapping[str, str], secrets: bool = True) -> YamlDocument:
    """Parse YAML, apply ``CDC__SOURCES__<NAME>__<KEY>`` overrides, then interpolate ``${VAR}``.

    ``secrets=False`` (commands that never connect to a source): a source password that refers
    to a variable is left unresolved (``None``), so an unset variable is no error.

    Raises:
        ConfigError: malformed YAML, a non-mapping document, a key given twice, or unset variables.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        msg = f"malformed YAML: {getattr(exc, 'problem', None) or exc}"
        raise ConfigError([ConfigProblem("", msg, line)], file=file) from None
    lines = _line_index(node)
    if not isinstance(data, dict):
        raise ConfigError([ConfigProblem("", "the file must be a YAML mapping (pipeline:, sources:, ...)", 1)],
                          file=file)
    problems: list[ConfigProblem] = duplicate_keys(node)
    origins: dict[str, str] = {}
    values: dict[str, str] = {}
    overridden = _apply_env_overrides(data, env, origins, values)
    data = _interpolate(data, "", _Env(env, problems, lines, origins, values, overridden, secrets))
    if problems:
        raise ConfigError(problems, file=file)
    return YamlDocument(data, lines, origins, values)


@dataclass
class _Env:
    env: Mapping[str, str]
    problems: list[ConfigProblem]
    lines: Mapping[str, int]
    origins: dict[str, str]
    values: dict[str, str]
    overridden: set[str]
    secrets: bool


def _interpolate(value: Any, path: str, ctx: _Env) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, _join(path, str(k)), ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, f"{path}[{i}]", ctx) for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value or path in ctx.overridden:
        return value
    if not ctx.secrets and _is_secret(path):
        return None  # resolved only by the commands that connect
    used: list[str] = []

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in ctx.env:
            used.append(name)
            return ctx.env[name]
        if default is not None:
            return default
        ctx.problems.append(ConfigProblem(path, f"environment variable {name} is not set", ctx.lines.get(path)))
        return ""

    result = _ENV_REF.sub(sub, value)
    if used:
        ctx.origins[path] = ", ".join(used)
        ctx.values[path] = result
    return result


_OVERRIDABLE = {"password": "database.password", "user": "database.user", "host": "database.hostname",
                "port": "database.port", "database": "database.dbname"}
"""The ``connection:`` keys an environment variable can override -> their Debezium option names."""


def _apply_env_overrides(data: dict[str, Any], env: Mapping[str, str], origins: dict[str, str],
                         values: dict[str, str]) -> set[str]:
    """``CDC__SOURCES__<NAME>__PASSWORD`` (and ``__USER``, ``__HOST``, ``__PORT``, ``__DATABASE``)
    replace the file's value, also a ``${VAR}`` reference (which is then not resolved), wherever
    the file gives it: ``connection.<key>`` or its Debezium option (``options.database.password``);
    in ``connection:`` when the file gives neither. Returns the paths overridden."""
    done: set[str] = set()
    for index, source in enumerate(data.get("sources") or []):
        if not isinstance(source, dict) or "name" not in source:
            continue
        prefix = f"CDC__SOURCES__{str(source['name']).upper().replace('-', '_').replace('.', '_')}__"
        for field_name, option in _OVERRIDABLE.items():
            variable = prefix + field_name.upper()
            value = env.get(variable)
            if value is None:
                continue
            options = source.get("options")
            paths = []
            if isinstance(options, dict) and option in options:
                options[option] = value
                paths.append(f"sources[{index}].options.{option}")
            connection = source.get("connection")
            if not paths or (isinstance(connection, dict) and field_name in connection):
                if not isinstance(connection, dict):
                    connection = source["connection"] = {}
                connection[field_name] = value
                paths.append(f"sources[{index}].connection.{field_name}")
            for path in paths:
                done.add(path)
                origins[path] = variable
                values[path] = value
    return done


def redact(problem: ConfigProblem, doc: YamlDocument) -> ConfigProblem:
    """``problem``, naming the environment variable its value came from and never echoing that
    value (it may be a secret)."""
    variable = doc.origins.get(problem.path)
    if variable is None:
        return problem
    value, message = doc.values[problem.path], problem.message
    if value:
        message = message.replace(repr(value), "(value hidden)")
        if len(value) >= 4:
            message = message.replace(value, "(value hidden)")
    return ConfigProblem(problem.path, f"{message} (from environment variable {variable})", problem.line)


def pydantic_problems(exc: ValidationError, lines: Mapping[str, int]) -> list[ConfigProblem]:
    """Turn pydantic's errors into problems with dotted paths and line numbers."""
    problems = []
    for err in exc.errors():
        path = ""
        for part in err["loc"]:
            path = f"{path}[{part}]" if isinstance(part, int) else _join(path, str(part))
        msg = err["msg"]
        if err["type"] == "value_error" and re.fullmatch(r"silver\[\d+\](\.expectations\[\d+\])?", path):
            problems.extend(_keyed_problems(path, str(err["ctx"]["error"]), lines))
            continue
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        elif err["type"] == "value_error":
            msg = str(err["ctx"]["error"])
        elif err["type"] == "list_type" and isinstance(err.get("input"), str | int | float):
            msg = f"must be a list: write [{err['input']}]"
        elif err["type"] == "string_pattern_mismatch":
            allowed = _PATTERN_WORDS.get(str(err["ctx"]["pattern"]), "a different value")
            msg = f"{err.get('input')!r} is not a valid name: use {allowed}"
        elif err["type"] in ("literal_error", "enum"):
            msg = f"invalid value {err.get('input')!r}; {msg.lower()}"
        problems.append(ConfigProblem(path, msg, nearest_line(path, lines)))
    return problems


_PATTERN_WORDS = {
    _NAME: "letters, digits, _, . and -, not starting with . or -",
    r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$": "letters, digits, _ and -, not starting with -",
    _SCHEMA_NAME: "[catalog.]schema, each part letters, digits and _, not starting with a digit (main.shop_bronze)",
}
"""The name patterns of the schema, in words (a message never shows a regex)."""


def _keyed_problems(path: str, text: str, lines: Mapping[str, int]) -> list[ConfigProblem]:
    """A model's cross-field errors, one ``<key>: <message>`` per line, at their keys."""
    problems = []
    for line in text.splitlines():
        key, sep, message = line.partition(": ")
        if sep and re.fullmatch(r"[a-z_]+", key):
            problems.append(ConfigProblem(_join(path, key), message, nearest_line(_join(path, key), lines)))
        else:
            problems.append(ConfigProblem(path, line, nearest_line(path, lines)))
    return problems


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def nearest_line(path: str, lines: Mapping[str, int]) -> int | None:
    """The line of ``path``, or of its nearest parent that has one."""
    while path:
        if path in lines:
            return lines[path]
        parent = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", path)
        if parent == path:  # a top-level key: no parent to fall back on
            return None
        path = parent
    return None


def duplicate_keys(node: yaml.Node | None, path: str = "") -> list[ConfigProblem]:
    """A problem for every key given twice in one mapping (YAML loaders silently keep the last)."""
    problems: list[ConfigProblem] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, child in node.value:
            child_path = _join(path, str(key.value))
            line = key.start_mark.line + 1
            if str(key.value) in seen:
                problems.append(ConfigProblem(child_path, f"given twice (also line {seen[str(key.value)]}); "
                                                          "remove one", line))
            else:
                seen[str(key.value)] = line
            problems.extend(duplicate_keys(child, child_path))
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            problems.extend(duplicate_keys(child, f"{path}[{i}]"))
    return problems


def _line_index(node: yaml.Node | None, path: str = "", out: dict[str, int] | None = None) -> dict[str, int]:
    """Map dotted key paths to 1-based line numbers of a composed YAML document."""
    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            child_path = _join(path, str(key.value))
            out[child_path] = key.start_mark.line + 1
            _line_index(child, child_path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            child_path = f"{path}[{i}]"
            out[child_path] = child.start_mark.line + 1
            _line_index(child, child_path, out)
    return out
