"""Delivering a signal for ``cdc-lakehouse signal``: the channel choice every connector shares.

The ``source`` channel (a row in the signal table) wins when it is enabled and ``read.only`` is not
set; otherwise the line is appended to the ``file`` channel; with neither, the signal is refused.
The connector supplies only the insert into its signal table, in its own SQL dialect and with its
own error classification.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from cdc_sources.common.signal_options import signal_settings
from cdc_sources.common.signals import CollectionName
from cdc_sources.spi.operations import OperationRefusedError

__all__ = ["SignalInsert", "deliver_signal"]

SignalInsert = Callable[[CollectionName, tuple[str, str, str | None]], None]
"""Insert one ``(id, type, data)`` row into the named signal table (raises the connector's error)."""


def deliver_signal(options: Mapping[str, Any], signal_id: str, kind: str, data: str | None,
                   insert: SignalInsert) -> str:
    """Deliver a signal through the ``source`` channel if enabled, else the ``file`` channel.

    Returns where it went (``signal table schema.table`` or ``signal file PATH``).

    Raises:
        OperationRefusedError: neither channel is enabled.
    """
    settings = signal_settings(options)
    read_only = str(options.get("read.only", False)).strip().lower() == "true"
    if settings.source_enabled and settings.table is not None and not read_only:
        insert(settings.table, (signal_id, kind, data))
        return f"signal table {settings.table.text}"
    if settings.file_enabled:
        line = orjson.dumps({"id": signal_id, "type": kind, "data": None if data is None else orjson.loads(data)})
        with Path(settings.file).open("ab") as f:
            f.write(line + b"\n")
        return f"signal file {settings.file}"
    if read_only:
        raise OperationRefusedError(
            "read.only is set, so signals are not written to the source: add file to signal.enabled.channels")
    raise OperationRefusedError(
        "no signal channel to write to: set signal.data.collection (channel source) or add file to "
        "signal.enabled.channels")
