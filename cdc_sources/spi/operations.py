"""What a connector does for the operations commands (``reset --to``, ``decommission``).

Optional beside `Connector`: both connectors implement it; the pipelines look for it with
``isinstance(connector, SourceOperations)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cdc_sources.spi.errors import CdcError, Fatal


class OperationRefusedError(CdcError, Fatal):
    """An operation cannot be done in the source's current state (the message says why)."""


class RewindRefusedError(OperationRefusedError):
    """The source can no longer serve the position asked for (the message says why)."""


class PositionFormatError(CdcError, Fatal, ValueError):
    """A position is not in the source's notation (the message shows the expected forms)."""


@dataclass(frozen=True)
class Rewind:
    """Where a rewound source resumes streaming.

    Attributes:
        offset: the connector's offset map to store.
        description: the position in the source's notation, for messages.
    """

    offset: dict[str, Any]
    description: str


@runtime_checkable
class SourceOperations(Protocol):
    """Server-side operations on a source, each connecting for the duration of the call."""

    def rewind(self, position: str, stored: Mapping[str, Any] | None) -> Rewind:
        """Check that the source can stream from ``position`` and build the offset for it.

        Raises:
            PositionFormatError: ``position`` is not in the source's notation.
            RewindRefusedError: the source can no longer serve it.
        """
        ...

    def decommission(self) -> list[str]:
        """Drop what capture keeps on the server; one line per thing done (or not needed).

        Raises:
            OperationRefusedError: what is to be dropped is in use.
        """
        ...


@runtime_checkable
class SignalSender(Protocol):
    """A connector that takes Debezium signals from ``cdc-lakehouse signal``."""

    def send_signal(self, signal_id: str, kind: str, data: str | None) -> str:
        """Deliver one signal (``data``: its JSON text) through an enabled channel; says where it went.

        Raises:
            OperationRefusedError: no channel the command can write to is enabled.
        """
        ...
