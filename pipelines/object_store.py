"""Object-store lakehouse roots: which settings keep concurrent Delta commits safe on S3, and
how the embedded Sail engine gets the same S3 settings as delta-rs.

Commit safety on S3. A Delta commit creates ``_delta_log/<version>.json``; two writers of the
same version must not both succeed. delta-rs (1.x) does this with S3 conditional writes
(``PutObject`` with ``If-None-Match: *``), on by default; it no longer has a DynamoDB locking
provider. So a configuration is refused when it turns conditional writes off without
``copy_if_not_exists`` (the other atomic mechanism delta-rs accepts), when it asks for the
DynamoDB locking provider (delta-rs 1.x ignores it, and writers relying on it, such as Spark's
``S3DynamoDBLogStore``, would not be coordinated with), or when it asks for unsafe renames.
Settings come from ``lakehouse.storage_options`` and, like delta-rs, from ``AWS_*``
environment variables for the keys the options leave out.

Sail reads S3, Azure and GCS settings from ``AWS_*``, ``AZURE_*`` and ``GOOGLE_*`` environment
variables only;
`export_for_sail` sets those of the storage options (``${VAR}`` references already resolved)
that are not set yet. Classic Spark reads S3 through Hadoop's S3A connector: `hadoop_s3a_conf`
turns the same options into ``spark.hadoop.fs.s3a.*`` settings and maps ``s3://`` to S3A, so
bronze and silver keep the URIs delta-rs uses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

from cdc_sources.spi import ConfigProblem
from pipelines.config import nearest_line

S3_SCHEMES = ("s3://", "s3a://")

_CONDITIONAL_PUT = ("conditional_put", "aws_conditional_put")
_COPY_IF_NOT_EXISTS = ("copy_if_not_exists", "aws_copy_if_not_exists")
_LOCKING_PROVIDER = ("aws_s3_locking_provider",)
_UNSAFE_RENAME = ("aws_s3_allow_unsafe_rename",)


def is_s3(root: str) -> bool:
    """Whether a lakehouse root is on S3 (or an S3-compatible store)."""
    return root.lower().startswith(S3_SCHEMES)


@dataclass(frozen=True)
class Setting:
    """One S3 setting as delta-rs would see it: its value and where it was given.

    Attributes:
        value: the value.
        key: the key as spelled in ``storage_options``, or the environment variable's name.
        from_env: given by the environment rather than the pipeline file.
    """

    value: str
    key: str
    from_env: bool


def _find(names: tuple[str, ...], options: Mapping[str, str], env: Mapping[str, str]) -> Setting | None:
    for key, value in options.items():
        if key.lower() in names:
            return Setting(value, key, False)
    for key, value in env.items():
        if key.lower() in names and key.upper() == key:
            return Setting(value, key, True)
    return None


def commit_safety_problems(root: str, options: Mapping[str, str], env: Mapping[str, str],
                           lines: Mapping[str, int]) -> list[ConfigProblem]:
    """The settings that would let concurrent Delta commits on an S3 root overwrite each other
    (see module doc), each naming its key (``lakehouse.storage_options.<key>``, with its line)
    or its environment variable. Empty for other roots."""
    if not is_s3(root):
        return []
    problems = []

    def problem(setting: Setting, message: str) -> None:
        if setting.from_env:
            problems.append(ConfigProblem("lakehouse.root", f"environment variable {setting.key}: {message}",
                                          nearest_line("lakehouse.root", lines)))
        else:
            path = f"lakehouse.storage_options.{setting.key}"
            problems.append(ConfigProblem(path, message, nearest_line(path, lines)))

    conditional = _find(_CONDITIONAL_PUT, options, env)
    if (conditional is not None and conditional.value.strip().lower() == "disabled"
            and _find(_COPY_IF_NOT_EXISTS, options, env) is None):
        problem(conditional, "turns S3 conditional writes off, so two writers could both commit the same Delta "
                             "version and one commit would be lost; remove it (conditional writes are the default, "
                             "and every current S3 and most S3-compatible stores support them)")
    locking = _find(_LOCKING_PROVIDER, options, env)
    if locking is not None and locking.value.strip():
        problem(locking, f"the {locking.value!r} locking provider is not supported by the Delta writer (delta-rs "
                         "1.x commits with S3 conditional writes); remove it, and do not let writers that rely on "
                         "that lock (Spark's S3DynamoDBLogStore) write the same tables")
    unsafe = _find(_UNSAFE_RENAME, options, env)
    if unsafe is not None and unsafe.value.strip().lower() in ("true", "1", "yes"):
        problem(unsafe, "asks for unsafe commits that concurrent writers could overwrite; remove it (commits "
                        "use S3 conditional writes)")
    return problems


SAIL_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_")
"""The storage options Sail takes from its environment: S3's, Azure's and GCS's (object_store's names)."""


def export_for_sail(options: Mapping[str, str], environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set the ``AWS_*``, ``AZURE_*`` and ``GOOGLE_*`` storage options as environment variables for the embedded
    Sail engine, where not set already. Returns the variables' names (never their values)."""
    target = os.environ if environ is None else environ
    exported = []
    for key, value in options.items():
        name = key.upper()
        if name.startswith(SAIL_ENV_PREFIXES) and name not in target:
            target[name] = value
            exported.append(name)
    return exported


S3A_FILESYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def hadoop_s3a_conf(options: Mapping[str, str]) -> dict[str, str]:
    """Spark settings (``spark.hadoop.*``) giving Hadoop's S3A connector what ``options``
    (delta-rs's ``AWS_*`` keys) give delta-rs; ``s3://`` is served by S3A as well. Keys the
    options leave out are left to S3A's defaults (its credential chain reads the environment
    and instance profiles)."""
    by_key = {k.upper(): v for k, v in options.items()}
    conf = {"fs.s3.impl": S3A_FILESYSTEM}

    def take(key: str, *names: str) -> None:
        for name in names:
            if name in by_key:
                conf[key] = by_key[name]
                return

    take("fs.s3a.endpoint", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")
    take("fs.s3a.endpoint.region", "AWS_REGION", "AWS_DEFAULT_REGION")
    take("fs.s3a.access.key", "AWS_ACCESS_KEY_ID")
    take("fs.s3a.secret.key", "AWS_SECRET_ACCESS_KEY")
    take("fs.s3a.session.token", "AWS_SESSION_TOKEN")
    if "fs.s3a.session.token" in conf:
        conf["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    if by_key.get("AWS_ALLOW_HTTP", "").lower() == "true":
        conf["fs.s3a.connection.ssl.enabled"] = "false"
    if "fs.s3a.endpoint" in conf:  # delta-rs addresses buckets by path unless told otherwise
        hosted = by_key.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false").lower() == "true"
        conf["fs.s3a.path.style.access"] = "false" if hosted else "true"
    return {f"spark.hadoop.{k}": v for k, v in conf.items()}
