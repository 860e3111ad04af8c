"""Clear, bounded start errors for the Spark Connect engines: a remote ``connect`` URL and Sail.

A Spark Connect client makes no call when its session is built; its first call retries an
unreachable endpoint for at least ten minutes (pyspark's default retry policy), after which the
error is a gRPC one. A run that cannot reach its engine should instead fail at once and say where
it looked. So a new Connect session is checked before it is used:

1. the endpoint's TCP port is connected to (`CONNECT_TIMEOUT_S` at most): a closed port, an
   unknown host or a dropped connection fails here;
2. one call (the server's Spark version) is made with a short retry policy (`PROBE_RETRIES`),
   then the client's own policy is put back for the run.

Failures become `EngineError` (exit 1) naming the engine, the endpoint as ``sc://host:port`` only
(`display_url`: a URL's parameters, such as ``token``, and any user info are never shown) and what
to check. The same holds for the Sail server started in this process, whose constructor fails on
bad ``SAIL_*`` settings in the environment.
"""

from __future__ import annotations

import logging
import socket
import warnings
from collections.abc import Callable
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from cdc_sources.spi import EngineError

__all__ = ["CONNECT_TIMEOUT_S", "PROBE_RETRIES", "EngineError", "checked_session", "display_url",
           "embedded_sail_error", "endpoint"]

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
"""The longest wait for a Spark Connect endpoint's TCP port to accept a connection."""
PROBE_RETRIES = 2
"""Retries of the first call to a new Spark Connect session (the port was reachable: a server that
does not answer Spark Connect fails within a second or two)."""
DEFAULT_PORT = 15002
"""Spark Connect's port when the URL names none."""


def endpoint(url: str) -> tuple[str, int]:
    """The host and port of a Spark Connect URL (``sc://host[:port][/;param=value...]``)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number in 0..65535
        port = None
    return parts.hostname or "", port or DEFAULT_PORT


def display_url(url: str) -> str:
    """The URL as it may be shown: ``sc://host:port``, without user info or parameters (tokens)."""
    host, port = endpoint(url)
    return f"sc://{f'[{host}]' if ':' in host else host}:{port}"


def checked_session(make: Callable[[], SparkSession], url: str, engine: str, hint: str) -> SparkSession:
    """A Spark Connect session from ``make`` once its endpoint (``url``) answers (see module doc).

    ``engine`` names the engine in the error (e.g. ``engine 'connect'``), ``hint`` what to check.

    Raises:
        EngineError: the port is not reachable, the session could not be made, or the first call failed.
    """
    shown = display_url(url)
    host, port = endpoint(url)

    def failed(what: str, exc: BaseException) -> EngineError:
        log.debug("%s at %s: %s", engine, shown, what, exc_info=True)
        return EngineError(f"{engine}: {what} at {shown}: {_first_line(exc, url)}; {hint}")

    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:  # refused, timed out, unknown host, no route
        raise failed("cannot connect to the Spark Connect server", exc) from None
    try:
        spark = make()
    except Exception as exc:
        raise failed("cannot open a Spark Connect session", exc) from None
    try:
        _probe(spark)
    except Exception as exc:
        _close(spark)
        raise failed("the Spark Connect server did not answer", exc) from None
    return spark


def embedded_sail_error(exc: BaseException) -> EngineError:
    """The error for a Sail server that did not start in this process (pysail raises RuntimeError)."""
    return EngineError(f"engine 'sail': cannot start the Sail Spark Connect server in this process "
                       f"(127.0.0.1, any free port): {_first_line(exc, '')}; check the SAIL_* environment "
                       f"variables and that pysail is installed intact")


def _probe(spark: SparkSession) -> None:
    """One call with a short retry policy, the client's own policy restored afterwards."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    client = spark.client  # a Connect session's client
    policies = client.get_retry_policies()
    client.set_retry_policies([DefaultPolicy(max_retries=PROBE_RETRIES, initial_backoff=100, max_backoff=1000)])
    try:
        with warnings.catch_warnings():  # pyspark's "[RETRIES_EXCEEDED]" warning: the error says it
            warnings.simplefilter("ignore")
            _ = spark.version
    finally:
        client.set_retry_policies(policies)


def _close(spark: SparkSession) -> None:
    try:
        spark.client.close()
    except Exception:  # already broken: nothing to close
        log.debug("closing the failed Spark Connect client", exc_info=True)


def _rpc_error(exc: BaseException) -> tuple[str, str] | None:
    """The status and message of the gRPC error ``exc`` is or was caused by, if any."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return None
        code, details = getattr(seen, "code", None), getattr(seen, "details", None)
        if callable(code) and callable(details):
            status = code()
            return str(getattr(status, "name", status)), str(details())
        seen = seen.__cause__ or seen.__context__
    return None


def _first_line(exc: BaseException, url: str) -> str:
    """The error's first line, without the URL's parameters (a ``token`` among them) or user info."""
    rpc = _rpc_error(exc)
    if rpc is not None:  # a gRPC error (pyspark wraps it after its retries): its status and message
        code, details = rpc
        text = f"{code}: {details}"
    else:
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if url:
        text = text.replace(url, display_url(url))
        parts = urlsplit(url)
        secrets = [p.split("=", 1)[1] for p in url.split(";")[1:] if "=" in p]
        secrets += [s for s in (parts.username, parts.password) if s]
        for secret in sorted((s for s in secrets if s), key=len, reverse=True):
            text = text.replace(secret, "***")
    return text[:300] or type(exc).__name__
