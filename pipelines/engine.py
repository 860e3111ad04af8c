"""Spark engine selection (``engine:`` in the pipeline YAML) and the session factory.

* ``sail`` (default): starts `pysail`'s Spark Connect server on a free 127.0.0.1 port and
  connects to it. No JVM, native Delta Lake. The server runs in this process, or, for a looping
  run (``looping=True``, see `EngineSpec.server`), in a child process that the run can restart
  between passes (`pipelines.sail_process`; `server_rss_bytes` reads its memory).
* ``spark``: a classic ``SparkSession`` with Delta Lake. Under ``spark-submit`` or on
  Databricks the active session is reused as is; otherwise a local session is built with the
  jars `scripts/setup.sh` fetched (``spark.jars``, see `pipelines.spark_jars`), else with
  ``configure_spark_with_delta_pip`` (delta-spark installed) or ``spark.jars.packages``.
* ``connect``: a remote Spark Connect endpoint (``sc://host:port``, Databricks Connect), or,
  for a job the platform gives a Spark Connect session (Databricks serverless compute; any
  process with ``SPARK_REMOTE`` set), that session (`platform_connect_session`).

``conf`` entries are applied to the session (Spark SQL settings such as
``spark.sql.shuffle.partitions``). `stop_session` stops what `create_session` started,
including the embedded Sail server; sessions it did not create are left running.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from cdc_sources.spi import EngineError, MissingDependencyError
from pipelines.engine_spec import EngineSpec
from pipelines.engine_start import checked_session, embedded_sail_error
from pipelines.sail_caches import configure_sail_caches
from pipelines.sail_memory import configure_sail_allocator
from pipelines.sail_process import SailChild, start_sail_child
from pipelines.spark_jars import DELTA_SPARK_PACKAGE, DELTA_SQL_CONF, local_jars

__all__ = ["DELTA_SPARK_PACKAGE", "EngineSpec", "abort_session", "classic_conf", "create_session", "engine_session",
           "platform_connect_session", "server_rss_bytes", "stop_session"]

log = logging.getLogger(__name__)

_DELTA_CONF = DELTA_SQL_CONF


@dataclass(frozen=True)
class _Owned:
    """How a session made here is stopped: ``borrowed`` sessions (spark-submit) are not."""

    borrowed: bool = False
    server: Any = None  # the embedded Sail server, if any
    child: SailChild | None = None  # the Sail server's child process, if any
    connect: bool = False  # a Spark Connect session (Sail, or a URL)


_OWNED: dict[int, _Owned] = {}


def _connect_sessions_open() -> bool:
    return any(owned.connect for owned in _OWNED.values())


def create_session(spec: EngineSpec, *, looping: bool = False) -> SparkSession:
    """A Spark session for ``spec`` (see module doc). Stop it with `stop_session`.

    ``looping``: the session serves a run that loops until stopped (Sail: see `EngineSpec.server`).

    Raises:
        MissingDependencyError: ``pysail`` is missing for ``sail``.
        EngineError: a classic session or the Sail server (in this process or a child) did not start, or
            the ``connect`` URL's server cannot be reached (`pipelines.engine_start`): a run-time failure, exit 1.
    """
    if spec.sail_in_child(looping=looping):
        return _sail_child_session(spec)
    if spec.kind == "sail":
        return _sail_session(spec)
    if spec.kind == "connect":
        url = spec.url
        assert url is not None
        spark = _apply_conf(checked_session(
            lambda: SparkSession.Builder().remote(url).create(), url, "engine 'connect'",
            "check engine.url (host, port, use_ssl), that the Spark Connect server runs and that this host may "
            "reach it"), spec.conf)
        _OWNED[id(spark)] = _Owned(connect=True)
        return spark
    return _classic_session(spec)


def stop_session(spark: SparkSession) -> None:
    """Stop a session made by `create_session` (and its embedded server); others are left alone."""
    owned = _OWNED.pop(id(spark), None)
    if owned is None or owned.borrowed:
        return
    try:
        spark.stop()
    finally:
        if owned.server is not None:
            owned.server.stop()
        if owned.child is not None:
            owned.child.stop()
        if owned.connect and not _connect_sessions_open():
            # pyspark marks the whole process as Spark Connect while a remote session is made;
            # with none left, a classic session may follow (the test suite runs both engines).
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def abort_session(spark: SparkSession) -> None:
    """Forget a session made by `create_session` without stopping it gracefully, for a run that aborts
    (a second Ctrl-C or SIGTERM) and whose process ends next: a graceful stop waits for the work in
    flight (a Spark Connect session cut inside a call took a minute to stop). A Sail server child
    process is killed, after the Spark Connect client is closed: it releases the call the abort cut
    (at most 10 s), which, retried at a dead server, held the process's exit for a minute, as did
    the client's exit handler. What runs in this process (an embedded Sail server, a classic JVM,
    which exits when its parent does) ends with it."""
    owned = _OWNED.pop(id(spark), None)
    if owned is None or owned.borrowed:
        return
    client = getattr(spark, "client", None) if owned.connect else None
    if client is not None:
        with contextlib.suppress(Exception):  # a channel already broken: nothing left to close
            client.close()
    if owned.child is not None:
        owned.child.kill()


@contextmanager
def engine_session(spec: EngineSpec) -> Iterator[SparkSession]:
    """`create_session` as a context manager."""
    spark = create_session(spec)
    try:
        yield spark
    finally:
        stop_session(spark)


def server_rss_bytes(spark: SparkSession) -> int | None:
    """Resident memory of the session's Sail server process, if `create_session` started one."""
    owned = _OWNED.get(id(spark))
    return owned.child.rss_bytes() if owned is not None and owned.child is not None else None


def _apply_conf(spark: SparkSession, conf: dict[str, str]) -> SparkSession:
    for key, value in conf.items():
        spark.conf.set(key, value)
    return spark


def _sail_session(spec: EngineSpec) -> SparkSession:
    configure_sail_allocator()  # before pysail is loaded: mimalloc reads its settings then
    configure_sail_caches()  # before the server starts: Sail reads its settings then
    try:
        from pysail.spark import SparkConnectServer
    except ImportError as exc:
        raise MissingDependencyError("pysail", "sail") from exc
    try:
        server = SparkConnectServer("127.0.0.1", 0)
        server.start(background=True)
        host, port = server.listening_address
    except Exception as exc:  # e.g. a SAIL_* environment variable it cannot read
        raise embedded_sail_error(exc) from None
    url = f"sc://{host}:{port}"
    try:
        # create(): a new session even if another Connect session exists
        spark = checked_session(lambda: _connect_builder(url, spec).create(), url, "engine 'sail'",
                                "the Sail server started in this process does not answer; run again with -v")
    except Exception:
        server.stop()
        raise
    _OWNED[id(spark)] = _Owned(server=server, connect=True)
    log.info("started embedded Sail Spark Connect server on %s:%s", host, port)
    return spark


def _sail_child_session(spec: EngineSpec) -> SparkSession:
    child = start_sail_child(spec.server_port)
    try:
        spark = checked_session(lambda: _connect_builder(child.url, spec).create(), child.url, "engine 'sail'",
                                f"the Sail server process (pid {child.process.pid}) does not answer; run again "
                                f"with -v")
    except Exception:
        child.stop()
        raise
    _OWNED[id(spark)] = _Owned(child=child, connect=True)
    return spark


def _connect_builder(url: str, spec: EngineSpec) -> SparkSession.Builder:
    builder = SparkSession.Builder().remote(url)
    for key, value in {"spark.sql.session.timeZone": "UTC", **spec.conf}.items():
        builder = builder.config(key, value)
    return builder


def classic_conf(spec: EngineSpec, *, delta_pip: bool, jars: list[str] | None = None) -> dict[str, str]:
    """The settings a local classic session is built with (Delta, UTC, the user's conf).

    ``jars``: local Delta jars (`pipelines.spark_jars.local_jars`), loaded with ``spark.jars``;
    else ``delta_pip``: delta-spark is installed (its jars come via ``configure_spark_with_delta_pip``);
    otherwise the Delta artifact is fetched with ``spark.jars.packages``.
    """
    conf = {**_DELTA_CONF, "spark.sql.session.timeZone": "UTC"}
    if jars:
        conf["spark.jars"] = ",".join(jars)
    elif not delta_pip:
        conf["spark.jars.packages"] = DELTA_SPARK_PACKAGE
    conf.update(spec.conf)
    return conf


def platform_connect_session() -> SparkSession | None:
    """The Spark Connect session the platform gives this process: the active Connect session,
    else the builder's default session where the platform provides one (Databricks compute, which
    sets ``DATABRICKS_RUNTIME_VERSION``; serverless gives a Spark Connect session) or where
    ``SPARK_REMOTE`` names an endpoint; None when that is no Spark Connect session. It is
    borrowed: `stop_session` leaves it running."""
    active = SparkSession.getActiveSession()
    if active is None and (os.environ.get("SPARK_REMOTE") or os.environ.get("DATABRICKS_RUNTIME_VERSION")):
        active = SparkSession.Builder().getOrCreate()
    if active is None or not _is_connect(active):
        return None
    _OWNED.setdefault(id(active), _Owned(borrowed=True, connect=True))
    return active


def _is_connect(spark: SparkSession) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def _ctrl_c_kept() -> Iterator[None]:
    """Keep this process's Ctrl-C handler across a classic session's start: pyspark's SparkContext
    replaces it with one that cancels every job and raises KeyboardInterrupt, which would turn the
    first Ctrl-C of a command that stops cleanly on it (`pipelines.shutdown`) into an abort."""
    if threading.current_thread() is not threading.main_thread():  # handlers belong to the main thread
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if handler is not None and signal.getsignal(signal.SIGINT) is not handler:
            signal.signal(signal.SIGINT, handler)


def _classic_session(spec: EngineSpec, *, with_delta: bool = True) -> SparkSession:
    """A classic session (see module doc). pyspark cannot start a classic session in a process
    that already made Spark Connect sessions: use one engine kind per process."""
    active = SparkSession.getActiveSession()
    if active is not None and not _is_connect(active):  # spark-submit / Databricks: use it as is
        _OWNED.setdefault(id(active), _Owned(borrowed=True))
        return _apply_conf(active, spec.conf)
    try:  # delta-spark is optional: without it the jars come from spark.jars.packages
        configure_spark_with_delta_pip = importlib.import_module("delta").configure_spark_with_delta_pip
    except ImportError:
        configure_spark_with_delta_pip = None
    if active is None and not _connect_sessions_open():
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)  # left behind by a stopped Connect session
    # A local session: Python workers run in this interpreter (its virtualenv) unless PYSPARK_PYTHON
    # says otherwise (pyspark reads only the variable, else the first python3 on PATH), and the
    # driver listens on loopback only.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.Builder().master("local[*]").appName("cdc-lakehouse-silver")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    jars = local_jars()
    conf = classic_conf(spec, delta_pip=configure_spark_with_delta_pip is not None, jars=jars)
    if not with_delta:
        dropped = {*_DELTA_CONF, "spark.jars.packages", "spark.jars"}
        conf = {k: v for k, v in conf.items() if k not in dropped}
    for key, value in conf.items():
        builder = builder.config(key, value)
    if with_delta and not jars and configure_spark_with_delta_pip is not None:
        builder = configure_spark_with_delta_pip(builder)
    try:
        with _ctrl_c_kept():
            spark = builder.getOrCreate()
    except Exception as exc:  # no Java, jars that cannot be fetched or loaded: the engine failed, not the file
        log.debug("the classic Spark session did not start", exc_info=True)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise EngineError(f"cannot start a classic Spark session: {first}") from exc
    _OWNED[id(spark)] = _Owned()
    return spark
