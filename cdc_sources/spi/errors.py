"""The error hierarchy shared by every part of cdc-lakehouse.

`CdcError` is the base. `Retriable` and `Fatal` are marker mixins the runtime uses to decide
whether to retry (bounded) or stop. Every error keeps its constructor arguments as attributes
and survives pickling, because Spark moves exceptions from executors back to the driver.
Messages say what failed, where, and what to do next; they never contain credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class CdcError(Exception):
    """Base of every error raised by cdc-lakehouse."""

    def __init__(self, message: str, **attrs: Any) -> None:
        super().__init__(message)
        self.message = message
        self.attrs = attrs
        for name, value in attrs.items():
            setattr(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.attrs))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[CdcError], message: str, attrs: dict[str, Any]) -> CdcError:
    err = cls.__new__(cls)
    CdcError.__init__(err, message, **attrs)
    return err


class Retriable:
    """Marker: the operation may succeed if retried (connection reset, server restarting)."""


class Fatal:
    """Marker: retrying cannot help (bad credentials, bad configuration, missing privilege)."""


@dataclass(frozen=True)
class ConfigProblem:
    """One problem found while validating configuration.

    Attributes:
        path: where the problem is, as a dotted YAML path (``sources[0].options.snapshot.mode``).
        message: what is wrong and, where it helps, the valid values.
        line: 1-based line in the YAML file, when known.
    """

    path: str
    message: str
    line: int | None = None

    def render(self, file: str | None = None) -> str:
        where = self.path or "<root>"
        if file is not None:
            loc = f"{file}:{self.line}" if self.line else file
            return f"{loc}: {where}: {self.message}"
        return f"{where}: {self.message}"


class ConfigError(CdcError, Fatal, ValueError):
    """Configuration is invalid. Carries every problem found, not just the first."""

    def __init__(self, problems: list[ConfigProblem], *, file: str | None = None) -> None:
        lines = [p.render(file) for p in problems]
        head = f"invalid configuration in {file}" if file else "invalid configuration"
        super().__init__(head + ":\n  " + "\n  ".join(lines), problems=problems, file=file)


class SourceError(CdcError):
    """A source database refused or failed an operation."""


class EngineError(CdcError):
    """The Spark engine failed at run time: a Sail server process that did not start (exit 1, not a
    configuration error: the same configuration may work once the cause passes)."""


class MissingDependencyError(CdcError, Fatal, ImportError):
    """An optional dependency is not installed; the message gives the pip command."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"the Python package {package!r} is needed for this feature: "
            f"pip install 'cdc-lakehouse[{extra}]'",
            package=package,
            extra=extra,
        )
