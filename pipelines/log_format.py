"""Log output: text lines or one JSON object per line, with known secrets masked.

``--log-format json`` writes each record as ``{"time", "level", "logger", "message", ...}``
plus the structured fields a call site passes in ``extra`` (the per-commit line carries
``source``, ``batch``, ``records``, ``bytes``, ``transactions``, ``position``).

Connectors never put a password in a message; as a second line of defence every secret the
configuration resolved (`register_secret`) is replaced by ``***`` in every line, whatever the
format, before it is written.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading

import orjson

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
_secrets: set[str] = set()
_secrets_lock = threading.Lock()
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def register_secret(value: str | None) -> None:
    """Mask ``value`` in every log line from now on (values shorter than 4 characters are not masked)."""
    if value and len(value) >= 4:
        with _secrets_lock:
            _secrets.add(value)


def mask(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


class _MaskingText(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return mask(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return mask(orjson.dumps(out, default=str).decode())


def configure_logging(level: int, *, json_lines: bool = False) -> None:
    """Log to standard error at ``level`` in the chosen format.

    Like `logging.basicConfig`, it leaves a root logger that already has handlers (an embedding
    application's, or a test runner's) alone.
    """
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if json_lines else _MaskingText(TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(level)
