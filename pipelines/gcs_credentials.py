"""A Google Cloud Storage lakehouse root's service account, checked when the pipeline is validated.

delta-rs, obstore and Sail (object_store) take a service account either as a key file's path
(``GOOGLE_SERVICE_ACCOUNT``, also spelled ``service_account``, ``google_service_account_path``,
``service_account_path``) or as the key file's content (``GOOGLE_SERVICE_ACCOUNT_KEY``,
``service_account_key``), from ``lakehouse.storage_options`` or, for what the options leave
out, from ``GOOGLE_*`` environment variables. Given both ways (one in the pipeline file and the
other in the environment, or both in either), object_store refuses to build the store ("One of
service account path or service account key may be provided"), but only when a command first
touches the lakehouse. `gcs_key_problems` finds it at validation, naming the storage option
(with its line) or the environment variable, never the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cdc_sources.spi import ConfigProblem
from pipelines.config import nearest_line
from pipelines.gcs_spark import is_gcs

__all__ = ["gcs_key_problems"]

_KEY_FILE_PATH = ("google_service_account", "service_account", "google_service_account_path", "service_account_path")
_KEY_CONTENT = ("google_service_account_key", "service_account_key")


@dataclass(frozen=True)
class _Given:
    """Where one form of the service account is given: a storage option's key, or an environment variable."""

    key: str
    from_env: bool

    def describe(self) -> str:
        return f"environment variable {self.key}" if self.from_env else f"lakehouse.storage_options.{self.key}"


def _given(names: tuple[str, ...], options: Mapping[str, str], env: Mapping[str, str]) -> list[_Given]:
    found = [_Given(key, False) for key, value in options.items() if key.lower() in names and value.strip()]
    found += [_Given(key, True) for key, value in env.items()
              if key.startswith("GOOGLE_") and key.lower() in names and value.strip()]
    return found


def gcs_key_problems(root: str, options: Mapping[str, str], env: Mapping[str, str],
                     lines: Mapping[str, int]) -> list[ConfigProblem]:
    """One problem when a ``gs://`` root's service account is given both as a key file path and as
    key content (see module doc); empty for other roots or when it is given one way."""
    if not is_gcs(root):
        return []
    paths, keys = _given(_KEY_FILE_PATH, options, env), _given(_KEY_CONTENT, options, env)
    if not paths or not keys:
        return []
    in_file = [g for g in (*keys, *paths) if not g.from_env]
    at = f"lakehouse.storage_options.{in_file[0].key}" if in_file else "lakehouse.root"
    message = (f"the GCS service account is given twice: as key content ({', '.join(g.describe() for g in keys)}) "
               f"and as a key file path ({', '.join(g.describe() for g in paths)}); delta-rs refuses both at "
               f"once: keep one")
    return [ConfigProblem(at, message, nearest_line(at, lines))]
