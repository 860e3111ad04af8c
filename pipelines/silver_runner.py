"""The incremental silver runner: ``cdc-lakehouse silver -c FILE [--once]``.

Each pass applies, for every declared silver table, the bronze rows committed since the
table's recorded progress (a ``seq`` range read from a pinned bronze version; Delta skips the
other files), then records the new progress. A table that fails (incompatible schema change,
missing schema, engine error) is reported and left untouched; the others carry on. With
``once`` the runner returns after one pass; otherwise it repeats every
``silver_options.interval_seconds`` until stopped (``stop`` event or Ctrl-C).

A stop request (``stop``, set by SIGTERM through `pipelines.shutdown`) is checked between two
tables: the table being applied finishes (its commit and progress are atomic as ever), the rest of
the pass is skipped and named in one log line; the next run applies them, its progress being read
from the Delta tables. A pass over many tables thus ends within one table's time, inside the grace
period of a service manager.

A looping run on Sail runs the server in a child process (`pipelines.sail_process`) and restarts
it between two passes when its resident memory exceeds ``engine.server_memory_mb``: progress is
read from the Delta tables at every pass, so a restart neither loses nor repeats an increment. A
new server that fails to start is retried (`pipelines.sail_restart`) before the run ends with an error.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pyspark.sql import SparkSession

from bronze.schema import topic_path
from cdc_sources.spi import CdcError, ConfigError, ConfigProblem
from pipelines.bronze_names import BronzeTableName
from pipelines.bronze_register import BronzeRegistrar
from pipelines.engine import EngineSpec, abort_session, create_session, server_rss_bytes, stop_session
from pipelines.sail_restart import SailServerStats, restart_policy, restart_server
from silver.bronze_reader import BronzeFiles, SeqRange, bronze_files, plan_range, read_range, scan_columns, spark_range
from silver.consistency import SourceCut, committed_cut, cut_upto_seq
from silver.context import ApplyContext
from silver.declarations import SilverOptions, SilverTable
from silver.delta_io import DELTA_RS_FAILURES, is_missing_table_error
from silver.increment import apply_increment
from silver.progress import Progress, ProgressStore
from silver.quality import quality_notes
from silver.resnapshot import BronzeRef
from silver.scan import ScanGroup, groups_of
from silver.schema_cache import SchemaCache
from silver.schema_history import load_topic_schemas
from silver.target import SilverTarget

__all__ = ["SilverRunResult", "TableRunResult", "run_silver", "source_of_topic"]

log = logging.getLogger(__name__)

Status = Literal["applied", "up_to_date", "waiting", "failed"]


@dataclass(frozen=True)
class TableRunResult:
    """What one pass did to one silver table.

    Attributes:
        status: ``applied``, ``up_to_date`` (nothing new), ``waiting`` (no bronze table or no
            complete transaction cut yet) or ``failed`` (see ``error``).
        events: bronze rows read; upserts/deletes: changes applied (latest per key for SCD1,
            versions for SCD2); quarantined: events set aside; truncates: truncates applied.
        seq_from: the increment's lower bound (exclusive); seq_to: its upper bound (inclusive).
        files_read / files_total: bronze data files read / in the table version (None if unknown).
        schema_changes: silver schema changes made.
        error: why the table failed.
        resnapshot_seq: the increment ended a re-snapshot that began at this ``seq``: rows last
            changed before it (not in the snapshot) were removed, flagged or closed.
        expectations_failed: the expectations (``warn``, ``quarantine``) the increment broke, in words.
    """

    table: str
    topic: str
    status: Status
    events: int = 0
    upserts: int = 0
    deletes: int = 0
    quarantined: int = 0
    truncates: int = 0
    seq_from: int | None = None
    seq_to: int | None = None
    files_read: int | None = None
    files_total: int | None = None
    schema_changes: tuple[str, ...] = ()
    error: str | None = None
    seconds: float = 0.0
    resnapshot_seq: int | None = None
    expectations_failed: tuple[str, ...] = ()


LOOP_PASSES_KEPT = 100
"""How many passes' table results a looping run keeps (older ones are dropped, their failures counted):
a run that loops for weeks must not grow."""


@dataclass
class SilverRunResult:
    """The passes of a run, table by table: every pass, or the last ``kept`` table results.

    Attributes:
        passes: passes run.
        tables: the table results kept, in pass order.
        kept: how many table results to keep (None: all).
        failures: failed table results, counted over every pass (kept or not).
        server_restarts: times the Sail server process was restarted over its memory budget.
        left: the tables a stop request left out of the last pass (for the next run), in pass order.
    """

    passes: int = 0
    tables: list[TableRunResult] = field(default_factory=list)
    kept: int | None = None
    failures: int = 0
    server_restarts: int = 0
    left: tuple[str, ...] = ()

    def add(self, results: Sequence[TableRunResult], left: Sequence[str] = ()) -> None:
        """Record one pass's results (and the tables it ``left`` to the next run), dropping the oldest
        beyond ``kept``."""
        self.passes += 1
        self.left = tuple(left)
        self.tables += results
        self.failures += sum(1 for t in results if t.status == "failed")
        if self.kept is not None and len(self.tables) > self.kept:
            del self.tables[: len(self.tables) - self.kept]

    @property
    def errors(self) -> list[TableRunResult]:
        """The failed table results among those kept."""
        return [t for t in self.tables if t.status == "failed"]

    @property
    def ok(self) -> bool:
        """True if no table failed in any pass."""
        return self.failures == 0

    def for_table(self, table: str) -> list[TableRunResult]:
        """The kept results of one table, in pass order."""
        return [t for t in self.tables if t.table == table]


def source_of_topic(topic: str, sources: Mapping[str, str]) -> str:
    """The source (name) whose topic prefix starts ``topic`` (the longest prefix wins).

    Raises:
        ConfigError: no declared source produces the topic.
    """
    matches = [name for name, prefix in sources.items() if topic.startswith(prefix + ".")]
    if not matches:
        prefixes = ", ".join(f"{n} ({p})" for n, p in sources.items()) or "none"
        raise ConfigError([ConfigProblem("silver", f"topic {topic!r} does not start with the topic prefix of any "
                                                   f"source; sources: {prefixes}")])
    return max(matches, key=lambda n: len(sources[n]))


def run_silver(*, root: str, engine: EngineSpec, tables: Sequence[SilverTable], options: SilverOptions,
               sources: Mapping[str, str], once: bool, progress: Callable[[str], None] | None = None,
               storage_options: Mapping[str, str] | None = None, stop: threading.Event | None = None,
               spark: SparkSession | None = None, server_stats: SailServerStats | None = None,
               bronze_names: Mapping[str, BronzeTableName] | None = None,
               after_pass: Callable[[Sequence[TableRunResult]], None] | None = None) -> SilverRunResult:
    """Run the silver tables (see module doc); returns the per-table results of every pass (looping: of the
    last `LOOP_PASSES_KEPT` passes; failures are counted over all of them).

    Args:
        root: the lakehouse root (bronze under ``<root>/bronze``).
        engine: which Spark to use (ignored when ``spark`` is given).
        tables: the ``silver:`` declarations.
        options: ``silver_options:``.
        sources: source name -> topic prefix.
        once: one pass, then return.
        progress: receives one line per table and pass.
        storage_options: object-store options for delta-rs metadata reads.
        stop: set it to end a run after the table being applied: the rest of the pass is left for the
            next run (`SilverRunResult.left`; set before the first pass: no pass). A
            KeyboardInterrupt (Ctrl-C; with ``stop``, `pipelines.shutdown`'s abort on a second signal)
            stops the engine and returns the passes run; with ``stop`` it propagates instead, the
            engine abandoned (`pipelines.engine.abort_session`: the process ends next).
        spark: an existing session to use (not stopped at the end).
        server_stats: counts the Sail server's restarts (for the metrics server).
        bronze_names: topic -> the catalog name its bronze table is registered under, once it exists
            (`pipelines.bronze_register`; again after a Sail server restart).
        after_pass: looping, called with each pass's results before the wait for the next
            (`pipelines.maintenance.auto`); not called when the run ends after the pass.

    Raises:
        ConfigError: a table's topic matches no source.
        EngineError: the Sail server did not start, or a restarted one not within its retries.
    """
    owners = {t.table: source_of_topic(t.source, sources) for t in tables}
    session = spark if spark is not None else create_session(engine, looping=not once)
    live = True  # False while a restart has stopped the old server and not yet started the new one
    say = progress or (lambda _line: None)
    result = SilverRunResult(kept=None if once else LOOP_PASSES_KEPT * max(1, len(tables)))
    storage = dict(storage_options or options.storage_options)
    stats = server_stats if server_stats is not None else SailServerStats()
    aborted = False
    names = dict(bronze_names or {})
    try:
        runner = _Runner(session, root, options, storage, say, BronzeRegistrar(session, names, engine.kind))
        while stop is None or not stop.is_set():  # a stop asked for while the engine started: no pass
            done, left = runner.run_pass(tables, owners, stop)
            result.add(done, left)
            if once or (stop is not None and stop.is_set()):
                break
            if after_pass is not None:
                after_pass(done)
            if spark is None and _over_budget(session, engine, say):  # between passes, never in one
                stop_session(session)
                live = False
                session = restart_server(lambda: create_session(engine, looping=True), stats=stats, say=say,
                                         stop=stop, policy=restart_policy(engine))
                live = True
                runner = _Runner(session, root, options, storage, say, BronzeRegistrar(session, names, engine.kind))
                result.server_restarts += 1
            if stop is not None and stop.wait(options.interval_seconds):
                break
            if stop is None:
                time.sleep(options.interval_seconds)
    except KeyboardInterrupt:
        say("silver: interrupted; stopping after the last completed table")
        if stop is not None:  # the caller handles the signals (`pipelines.shutdown`): this is its abort
            aborted = True
            raise
    finally:
        if spark is None and live:
            (abort_session if aborted else stop_session)(session)
    return result


def _over_budget(spark: SparkSession, engine: EngineSpec, say: Callable[[str], None]) -> bool:
    """True (and said) when the session's Sail server process holds more than its memory budget."""
    rss = server_rss_bytes(spark)
    if rss is None or rss <= engine.server_memory_mb * 2**20:
        return False
    say(f"silver: the Sail server process holds {rss / 2**20:.0f} MB, over engine.server_memory_mb "
        f"({engine.server_memory_mb}); restarting it before the next pass")
    return True


class _Runner:
    """One run's shared state: session, progress store, schema cache. Not thread-safe."""

    def __init__(self, spark: SparkSession, root: str, options: SilverOptions, storage: dict[str, str],
                 say: Callable[[str], None], registrar: BronzeRegistrar) -> None:
        self.spark, self.root, self.options, self.storage, self.say = spark, root.rstrip("/"), options, storage, say
        self.registrar = registrar
        self.state = (options.state_location or f"{self.root}/silver/_cdc").rstrip("/")
        self.quarantine = options.quarantine.location or f"{self.root}/silver/_quarantine"
        self.store = ProgressStore(spark, self.state, storage)

    def run_pass(self, tables: Sequence[SilverTable], owners: Mapping[str, str],
                 stop: threading.Event | None = None) -> tuple[list[TableRunResult], list[str]]:
        """Apply each table in turn; returns the results and the tables a stop request left out."""
        run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        cache: dict[str, SchemaCache] = {}  # per source
        cuts: dict[str, SourceCut | None] = {}
        out: list[TableRunResult] = []
        for done, decl in enumerate(tables):
            if stop is not None and stop.is_set():  # checked between tables: the one in flight has finished
                left = [t.table for t in tables[done:]]
                log.warning("silver: stop requested; %d of %d tables left for the next run: %s",
                            len(left), len(tables), ", ".join(left))
                return out, left
            source = owners[decl.table]
            if source not in cuts:  # one look at the source's offsets per pass
                cuts[source] = committed_cut(self.spark, self.root, source, self.storage)
            started = time.monotonic()
            res = self._run_table(decl, source, run_id, cache, cuts)
            res = _with_seconds(res, time.monotonic() - started)
            self.say(_describe(res))
            out.append(res)
        return out, []

    def _run_table(self, decl: SilverTable, source: str, run_id: str,
                   cache: dict[str, SchemaCache],
                   cuts: dict[str, SourceCut | None]) -> TableRunResult:
        try:
            return self._apply(decl, source, run_id, cache, cuts)
        except CdcError as exc:
            return TableRunResult(decl.table, decl.source, "failed", error=str(exc))
        except Exception as exc:  # an engine error stops this table only
            log.exception("silver table %s failed", decl.table)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return TableRunResult(decl.table, decl.source, "failed", error=f"{type(exc).__name__}: {first}")

    def _range(self, decl: SilverTable, after: int, upto: int | None,
               cut: SourceCut | None) -> tuple[SeqRange | Literal["missing"] | None, BronzeFiles | None]:
        """The increment to apply, and the bronze files it was planned from (None: planned by Spark)."""
        path = topic_path(self.root, decl.source)
        try:
            files = bronze_files(path, self.storage)
        except Exception as exc:  # delta-rs cannot read the store: let Spark find the bound
            log.info("delta-rs cannot read %s (%s); using Spark for the increment bound", path, exc)
            try:
                return spark_range(self.spark, path, after, upto_seq=upto,
                                   upto_batch=None if cut is None else cut.batch), None
            except Exception as spark_exc:
                if is_missing_table_error(spark_exc):
                    return "missing", None
                raise
        if files is None:
            return "missing", None
        return plan_range(files, after, upto_seq=upto, max_rows=self.options.max_bronze_rows_per_run,
                          upto_batch=None if cut is None else cut.batch), files

    def _apply(self, decl: SilverTable, source: str, run_id: str, cache: dict[str, SchemaCache],
               cuts: dict[str, SourceCut | None]) -> TableRunResult:
        previous = self.store.read(decl.table)
        after = previous.last_seq if previous else 0
        upto: int | None = None
        cut = cuts.get(source)
        if cut is not None and not cut.snapshot_completed:
            # A snapshot in progress may yet be discarded and taken again, its rows' seq reused:
            # its rows are applied once it completes (docs/silver.md, "Bronze commits that remove files").
            return TableRunResult(decl.table, decl.source, "waiting", seq_from=after)
        if self.options.consistency.get(source) == "transaction":
            if cut is None:
                return TableRunResult(decl.table, decl.source, "waiting", seq_from=after)
            found = cut_upto_seq(self.spark, topic_path(self.root, decl.source), decl.source, after, cut)
            if found == "missing":
                return TableRunResult(decl.table, decl.source, "waiting", seq_from=after)
            upto = found
            if upto is None:
                return TableRunResult(decl.table, decl.source, "up_to_date", seq_from=after)
        rng, files = self._range(decl, after, upto, cut)
        if rng == "missing":
            return TableRunResult(decl.table, decl.source, "waiting", seq_from=after)
        self.registrar.ensure(decl.table, decl.source, topic_path(self.root, decl.source))
        if rng is None:
            return TableRunResult(decl.table, decl.source, "up_to_date", seq_from=after)
        schemas = cache.setdefault(source, SchemaCache(
            lambda topic: load_topic_schemas(self.spark, self.root, source, topic, self.storage)))
        ctx = ApplyContext(self.spark, self.options, run_id, self.state, self.quarantine, schemas,
                           BronzeRef(self.root, source))
        target = SilverTarget.for_declaration(self.root, decl)
        bronze = read_range(self.spark, topic_path(self.root, decl.source), rng)
        res = apply_increment(ctx, decl, target, bronze, expected_keys=previous.keys if previous else None,
                              scanned=None if files is None else _scan_groups(files, rng))
        keys = res.keys or (previous.keys if previous else ())
        self.store.write(Progress(decl.table, decl.source, rng.upto_seq, rng.version, keys, run_id,
                                  dt.datetime.now(dt.UTC)))
        return TableRunResult(decl.table, decl.source, "applied", res.events, res.upserts, res.deletes,
                              res.quarantined, res.truncates, rng.after_seq, rng.upto_seq, rng.files_read,
                              rng.files_total, tuple(res.schema_changes),
                              resnapshot_seq=None if res.resnapshot is None else res.resnapshot.first_seq,
                              expectations_failed=quality_notes(res.quality))


def _scan_groups(files: BronzeFiles, rng: SeqRange) -> tuple[ScanGroup, ...] | None:
    """The increment's scan (`silver.scan`) from its columns read with delta-rs; None (Spark scans it)
    when delta-rs cannot read them."""
    try:
        columns = scan_columns(files, rng)
    except DELTA_RS_FAILURES as exc:
        log.info("delta-rs cannot read the increment's columns (%s); Spark scans it", exc)
        return None
    return None if columns is None else groups_of(columns)


def _with_seconds(res: TableRunResult, seconds: float) -> TableRunResult:
    return replace(res, seconds=round(seconds, 3))


def _describe(res: TableRunResult) -> str:
    if res.status == "failed":
        return f"silver {res.table}: FAILED: {res.error}"
    if res.status != "applied":
        return f"silver {res.table}: {res.status.replace('_', ' ')}"
    files = "" if res.files_read is None else f", {res.files_read}/{res.files_total} bronze files"
    extra = f", {res.quarantined} quarantined" if res.quarantined else ""
    extra += f", {res.truncates} truncate(s)" if res.truncates else ""
    extra += "".join(f"; {c}" for c in res.schema_changes)
    extra += "".join(f"; {note}" for note in res.expectations_failed)
    if res.resnapshot_seq is not None:
        extra += f"; re-snapshot from seq {res.resnapshot_seq}: rows not in it removed"
    return (f"silver {res.table}: {res.events} events (seq {res.seq_from}..{res.seq_to}{files}) -> "
            f"{res.upserts} upserts, {res.deletes} deletes{extra} in {res.seconds:.2f}s")
